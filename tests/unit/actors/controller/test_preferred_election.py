"""Tests for rafka.actors.controller.preferred_election: preferred and unclean elections an operator
asks for, the admin node, and the automatic leader balance, driven through ``ControllerCore`` with
ZooKeeper writes answered by a fake."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from rafka.actors.controller.context import ReassignedPartition
from rafka.actors.controller.core import ControllerCore
from rafka.actors.controller.effects import (
    ClearPreferredReplicaElection,
    Effects,
    ElectLeadersReply,
    UpdatePartitionState,
    ZkWrite,
)
from rafka.actors.controller.events import (
    BrokersChanged,
    ControllerElected,
    ControllerMoved,
    CoreEvent,
    ElectLeaders,
    LeaderImbalanceCheck,
    PreferredElectionRequested,
    Resigned,
    TopicSnapshot,
    ZkWriteConflict,
    ZkWriteSucceeded,
)
from rafka.actors.controller.preferred_election import (
    BrokerImbalance,
    leader_imbalance,
    preferred_not_available,
)
from rafka.actors.controller.state_machines import PartitionState
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.log.config import LogConfig
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import ElectLeadersResult
from rafka.protocol.messages.control import LeaderAndIsrRequest, UpdateMetadataRequest
from rafka.protocol.types import ElectionType, TopicPartition

EPOCH, EPOCH_VERSION = 4, 9
TOPIC = "topic1"
BROKERS = tuple(range(8))
ASSIGNMENT = {p: (p, (p + 1) % 8, (p + 2) % 8) for p in range(8)}
"""Seed 000's topic: 8 partitions of 3 replicas over 8 brokers, partition p preferring broker p."""


def tp(partition: int) -> TopicPartition:
    return TopicPartition(TOPIC, partition)


@dataclass
class FakeZk:
    """Partition state znodes and the admin node, written only through the core's writes."""

    states: dict[TopicPartition, LeaderIsrAndEpoch] = field(default_factory=dict)
    admin_node: bool = False
    writes: list[ZkWrite] = field(default_factory=list)

    def apply(self, write: ZkWrite) -> CoreEvent:
        self.writes.append(write)
        assert isinstance(write, ClearPreferredReplicaElection | UpdatePartitionState)
        if write.epoch_zk_version != EPOCH_VERSION:
            return ControllerMoved()
        if isinstance(write, ClearPreferredReplicaElection):
            if not self.admin_node:
                return ZkWriteConflict(write, None)
            self.admin_node = False
            return ZkWriteSucceeded(write, 0)
        current = self.states[write.tp]
        if current.zk_version != write.state.zk_version:
            return ZkWriteConflict(write, current)
        self.states[write.tp] = replace(write.state, zk_version=current.zk_version + 1)
        return ZkWriteSucceeded(write, current.zk_version + 1)


@dataclass
class Run:
    """Everything one event led to, over all its steps."""

    steps: list[Effects]

    def requests(self, kind: type) -> dict[int, object]:
        return {
            r.broker_id: r.request
            for e in self.steps
            for r in e.requests
            if isinstance(r.request, kind)
        }

    @property
    def replies(self) -> list[object]:
        return [r for e in self.steps for r in e.replies]

    @property
    def log(self) -> str:
        return "\n".join(line for e in self.steps for line in e.state_changes)

    def results(self) -> dict[TopicPartition, ElectLeadersResult]:
        (reply,) = self.replies
        assert isinstance(reply, ElectLeadersReply)
        return dict(reply.results)


def drive(core: ControllerCore, zk: FakeZk, event: CoreEvent) -> Run:
    """Feed an event, then every write's outcome, as the shell does."""
    steps = [core.handle(event)]
    pending = list(steps[0].writes)
    while pending:
        steps.append(core.handle(zk.apply(pending.pop(0))))
        pending += steps[-1].writes
        if not core.awaiting_writes:
            pending.clear()
    return Run(steps)


def registration(broker: int) -> BrokerRegistration:
    return BrokerRegistration(broker, f"10.0.0.{broker}", f"node-{broker}", timestamp=1000)


def after_brokers_1_2_4_failed_and_1_returned() -> FakeZk:
    """Seed 000's third picture: brokers 2 and 4 down, broker 1 back in the ISRs but leading
    nothing; partitions 1, 2 and 4 led by 3, 3 and 5 since their preferred brokers failed."""
    leaders = {0: 0, 1: 3, 2: 3, 3: 3, 4: 5, 5: 5, 6: 6, 7: 7}
    states = {}
    for p, replicas in ASSIGNMENT.items():
        isr = tuple(r for r in replicas if r not in (2, 4))
        states[tp(p)] = LeaderIsrAndEpoch(leaders[p], 3, isr, 2, zk_version=5)
    return FakeZk(states)


@pytest.fixture
def zk() -> FakeZk:
    return after_brokers_1_2_4_failed_and_1_returned()


@pytest.fixture
def core(zk: FakeZk) -> ControllerCore:
    """The active controller (broker 0) of the seed's cluster with brokers 2 and 4 down."""
    core = ControllerCore(0, LogConfig())
    live = tuple(b for b in BROKERS if b not in (2, 4))
    snapshot = TopicSnapshot(TOPIC, ASSIGNMENT, {}, {t.partition: s for t, s in zk.states.items()})
    drive(
        core,
        zk,
        ControllerElected(EPOCH, EPOCH_VERSION, {b: registration(b) for b in live}, (snapshot,)),
    )
    zk.writes.clear()
    return core


def leaders(zk: FakeZk) -> list[int]:
    return [zk.states[tp(p)].leader for p in range(8)]


# ------------------------------------------------------------------ the imbalance computation


def test_imbalance_counts_per_preferred_broker_the_partitions_it_does_not_lead() -> None:
    assignments = {tp(0): (0, 1), tp(1): (0, 2), tp(2): (1, 0), tp(3): (1, 2)}
    led = {tp(0): 1, tp(1): 0, tp(2): 1, tp(3): 1}
    assert leader_imbalance(assignments, led) == [
        BrokerImbalance(0, 2, (tp(0),)),
        BrokerImbalance(1, 2, ()),
    ]
    assert leader_imbalance(assignments, led)[0].ratio == 0.5


def test_partitions_without_a_leader_state_are_left_out_of_the_imbalance() -> None:
    assert leader_imbalance({tp(0): (0, 1), tp(1): (0, 1)}, {tp(0): 1}) == [
        BrokerImbalance(0, 1, (tp(0),))
    ]


def test_the_threshold_is_exceeded_only_strictly_above_the_percentage() -> None:
    one_in_ten = BrokerImbalance(0, 10, (tp(0),))
    assert not one_in_ten.exceeds(10)
    assert one_in_ten.exceeds(9)
    assert not BrokerImbalance(0, 0, ()).exceeds(0)


def test_the_reason_names_a_down_broker_or_a_replica_out_of_the_isr() -> None:
    assert preferred_not_available(tp(1), (2, 3, 4), (3,), {3}) == (
        "preferred replica 2 of topic1-1 is down"
    )
    assert preferred_not_available(tp(1), (2, 3, 4), (3,), {2, 3}) == (
        "preferred replica 2 of topic1-1 is not in the ISR [3]"
    )


# ------------------------------------------------------------------ preferred elections


def test_preferred_election_moves_leaders_back_where_the_preferred_replica_is_in_sync(
    core: ControllerCore, zk: FakeZk
) -> None:
    run = drive(core, zk, ElectLeaders(1, ElectionType.PREFERRED, None))
    assert leaders(zk) == [0, 1, 3, 3, 5, 5, 6, 7]
    results = run.results()
    assert results[tp(1)] == ElectLeadersResult(Errors.NONE)
    for p in (2, 4):
        assert results[tp(p)] == ElectLeadersResult(
            Errors.PREFERRED_LEADER_NOT_AVAILABLE, f"preferred replica {p} of topic1-{p} is down"
        )
    for p in (0, 3, 5, 6, 7):
        assert results[tp(p)].error is Errors.ELECTION_NOT_NEEDED
    moved = zk.states[tp(1)]
    assert moved.leader_epoch == 4 and moved.isr == (1, 3) and moved.controller_epoch == EPOCH
    assert "topic1-1: preferred replica election (ElectLeaders request): leader 3 -> 1" in run.log


def test_a_moved_leader_is_sent_to_its_replicas_and_to_every_broker_s_metadata(
    core: ControllerCore, zk: FakeZk
) -> None:
    run = drive(core, zk, ElectLeaders(1, ElectionType.PREFERRED, (tp(1),)))
    leader_and_isr = run.requests(LeaderAndIsrRequest)
    assert sorted(leader_and_isr) == [1, 3]  # replica 2 is down
    request = leader_and_isr[1]
    assert isinstance(request, LeaderAndIsrRequest)
    assert [(s.leader, s.leader_epoch) for s in request.partitions] == [(1, 4)]
    assert sorted(run.requests(UpdateMetadataRequest)) == [0, 1, 3, 5, 6, 7]


def test_a_preferred_replica_out_of_the_isr_does_not_lead(core: ControllerCore, zk: FakeZk) -> None:
    zk.states[tp(1)] = LeaderIsrAndEpoch(3, 3, (3,), 2, zk_version=5)
    core.ctx.leadership[tp(1)] = zk.states[tp(1)]
    run = drive(core, zk, ElectLeaders(1, ElectionType.PREFERRED, (tp(1),)))
    assert run.results()[tp(1)] == ElectLeadersResult(
        Errors.PREFERRED_LEADER_NOT_AVAILABLE,
        "preferred replica 1 of topic1-1 is not in the ISR [3]",
    )
    assert zk.writes == []


def test_unknown_partitions_are_reported_and_the_others_elected(
    core: ControllerCore, zk: FakeZk
) -> None:
    asked = (TopicPartition("nope", 0), tp(8), tp(1))
    results = drive(core, zk, ElectLeaders(1, ElectionType.PREFERRED, asked)).results()
    assert list(results) == list(asked)
    assert results[TopicPartition("nope", 0)].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert results[tp(8)].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert results[tp(1)].error is Errors.NONE


def test_a_state_changed_meanwhile_is_decided_again_from_the_fresh_znode(
    core: ControllerCore, zk: FakeZk
) -> None:
    zk.states[tp(1)] = LeaderIsrAndEpoch(3, 4, (3,), 2, zk_version=6)
    run = drive(core, zk, ElectLeaders(1, ElectionType.PREFERRED, (tp(1),)))
    assert run.results()[tp(1)].error is Errors.PREFERRED_LEADER_NOT_AVAILABLE
    assert zk.states[tp(1)].leader == 3


def test_an_inactive_controller_answers_not_controller(zk: FakeZk) -> None:
    inactive = ControllerCore(0, LogConfig())
    run = drive(inactive, zk, ElectLeaders(1, ElectionType.PREFERRED, (tp(0),)))
    assert run.results()[tp(0)].error is Errors.NOT_CONTROLLER
    (everything,) = drive(inactive, zk, ElectLeaders(2, ElectionType.PREFERRED, None)).replies
    assert isinstance(everything, ElectLeadersReply)
    assert everything.error is Errors.NOT_CONTROLLER and everything.results == ()


def test_a_controller_that_moves_mid_election_answers_not_controller(
    core: ControllerCore, zk: FakeZk
) -> None:
    first = core.handle(ElectLeaders(1, ElectionType.PREFERRED, (tp(1),)))
    assert first.writes and not first.replies
    (reply,) = core.handle(Resigned()).replies
    assert isinstance(reply, ElectLeadersReply)
    assert dict(reply.results)[tp(1)].error is Errors.NOT_CONTROLLER


def test_the_seed_walk_reaches_every_preferred_leader_once_brokers_2_and_4_return(
    core: ControllerCore, zk: FakeZk
) -> None:
    drive(core, zk, ElectLeaders(1, ElectionType.PREFERRED, None))
    drive(core, zk, BrokersChanged({b: registration(b) for b in BROKERS}))
    assert leaders(zk) == [0, 1, 3, 3, 5, 5, 6, 7], "a returning broker takes no leadership"
    for p in range(8):  # the returned brokers caught up and rejoined the ISRs
        zk.states[tp(p)] = replace(zk.states[tp(p)], isr=ASSIGNMENT[p])
        core.ctx.leadership[tp(p)] = zk.states[tp(p)]
    results = drive(core, zk, ElectLeaders(2, ElectionType.PREFERRED, None)).results()
    assert leaders(zk) == list(range(8))
    assert {p for p, r in enumerate(results.values()) if r.error is Errors.NONE} == {2, 4}


# ------------------------------------------------------------------ the admin node


def test_the_admin_node_elects_its_partitions_then_is_deleted(
    core: ControllerCore, zk: FakeZk
) -> None:
    zk.admin_node = True
    run = drive(core, zk, PreferredElectionRequested((tp(1), tp(2))))
    assert leaders(zk)[:3] == [0, 1, 3]
    assert not zk.admin_node
    assert isinstance(zk.writes[-1], ClearPreferredReplicaElection)
    assert "topic1-2 not moved: PREFERRED_LEADER_NOT_AVAILABLE" in run.log
    assert run.replies == []


def test_the_admin_node_is_ignored_by_an_inactive_controller(zk: FakeZk) -> None:
    zk.admin_node = True
    run = drive(ControllerCore(0, LogConfig()), zk, PreferredElectionRequested((tp(0),)))
    assert zk.admin_node and run.steps[0].writes == ()


# ------------------------------------------------------------------ unclean elections


def test_unclean_election_gives_an_offline_partition_a_live_replica_outside_the_isr(
    core: ControllerCore, zk: FakeZk
) -> None:
    zk.states[tp(2)] = LeaderIsrAndEpoch(-1, 6, (2,), 2, zk_version=8)
    core.ctx.leadership[tp(2)] = zk.states[tp(2)]
    core.ctx.partition_states[tp(2)] = PartitionState.OFFLINE_PARTITION
    results = drive(core, zk, ElectLeaders(1, ElectionType.UNCLEAN, (tp(2), tp(3)))).results()
    assert results[tp(2)].error is Errors.NONE
    assert zk.states[tp(2)].leader == 3 and zk.states[tp(2)].isr == (3,)
    assert core.ctx.partition_states[tp(2)] is PartitionState.ONLINE_PARTITION
    assert core.unclean_elections == 1
    assert results[tp(3)].error is Errors.ELECTION_NOT_NEEDED


def test_unclean_election_with_no_live_replica_reports_no_eligible_leader(
    core: ControllerCore, zk: FakeZk
) -> None:
    core.ctx.assignments[TOPIC][2] = (2, 4)
    zk.states[tp(2)] = LeaderIsrAndEpoch(-1, 6, (2,), 2, zk_version=8)
    core.ctx.leadership[tp(2)] = zk.states[tp(2)]
    results = drive(core, zk, ElectLeaders(1, ElectionType.UNCLEAN, (tp(2),))).results()
    assert results[tp(2)].error is Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert core.unclean_elections == 0


# ------------------------------------------------------------------ the automatic balance


def test_the_balance_check_moves_leaders_back_past_the_threshold(
    core: ControllerCore, zk: FakeZk
) -> None:
    run = drive(core, zk, LeaderImbalanceCheck(10))
    assert leaders(zk) == [0, 1, 3, 3, 5, 5, 6, 7]
    assert "leader imbalance of broker 1 is 100% (past 10%)" in run.log
    assert "automatic leader balance" in run.log
    assert "broker 2" not in run.log, "a preferred broker that is down is not balanced"


def test_the_balance_check_leaves_an_imbalance_within_the_threshold(
    core: ControllerCore, zk: FakeZk
) -> None:
    run = drive(core, zk, LeaderImbalanceCheck(100))
    assert zk.writes == [] and run.log == ""


def test_the_balance_check_waits_while_a_partition_is_being_reassigned(
    core: ControllerCore, zk: FakeZk
) -> None:
    core.ctx.partitions_being_reassigned[tp(7)] = ReassignedPartition((7, 0, 1), (7, 0, 3))
    drive(core, zk, LeaderImbalanceCheck(10))
    assert zk.writes == []


def test_the_balance_check_does_nothing_on_an_inactive_controller(zk: FakeZk) -> None:
    run = drive(ControllerCore(0, LogConfig()), zk, LeaderImbalanceCheck(0))
    assert zk.writes == [] and run.steps == [Effects()]
