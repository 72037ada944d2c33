"""Client quotas on a one-broker cluster: a kafka-python producer whose client id has a
``producer_byte_rate`` (set with ``rafka configs`` in a process of its own) is held to it while a
producer without a quota, sending at the same time, is not; a consumer whose client id has a
``consumer_byte_rate`` (set with the native Admin) is held to it too. Rates are the bytes
acknowledged (or consumed) over several seconds after a warm-up. A user's quotas share its znode
with its SCRAM credentials, and a quota of one user's client id (Kafka's combined form) reaches the
broker and throttles that client.

The broker measures with one window (``quota_window_num=1``): Kafka's default sensor, 11 windows
of 1 s, lets an idle client burst ten windows' worth at once and then holds it back until that
sample is forgotten, so it keeps a client to its quota only over periods of 11 s and more; with one
window every second is held to the quota, which a few seconds' measurement can check to 10%. The
unit tests check the default sensor's figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import ray
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kazoo.client import KazooClient

from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.messages.quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    ClientQuotaAlteration,
    ClientQuotaAlterationOp,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
)
from rafka.protocol.messages.users import UserScramCredentialUpsertion
from rafka.security.scram import ScramMechanism
from rafka.testing import listener_address, user_env
from tests.integration.test_kafka_tls import one_broker

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]
CLUSTER = "kafka-quotas"
VENV_BIN = Path(sys.executable).parent
QUOTA = 200 * 1024
"""Bytes per second a throttled client is held to."""
VALUE = b"q" * 1024
WARM_UP_S = 2.0
MEASURE_S = 8.0
TOLERANCE = 0.10
SHA256 = ScramMechanism.SCRAM_SHA_256
UNACKNOWLEDGED = 256
"""Records a producer has sent and not yet had acknowledged, at most (256 KB)."""


@pytest.fixture(scope="module")
def quota_cluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """One broker measuring rates over one window of 1 s, with two topics of one partition: one
    for the producers, one for the consumer."""
    with one_broker(
        CLUSTER,
        session_dir,
        zookeeper,
        ray_nodes,
        listeners="PLAINTEXT://127.0.0.1:0",
        quota_window_num=1,
    ) as local:
        local.admin().create_topic("quotas", 1, 1)
        local.admin().create_topic("to-consume", 1, 1)
        yield local


def rafka_configs(cluster: LocalCluster, *args: str) -> str:
    """``rafka configs`` on ``cluster`` in a process of its own, with a user's environment; what
    it prints."""
    done = subprocess.run(
        [
            str(VENV_BIN / "rafka"),
            *("--address", ray.get_runtime_context().gcs_address, "--namespace", cluster.namespace),
            "configs",
            *args,
        ],
        env=user_env(VENV_BIN),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def rate(events: list[tuple[float, int]], start: float) -> float:
    """Bytes per second of ``events`` (time, bytes) within the measured interval after
    ``start``'s warm-up."""
    begin = start + WARM_UP_S
    measured = sum(size for at, size in events if begin <= at < begin + MEASURE_S)
    return measured / MEASURE_S


def produce_flat_out(bootstrap: str, client_id: str, go: threading.Event) -> float:
    """Send as fast as the broker acknowledges, with up to ``UNACKNOWLEDGED`` records waiting (a
    producer's buffer: kafka-python 3 has no ``buffer_memory``), for the warm-up and the measured
    interval; the rate of the bytes acknowledged in the interval."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, acks=1, linger_ms=5)
    room = threading.BoundedSemaphore(UNACKNOWLEDGED)
    acked: list[tuple[float, int]] = []

    def ack(_metadata: Any) -> None:
        acked.append((time.monotonic(), len(VALUE)))
        room.release()

    go.wait()
    start = time.monotonic()
    end = start + WARM_UP_S + MEASURE_S
    while (now := time.monotonic()) < end:
        if room.acquire(timeout=end - now):
            producer.send("quotas", VALUE).add_callback(ack).add_errback(lambda _e: room.release())
    producer.close(timeout=30)
    return rate(acked, start)


def test_a_producer_over_its_client_ids_quota_is_held_to_it_and_one_without_is_not(
    quota_cluster: LocalCluster,
) -> None:
    done = rafka_configs(
        quota_cluster,
        *("--alter", "--entity-type", "clients", "--entity-name", "throttled-producer"),
        *("--add-config", f"producer_byte_rate={QUOTA}"),
    )
    assert done.strip() == "Completed updating config for client throttled-producer."
    described = rafka_configs(
        quota_cluster,
        "--describe",
        "--entity-type",
        "clients",
        "--entity-name",
        "throttled-producer",
    )
    assert described.strip() == (
        f"Quota configs for client-id 'throttled-producer' are producer_byte_rate={QUOTA:.1f}"
    )
    bootstrap = listener_address(quota_cluster.admin(), "PLAINTEXT")
    go = threading.Event()
    with ThreadPoolExecutor(2) as pool:
        throttled = pool.submit(produce_flat_out, bootstrap, "throttled-producer", go)
        free = pool.submit(produce_flat_out, bootstrap, "free-producer", go)
        go.set()
        throttled_rate, free_rate = throttled.result(), free.result()
    print(f"throttled producer: {throttled_rate:.0f} B/s against a quota of {QUOTA} B/s")
    print(f"producer without a quota: {free_rate:.0f} B/s")
    assert abs(throttled_rate / QUOTA - 1) <= TOLERANCE
    assert free_rate > 5 * QUOTA


def test_a_consumer_over_its_client_ids_quota_is_held_to_it(
    quota_cluster: LocalCluster, zk: KazooClient
) -> None:
    admin = quota_cluster.admin()
    entity = ClientQuotaEntity.of({CLIENT_ID: "throttled-consumer"})
    admin.alter_client_quotas(
        [ClientQuotaAlteration(entity, (ClientQuotaAlterationOp(CONSUMER_BYTE_RATE, QUOTA),))]
    )
    assert admin.describe_client_quotas(
        [ClientQuotaFilterComponent.of_entity(CLIENT_ID, "throttled-consumer")]
    ) == {entity: {CONSUMER_BYTE_RATE: float(QUOTA)}}
    # Where and how Kafka keeps it.
    data, _ = zk.get("/config/clients/throttled-consumer")
    assert json.loads(data) == {"version": 1, "config": {CONSUMER_BYTE_RATE: str(QUOTA)}}
    bootstrap = listener_address(admin, "PLAINTEXT")
    # More than the consumer may read while measured, written by a client without a quota.
    loader = KafkaProducer(bootstrap_servers=bootstrap, client_id="loader", acks=1)
    for _ in range(round(2 * QUOTA * (WARM_UP_S + MEASURE_S) / len(VALUE))):
        loader.send("to-consume", VALUE)
    loader.close(timeout=60)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id="throttled-consumer",
        group_id=None,
        auto_offset_reset="earliest",
        # Fetches of one producer batch each, so the rate is measured in small steps.
        max_partition_fetch_bytes=16 * 1024,
        # kafka-python looks at a connection it paused for a throttle time again only after
        # retry_backoff_ms (100 ms by default), which would keep it up to that late each time.
        retry_backoff_ms=10,
    )
    consumer.assign([KafkaTopicPartition("to-consume", 0)])
    consumed: list[tuple[float, int]] = []
    start = time.monotonic()
    while time.monotonic() < start + WARM_UP_S + MEASURE_S:
        for records in consumer.poll(timeout_ms=200).values():
            consumed += [(time.monotonic(), len(record.value)) for record in records]
    consumer.close()
    consumer_rate = rate(consumed, start)
    print(f"throttled consumer: {consumer_rate:.0f} B/s against a quota of {QUOTA} B/s")
    assert abs(consumer_rate / QUOTA - 1) <= TOLERANCE


def throttled_ms(metrics: dict[str, dict[str, Any]]) -> float:
    """The longest throttle time a kafka-python client was told, from its metrics."""
    return max(
        v for group in metrics.values() for k, v in group.items() if k == "throttle-time-max"
    )


def test_user_quotas_are_kept_beside_credentials_and_a_users_client_id_quota_applies(
    quota_cluster: LocalCluster, zk: KazooClient
) -> None:
    admin = quota_cluster.admin()
    admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion.from_password("quota-alice", SHA256, "alice-secret")]
    )
    # A plaintext connection is User:ANONYMOUS: its quota for one client id.
    rafka_configs(
        quota_cluster,
        *("--alter", "--entity-type", "users", "--entity-name", "ANONYMOUS"),
        *("--entity-type", "clients", "--entity-name", "anonymous-app"),
        *("--add-config", "producer_byte_rate=10240"),
    )
    rafka_configs(
        quota_cluster,
        *("--alter", "--entity-type", "users", "--entity-name", "quota-alice"),
        *("--add-config", "consumer_byte_rate=20480"),
    )
    alice = json.loads(zk.get("/config/users/quota-alice")[0])["config"]
    assert set(alice) == {"SCRAM-SHA-256", CONSUMER_BYTE_RATE}
    assert json.loads(zk.get("/config/users/ANONYMOUS/clients/anonymous-app")[0]) == {
        "version": 1,
        "config": {"producer_byte_rate": "10240"},
    }
    described = rafka_configs(
        quota_cluster,
        *("--describe", "--entity-type", "users", "--entity-name", "ANONYMOUS"),
        *("--entity-type", "clients"),
    )
    assert described.strip() == (
        "Quota configs for user-principal 'ANONYMOUS', client-id 'anonymous-app' are "
        "producer_byte_rate=10240.0"
    )
    producer = KafkaProducer(
        bootstrap_servers=listener_address(admin, "PLAINTEXT"), client_id="anonymous-app"
    )
    # 20 KB against 10 KB/s: the broker, told of the quota by its change notification, throttles.
    for future in [producer.send("quotas", VALUE) for _ in range(20)]:
        future.get(60)
    assert throttled_ms(producer.metrics()) > 0
    producer.close()
