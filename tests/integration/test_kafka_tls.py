"""Kafka clients over TLS: a one-broker cluster with a PLAINTEXT and an SSL listener, certificates
from ``rafka certs``. kafka-python and confluent-kafka produce and consume through the SSL
listener and are told the brokers' SSL endpoints; a plaintext client, a client that does not trust
the CA, and (with ``ssl_client_auth=required``) a client without a CA-signed certificate are
refused while the broker goes on serving the others."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kafka
import pytest
from confluent_kafka import Producer as ConfluentProducer
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kazoo.client import KazooClient

from rafka.cli.certs import CertFiles
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.errors import InvalidConfigError
from rafka.testing import confluent_round_trip, listener_address

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]
NS = "rafka-kafka-tls"
CLUSTER = "kafka-tls"
RECORDS = 20
LISTENERS = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"
REFUSAL_TIMEOUT_MS = 5_000
"""How long a refused kafka-python client keeps trying before it gives up."""


def one_broker(
    name: str, session_dir: Path, zookeeper: ZooKeeperServer, node_ids: list[str], **config: Any
) -> LocalCluster:
    """A one-broker cluster (TLS needs no replicas to be shown, and the machine has 2 cores)."""
    return LocalCluster(
        brokers=1,
        data_dir=session_dir / name,
        zookeeper=zookeeper.connect_string,
        cluster_name=name,
        namespace=f"{NS}-{name}",
        node_ids=node_ids[:1],
        broker_config={
            "zookeeper_session_timeout_ms": 4000,
            "offsets_topic_num_partitions": 1,
            "listeners": LISTENERS,
            **config,
        },
    )


@pytest.fixture(scope="module")
def tls_cluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str], certs: CertFiles
) -> Iterator[LocalCluster]:
    """One broker with a PLAINTEXT and an SSL listener, no client certificates asked for."""
    with one_broker(
        CLUSTER, session_dir, zookeeper, ray_nodes, ssl_keystore_location=str(certs.broker)
    ) as local:
        yield local


def endpoint(cluster: LocalCluster, listener: str) -> str:
    """``host:port`` of the broker's listener called ``listener``."""
    return listener_address(cluster.admin(), listener)


def kafka_python_ssl(certs: CertFiles, **config: Any) -> dict[str, Any]:
    return {"security_protocol": "SSL", "ssl_cafile": str(certs.ca), **config}


def produce_and_read_with_kafka_python(
    bootstrap: str, topic: str, client: dict[str, Any]
) -> list[bytes]:
    """Produce ``RECORDS`` values and read them back, both with kafka-python over ``client``."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **client)
    for future in [producer.send(topic, f"v{i}".encode()) for i in range(RECORDS)]:
        future.get(30)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
        **client,
    )
    consumer.assign([KafkaTopicPartition(topic, 0)])
    values = [m.value for m in consumer]
    consumer.close()
    return values


def refused(bootstrap: str, **client: Any) -> bool:
    """Whether kafka-python fails to bootstrap from ``bootstrap`` with ``client``'s settings."""
    try:
        KafkaAdminClient(
            bootstrap_servers=bootstrap, bootstrap_timeout_ms=REFUSAL_TIMEOUT_MS, **client
        ).close()
    except kafka.errors.KafkaTimeoutError:
        return True
    return False


def test_kafka_python_produces_and_consumes_over_ssl(
    tls_cluster: LocalCluster, certs: CertFiles, topic_name: str
) -> None:
    tls_cluster.admin().create_topic(topic_name, 1, 1)
    values = produce_and_read_with_kafka_python(
        endpoint(tls_cluster, "SSL"), topic_name, kafka_python_ssl(certs)
    )
    assert values == [f"v{i}".encode() for i in range(RECORDS)]


def test_confluent_kafka_produces_and_consumes_over_ssl(
    tls_cluster: LocalCluster, certs: CertFiles, topic_name: str
) -> None:
    tls_cluster.admin().create_topic(topic_name, 1, 1)
    client = {
        "bootstrap.servers": endpoint(tls_cluster, "SSL"),
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs.ca),
    }
    values = confluent_round_trip(client, topic_name, RECORDS)
    assert values == [f"c{i}".encode() for i in range(RECORDS)]


def test_metadata_names_the_listener_the_client_came_through_and_zookeeper_its_protocol(
    tls_cluster: LocalCluster, certs: CertFiles, zookeeper: ZooKeeperServer
) -> None:
    ssl_address, plain_address = endpoint(tls_cluster, "SSL"), endpoint(tls_cluster, "PLAINTEXT")
    assert ssl_address != plain_address
    for bootstrap, client in (
        (ssl_address, {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca)}),
        (plain_address, {}),
    ):
        admin_client = ConfluentProducer({"bootstrap.servers": bootstrap, **client})
        brokers = admin_client.list_topics(timeout=30).brokers
        assert [f"{b.host}:{b.port}" for b in brokers.values()] == [bootstrap]
    zk = KazooClient(hosts=f"{zookeeper.connect_string}/rafka/{CLUSTER}")
    zk.start(timeout=30)
    try:
        registered = json.loads(zk.get("/brokers/ids/0")[0])
    finally:
        zk.stop()
        zk.close()
    assert registered["endpoints"] == [f"PLAINTEXT://{plain_address}", f"SSL://{ssl_address}"]
    assert registered["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}


def test_a_plaintext_or_untrusting_client_is_refused_and_others_go_on(
    tls_cluster: LocalCluster, certs: CertFiles, stranger: CertFiles, topic_name: str
) -> None:
    ssl_address = endpoint(tls_cluster, "SSL")
    assert refused(ssl_address)
    assert refused(ssl_address, **kafka_python_ssl(stranger))
    tls_cluster.admin().create_topic(topic_name, 1, 1)
    values = produce_and_read_with_kafka_python(ssl_address, topic_name, kafka_python_ssl(certs))
    assert len(values) == RECORDS


def test_required_client_auth_serves_only_clients_with_a_ca_signed_certificate(
    session_dir: Path,
    zookeeper: ZooKeeperServer,
    ray_nodes: list[str],
    certs: CertFiles,
    stranger: CertFiles,
    topic_name: str,
) -> None:
    with one_broker(
        "kafka-mtls",
        session_dir,
        zookeeper,
        ray_nodes,
        ssl_keystore_location=str(certs.broker),
        ssl_truststore_location=str(certs.ca),
        ssl_client_auth="required",
    ) as mtls:
        ssl_address = endpoint(mtls, "SSL")
        assert refused(ssl_address, **kafka_python_ssl(certs))
        assert refused(ssl_address, **kafka_python_ssl(certs, ssl_certfile=str(stranger.client)))
        mtls.admin().create_topic(topic_name, 1, 1)
        client = kafka_python_ssl(certs, ssl_certfile=str(certs.client))
        values = produce_and_read_with_kafka_python(ssl_address, topic_name, client)
        assert len(values) == RECORDS


def test_an_ssl_listener_without_a_keystore_fails_the_start_naming_the_setting(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> None:
    broken = one_broker("kafka-tls-broken", session_dir, zookeeper, ray_nodes)
    with pytest.raises(InvalidConfigError, match="ssl_keystore_location"):
        broken.start()
    assert broken.brokers == {}
