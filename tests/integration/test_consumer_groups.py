"""Consumer groups on a real cluster: assignment, rebalances, commits, fencing and failover.

The module has a cluster of its own (namespace ``rafka-groups``) with a small
``__consumer_offsets``, no initial rebalance delay and short session timeouts, so
rebalances take about a second. A consumer that must take part in a multi-member
group polls on a thread of its own (``Member``): a JoinGroup blocks until every
member has rejoined. Tests wait on conditions with deadlines, never on sleeps
(the one sleep stands for an application busy with the records of a poll).
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import ray

from rafka.actors import names
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.consumer_coordinator import CommitFailedError
from rafka.clients.partitioner import partition_for_key
from rafka.clients.producer import Producer
from rafka.clients.records import ConsumerRecord, RecordMetadata
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.groups.assignors import Subscription
from rafka.groups.offsets_codec import OFFSETS_TOPIC, partition_for
from rafka.groups.subscription_codec import decode_assignment, encode_subscription
from rafka.protocol.errors import (
    Errors,
    InvalidGroupIdError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.groups import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitEntry,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from rafka.protocol.messages.metadata import MetadataRequest
from rafka.protocol.types import NewTopic, OffsetAndMetadata, TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
NS = "rafka-groups"
OFFSETS_PARTITIONS = 3
RECORDS_PER_PHASE = 10
MEMBER_CONFIG: dict[str, Any] = {
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    "session_timeout_ms": 3000,
    "heartbeat_interval_ms": 300,
    "max_poll_interval_ms": 10_000,
    "metadata_max_age_ms": 1000,
}


@pytest.fixture(scope="module")
def gcluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """Three brokers with group settings that make rebalances quick (and topic auto-creation on)."""
    local = LocalCluster(
        brokers=3,
        data_dir=session_dir / "groups",
        zookeeper=zookeeper.connect_string,
        cluster_name="groups",
        namespace=NS,
        node_ids=ray_nodes,
        broker_config={
            "zookeeper_session_timeout_ms": 4000,
            "replica_lag_time_max_ms": 2000,
            "replica_fetch_backoff_ms": 100,
            "replica_fetch_wait_max_ms": 200,
            "offsets_topic_num_partitions": OFFSETS_PARTITIONS,
            "group_initial_rebalance_delay_ms": 0,
            "group_min_session_timeout_ms": 500,
            "log_retention_check_interval_ms": 1000,
            "auto_create_topics_enable": True,
            "num_partitions": 2,
            "default_replication_factor": 2,
        },
    )
    with local:
        yield local


@pytest.fixture(scope="module")
def gadmin(gcluster: LocalCluster) -> Admin:
    return gcluster.admin()


# ------------------------------------------------------------------------------------------ helpers


def create_topic(
    cluster: LocalCluster,
    name: str,
    partitions: int,
    replication: int,
    config: dict[str, str] | None = None,
) -> None:
    """Create a topic and wait until every broker's metadata has it
    led: clients take whichever broker answers first, and a member
    whose metadata lacks a subscribed topic would rejoin without it."""
    cluster.admin().create_topics(
        [NewTopic(name, partitions, replication, tuple((config or {}).items()))]
    )

    def everywhere() -> bool:
        for handle in list(cluster.brokers.values()):
            response = ray.get(
                handle.metadata.remote(MetadataRequest((name,), allow_auto_topic_creation=False)),
                timeout=30,
            )
            (topic,) = response.topics
            if (
                topic.error is not Errors.NONE
                or len(topic.partitions) != partitions
                or any(p.leader < 0 for p in topic.partitions)
            ):
                return False
        return True

    wait_until(everywhere, 60, f"every broker to know topic {name}")


def tps(topic: str, partitions: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in range(partitions)]


def produce(topic: str, partitions: int, per_partition: int, prefix: str) -> list[RecordMetadata]:
    """``per_partition`` records to each partition, acknowledged by every in-sync replica."""
    with Producer(namespace=NS, acks="all") as producer:
        futures = [
            producer.send(topic, value=f"{prefix}-{p}-{i}".encode(), partition=p)
            for i in range(per_partition)
            for p in range(partitions)
        ]
        return [f.get(timeout=60) for f in futures]


def group_consumer(group: str, **config: Any) -> Consumer:
    """A consumer of ``group`` driven from the test's own thread."""
    return Consumer(namespace=NS, group_id=group, **{**MEMBER_CONFIG, **config})


def poll_until(
    consumer: Consumer, done: Callable[[list[ConsumerRecord]], bool], timeout_s: float, what: str
) -> list[ConsumerRecord]:
    """Poll ``consumer`` until ``done(records so far)``."""
    records: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while not done(records):
        assert time.monotonic() < deadline, (
            f"timed out after {timeout_s}s waiting for {what}; got "
            f"{[(r.partition, r.offset) for r in records]}"
        )
        for part in consumer.poll(timeout_ms=300).values():
            records.extend(part)
    return records


def coordinator_id(cluster: LocalCluster, admin: Admin, group: str) -> int | None:
    """The group's coordinator -- the leader of its ``__consumer_offsets``
    partition -- once the metadata, every live broker's FindCoordinator
    and the coordinator actors' own ownership agree; else None."""
    wanted = partition_for(group, OFFSETS_PARTITIONS)
    leader = next(
        p.leader for p in admin.describe_topic(OFFSETS_TOPIC).partitions if p.partition == wanted
    )
    answers = {
        (found.error, found.coordinator_id)
        for found in ray.get(
            [b.find_coordinator.remote(group) for b in list(cluster.brokers.values())], timeout=30
        )
    }
    if answers != {(Errors.NONE, leader)}:
        return None
    owners = [
        b
        for b in list(cluster.brokers)
        if wanted in ray.get(coordinator_handle(b).describe.remote(), timeout=30)["owned"]
    ]
    return leader if owners == [leader] else None


def coordinator_handle(broker_id: int) -> Any:
    return ray.get_actor(names.coordinator_actor_name(broker_id), namespace=NS)


def coordinator_actor(cluster: LocalCluster, admin: Admin, group: str) -> Any:
    """The actor answering for ``group`` (creating ``__consumer_offsets`` first if need be)."""
    admin.describe_group(group)
    return coordinator_handle(
        wait_until(lambda: coordinator_id(cluster, admin, group), 60, f"the coordinator of {group}")
    )


def group_away_from_the_controller(cluster: LocalCluster, admin: Admin, prefix: str) -> str:
    """A group id whose coordinator is not on the active controller's
    broker, so that killing the coordinator does not also fail the
    controller over (a different failure, tested in test_failover)."""
    admin.describe_group(prefix)  # creates __consumer_offsets
    controller = admin.describe_cluster().controller_id
    for i in range(50):
        group = f"{prefix}-{i}"
        if (
            wait_until(
                functools.partial(coordinator_id, cluster, admin, group),
                60,
                f"the coordinator of {group}",
            )
            != controller
        ):
            return group
    raise AssertionError(f"every offsets partition is led by the controller's broker {controller}")


_sequence = itertools.count()  # orders deliveries and commits across member threads


@dataclass(frozen=True)
class Delivery:
    """One record as a member's poll returned it."""

    seq: int
    member: str
    tp: TopicPartition
    offset: int
    value: bytes


@dataclass(frozen=True)
class Commit:
    """A commit that succeeded: the offsets (next to consume) it stored, after what it covers."""

    seq: int
    member: str
    offsets: dict[TopicPartition, int]


class Member:
    """A group member polling on a thread of its own; after each poll that returned records
    it commits the processed offsets of that poll explicitly (``enable_auto_commit`` is off)."""

    def __init__(
        self,
        name: str,
        group: str,
        topics: Iterable[str] = (),
        pattern: str | None = None,
        **config: Any,
    ) -> None:
        self.name = name
        self.consumer = group_consumer(group, client_id=name, **config)
        self.consumer.subscribe(list(topics), pattern=pattern)
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self._commits: list[Commit] = []
        self._assigned: frozenset[TopicPartition] = frozenset()
        self.failed_commits = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self._paused.is_set():
                    self._stop.wait(0.05)  # a stuck application: it does not call poll() at all
                    continue
                batch = self.consumer.poll(timeout_ms=200)
                delivered = [
                    Delivery(next(_sequence), self.name, tp, r.offset, r.value)  # type: ignore[arg-type]
                    for tp, part in batch.items()
                    for r in part
                ]
                commit = None
                if batch:
                    offsets = {tp: part[-1].offset + 1 for tp, part in batch.items() if part}
                    try:
                        self.consumer.commit(
                            {tp: OffsetAndMetadata(o, "") for tp, o in offsets.items()}
                        )
                        commit = Commit(next(_sequence), self.name, offsets)
                    except CommitFailedError:
                        self.failed_commits += 1
                with self._lock:
                    self._deliveries += delivered
                    if commit is not None:
                        self._commits.append(commit)
                    self._assigned = frozenset(self.consumer.assignment())
        except BaseException as exc:  # reported by stop()
            self.error = exc
        finally:
            self.consumer.close()

    def assigned(self) -> frozenset[TopicPartition]:
        """The assignment as of this member's last poll."""
        with self._lock:
            return self._assigned

    def deliveries(self) -> list[Delivery]:
        with self._lock:
            return list(self._deliveries)

    def commits(self) -> list[Commit]:
        with self._lock:
            return list(self._commits)

    def pause(self) -> None:
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    def signal_stop(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        """Stop polling and close the consumer (LeaveGroup); re-raise the thread's failure."""
        self._stop.set()
        self._thread.join(timeout=90)
        assert not self._thread.is_alive(), f"member {self.name} did not stop"
        if self.error is not None:
            raise AssertionError(f"member {self.name} failed: {self.error!r}") from self.error


def stop_all(members: Iterable[Member]) -> None:
    members = list(members)
    for member in members:
        member.signal_stop()
    for member in members:
        member.stop()


def settled(
    admin: Admin, group: str, members: list[Member]
) -> dict[str, frozenset[TopicPartition]] | None:
    """Each member's assignment once the group is Stable with exactly ``members`` and each of them
    has polled since its assignment (its local assignment is the coordinator's); None until then."""
    description = admin.describe_group(group)
    if description.state != "Stable":
        return None
    coordinator_view = {
        m.client_id: frozenset(TopicPartition(*tp) for tp in decode_assignment(m.assignment))
        for m in description.members
    }
    if len(coordinator_view) != len(description.members) or sorted(coordinator_view) != sorted(
        m.name for m in members
    ):
        return None
    local = {m.name: m.assigned() for m in members}
    return local if local == coordinator_view else None


def assert_one_owner_each(
    owners: dict[str, frozenset[TopicPartition]], partitions: list[TopicPartition]
) -> None:
    owned = [tp for assigned in owners.values() for tp in assigned]
    assert sorted(owned) == sorted(partitions), (
        f"every partition must have exactly one owner: {owners}"
    )


def keys_one_per_partition(partitions: int) -> list[bytes]:
    """A key for each partition under the default (murmur2) partitioner, in partition order."""
    found: dict[int, bytes] = {}
    for i in itertools.count():
        key = f"key-{i}".encode()
        found.setdefault(partition_for_key(key, partitions), key)
        if len(found) == partitions:
            return [found[p] for p in range(partitions)]
    raise AssertionError("unreachable")


class BackgroundProducer:
    """Produces to every partition in turn, about 50 records a second, until stopped."""

    def __init__(self, topic: str, partitions: int) -> None:
        self.producer = Producer(namespace=NS, acks="all")
        self.topic, self.partitions = topic, partitions
        self._futures: list[Any] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="background-producer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for i in itertools.count():
            if self._stop.wait(0.02):
                return
            future = self.producer.send(
                self.topic, value=f"bg-{i}".encode(), partition=i % self.partitions
            )
            with self._lock:
                self._futures.append(future)

    def acked(self) -> dict[tuple[TopicPartition, int], bytes]:
        """(partition, offset) -> value of every acknowledged record so far."""
        with self._lock:
            futures = list(self._futures)
        return {
            (TopicPartition(m.topic, m.partition), m.offset): f"bg-{i}".encode()
            for i, f in enumerate(futures)
            if (m := f.value) is not None
        }

    def stop(self) -> dict[tuple[TopicPartition, int], bytes]:
        """Stop, wait for every send, and return them all (every one must have succeeded)."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(timeout=30)
            self.producer.flush(timeout=60)
            self.producer.close()
        with self._lock:
            failures = [f.exception for f in self._futures if not f.succeeded()]
        assert failures == [], f"background sends failed: {failures[:3]}"
        return self.acked()


def consumed(members: Iterable[Member]) -> set[tuple[TopicPartition, int]]:
    return {(d.tp, d.offset) for m in members for d in m.deliveries()}


# -------------------------------------------------------------------------------------------- tests


def test_one_member_gets_every_partition_and_three_members_get_one_each(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    create_topic(gcluster, "seed", 3, 1)
    partitions = tps("seed", 3)
    solo = Member("seed-solo", "seed-g1", ["seed"])
    trio = [Member(f"seed-trio-{i}", "seed-g2", ["seed"]) for i in range(3)]
    try:
        assert wait_until(
            lambda: settled(gadmin, "seed-g1", [solo]), 60, "group seed-g1 to settle"
        ) == {"seed-solo": frozenset(partitions)}
        owners = wait_until(
            lambda: settled(gadmin, "seed-g2", trio),
            60,
            "group seed-g2 to settle with three members",
        )
        assert sorted(len(assigned) for assigned in owners.values()) == [1, 1, 1]
        assert_one_owner_each(owners, partitions)
        with Producer(namespace=NS, acks="all") as producer:
            sent = {
                key: producer.send("seed", value=b"seed-" + key, key=key).get(timeout=30)
                for key in keys_one_per_partition(3)
            }
        assert sorted(meta.partition for meta in sent.values()) == [0, 1, 2]
        wait_until(
            lambda: len(solo.deliveries()) >= 3 and all(m.deliveries() for m in trio),
            60,
            "both groups to receive the records",
        )
        assert settled(gadmin, "seed-g2", trio) == owners, (
            "the group must not have rebalanced meanwhile"
        )
    finally:
        stop_all([solo, *trio])
    value_of = {
        TopicPartition("seed", meta.partition): b"seed-" + key for key, meta in sent.items()
    }
    assert sorted((d.tp, d.value) for d in solo.deliveries()) == sorted(value_of.items())
    for member in trio:
        (delivery,) = member.deliveries()
        assert owners[member.name] == {delivery.tp}
        assert delivery.value == value_of[delivery.tp] and delivery.offset == 0


def test_scaling_to_four_members_and_back_keeps_one_owner_per_partition_and_loses_nothing(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    topic, group = "scale", "scale-g"
    create_topic(gcluster, topic, 3, 1)
    partitions = tps(topic, 3)
    live: list[Member] = []
    everyone: list[Member] = []
    background = BackgroundProducer(topic, 3)

    def settle(what: str) -> dict[str, frozenset[TopicPartition]]:
        owners = wait_until(
            lambda: settled(gadmin, group, live), 60, f"the group to settle after {what}"
        )
        assert_one_owner_each(owners, partitions)
        # Records keep arriving in every phase, however quickly the group settles.
        wanted = len(background.acked()) + RECORDS_PER_PHASE
        wait_until(
            lambda: len(background.acked()) >= wanted,
            60,
            f"more records to be acknowledged once {what} settled",
        )
        target = set(background.acked())
        wait_until(
            lambda: target <= consumed(everyone),
            60,
            f"the group to consume what was acknowledged once {what} settled",
        )
        return owners

    try:
        for i in range(4):
            member = Member(f"scale-{i}", group, [topic])
            live.append(member)
            everyone.append(member)
            owners = settle(f"{member.name} joined")
        assert sorted(len(assigned) for assigned in owners.values()) == [0, 1, 1, 1], (
            "the fourth member idles"
        )
        while len(live) > 1:
            leaving = live.pop(0)
            leaving.stop()
            owners = settle(f"{leaving.name} left")
        assert owners == {live[0].name: frozenset(partitions)}
        produced = background.stop()
        wait_until(
            lambda: set(produced) <= consumed(everyone), 60, "everything produced to be consumed"
        )
    finally:
        try:
            background.stop()
        finally:
            stop_all(live)
    deliveries = sorted((d for m in everyone for d in m.deliveries()), key=lambda d: d.seq)
    commits = sorted((c for m in everyone for c in m.commits()), key=lambda c: c.seq)
    assert len(produced) >= 7 * RECORDS_PER_PHASE, "the producer must have run throughout"
    # No loss, and every record is what was produced there.
    assert set(produced) <= {(d.tp, d.offset) for d in deliveries}
    assert all(d.value == produced[(d.tp, d.offset)] for d in deliveries)
    # Duplicates only of uncommitted progress: no member
    # gets a record below an offset already committed.
    committed: dict[TopicPartition, int] = {}
    pending = iter(commits)
    next_commit = next(pending, None)
    for delivery in deliveries:
        while next_commit is not None and next_commit.seq < delivery.seq:
            for tp, offset in next_commit.offsets.items():
                committed[tp] = max(committed.get(tp, 0), offset)
            next_commit = next(pending, None)
        assert delivery.offset >= committed.get(delivery.tp, 0), (
            f"{delivery} redelivered although offset {committed[delivery.tp]} was already committed"
        )
    ends = {tp: max(o for (p, o) in produced if p == tp) + 1 for tp in partitions}
    assert gadmin.list_group_offsets(group) == {
        tp: OffsetAndMetadata(end, "") for tp, end in ends.items()
    }


def test_commit_from_a_stale_generation_or_a_removed_member_is_fenced(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    topic, group = "fence", "fence-g"
    create_topic(gcluster, topic, 3, 1)
    partitions = tps(topic, 3)
    stale = group_consumer(group, client_id="fence-stale", max_poll_interval_ms=5000)
    usurper: Member | None = None
    try:
        stale.subscribe([topic])
        poll_until(
            stale,
            lambda _: stale.assignment() == set(partitions),
            60,
            "the first member to own every partition",
        )
        before = gadmin.describe_group(group)
        (stale_member,) = before.members
        # A second member joins; the first never polls again, so it never rejoins:
        # the rebalance goes on without it once its max_poll_interval_ms passes.
        usurper = Member("fence-usurper", group, [topic])
        owners = wait_until(
            lambda: settled(gadmin, group, [usurper]),
            60,
            "the group to rebalance without the stale member",
        )
        assert owners == {"fence-usurper": frozenset(partitions)}
        after = gadmin.describe_group(group)
        assert after.generation_id > before.generation_id
        (live_member,) = after.members
        coordinator = coordinator_actor(gcluster, gadmin, group)
        entries = (OffsetCommitEntry(topic, 0, 1),)
        old_generation = ray.get(
            coordinator.offset_commit.remote(
                OffsetCommitRequest(group, before.generation_id, live_member.member_id, entries)
            ),
            timeout=30,
        )
        assert old_generation.error is Errors.ILLEGAL_GENERATION, old_generation
        removed = ray.get(
            coordinator.offset_commit.remote(
                OffsetCommitRequest(group, before.generation_id, stale_member.member_id, entries)
            ),
            timeout=30,
        )
        assert removed.error is Errors.UNKNOWN_MEMBER_ID, removed
        with pytest.raises(CommitFailedError):
            stale.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, "")})
        assert gadmin.list_group_offsets(group) == {}, "a fenced commit must store nothing"
    finally:
        stale.close()
        if usurper is not None:
            usurper.stop()


def test_pattern_subscription_picks_up_a_topic_created_after_subscribing(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    create_topic(gcluster, "pat-a", 1, 1)
    produce("pat-a", 1, 3, "a")
    member = Member("pattern", "pattern-g", pattern="pat-.*")
    try:
        wait_until(lambda: len(member.deliveries()) >= 3, 60, "the records of pat-a")
        create_topic(gcluster, "pat-b", 2, 1)
        produce("pat-b", 2, 2, "b")
        wait_until(
            lambda: (
                {d.tp.topic for d in member.deliveries()} == {"pat-a", "pat-b"}
                and len(member.deliveries()) >= 7
            ),
            30,
            "the records of pat-b, created after subscribing",
        )
        assert member.assigned() == {
            TopicPartition("pat-a", 0),
            TopicPartition("pat-b", 0),
            TopicPartition("pat-b", 1),
        }
    finally:
        member.stop()
    assert sorted(d.value for d in member.deliveries()) == sorted(
        [f"a-0-{i}".encode() for i in range(3)]
        + [f"b-{p}-{i}".encode() for p in range(2) for i in range(2)]
    )


def test_bad_group_input_is_refused_with_kafkas_errors(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    with pytest.raises(InvalidGroupIdError):
        Consumer(namespace=NS, group_id="")
    found = ray.get(gcluster.brokers[0].find_coordinator.remote(""), timeout=30)
    assert found.error is Errors.INVALID_GROUP_ID
    topic, group = "badin", "badin-g"
    create_topic(gcluster, topic, 1, 1)
    consumer = group_consumer(group)
    try:
        consumer.subscribe([topic])
        poll_until(
            consumer,
            lambda _: consumer.assignment() == {TopicPartition(topic, 0)},
            60,
            "the member's assignment",
        )
        with pytest.raises(UnknownTopicOrPartitionError):
            consumer.commit({TopicPartition(topic, 99): OffsetAndMetadata(1, "")})
        with pytest.raises(UnknownTopicOrPartitionError):
            consumer.commit({TopicPartition("no-such-topic", 0): OffsetAndMetadata(1, "")})
        with pytest.raises(ValueError):
            consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(-5, "")})
        consumer.commit(
            {TopicPartition(topic, 0): OffsetAndMetadata(0, "ok")}
        )  # the member itself is fine
        generation = gadmin.describe_group(group).generation_id
        coordinator = coordinator_actor(gcluster, gadmin, group)
        beat = ray.get(
            coordinator.heartbeat.remote(HeartbeatRequest(group, generation, "nobody")), timeout=30
        )
        assert beat.error is Errors.UNKNOWN_MEMBER_ID
        commit = ray.get(
            coordinator.offset_commit.remote(
                OffsetCommitRequest(group, generation, "nobody", (OffsetCommitEntry(topic, 0, 1),))
            ),
            timeout=30,
        )
        assert commit.error is Errors.UNKNOWN_MEMBER_ID
        assert consumer.committed(TopicPartition(topic, 0), metadata=True) == OffsetAndMetadata(
            0, "ok"
        )
    finally:
        consumer.close()


def test_committed_offset_outside_the_log_resets_to_the_log_start(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    topic = "trunc"
    create_topic(gcluster, topic, 1, 1, {"segment.bytes": "1024", "retention.bytes": "2048"})
    tp = TopicPartition(topic, 0)
    with Producer(namespace=NS, acks="all") as producer:
        for i in range(60):
            producer.send(topic, value=f"t-{i:03d}".encode() + b"." * 64).get(timeout=30)
    probe = Consumer(namespace=NS)
    try:
        log_start = wait_until(
            lambda: (o := probe.beginning_offsets([tp])[tp]) > 0 and o,
            60,
            "retention to delete old segments",
        )
        end = probe.end_offsets([tp])[tp]
    finally:
        probe.close()
    assert end == 60
    for group, committed in (("trunc-below", 0), ("trunc-beyond", 10_000)):
        # Commit from outside the group while it has no members, as Kafka allows.
        outsider = Consumer(namespace=NS, group_id=group)
        outsider.assign([tp])
        outsider.commit({tp: OffsetAndMetadata(committed, "")})
        assert outsider.committed(tp) == committed
        outsider.close()
        consumer = group_consumer(group)
        try:
            consumer.subscribe([topic])
            records = poll_until(
                consumer,
                lambda got: bool(got) and got[-1].offset == end - 1,
                60,
                f"group {group} (committed {committed}) to read the partition to its end",
            )
            assert records[0].offset >= log_start, (
                "the reset goes to the log start (retention may have moved it on)"
            )
            assert [r.offset for r in records] == list(range(records[0].offset, end))
            assert records[-1].value.startswith(b"t-059")  # type: ignore[union-attr]
            consumer.commit()
            assert consumer.committed(tp) == end
        finally:
            consumer.close()


def test_member_that_stops_polling_is_removed_after_max_poll_interval(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    topic, group = "stuck", "stuck-g"
    create_topic(gcluster, topic, 3, 1)
    partitions = tps(topic, 3)
    stuck = Member("stuck-stalled", group, [topic], max_poll_interval_ms=2000)
    live = Member("stuck-live", group, [topic])
    try:
        owners = wait_until(
            lambda: settled(gadmin, group, [stuck, live]),
            60,
            "both members to share the partitions",
        )
        assert owners["stuck-stalled"] and owners["stuck-live"]
        assert_one_owner_each(owners, partitions)
        stuck.pause()
        stalled_at = time.monotonic()
        owners = wait_until(
            lambda: settled(gadmin, group, [live]),
            30,
            "the stalled member's partitions to move to the live one",
        )
        elapsed = time.monotonic() - stalled_at
        assert owners == {"stuck-live": frozenset(partitions)}
        assert elapsed >= 1.0, (
            f"a heartbeating member was removed {elapsed:.1f}s into a 2s max_poll_interval_ms"
        )
        sent = produce(topic, 3, 2, "s")
        wait_until(
            lambda: (
                {(d.tp, d.offset) for d in live.deliveries()}
                >= {(TopicPartition(topic, m.partition), m.offset) for m in sent}
            ),
            30,
            "the live member to consume every partition",
        )
        assert stuck.deliveries() == []
        stuck.resume()
        owners = wait_until(
            lambda: settled(gadmin, group, [stuck, live]),
            60,
            "the stalled member to rejoin once it polls again",
        )
        assert_one_owner_each(owners, partitions)
    finally:
        stop_all([stuck, live])


def test_member_that_stops_heartbeating_is_removed_after_its_session_timeout(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    topic, group = "expiry", "expiry-g"
    create_topic(gcluster, topic, 3, 1)
    partitions = tps(topic, 3)
    live = Member("expiry-live", group, [topic])
    try:
        wait_until(
            lambda: settled(gadmin, group, [live]), 60, "the live member to own every partition"
        )
        coordinator = coordinator_actor(gcluster, gadmin, group)
        subscription = encode_subscription(Subscription((topic,)))
        # A member driven by hand: it joins and syncs, then never
        # heartbeats, as if its process died. Its rebalance timeout is long,
        # so only its session timeout can remove it within the deadline.
        joined = ray.get(
            coordinator.join_group.remote(
                JoinGroupRequest(
                    group,
                    1500,
                    120_000,
                    "",
                    "consumer",
                    (("range", subscription), ("roundrobin", subscription)),
                    "expiry-ghost",
                )
            ),
            timeout=60,
        )
        assert joined.error is Errors.NONE, joined
        assert joined.leader_id != joined.member_id, "the live member stays leader"
        synced = ray.get(
            coordinator.sync_group.remote(
                SyncGroupRequest(group, joined.generation_id, joined.member_id)
            ),
            timeout=60,
        )
        assert synced.error is Errors.NONE, synced
        ghost_partitions = {TopicPartition(*tp) for tp in decode_assignment(synced.assignment)}
        assert ghost_partitions, "the hand-driven member got partitions"
        owners = wait_until(
            lambda: settled(gadmin, group, [live]),
            30,
            "the silent member to expire and its partitions to move",
        )
        assert owners == {"expiry-live": frozenset(partitions)}
        beat = ray.get(
            coordinator.heartbeat.remote(
                HeartbeatRequest(group, joined.generation_id, joined.member_id)
            ),
            timeout=30,
        )
        assert beat.error is Errors.UNKNOWN_MEMBER_ID
    finally:
        live.stop()


def test_member_whose_join_waited_longer_than_max_poll_interval_keeps_its_membership(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    topic, group = "slowjoin", "slowjoin-g"
    create_topic(gcluster, topic, 2, 1)
    slow = Member("slowjoin-slow", group, [topic], max_poll_interval_ms=8000)
    joiner = group_consumer(group, client_id="slowjoin-new", max_poll_interval_ms=4000)
    try:
        wait_until(
            lambda: settled(gadmin, group, [slow]), 60, "the first member to own every partition"
        )
        slow.pause()
        # The rebalance the new member starts waits for the paused one until it
        # gives up its membership (max_poll_interval_ms=8000), so the new member's
        # first poll blocks for longer than its own max_poll_interval_ms=4000.
        started = time.monotonic()
        joiner.subscribe([topic])
        poll_until(
            joiner,
            lambda _: len(joiner.assignment()) == 2,
            60,
            "the new member to own every partition",
        )
        assert time.monotonic() - started > 4.0, "the join did not wait for the paused member"
        joined = gadmin.describe_group(group)
        assert joined.state == "Stable" and [m.client_id for m in joined.members] == [
            "slowjoin-new"
        ]
        time.sleep(1.0)  # handling the records of that poll: well within max_poll_interval_ms
        joiner.poll(timeout_ms=100)
        after = gadmin.describe_group(group)
        assert (after.generation_id, [m.member_id for m in after.members]) == (
            joined.generation_id,
            [m.member_id for m in joined.members],
        ), "the poll timer must restart when the join completes, not count the time spent joining"
    finally:
        joiner.close()
        slow.stop()


def test_auto_create_topics_creates_an_unknown_topic_on_first_use(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    """auto.create.topics.enable: producing to an unknown topic
    creates it with num.partitions and default.replication.factor; the
    send waits for the new partitions' leaders instead of failing."""
    with Producer(namespace=NS, acks="all") as producer:
        meta = producer.send("auto-created", b"first", partition=1).get(timeout=60)
    assert (meta.topic, meta.partition, meta.offset) == ("auto-created", 1, 0)
    description = gadmin.describe_topic("auto-created")
    assert len(description.partitions) == 2
    assert all(len(p.replicas) == 2 for p in description.partitions)
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("auto-created", 1)])
    values = wait_until(
        lambda: [r.value for recs in consumer.poll(1000).values() for r in recs],
        30,
        "the record back",
    )
    consumer.close()
    assert values == [b"first"]


def test_assigning_a_partition_of_an_unknown_topic_creates_it_and_waits_for_its_leader(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    """The consumer's assign asks for the topic with auto-creation allowed, as Kafka's consumer
    does (allow.auto.create.topics), and waits out LEADER_NOT_AVAILABLE while it is created."""
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("auto-assigned", 1)])
        assert consumer.assignment() == {TopicPartition("auto-assigned", 1)}
        assert consumer.poll(200) == {}
    finally:
        consumer.close()
    assert len(gadmin.describe_topic("auto-assigned").partitions) == 2


def test_coordinator_failover_keeps_committed_offsets_and_consumption_resumes(
    gcluster: LocalCluster, gadmin: Admin
) -> None:
    """Runs last: it kills a broker and leaves it dead (a restart would only slow the teardown)."""
    topic = "failover-data"
    group = group_away_from_the_controller(gcluster, gadmin, "failover-g")
    create_topic(gcluster, topic, 3, 3)
    partitions = tps(topic, 3)
    produce(topic, 3, 10, "a")
    consumer = group_consumer(group)
    successor: Consumer | None = None
    try:
        consumer.subscribe([topic])
        first = poll_until(consumer, lambda got: len(got) >= 30, 60, "the first 30 records")
        assert sorted((r.partition, r.offset) for r in first) == [
            (p, o) for p in range(3) for o in range(10)
        ]
        checkpoint: dict[TopicPartition, OffsetAndMetadata | int] = {
            tp: OffsetAndMetadata(7, f"checkpoint-{tp.partition}") for tp in partitions
        }
        consumer.commit(checkpoint)
        assert {tp: consumer.committed(tp, metadata=True) for tp in partitions} == checkpoint
        old = wait_until(
            lambda: coordinator_id(gcluster, gadmin, group), 60, "the group's coordinator"
        )
        gcluster.kill_broker(old)
        wait_until(
            lambda: (c := coordinator_id(gcluster, gadmin, group)) not in (None, old) and c,
            90,
            "another coordinator",
        )
        assert {tp: consumer.committed(tp, metadata=True) for tp in partitions} == checkpoint, (
            "committed offsets survive the move"
        )
        produce(topic, 3, 10, "b")
        # The member keeps its membership if the new coordinator heard from it in
        # time, else it rejoins there and restarts from the committed offsets: either
        # way nothing is lost, and nothing below the committed offsets comes back.
        wanted = {(p, o) for p in range(3) for o in range(10, 20)}
        after = poll_until(
            consumer,
            lambda got: {(r.partition, r.offset) for r in got} >= wanted,
            90,
            "the records produced after the failover",
        )
        assert min(r.offset for r in after) >= 7, (
            "nothing below the committed offsets is redelivered"
        )
        consumer.commit()
        assert {tp: consumer.committed(tp) for tp in partitions} == {tp: 20 for tp in partitions}
        consumer.close()
        # A new member of the group continues from the committed offsets.
        successor = group_consumer(group)
        successor.subscribe([topic])
        produce(topic, 3, 5, "c")
        resumed = poll_until(
            successor, lambda got: len(got) >= 15, 60, "the records produced after the last commit"
        )
        assert sorted((r.partition, r.offset) for r in resumed) == [
            (p, o) for p in range(3) for o in range(20, 25)
        ]
        assert all(r.value.startswith(b"c-") for r in resumed)  # type: ignore[union-attr]
    finally:
        consumer.close()
        if successor is not None:
            successor.close()
