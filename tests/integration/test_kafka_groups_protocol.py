"""Consumer groups over Kafka's wire protocol: kafka-python members share a group's partitions,
rebalance when a member joins, and commit offsets that rafka's own tools read; a kafka-python
member and a rafka member split one group."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.groups.subscription_codec import decode_assignment
from rafka.protocol.types import TopicPartition

pytestmark = [
    pytest.mark.timeout(300),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]

PARTITIONS = 4
DEADLINE_S = 90.0


@pytest.fixture(scope="module")
def bootstrap(cluster: LocalCluster) -> str:
    """The shared cluster's bootstrap string."""
    return cluster.bootstrap_servers()


@pytest.fixture
def members() -> Iterator[list[Any]]:
    """The consumers (kafka-python's or rafka's) a test starts, closed (leaving their group) at
    its end."""
    started: list[Any] = []
    yield started
    for consumer in started:
        consumer.close()


def member(bootstrap: str, group: str, topic: str, **config: Any) -> KafkaConsumer:
    """A kafka-python consumer in ``group`` subscribed to ``topic``."""
    return KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        heartbeat_interval_ms=500,
        session_timeout_ms=10_000,
        **config,
    )


@contextmanager
def polled_in_threads(consumers: list[Any]) -> Iterator[list[BaseException]]:
    """Poll each consumer (kafka-python's or rafka's) in a loop of its own thread, as
    applications run them, while the block runs; yields the errors those polls raised.

    Not one loop taking turns: kafka-python 3.0.12 drops a JoinGroup/SyncGroup round that
    completes while its poll is not running and joins again, and a leader that rejoins starts a
    new rebalance, so two members polled in turn can rebalance for minutes."""
    stop = threading.Event()
    failures: list[BaseException] = []

    def run(consumer: Any) -> None:
        try:
            while not stop.is_set():
                consumer.poll(timeout_ms=100)
        except BaseException as exc:  # reported by the waiting thread
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in consumers]
    for thread in threads:
        thread.start()
    try:
        yield failures
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)


def poll_until(
    consumers: list[Any],
    done: Callable[[], bool],
    what: str,
    step: Callable[[], object] = lambda: time.sleep(0.05),
) -> None:
    """Poll the consumers in threads (their group work happens inside poll) until ``done()``,
    calling ``step`` between checks."""
    deadline = time.monotonic() + DEADLINE_S
    with polled_in_threads(consumers) as failures:
        while not done():
            if failures:
                raise failures[0]
            if time.monotonic() > deadline:
                assignments = [sorted(c.assignment()) for c in consumers]
                raise AssertionError(f"{what} within {DEADLINE_S} s; assignments: {assignments}")
            step()


def split_evenly(consumers: list[Any]) -> bool:
    """Whether the consumers' (kafka-python's, confluent-kafka's or rafka's) assignments are
    disjoint, cover every partition and are even."""
    assigned = [{(tp.topic, tp.partition) for tp in c.assignment()} for c in consumers]
    union = set().union(*assigned)
    return (
        len(union) == PARTITIONS
        and sum(len(a) for a in assigned) == PARTITIONS
        and all(len(a) == PARTITIONS // len(consumers) for a in assigned)
    )


def test_two_kafka_python_members_split_the_partitions_and_rebalance_on_join(
    admin: Admin, bootstrap: str, topic_name: str, members: list[KafkaConsumer]
) -> None:
    admin.create_topic(topic_name, num_partitions=PARTITIONS, replication_factor=3)
    group = f"{topic_name}-group"
    members.append(member(bootstrap, group, topic_name))
    poll_until(members, lambda: len(members[0].assignment()) == PARTITIONS, "one member owns all")
    members.append(member(bootstrap, group, topic_name))
    poll_until(members, lambda: split_evenly(members), "two members split the partitions")

    described = admin.describe_group(group)
    assert described.state == "Stable"
    # The assignments kafka-python's leader wrote are Kafka's bytes, which rafka's tools decode.
    assert sorted(len(decode_assignment(m.assignment)) for m in described.members) == [2, 2]


def test_offsets_committed_by_kafka_python_are_read_by_rafka_and_resumed_after_restart(
    admin: Admin, cluster: LocalCluster, bootstrap: str, topic_name: str
) -> None:
    admin.create_topic(topic_name, num_partitions=1, replication_factor=3)
    with cluster.producer() as producer:
        for i in range(10):
            producer.send(topic_name, value=f"v{i}".encode())
    group = f"{topic_name}-group"
    consumer = member(bootstrap, group, topic_name)
    seen: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(seen) < 6 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200, max_records=6 - len(seen)).values():
            seen.extend(r.value for r in records)
    assert seen == [f"v{i}".encode() for i in range(6)]
    consumer.commit()
    assert consumer.committed(KafkaTopicPartition(topic_name, 0)) == 6
    consumer.close()

    offsets = admin.list_group_offsets(group)
    assert offsets[TopicPartition(topic_name, 0)].offset == 6

    resumed = member(bootstrap, group, topic_name)
    rest: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(rest) < 4 and time.monotonic() < deadline:
        for records in resumed.poll(timeout_ms=200).values():
            rest.extend(r.value for r in records)
    resumed.close()
    assert rest == [f"v{i}".encode() for i in range(6, 10)]


def test_a_kafka_python_member_and_a_rafka_member_split_one_group(
    admin: Admin, cluster: LocalCluster, bootstrap: str, topic_name: str, members: list[Any]
) -> None:
    admin.create_topic(topic_name, num_partitions=PARTITIONS, replication_factor=3)
    group = f"{topic_name}-group"
    members.append(member(bootstrap, group, topic_name))
    members.append(
        cluster.consumer(
            topic_name,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            heartbeat_interval_ms=500,
            session_timeout_ms=10_000,
        )
    )
    poll_until(members, lambda: split_evenly(members), "a kafka-python and a rafka member split")

    described = admin.describe_group(group)
    assert described.protocol in {"range", "roundrobin"}
    assert {m.client_id.startswith("kafka-python") for m in described.members} == {True, False}


def test_a_confluent_kafka_member_consumes_commits_and_shares_a_group_with_kafka_python(
    admin: Admin, cluster: LocalCluster, bootstrap: str, topic_name: str, members: list[Any]
) -> None:
    admin.create_topic(topic_name, num_partitions=PARTITIONS, replication_factor=3)
    with cluster.producer() as producer:
        for i in range(40):
            producer.send(topic_name, value=f"v{i}".encode(), partition=i % PARTITIONS)
    group = f"{topic_name}-group"
    confluent = ConfluentConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 10_000,
            "heartbeat.interval.ms": 500,
        }
    )
    try:
        confluent.subscribe([topic_name])
        values: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(values) < 40 and time.monotonic() < deadline:
            message = confluent.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            values.append(message.value() or b"")
        assert sorted(values) == sorted(f"v{i}".encode() for i in range(40))
        confluent.commit(asynchronous=False)
        committed = admin.list_group_offsets(group)
        assert {tp.partition: o.offset for tp, o in committed.items()} == {
            p: 10 for p in range(PARTITIONS)
        }

        # A kafka-python member joins: librdkafka gives up half the partitions.
        members.append(member(bootstrap, group, topic_name))
        # librdkafka's assignment() waits for its own poll, so confluent is polled here.
        poll_until(
            members,
            lambda: split_evenly([confluent, members[0]]),
            "a confluent-kafka and a kafka-python member split",
            step=lambda: confluent.poll(0.1),
        )
    finally:
        confluent.close()
