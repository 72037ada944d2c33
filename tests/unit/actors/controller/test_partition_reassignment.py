"""Tests for rafka.actors.controller.partition_reassignment: seed 000's ten reassignment steps as
the controller core runs them, event by event, over a fake ZooKeeper that keeps the topic's
assignment, the partition state and ``/admin/reassign_partitions`` with their versions."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from rafka.actors.controller.core import ControllerCore
from rafka.actors.controller.effects import (
    AlterPartitionReassignmentsReply,
    Effects,
    ListPartitionReassignmentsReply,
    QueueTopicDeletion,
    SetTopicAssignment,
    UpdatePartitionState,
    WriteReassignments,
    ZkWrite,
)
from rafka.actors.controller.events import (
    AlterPartitionReassignments,
    ControllerElected,
    CoreEvent,
    IsrChanged,
    ListPartitionReassignments,
    PartitionReassignmentsChanged,
    TopicDeletionsChanged,
    TopicSnapshot,
    ZkWriteConflict,
    ZkWriteSucceeded,
)
from rafka.actors.controller.state_machines import ReplicaState
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.log.config import LogConfig
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import PartitionReassignment, ReassignmentResult
from rafka.protocol.messages.control import (
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from rafka.protocol.types import TopicPartition

EPOCH, EPOCH_VERSION = 4, 3
TP = TopicPartition("moving", 0)
OTHER = TopicPartition("moving", 1)
OAR, RAR = (1, 2, 3), (4, 5, 6)
BROKERS = (1, 2, 3, 4, 5, 6)

# Seed 000's table: AR and leader/ISR in ZooKeeper at each step of OAR {1,2,3} -> RAR {4,5,6}.
SEED_TABLE = [
    ((1, 2, 3), 1, (1, 2, 3)),  # initial state
    ((1, 2, 3, 4, 5, 6), 1, (1, 2, 3)),  # step 2
    ((1, 2, 3, 4, 5, 6), 1, (1, 2, 3, 4, 5, 6)),  # step 4
    ((1, 2, 3, 4, 5, 6), 4, (1, 2, 3, 4, 5, 6)),  # step 7
    ((1, 2, 3, 4, 5, 6), 4, (4, 5, 6)),  # step 8
    ((4, 5, 6), 4, (4, 5, 6)),  # step 10
]
View = tuple[tuple[int, ...], int, tuple[int, ...]]


@dataclass
class FakeZk:
    """The topic ``moving`` (partitions 0 and 1), its states and the admin node, written only
    through the core's conditional writes (plus the leader's ISR changes, ``expand_isr``)."""

    assignment: dict[int, tuple[int, ...]] = field(default_factory=lambda: {0: OAR, 1: OAR})
    states: dict[TopicPartition, LeaderIsrAndEpoch] = field(
        default_factory=lambda: {
            TP: LeaderIsrAndEpoch(1, 0, OAR, 1, zk_version=0),
            OTHER: LeaderIsrAndEpoch(2, 0, OAR, 1, zk_version=0),
        }
    )
    node: dict[TopicPartition, tuple[int, ...]] | None = None
    node_version: int = -1
    writes: list[ZkWrite] = field(default_factory=list)
    history: list[View] = field(default_factory=list)

    def view(self) -> View:
        state = self.states[TP]
        return (self.assignment[TP.partition], state.leader, state.isr)

    def record(self) -> None:
        if not self.history or self.history[-1] != self.view():
            self.history.append(self.view())

    def apply(self, write: ZkWrite) -> CoreEvent:
        """Perform one write as ZooKeeper would; the outcome event the shell feeds back."""
        self.writes.append(write)
        assert not isinstance(write, QueueTopicDeletion)
        assert write.epoch_zk_version == EPOCH_VERSION
        outcome: CoreEvent
        if isinstance(write, SetTopicAssignment):
            self.assignment = dict(write.assignment)
            outcome = ZkWriteSucceeded(write, 0)
        elif isinstance(write, WriteReassignments):
            if write.zk_version != self.node_version:
                return ZkWriteConflict(write, None)
            self.node = dict(write.partitions) or None
            self.node_version = -1 if self.node is None else self.node_version + 1
            outcome = ZkWriteSucceeded(write, self.node_version)
        else:
            assert isinstance(write, UpdatePartitionState)
            current = self.states[write.tp]
            if current.zk_version != write.state.zk_version:
                return ZkWriteConflict(write, current)
            self.states[write.tp] = replace(write.state, zk_version=current.zk_version + 1)
            outcome = ZkWriteSucceeded(write, current.zk_version + 1)
        self.record()
        return outcome

    def expand_isr(self, tp: TopicPartition, isr: tuple[int, ...]) -> IsrChanged:
        """The leader writes a grown ISR (as a caught-up follower joins); the controller's event."""
        current = self.states[tp]
        self.states[tp] = replace(current, isr=isr, zk_version=current.zk_version + 1)
        self.record()
        return IsrChanged({tp: self.states[tp]})

    def elected(self, brokers: tuple[int, ...] = BROKERS) -> ControllerElected:
        snapshot = TopicSnapshot(
            "moving", dict(self.assignment), {}, {tp.partition: s for tp, s in self.states.items()}
        )
        registrations = {
            b: BrokerRegistration(b, f"10.0.0.{b}", f"node-{b}", timestamp=1000) for b in brokers
        }
        return ControllerElected(EPOCH, EPOCH_VERSION, registrations, (snapshot,))

    def read_node(self) -> PartitionReassignmentsChanged:
        return PartitionReassignmentsChanged(dict(self.node or {}), self.node_version)


@dataclass
class Run:
    """Everything one event led to, over all its steps."""

    steps: list[Effects]

    def requests(self, kind: type) -> list[tuple[int, object]]:
        return [
            (r.broker_id, r.request)
            for e in self.steps
            for r in e.requests
            if isinstance(r.request, kind)
        ]

    @property
    def replies(self) -> list[object]:
        return [r for e in self.steps for r in e.replies]

    @property
    def log(self) -> str:
        return "\n".join(line for e in self.steps for line in e.state_changes)

    def stopped(self, delete: bool) -> set[int]:
        return {
            b
            for b, r in self.requests(StopReplicaRequest)
            if isinstance(r, StopReplicaRequest) and r.delete is delete
        }


def drive(core: ControllerCore, zk: FakeZk, event: CoreEvent) -> Run:
    """Feed an event, then every write's outcome, as the shell does."""
    steps = [core.handle(event)]
    pending = list(steps[0].writes)
    while pending:
        steps.append(core.handle(zk.apply(pending.pop(0))))
        pending += steps[-1].writes
    return Run(steps)


@pytest.fixture
def zk() -> FakeZk:
    fake = FakeZk()
    fake.record()
    return fake


@pytest.fixture
def core(zk: FakeZk) -> ControllerCore:
    """An active controller that knows brokers 1-6 and the topic ``moving`` on brokers 1-3."""
    core = ControllerCore(1, LogConfig())
    drive(core, zk, zk.elected())
    drive(core, zk, zk.read_node())
    zk.writes.clear()
    return core


def alter(
    core: ControllerCore, zk: FakeZk, *requested: tuple[TopicPartition, tuple[int, ...]]
) -> Run:
    return drive(core, zk, AlterPartitionReassignments(9, tuple(requested)))


def listed(core: ControllerCore, zk: FakeZk) -> dict[TopicPartition, PartitionReassignment]:
    (reply,) = drive(core, zk, ListPartitionReassignments(10)).replies
    assert isinstance(reply, ListPartitionReassignmentsReply) and reply.error is Errors.NONE
    return dict(reply.reassignments)


def assert_completed(core: ControllerCore, zk: FakeZk) -> None:
    """AR := RAR in ZooKeeper and the cache, a leader of RAR with ISR RAR, the node gone, the old
    replicas forgotten and the new ones online."""
    assert zk.view() == ((4, 5, 6), 4, (4, 5, 6))
    assert zk.node is None
    assert core.ctx.replicas(TP) == RAR
    assert TP not in core.ctx.partitions_being_reassigned
    states = core.ctx.replica_states
    assert all(("moving", 0, b) not in states for b in OAR)
    assert all(states[("moving", 0, b)] is ReplicaState.ONLINE_REPLICA for b in RAR)


# ---------------------------------------------------------------------- the worked example


def test_seed_example_walks_the_seed_table_in_zookeeper(core: ControllerCore, zk: FakeZk) -> None:
    started = alter(core, zk, (TP, RAR))
    assert started.replies == [
        AlterPartitionReassignmentsReply(9, (ReassignmentResult(TP, Errors.NONE),))
    ]
    assert zk.node == {TP: RAR}
    leader_and_isr = dict(started.requests(LeaderAndIsrRequest))
    assert sorted(leader_and_isr) == list(BROKERS)
    sent = leader_and_isr[4]
    assert isinstance(sent, LeaderAndIsrRequest)
    (state,) = sent.partitions
    assert (state.leader, state.leader_epoch, state.replicas) == (1, 1, OAR + RAR)
    assert all(core.ctx.replica_states[("moving", 0, b)] is ReplicaState.NEW_REPLICA for b in RAR)
    # Followers join one by one; every ISR change checks again, and waits while one is missing.
    waiting = drive(core, zk, zk.expand_isr(TP, (1, 2, 3, 4, 5)))
    assert "waiting for replicas [6] to join ISR" in waiting.log
    assert zk.node == {TP: RAR}
    zk.history.pop()  # the seed's table shows only the ISR with all of RAR in it
    done = drive(core, zk, zk.expand_isr(TP, OAR + RAR))
    assert zk.history == SEED_TABLE
    assert_completed(core, zk)
    assert done.stopped(delete=False) == set(OAR)
    assert done.stopped(delete=True) == set(OAR)
    assert {b for b, _ in done.requests(UpdateMetadataRequest)} == set(BROKERS)
    assert "reassignment to [4, 5, 6] completed" in done.log
    assert "-> NonExistentReplica" in done.log


def test_the_steps_are_written_in_the_seed_order(core: ControllerCore, zk: FakeZk) -> None:
    alter(core, zk, (TP, RAR))
    drive(core, zk, zk.expand_isr(TP, OAR + RAR))
    kinds = [type(w).__name__ for w in zk.writes]
    assert kinds == [
        "WriteReassignments",  # the admin node lists it
        "SetTopicAssignment",  # step 1: AR := OAR + RAR
        "UpdatePartitionState",  # step 2: leader epoch bumped
        "UpdatePartitionState",  # step 7: leader 4 from RAR
        "UpdatePartitionState",  # step 8: OAR - RAR leave the ISR
        "SetTopicAssignment",  # step 10: AR := RAR, last
        "WriteReassignments",  # the admin node loses it (deleted: empty)
    ]


def test_a_leader_already_in_rar_stays_with_a_bumped_epoch(
    core: ControllerCore, zk: FakeZk
) -> None:
    alter(core, zk, (TP, (1, 4)))
    epoch_before = zk.states[TP].leader_epoch
    done = drive(core, zk, zk.expand_isr(TP, (1, 2, 3, 4)))
    assert zk.view() == ((1, 4), 1, (1, 4))
    assert zk.states[TP].leader_epoch == epoch_before + 2  # step 7's bump, step 8's shrink
    assert done.stopped(delete=True) == {2, 3}


def test_list_reports_the_full_replicas_and_what_is_added_and_removed(
    core: ControllerCore, zk: FakeZk
) -> None:
    assert listed(core, zk) == {}
    alter(core, zk, (TP, (3, 4)))
    assert listed(core, zk) == {TP: PartitionReassignment((1, 2, 3, 4), (4,), (1, 2))}
    drive(core, zk, zk.expand_isr(TP, (1, 2, 3, 4)))
    assert listed(core, zk) == {}


def test_an_isr_change_of_another_partition_writes_nothing(
    core: ControllerCore, zk: FakeZk
) -> None:
    alter(core, zk, (TP, RAR))
    zk.writes.clear()
    drive(core, zk, zk.expand_isr(OTHER, (1, 2, 3)))
    assert zk.writes == []


# ---------------------------------------------------------------------- refused requests


@pytest.mark.parametrize(
    ("requested", "error", "words"),
    [
        ((TP, (4, 5, 7)), Errors.INVALID_REPLICA_ASSIGNMENT, "brokers [7] are not live"),
        ((TP, (4, 4, 5)), Errors.INVALID_REPLICA_ASSIGNMENT, "brokers [4] appear more than once"),
        ((TP, ()), Errors.INVALID_REPLICA_ASSIGNMENT, "the replica list is empty"),
        ((TopicPartition("nope", 0), RAR), Errors.UNKNOWN_TOPIC_OR_PARTITION, "does not exist"),
        ((TopicPartition("moving", 9), RAR), Errors.UNKNOWN_TOPIC_OR_PARTITION, "no partition 9"),
    ],
)
def test_a_bad_reassignment_is_refused_with_kafkas_error_and_nothing_written(
    core: ControllerCore,
    zk: FakeZk,
    requested: tuple[TopicPartition, tuple[int, ...]],
    error: Errors,
    words: str,
) -> None:
    run = alter(core, zk, (OTHER, RAR), requested)
    (reply,) = run.replies
    assert isinstance(reply, AlterPartitionReassignmentsReply)
    valid, refused = reply.results
    assert valid == ReassignmentResult(OTHER, Errors.NONE)
    assert refused.error is error
    assert refused.message is not None
    assert refused.message.startswith(f"{requested[0].topic}-{requested[0].partition}: ")
    assert words in refused.message
    assert zk.writes == [] and zk.node is None
    assert core.ctx.partitions_being_reassigned == {}


def test_a_topic_being_deleted_is_not_reassigned(core: ControllerCore, zk: FakeZk) -> None:
    core.ctx.topics_to_be_deleted.add("moving")
    (reply,) = alter(core, zk, (TP, RAR)).replies
    assert isinstance(reply, AlterPartitionReassignmentsReply)
    assert reply.results[0].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert "being deleted" in str(reply.results[0].message)


def test_a_partition_being_reassigned_is_refused_and_not_restarted(
    core: ControllerCore, zk: FakeZk
) -> None:
    alter(core, zk, (TP, RAR))
    zk.writes.clear()
    (reply,) = alter(core, zk, (TP, (2, 3, 4))).replies
    assert isinstance(reply, AlterPartitionReassignmentsReply)
    assert reply.results[0].error is Errors.REASSIGNMENT_IN_PROGRESS
    assert "already being reassigned to [4, 5, 6]" in str(reply.results[0].message)
    assert zk.writes == []
    assert core.ctx.partitions_being_reassigned[TP].target == RAR


def test_an_inactive_controller_answers_not_controller(zk: FakeZk) -> None:
    (reply,) = drive(
        ControllerCore(1, LogConfig()), zk, AlterPartitionReassignments(1, ((TP, RAR),))
    ).replies
    assert isinstance(reply, AlterPartitionReassignmentsReply)
    assert reply.results[0].error is Errors.NOT_CONTROLLER


# ---------------------------------------------------------------------- the admin node


def test_a_tools_admin_node_starts_the_reassignment_and_loses_bad_entries(
    core: ControllerCore, zk: FakeZk
) -> None:
    zk.node, zk.node_version = {TP: RAR, OTHER: (4, 9)}, 0
    run = drive(core, zk, zk.read_node())
    assert "admin node entry dropped (INVALID_REPLICA_ASSIGNMENT)" in run.log
    assert zk.node == {TP: RAR}
    assert zk.assignment[0] == OAR + RAR
    drive(core, zk, zk.expand_isr(TP, OAR + RAR))
    assert_completed(core, zk)


def test_a_node_entry_for_a_partition_in_progress_does_not_restart_it(
    core: ControllerCore, zk: FakeZk
) -> None:
    alter(core, zk, (TP, RAR))
    zk.node = {TP: (2, 3, 4)}
    zk.node_version += 1
    zk.writes.clear()
    run = drive(core, zk, zk.read_node())
    assert "not restarted" in run.log
    assert [type(w) for w in zk.writes] == [WriteReassignments]
    assert zk.node == {TP: RAR}


def test_a_deletion_waits_for_the_reassignment_then_starts(
    core: ControllerCore, zk: FakeZk
) -> None:
    """As Kafka holds a topic's deletion back while its partitions move."""
    alter(core, zk, (TP, RAR))
    held = drive(core, zk, TopicDeletionsChanged(frozenset({"moving"})))
    assert "deletion of topic moving waits for the reassignment of partitions [0]" in held.log
    assert not core.ctx.is_queued_for_deletion("moving")
    assert held.stopped(delete=True) == set()
    (refused,) = alter(core, zk, (OTHER, RAR)).replies
    assert isinstance(refused, AlterPartitionReassignmentsReply)
    assert refused.results[0].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    done = drive(core, zk, zk.expand_isr(TP, OAR + RAR))
    assert zk.view() == ((4, 5, 6), 4, (4, 5, 6))
    assert "deletion of topic moving started" in done.log
    assert core.ctx.is_queued_for_deletion("moving")
    assert done.stopped(delete=True) == set(BROKERS)


# ---------------------------------------------------------------------- controller failover


def intermediate_states() -> list[tuple[str, dict[int, tuple[int, ...]], LeaderIsrAndEpoch]]:
    """Each ZooKeeper state a controller can die in, after the admin node lists the reassignment:
    the seed table's rows, with the ZooKeeper versions a real run would have."""
    return [
        ("node written, AR not yet", {0: OAR, 1: OAR}, LeaderIsrAndEpoch(1, 0, OAR, 1, 0)),
        ("step 1: AR := OAR + RAR", {0: OAR + RAR, 1: OAR}, LeaderIsrAndEpoch(1, 0, OAR, 1, 0)),
        ("step 2: epoch bumped", {0: OAR + RAR, 1: OAR}, LeaderIsrAndEpoch(1, 1, OAR, 1, 1)),
        (
            "step 4: RAR in the ISR",
            {0: OAR + RAR, 1: OAR},
            LeaderIsrAndEpoch(1, 1, OAR + RAR, 1, 2),
        ),
        (
            "step 7: leader from RAR",
            {0: OAR + RAR, 1: OAR},
            LeaderIsrAndEpoch(4, 2, OAR + RAR, 1, 3),
        ),
        ("step 8: OAR left the ISR", {0: OAR + RAR, 1: OAR}, LeaderIsrAndEpoch(4, 3, RAR, 1, 4)),
        ("step 10: AR := RAR", {0: RAR, 1: OAR}, LeaderIsrAndEpoch(4, 3, RAR, 1, 4)),
    ]


@pytest.mark.parametrize(
    ("_step", "assignment", "state"),
    intermediate_states(),
    ids=[s[0] for s in intermediate_states()],
)
def test_a_new_controller_resumes_the_reassignment_from_each_zookeeper_state(
    _step: str,
    assignment: dict[int, tuple[int, ...]],
    state: LeaderIsrAndEpoch,
) -> None:
    zk = FakeZk(assignment=dict(assignment))
    zk.states[TP] = state
    zk.node, zk.node_version = {TP: RAR}, 0
    zk.record()
    core = ControllerCore(2, LogConfig())
    drive(core, zk, zk.elected())
    resumed = drive(core, zk, zk.read_node())
    assert "reassignment begins" in resumed.log
    if set(RAR) - set(zk.states[TP].isr):
        assert core.ctx.partitions_being_reassigned[TP].target == RAR
        drive(core, zk, zk.expand_isr(TP, OAR + RAR))
    assert_completed(core, zk)
    # Resuming repeats steps, never undoes one: AR only grows to OAR + RAR, then shrinks to RAR.
    assert all(set(ar) <= set(OAR + RAR) for ar, _, _ in zk.history)
    assert zk.history[-1] == SEED_TABLE[-1]


def test_a_resumed_reassignment_is_listed_with_what_it_adds(zk: FakeZk) -> None:
    zk.assignment[0] = OAR + RAR
    zk.node, zk.node_version = {TP: RAR}, 0
    core = ControllerCore(2, LogConfig())
    drive(core, zk, zk.elected())
    drive(core, zk, zk.read_node())
    assert listed(core, zk) == {TP: PartitionReassignment(OAR + RAR, RAR, OAR)}
