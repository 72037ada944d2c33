"""Grouped consumers keep their deadlines and never keep partitions they lost (real ZooKeeper, Ray).

The notebook scenario: several consumers of one group driven from one thread, each polled in turn
with a short timeout. Every poll returns on time (a join not finished goes on at the next poll),
the members' assignments never overlap, and the group forms and rebalances within seconds. A member
paused past its session timeout learns on resuming that it was removed: it reads and commits nothing
of its old partitions, and rejoins for a fresh assignment. The module shares one cluster of its own
with a small ``__consumer_offsets`` and otherwise the broker's default group settings (a 3 s
initial rebalance delay, sessions of at least 6 s).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.consumer_coordinator import CommitFailedError
from rafka.clients.member_state import MemberState
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.types import OffsetAndMetadata, TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
NS = "rafka-deadlines"

POLL_MS = 100
SLACK_S = 1.0
"""What a poll may take beyond its timeout on a loaded two-core machine (metadata, offsets)."""
FORM_S = 15.0
"""A few seconds: the broker's 3 s initial delay, plus a heartbeat interval for members to hear."""


class Notebook:
    """Consumers of one group polled in turn from this thread, checking each poll's time and that no
    partition is owned by two members."""

    def __init__(self, cluster: LocalCluster, group_id: str, topic: str) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.topic = topic
        self.members: list[Consumer] = []
        self.records: dict[int, list[tuple[int, int]]] = {}

    def add(self, listener: Any = None, **config: Any) -> Consumer:
        consumer = self.cluster.consumer(
            group_id=self.group_id,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            heartbeat_interval_ms=1000,
            **config,
        )
        consumer.subscribe([self.topic], listener=listener)
        self.members.append(consumer)
        return consumer

    def poll(self, consumer: Consumer) -> None:
        started = time.monotonic()
        batch = consumer.poll(timeout_ms=POLL_MS)
        took = time.monotonic() - started
        assert took < POLL_MS / 1000 + SLACK_S, f"poll took {took:.2f}s"
        owned = consumer.assignment()
        for tp, records in batch.items():
            assert tp in owned, f"records of {tp} returned to a member that does not own it"
            self.records.setdefault(id(consumer), []).extend(
                (tp.partition, r.offset) for r in records
            )
        self.check_disjoint()

    def check_disjoint(self) -> None:
        owned = [m.assignment() for m in self.members]
        assert sum(map(len, owned)) == len(set().union(*owned)), f"overlapping: {owned}"

    def round_until(self, condition: Callable[[], bool], timeout_s: float, what: str) -> float:
        """Poll every member in turn until ``condition()``; the seconds it took."""
        started = time.monotonic()
        while not condition():
            assert time.monotonic() - started < timeout_s, (
                f"{what} not within {timeout_s}s: {[sorted(m.assignment()) for m in self.members]}"
            )
            for consumer in self.members:
                self.poll(consumer)
        return time.monotonic() - started

    def covered_once(self, partitions: int, members: int) -> bool:
        owned = [m.assignment() for m in self.members]
        return len(set().union(*owned)) == partitions and sum(1 for a in owned if a) == members

    def generation(self) -> int:
        """The generation every member is stable in, or -1 while they are not all stable in one."""
        generations = set()
        for consumer in self.members:
            group = consumer._group
            if group is None or group.state is not MemberState.STABLE:
                return -1
            generations.add(group.generation)
        return generations.pop() if len(generations) == 1 else -1

    def rebalanced(self, after: int, partitions: int, owners: int) -> bool:
        """Whether the members agree on a generation newer than ``after``, covering every partition
        with ``owners`` members."""
        return self.generation() > after and self.covered_once(partitions, owners)

    def close(self, consumer: Consumer) -> None:
        started = time.monotonic()
        consumer.close(timeout_ms=2000)
        assert time.monotonic() - started < 2 + SLACK_S
        self.members.remove(consumer)


@pytest.fixture(scope="module")
def cluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """Three brokers with a three-partition offsets topic, loaded before the tests run."""
    local = LocalCluster(
        brokers=3,
        data_dir=session_dir / "deadlines",
        zookeeper=zookeeper.connect_string,
        cluster_name="deadlines",
        namespace=NS,
        node_ids=ray_nodes,
        broker_config={
            "zookeeper_session_timeout_ms": 4000,
            "replica_fetch_backoff_ms": 100,
            "offsets_topic_num_partitions": 3,
        },
    )
    with local:
        # The first group request creates __consumer_offsets: not part of what the tests time.
        Admin(namespace=NS, request_timeout_ms=120_000).list_group_offsets("warm-up")
        yield local


@pytest.fixture(scope="module")
def admin(cluster: LocalCluster) -> Admin:
    """An admin client of the module's cluster."""
    return cluster.admin()


@pytest.fixture
def notebook(cluster: LocalCluster, admin: Admin, topic_name: str) -> Iterator[Notebook]:
    admin.create_topic(topic_name, num_partitions=3, replication_factor=1)
    book = Notebook(cluster, f"{topic_name}-group", topic_name)
    yield book
    for consumer in list(book.members):
        consumer.close(timeout_ms=2000)


def test_three_members_polled_from_one_thread_form_and_rebalance_within_seconds(
    notebook: Notebook,
) -> None:
    for _ in range(3):
        notebook.add()
    formed = notebook.round_until(
        lambda: notebook.covered_once(3, 3), FORM_S, "the group of three to form"
    )
    assert formed < FORM_S
    three = notebook.generation()
    notebook.add()
    notebook.round_until(
        lambda: notebook.rebalanced(three, 3, 3), FORM_S, "the group to rebalance with a fourth"
    )
    four = notebook.generation()
    notebook.close(next(m for m in notebook.members if m.assignment()))
    notebook.round_until(
        lambda: notebook.rebalanced(four, 3, 3),
        FORM_S,
        "the group to rebalance after a member closed",
    )


class Lost:
    """A rebalance listener recording lost and revoked partitions."""

    def __init__(self) -> None:
        self.lost: list[set[TopicPartition]] = []
        self.revoked: list[set[TopicPartition]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revoked.append(set(revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.lost.append(set(lost))


def test_a_member_paused_past_its_session_timeout_reads_and_commits_nothing_of_its_old_partitions(
    cluster: LocalCluster, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, num_partitions=2, replication_factor=1)
    with cluster.producer() as producer:
        for i in range(20):
            producer.send(topic_name, f"before-{i}".encode(), partition=i % 2)
    book = Notebook(cluster, f"{topic_name}-group", topic_name)
    listener = Lost()
    # Paused past both its session timeout and max_poll_interval_ms: the heartbeat thread leaves.
    paused = book.add(listener, session_timeout_ms=6000, max_poll_interval_ms=3000)
    other = book.add(session_timeout_ms=6000)
    try:
        book.round_until(lambda: book.covered_once(2, 2), FORM_S, "the group of two to form")
        old = paused.assignment()
        assert len(old) == 1
        group = paused._group
        assert group is not None
        old_member = group.member_id
        before = admin.list_group_offsets(book.group_id)
        pause_until = time.monotonic() + 8
        with cluster.producer() as producer:
            for i in range(20):
                producer.send(topic_name, f"during-{i}".encode(), partition=i % 2)
        while time.monotonic() < pause_until or len(other.assignment()) < 2:
            assert time.monotonic() < pause_until + FORM_S, "the live member never took over"
            book.poll(other)
        assert paused.assignment() == set()
        with pytest.raises(CommitFailedError):
            paused.commit({tp: OffsetAndMetadata(1, "") for tp in old})
        assert admin.list_group_offsets(book.group_id) == before
        book.round_until(
            lambda: book.rebalanced(-1, 2, 2),
            FORM_S,
            "the paused member to rejoin",
        )
        assert listener.lost == [old]
        assert listener.revoked == []
        assert group.member_id != old_member
        assert len(paused.assignment()) == 1
    finally:
        for consumer in list(book.members):
            consumer.close(timeout_ms=2000)
