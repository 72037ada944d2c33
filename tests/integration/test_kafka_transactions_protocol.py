"""Kafka's idempotent and transactional producers on the brokers' listeners, unchanged: librdkafka
(confluent-kafka) and kafka-python write through InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit and EndTxn, and read_committed consumers of both
kinds (Kafka's and rafka's) see exactly the committed records. librdkafka's protocol debug log is
kept and must show no protocol error."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KafkaTopicPartition

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

RECORDS = 200
TXN_TIMEOUT_S = 60
# What librdkafka logs when a broker's bytes or versions do not fit what it expects.
PROTOCOL_ERROR = re.compile(
    r"unsupported|malformed|parse failure|protoerr|protocol error|corrupt|buffer underflow",
    re.IGNORECASE,
)


class KeptLog(logging.Handler):
    """Keeps every line librdkafka logs through its ``logger``."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def protocol_errors(self) -> list[str]:
        """The lines that report a protocol error."""
        return [line for line in self.lines if PROTOCOL_ERROR.search(line)]


@pytest.fixture
def librdkafka_log() -> Iterator[tuple[logging.Logger, KeptLog]]:
    """A logger for librdkafka's ``protocol,msg`` debug lines, and what it kept."""
    logger = logging.getLogger(f"librdkafka.{uuid.uuid4().hex}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    kept = KeptLog()
    logger.addHandler(kept)
    yield logger, kept
    assert kept.lines, "librdkafka logged nothing: the debug routing is broken"
    assert kept.protocol_errors() == []
    logger.removeHandler(kept)


@pytest.fixture(scope="module")
def bootstrap(cluster: LocalCluster) -> str:
    """The shared cluster's bootstrap string."""
    return cluster.bootstrap_servers()


def ck_config(bootstrap: str, logger: logging.Logger, **extra: Any) -> dict[str, Any]:
    """A confluent-kafka client configuration with protocol debugging routed to ``logger``."""
    return {"bootstrap.servers": bootstrap, "debug": "protocol,msg", "logger": logger, **extra}


def produce_all(producer: Producer, topic: str, values: list[bytes], partitions: int) -> None:
    """Send ``values`` round-robin over the partitions and wait until each is acknowledged."""
    failures: list[Any] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(error)

    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % partitions, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(TXN_TIMEOUT_S) == 0
    assert failures == []


def ck_read(
    bootstrap: str,
    logger: logging.Logger,
    topic: str,
    partitions: int,
    isolation: str,
    until: int,
) -> list[bytes]:
    """Values a confluent-kafka consumer reads from the start of every partition, until it has
    ``until`` of them and then no more arrive for a few polls."""
    consumer = Consumer(
        ck_config(
            bootstrap,
            logger,
            **{
                "group.id": f"reader-{uuid.uuid4().hex}",
                "isolation.level": isolation,
                "enable.auto.commit": False,
            },
        )
    )
    consumer.assign([CkTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    quiet = 0
    while time.monotonic() < deadline and (len(values) < until or quiet < 3):
        message = consumer.poll(0.5)
        if message is None:
            quiet += 1
            continue
        value = message.value()
        assert message.error() is None and value is not None, message.error()
        values.append(value)
    consumer.close()
    return values


def rafka_read(cluster: LocalCluster, topic: str, isolation: str, until: int) -> list[bytes]:
    """Values rafka's consumer reads from the start of ``topic``, until it has ``until`` of them
    and then no more arrive for a few polls."""
    values: list[bytes] = []
    with cluster.consumer(
        topic, group_id=None, auto_offset_reset="earliest", isolation_level=isolation
    ) as consumer:
        deadline = time.monotonic() + 60
        quiet = 0
        while time.monotonic() < deadline and (len(values) < until or quiet < 3):
            polled = consumer.poll(timeout_ms=500)
            quiet = 0 if polled else quiet + 1
            for records in polled.values():
                values.extend(r.value for r in records)
    return values


def test_an_idempotent_librdkafka_producer_writes_each_record_once_in_order(
    cluster: LocalCluster,
    admin: Admin,
    bootstrap: str,
    topic_name: str,
    librdkafka_log: tuple[logging.Logger, KeptLog],
) -> None:
    logger, kept = librdkafka_log
    admin.create_topic(topic_name, 1, 3)
    producer = Producer(
        ck_config(
            bootstrap,
            logger,
            **{"enable.idempotence": True, "acks": "all", "linger.ms": 5},
        )
    )
    values = [f"v{i}".encode() for i in range(RECORDS)]
    produce_all(producer, topic_name, values, 1)
    assert any("InitProducerId" in line for line in kept.lines)
    with cluster.consumer(group_id=None, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic_name, 0)])
        read: list[Any] = []
        deadline = time.monotonic() + 60
        while len(read) < RECORDS and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                read.extend(records)
    assert [r.value for r in read] == values
    assert [r.offset for r in read] == list(range(RECORDS))


def test_a_librdkafka_transaction_commits_and_another_aborts_for_read_committed_consumers(
    cluster: LocalCluster,
    admin: Admin,
    bootstrap: str,
    topic_name: str,
    librdkafka_log: tuple[logging.Logger, KeptLog],
) -> None:
    logger, _ = librdkafka_log
    admin.create_topic(topic_name, 2, 3)
    producer = Producer(
        ck_config(bootstrap, logger, **{"transactional.id": f"ck-{uuid.uuid4().hex}"})
    )
    producer.init_transactions(TXN_TIMEOUT_S)
    # A consumer that never joins: its group metadata is the group id alone, and the group's first
    # use may find __consumer_offsets still being created (FindCoordinator waits for it).
    offsets_owner = Consumer(
        ck_config(bootstrap, logger, **{"group.id": f"txn-{uuid.uuid4().hex}"})
    )

    committed = [f"c{i}".encode() for i in range(10)]
    producer.begin_transaction()
    produce_all(producer, topic_name, committed, 2)
    # AddOffsetsToTxn, then TxnOffsetCommit at the group's coordinator.
    producer.send_offsets_to_transaction(
        [CkTopicPartition(topic_name, 0, 5)],
        offsets_owner.consumer_group_metadata(),
        TXN_TIMEOUT_S,
    )
    producer.commit_transaction(TXN_TIMEOUT_S)

    aborted = [f"a{i}".encode() for i in range(10)]
    producer.begin_transaction()
    produce_all(producer, topic_name, aborted, 2)
    producer.abort_transaction(TXN_TIMEOUT_S)

    last = [f"c{i}".encode() for i in range(10, 15)]
    producer.begin_transaction()
    produce_all(producer, topic_name, last, 2)
    producer.commit_transaction(TXN_TIMEOUT_S)
    committed += last

    everything = ck_read(bootstrap, logger, topic_name, 2, "read_uncommitted", 25)
    assert sorted(everything) == sorted(committed + aborted)
    ck_committed = ck_read(bootstrap, logger, topic_name, 2, "read_committed", 15)
    assert sorted(ck_committed) == sorted(committed)
    assert sorted(rafka_read(cluster, topic_name, "read_committed", 15)) == sorted(committed)

    (offset,) = offsets_owner.committed([CkTopicPartition(topic_name, 0)], timeout=30)
    assert offset.offset == 5
    offsets_owner.close()


def test_a_kafka_python_transaction_commits_and_another_aborts(
    cluster: LocalCluster, admin: Admin, bootstrap: str, topic_name: str
) -> None:
    admin.create_topic(topic_name, 2, 3)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"kp-{uuid.uuid4().hex}")
    group = f"kp-group-{uuid.uuid4().hex}"
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(6):
        producer.send(topic_name, f"c{i}".encode(), partition=i % 2)
    # AddOffsetsToTxn, then TxnOffsetCommit at the group's coordinator.
    producer.send_offsets_to_transaction(
        {KafkaTopicPartition(topic_name, 0): OffsetAndMetadata(3, "", -1)}, group
    )
    producer.commit_transaction()
    producer.begin_transaction()
    for i in range(6):
        producer.send(topic_name, f"a{i}".encode(), partition=i % 2)
    # Written before the abort, so the log holds them and only the ABORT marker hides them.
    producer.flush()
    producer.abort_transaction()
    producer.close()

    committed = [f"c{i}".encode() for i in range(6)]
    assert sorted(rafka_read(cluster, topic_name, "read_committed", 6)) == sorted(committed)
    everything = rafka_read(cluster, topic_name, "read_uncommitted", 12)
    assert len(everything) == 12

    # The commit marker makes the transaction's offsets visible to OffsetFetch.
    owner = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    wait_until(
        lambda: owner.committed(KafkaTopicPartition(topic_name, 0)) == 3,
        60,
        "the transaction's offset commit",
    )
    owner.close()
