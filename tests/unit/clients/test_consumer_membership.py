"""The consumer's group membership against a fake coordinator running the real protocol: ``poll``
and the other calls keep their deadlines while a join waits, and a member the coordinator removed
drops its partitions at once, never commits them, and rejoins."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from rafka.clients.consumer import Consumer
from rafka.clients.consumer_coordinator import CommitFailedError
from rafka.clients.member_state import MemberState
from rafka.protocol.errors import KafkaTimeoutError
from rafka.protocol.types import OffsetAndMetadata, TopicPartition
from rafka.testing import wait_until

GROUP = "g"
SLACK_S = 0.25
"""What a call may take beyond its timeout (scheduling, one metadata answer)."""

ALL = {TopicPartition("events", p) for p in range(3)}


def member(fake: Any, **config: Any) -> Consumer:
    settings = {
        "group_id": GROUP,
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 50,
        "max_poll_interval_ms": 5000,
        "request_timeout_ms": 2000,
        "fetch_max_wait_ms": 20,
        "enable_auto_commit": False,
        **config,
    }
    consumer = Consumer(transport=fake.transport, **settings)
    return consumer


class Recorder:
    """A rebalance listener writing down what it hears."""

    def __init__(self) -> None:
        self.events: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.events.append(("revoked", set(revoked)))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.events.append(("assigned", set(assigned)))

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.events.append(("lost", set(lost)))


def timed_poll(consumer: Consumer, timeout_ms: int) -> float:
    started = time.monotonic()
    consumer.poll(timeout_ms=timeout_ms)
    return time.monotonic() - started


def stable_alone(fake: Any, listener: Any = None) -> Consumer:
    consumer = member(fake)
    consumer.subscribe(["events"], listener=listener)
    wait_until(
        lambda: timed_poll(consumer, 50) is not None and consumer.assignment() == ALL,
        10,
        "the only member to get every partition",
    )
    return consumer


def test_poll_returns_on_time_while_its_join_waits_and_the_next_poll_goes_on(
    fake_cluster: Any, group_cluster: Any
) -> None:
    membership = fake_cluster.groups.membership
    membership.config = dataclasses.replace(membership.config, group_initial_rebalance_delay_ms=600)
    consumer = member(fake_cluster)
    consumer.subscribe(["events"])
    assert timed_poll(consumer, 100) < 0.1 + SLACK_S
    assert consumer._group is not None and consumer._group.state is MemberState.JOINING
    wait_until(
        lambda: timed_poll(consumer, 100) < 0.1 + SLACK_S and consumer.assignment() == ALL,
        5,
        "the join parked by the initial delay to complete on a later poll",
    )


def test_three_members_polled_from_one_thread_form_a_group_with_disjoint_assignments(
    fake_cluster: Any, group_cluster: Any
) -> None:
    members = [member(fake_cluster, client_id=f"c{i}") for i in range(3)]
    for consumer in members:
        consumer.subscribe(["events"])
    deadline = time.monotonic() + 10
    while True:
        for consumer in members:
            assert timed_poll(consumer, 100) < 0.1 + SLACK_S
            owned = [c.assignment() for c in members]
            assert sum(len(a) for a in owned) == len(set().union(*owned)), owned
        if all(len(c.assignment()) == 1 for c in members):
            break
        assert time.monotonic() < deadline, [c.assignment() for c in members]
    for consumer in members:
        consumer.close(timeout_ms=1000)


def test_a_removed_member_loses_its_partitions_at_its_next_heartbeat_and_rejoins(
    fake_cluster: Any, group_cluster: Any
) -> None:
    listener = Recorder()
    consumer = stable_alone(fake_cluster, listener)
    assert consumer._group is not None
    old_member = consumer._group.member_id
    fake_cluster.groups.remove(GROUP, old_member)
    wait_until(lambda: consumer.assignment() == set(), 5, "the heartbeat to report the removal")
    with pytest.raises(CommitFailedError):
        consumer.commit({TopicPartition("events", 0): OffsetAndMetadata(1, "")})
    consumer.poll(timeout_ms=0)
    assert ("lost", ALL) in listener.events
    assert ("revoked", ALL) not in listener.events
    wait_until(
        lambda: timed_poll(consumer, 50) is not None and consumer.assignment() == ALL,
        5,
        "the member to rejoin",
    )
    assert consumer._group.member_id != old_member
    assert fake_cluster.groups.commits == []


def test_a_listener_without_on_partitions_lost_hears_revoked(
    fake_cluster: Any, group_cluster: Any
) -> None:
    class Plain:
        def __init__(self) -> None:
            self.revoked: list[set[TopicPartition]] = []

        def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            self.revoked.append(set(revoked))

        def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            pass

    listener = Plain()
    consumer = stable_alone(fake_cluster, listener)
    assert consumer._group is not None
    fake_cluster.groups.remove(GROUP, consumer._group.member_id)
    wait_until(lambda: consumer.assignment() == set(), 5, "the heartbeat to report the removal")
    consumer.poll(timeout_ms=0)
    assert listener.revoked == [ALL]


def test_a_commit_refused_for_a_stale_generation_drops_the_partitions(
    fake_cluster: Any, group_cluster: Any
) -> None:
    listener = Recorder()
    consumer = member(fake_cluster, heartbeat_interval_ms=5000)
    consumer.subscribe(["events"], listener=listener)
    wait_until(
        lambda: timed_poll(consumer, 50) is not None and consumer.assignment() == ALL,
        10,
        "the only member to get every partition",
    )
    assert consumer._group is not None
    fake_cluster.groups.remove(GROUP, consumer._group.member_id)
    with pytest.raises(CommitFailedError):
        consumer.commit({TopicPartition("events", 0): OffsetAndMetadata(1, "")})
    assert consumer.assignment() == set()
    assert consumer.poll(timeout_ms=0) == {}
    assert ("lost", ALL) in listener.events
    assert fake_cluster.groups.commits == []


def test_commit_and_committed_keep_their_timeout_when_the_coordinator_hangs(
    fake_cluster: Any, group_cluster: Any
) -> None:
    consumer = stable_alone(fake_cluster)
    fake_cluster.groups.silent.update({"offset_commit", "offset_fetch"})
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError):
        consumer.commit({TopicPartition("events", 0): OffsetAndMetadata(1, "")}, timeout_ms=200)
    assert time.monotonic() - started < 0.2 + SLACK_S
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError):
        consumer.committed(TopicPartition("events", 0), timeout_ms=200)
    assert time.monotonic() - started < 0.2 + SLACK_S


def test_close_keeps_its_timeout_when_the_coordinator_hangs(
    fake_cluster: Any, group_cluster: Any
) -> None:
    consumer = stable_alone(fake_cluster)
    fake_cluster.groups.silent.update({"offset_commit", "leave_group", "heartbeat"})
    started = time.monotonic()
    consumer.close(timeout_ms=300)
    assert time.monotonic() - started < 0.3 + SLACK_S
