"""Kafka clients logging in with SASL: a one-broker cluster with a PLAINTEXT, a SASL_PLAINTEXT and
a SASL_SSL listener offering PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, its users made with `rafka
configs --entity-type users` as a user runs it. kafka-python and confluent-kafka produce and
consume over SASL_SSL with SCRAM; wrong passwords, unknown users, unoffered mechanisms, requests
before the login and oversized login frames are refused and logged, and the broker goes on
serving the clients that log in properly."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import ray
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Producer as ConfluentProducer
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from rafka.cli.certs import CertFiles
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY
from rafka.testing import confluent_round_trip, listener_address, user_env, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]
NS = "rafka-kafka-sasl"
CLUSTER = "kafka-sasl"
RECORDS = 20
LISTENERS = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
MAX_LOGIN_FRAME = 4096
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def sasl_cluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str], certs: CertFiles
) -> Iterator[LocalCluster]:
    """One broker offering every mechanism on both SASL listeners, and the users alice (both SCRAM
    mechanisms) and bob (SCRAM-SHA-256 only)."""
    with LocalCluster(
        brokers=1,
        data_dir=session_dir / CLUSTER,
        zookeeper=zookeeper.connect_string,
        cluster_name=CLUSTER,
        namespace=NS,
        node_ids=ray_nodes[:1],
        broker_config={
            "zookeeper_session_timeout_ms": 4000,
            "offsets_topic_num_partitions": 1,
            "listeners": LISTENERS,
            "ssl_keystore_location": str(certs.broker),
            "sasl_enabled_mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "sasl_server_max_receive_size": MAX_LOGIN_FRAME,
        },
    ) as local:
        alter_user(
            "alice",
            "--add-config",
            f"SCRAM-SHA-256=[password={USERS['alice']}],"
            f"SCRAM-SHA-512=[iterations=8192,password={USERS['alice']}]",
        )
        alter_user("bob", "--add-config", f"SCRAM-SHA-256=[password={USERS['bob']}]")
        # The broker takes new credentials from ZooKeeper's change notification, a moment later.
        for user, mechanism in (("alice", "SCRAM-SHA-512"), ("bob", "SCRAM-SHA-256")):
            client = confluent_sasl(local, certs, mechanism, user, USERS[user])
            wait_until(partial(logs_in, client), 60, f"{user}'s credentials on the broker")
        yield local


def alter_user(user: str, *change: str) -> str:
    """`rafka configs --alter --entity-type users` in a subprocess with a user's environment;
    what it prints."""
    done = subprocess.run(
        [
            str(VENV_BIN / "rafka"),
            *("--address", ray.get_runtime_context().gcs_address, "--namespace", NS),
            *("configs", "--alter", "--entity-type", "users", "--entity-name", user, *change),
        ],
        env=user_env(VENV_BIN),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def logs_in(client: dict[str, Any]) -> bool:
    """Whether confluent-kafka with ``client``'s settings logs in and reads metadata."""
    producer = ConfluentProducer(client)
    try:
        producer.list_topics(timeout=5)
    except KafkaException:
        return False
    return True


def endpoint(cluster: LocalCluster, listener: str) -> str:
    """``host:port`` of the broker's listener called ``listener``."""
    return listener_address(cluster.admin(), listener)


def server_log(cluster: LocalCluster) -> str:
    """Broker 0's server.log so far."""
    return (cluster.data_dir / "broker-0" / "server.log").read_text()


def confluent_sasl(
    cluster: LocalCluster, certs: CertFiles, mechanism: str, user: str, password: str
) -> dict[str, Any]:
    """confluent-kafka's settings for a SASL_SSL login."""
    return {
        "bootstrap.servers": endpoint(cluster, "SASL_SSL"),
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(certs.ca),
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def confluent_login_error(client: dict[str, Any]) -> KafkaError:
    """The error confluent-kafka reports when its login is refused (its producer's error
    callback), waited for with a deadline."""
    errors: list[KafkaError] = []
    producer = ConfluentProducer({**client, "error_cb": errors.append})
    deadline = time.monotonic() + 30
    while not errors and time.monotonic() < deadline:
        producer.poll(0.5)
    assert errors, "the refused login reported no error"
    return errors[0]


def test_kafka_python_produces_and_consumes_over_sasl_ssl_with_scram_sha_256(
    sasl_cluster: LocalCluster, certs: CertFiles, topic_name: str
) -> None:
    sasl_cluster.admin().create_topic(topic_name, 1, 1)
    client = {
        "bootstrap_servers": endpoint(sasl_cluster, "SASL_SSL"),
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(certs.ca),
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "bob",
        "sasl_plain_password": USERS["bob"],
    }
    producer = KafkaProducer(acks="all", **client)
    for future in [producer.send(topic_name, f"v{i}".encode()) for i in range(RECORDS)]:
        future.get(30)
    producer.close()
    consumer = KafkaConsumer(
        group_id=None, auto_offset_reset="earliest", consumer_timeout_ms=10_000, **client
    )
    consumer.assign([KafkaTopicPartition(topic_name, 0)])
    values = [m.value for m in consumer]
    consumer.close()
    assert values == [f"v{i}".encode() for i in range(RECORDS)]


def test_confluent_kafka_produces_and_consumes_over_sasl_ssl_with_scram_sha_512(
    sasl_cluster: LocalCluster, certs: CertFiles, topic_name: str
) -> None:
    sasl_cluster.admin().create_topic(topic_name, 1, 1)
    client = confluent_sasl(sasl_cluster, certs, "SCRAM-SHA-512", "alice", USERS["alice"])
    assert confluent_round_trip(client, topic_name, RECORDS) == [
        f"c{i}".encode() for i in range(RECORDS)
    ]


def test_plain_over_sasl_plaintext_checks_the_scram_credentials(
    sasl_cluster: LocalCluster, topic_name: str
) -> None:
    sasl_cluster.admin().create_topic(topic_name, 1, 1)
    client = {
        "bootstrap.servers": endpoint(sasl_cluster, "SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
    }
    values = confluent_round_trip({**client, "sasl.password": USERS["alice"]}, topic_name, RECORDS)
    assert len(values) == RECORDS
    error = confluent_login_error({**client, "sasl.password": "guess"})
    assert error.code() == KafkaError._AUTHENTICATION
    assert "invalid credentials with SASL mechanism PLAIN" in error.str()


@pytest.mark.parametrize(
    ("user", "password", "mechanism"),
    [
        ("alice", "wrong", "SCRAM-SHA-256"),
        ("mallory", "anything", "SCRAM-SHA-256"),
        ("bob", USERS["bob"], "SCRAM-SHA-512"),  # bob has no SCRAM-SHA-512 credential
    ],
)
def test_a_bad_login_is_refused_with_kafkas_error_and_logged(
    sasl_cluster: LocalCluster, certs: CertFiles, user: str, password: str, mechanism: str
) -> None:
    error = confluent_login_error(confluent_sasl(sasl_cluster, certs, mechanism, user, password))
    assert error.code() == KafkaError._AUTHENTICATION
    assert f"invalid credentials with SASL mechanism {mechanism}" in error.str()
    wait_until(
        lambda: "Failed authentication with" in server_log(sasl_cluster),
        30,
        "the broker's log line for the refused login",
    )


def kafka_request(api_key: int, version: int, body: dict[str, Any]) -> bytes:
    """One size-prefixed Kafka request frame."""
    return DEFAULT_REGISTRY.encode_request(RequestHeader(api_key, version, 7), body)


def answer_or_close(connection: socket.socket) -> bytes:
    """Everything the broker sends until it closes the connection (the socket's timeout is the
    deadline)."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


def test_an_unoffered_mechanism_a_request_before_login_and_an_oversized_frame_are_refused(
    sasl_cluster: LocalCluster, certs: CertFiles, topic_name: str
) -> None:
    host, port = endpoint(sasl_cluster, "SASL_PLAINTEXT").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(kafka_request(17, 1, {"mechanism": "GSSAPI"}))
        answer = answer_or_close(connection)
    _, response = DEFAULT_REGISTRY.decode_response(answer[4:], RequestHeader(17, 1, 7))
    assert response["error_code"] == 33  # UNSUPPORTED_SASL_MECHANISM
    assert response["mechanisms"] == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(kafka_request(3, 1, {"topics": None}))  # Metadata before the login
        assert answer_or_close(connection) == b""
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(struct.pack(">i", MAX_LOGIN_FRAME + 1) + b"\0" * 64)
        assert answer_or_close(connection) == b""
    wait_until(
        lambda: "sasl.server.max.receive.size" in server_log(sasl_cluster),
        30,
        "the broker's log line for the oversized frame",
    )
    sasl_cluster.admin().create_topic(topic_name, 1, 1)
    client = confluent_sasl(sasl_cluster, certs, "SCRAM-SHA-256", "alice", USERS["alice"])
    assert len(confluent_round_trip(client, topic_name, RECORDS)) == RECORDS


def test_a_removed_credential_stops_new_logins(
    sasl_cluster: LocalCluster, certs: CertFiles
) -> None:
    client = confluent_sasl(sasl_cluster, certs, "SCRAM-SHA-256", "bob", USERS["bob"])
    assert logs_in(client)
    assert alter_user("bob", "--delete-config", "SCRAM-SHA-256") == (
        "Completed updating config for user bob.\n"
    )
    wait_until(lambda: not logs_in(client), 60, "bob's login to be refused")
