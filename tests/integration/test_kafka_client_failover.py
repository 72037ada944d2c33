"""Real Kafka clients through a leader's crash: a kafka-python producer and an idempotent
confluent-kafka producer keep writing while the broker leading their partition is killed; both
find the new leader by refreshing metadata from the surviving brokers' listeners, and every record
either acknowledged is read back by rafka's own consumer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message
from confluent_kafka import Producer as ConfluentProducer
from kafka import KafkaProducer

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]
NS = "rafka-kafka-failover"
CLUSTER = "kafka-failover"
WINDOW = 20
"""Records a producer may have unacknowledged at once: enough to have some in flight when the
leader dies, few enough that an outage does not pile up thousands."""
BEFORE_KILL = 50
AFTER_FAILOVER = 100


@pytest.fixture(scope="module")
def kcluster(own_cluster: Callable[..., LocalCluster]) -> Iterator[LocalCluster]:
    """Three brokers that drop a dead follower from the ISR within two seconds."""
    with own_cluster(
        CLUSTER, NS, replica_lag_time_max_ms=2000, replica_fetch_wait_max_ms=200
    ) as local:
        yield local


@pytest.fixture
def kadmin(kcluster: LocalCluster) -> Iterator[Admin]:
    """An admin client of the module's cluster, every broker up before and after the test."""
    admin = kcluster.admin()
    restart_missing_brokers(kcluster, admin)
    yield admin
    restart_missing_brokers(kcluster, admin)


def restart_missing_brokers(cluster: LocalCluster, admin: Admin) -> None:
    """Start every broker a test killed, and wait until all three are registered."""
    for broker_id in range(cluster.num_brokers):
        if broker_id not in cluster.brokers:
            cluster.start_broker(broker_id)
    admin.wait_for_cluster(cluster.num_brokers, 60_000)


@dataclass
class Tally:
    """What a producer thread sent and what the cluster acknowledged, shared with its callbacks."""

    sent: int = 0
    acked: dict[int, int] = field(default_factory=dict)  # record number -> offset
    failed: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ack(self, number: int, offset: int) -> None:
        with self.lock:
            self.acked[number] = offset

    def fail(self, number: int, error: object) -> None:
        with self.lock:
            self.failed.append(f"record {number}: {error}")

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acked)


def value_of(prefix: str, number: int) -> bytes:
    return f"{prefix}-{number}".encode()


def kafka_python_loop(bootstrap: str, topic: str, tally: Tally, stop: threading.Event) -> None:
    """Send numbered records with kafka-python until ``stop``, at most WINDOW unacknowledged."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        retries=1_000,
        retry_backoff_ms=100,
        max_in_flight_requests_per_connection=1,
        request_timeout_ms=5_000,
        delivery_timeout_ms=120_000,
    )
    pending: list[Any] = []
    try:
        while not stop.is_set():
            number = tally.sent
            future = producer.send(topic, key=str(number).encode(), value=value_of("kp", number))
            future.add_callback(lambda meta, n=number: tally.ack(n, meta.offset))
            future.add_errback(lambda exc, n=number: tally.fail(n, exc))
            tally.sent += 1
            pending.append(future)
            if len(pending) >= WINDOW:
                _wait_done(pending.pop(0), stop)
        producer.flush(timeout=120)
    finally:
        producer.close(timeout=10)


def _wait_done(future: Any, stop: threading.Event) -> None:
    """Block until a kafka-python future resolves; a failed send (its errback recorded it) ends
    the run."""
    try:
        future.get(timeout=120)
    except Exception:
        stop.set()


def confluent_loop(bootstrap: str, topic: str, tally: Tally, stop: threading.Event) -> None:
    """Send numbered records with an idempotent confluent-kafka producer until ``stop``."""
    producer = ConfluentProducer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "retry.backoff.ms": 100,
            "socket.timeout.ms": 5_000,
            "topic.metadata.refresh.interval.ms": 1_000,
        }
    )

    def delivery_report(number: int) -> Callable[[KafkaError | None, Message], None]:
        def delivered(error: KafkaError | None, message: Message) -> None:
            offset = message.offset()
            if error is None and offset is not None:
                tally.ack(number, offset)
            else:
                tally.fail(number, error)

        return delivered

    while not stop.is_set():
        number = tally.sent
        producer.produce(
            topic,
            key=str(number).encode(),
            value=value_of("ck", number),
            on_delivery=delivery_report(number),
        )
        tally.sent += 1
        while len(producer) >= WINDOW and not stop.is_set():
            producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(120)
    if remaining:
        tally.fail(-1, f"{remaining} records still queued after flush")


def produce_through_leader_crash(
    cluster: LocalCluster,
    admin: Admin,
    topic: str,
    loop: Callable[[str, str, Tally, threading.Event], None],
) -> tuple[Tally, int]:
    """Run ``loop`` in a thread; once BEFORE_KILL records are acknowledged, kill the partition's
    leader, and stop once AFTER_FAILOVER more are acknowledged. Returns the tally and the killed
    broker's id."""
    admin.create_topic(topic, 1, 3, config={"min.insync.replicas": "2"})
    tally, stop = Tally(), threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            loop(cluster.bootstrap_servers(), topic, tally, stop)
        except BaseException as exc:  # handed to the test thread, which fails with it
            errors.append(exc)

    thread = threading.Thread(target=run, name=f"produce-{topic}", daemon=True)
    thread.start()
    try:
        wait_until(lambda: tally.acked_count() >= BEFORE_KILL, 60, "records before the kill")
        leader = admin.describe_topic(topic).partitions[0].leader
        cluster.kill_broker(leader)
        at_kill = tally.acked_count()
        wait_until(
            lambda: admin.describe_topic(topic).partitions[0].leader not in (-1, leader),
            60,
            "a new leader",
        )
        wait_until(
            lambda: tally.acked_count() >= at_kill + AFTER_FAILOVER or errors,
            90,
            f"{AFTER_FAILOVER} records acknowledged after the leader died",
        )
    finally:
        stop.set()
        thread.join(timeout=150)
    assert not thread.is_alive(), "the producer did not finish flushing"
    assert not errors, errors
    return tally, leader


def read_back(cluster: LocalCluster, topic: str, expected: int) -> dict[int, bytes | None]:
    """Offset -> value of the partition's records, read by rafka's consumer."""
    read: dict[int, bytes | None] = {}
    with cluster.consumer(group_id=None, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        deadline = time.monotonic() + 60
        while len(read) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                read.update((r.offset, r.value) for r in records)
    return read


def test_kafka_python_producer_fails_over_and_loses_no_acknowledged_record(
    kcluster: LocalCluster, kadmin: Admin
) -> None:
    tally, _ = produce_through_leader_crash(kcluster, kadmin, "kp-failover", kafka_python_loop)
    assert not tally.failed
    assert len(tally.acked) == tally.sent
    read = read_back(kcluster, "kp-failover", len(tally.acked))
    for number, offset in tally.acked.items():
        assert read.get(offset) == value_of("kp", number), f"acknowledged record {number} lost"
    values = [read[offset] for offset in sorted(read)]
    first_seen = list(dict.fromkeys(values))
    # Not idempotent: a batch written but unacknowledged when the leader died is sent again.
    print(f"kafka-python: {tally.sent} sent, {len(values) - len(first_seen)} duplicates")
    assert first_seen == [value_of("kp", n) for n in range(tally.sent)], "out of order"


def test_idempotent_confluent_producer_fails_over_with_no_loss_and_no_duplicate(
    kcluster: LocalCluster, kadmin: Admin
) -> None:
    tally, _ = produce_through_leader_crash(kcluster, kadmin, "ck-failover", confluent_loop)
    assert not tally.failed
    assert len(tally.acked) == tally.sent
    # Idempotent and ordered: record n at offset n, once, retries and all.
    assert tally.acked == {n: n for n in range(tally.sent)}
    read = read_back(kcluster, "ck-failover", tally.sent)
    assert [read[offset] for offset in sorted(read)] == [
        value_of("ck", n) for n in range(tally.sent)
    ]
