"""Tests for rafka.actors.controller.core: the controller's decisions with no Ray and no ZooKeeper.

``FakeZk`` stands in for ZooKeeper at the shell's boundary: it applies the core's conditional writes
to an in-memory copy of the partition state znodes (versions included) and answers with the outcome
events the shell would feed back, so each test drives the core through whole operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from rafka.actors.controller.core import ControllerCore
from rafka.actors.controller.effects import (
    AddPartitions,
    ClearPreferredReplicaElection,
    ControlledShutdownReply,
    CreatePartitionsReply,
    CreatePartitionState,
    CreateTopic,
    CreateTopicsReply,
    DeleteTopicZnodes,
    Effects,
    QueueTopicDeletion,
    UpdatePartitionState,
    ZkWrite,
)
from rafka.actors.controller.events import (
    BrokerDied,
    BrokersChanged,
    ConfigsChanged,
    ControlledShutdown,
    ControllerElected,
    ControllerMoved,
    ControlResponseError,
    CoreEvent,
    CreatePartitions,
    CreateTopics,
    IsrChanged,
    Resigned,
    TopicsChanged,
    TopicSnapshot,
    ZkWriteConflict,
    ZkWriteSucceeded,
)
from rafka.actors.controller.state_machines import PartitionState
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.log.config import LogConfig
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import CreatePartitionsResult, CreateTopicResult
from rafka.protocol.messages.control import (
    LeaderAndIsrRequest,
    PartitionError,
    UpdateMetadataRequest,
)
from rafka.protocol.types import NewPartitions, NewTopic, ReplicaPlacement, TopicPartition

EPOCH, EPOCH_VERSION = 3, 7
T0, T1 = TopicPartition("events", 0), TopicPartition("events", 1)


def registration(broker: int, timestamp: int = 1000) -> BrokerRegistration:
    return BrokerRegistration(broker, f"10.0.0.{broker}", f"node-{broker}", timestamp=timestamp)


@dataclass
class FakeZk:
    """Partition state znodes and topics, written only through the core's conditional writes."""

    states: dict[TopicPartition, LeaderIsrAndEpoch] = field(default_factory=dict)
    topics: dict[str, CreateTopic] = field(default_factory=dict)
    grown: dict[str, AddPartitions] = field(default_factory=dict)
    epoch_version: int = EPOCH_VERSION
    writes: list[ZkWrite] = field(default_factory=list)
    deletions: set[str] = field(default_factory=set)

    def apply(self, write: ZkWrite) -> CoreEvent:
        """Perform one write as ZooKeeper would; the outcome event the shell feeds back."""
        self.writes.append(write)
        if isinstance(write, QueueTopicDeletion):
            self.deletions.add(write.name)
            return ZkWriteSucceeded(write, 0)
        if write.epoch_zk_version != self.epoch_version:
            return ControllerMoved()
        if isinstance(write, DeleteTopicZnodes):
            self.topics.pop(write.name, None)
            self.deletions.discard(write.name)
            for tp in [tp for tp in self.states if tp[0] == write.name]:
                del self.states[tp]
            return ZkWriteSucceeded(write, 0)
        if isinstance(write, CreateTopic):
            if write.name in self.topics:
                return ZkWriteConflict(write, None)
            self.topics[write.name] = write
            return ZkWriteSucceeded(write, 0)
        if isinstance(write, AddPartitions):
            self.grown[write.name] = write
            return ZkWriteSucceeded(write, 1)
        if isinstance(write, ClearPreferredReplicaElection):
            return ZkWriteSucceeded(write, 0)
        if not isinstance(write, CreatePartitionState | UpdatePartitionState):
            raise AssertionError(f"no reassignment is expected here: {write}")
        current = self.states.get(write.tp)
        if isinstance(write, CreatePartitionState):
            if current is not None:
                return ZkWriteConflict(write, current)
            self.states[write.tp] = replace(write.state, zk_version=0)
            return ZkWriteSucceeded(write, 0)
        if current is None or current.zk_version != write.state.zk_version:
            return ZkWriteConflict(write, current)
        self.states[write.tp] = replace(write.state, zk_version=current.zk_version + 1)
        return ZkWriteSucceeded(write, current.zk_version + 1)


@dataclass
class Run:
    """Everything one event led to, over all its steps."""

    steps: list[Effects]

    @property
    def writes(self) -> list[ZkWrite]:
        return [w for e in self.steps for w in e.writes]

    @property
    def leader_and_isr(self) -> dict[int, LeaderAndIsrRequest]:
        return {
            r.broker_id: r.request
            for e in self.steps
            for r in e.requests
            if isinstance(r.request, LeaderAndIsrRequest)
        }

    @property
    def update_metadata(self) -> dict[int, UpdateMetadataRequest]:
        return {
            r.broker_id: r.request
            for e in self.steps
            for r in e.requests
            if isinstance(r.request, UpdateMetadataRequest)
        }

    @property
    def replies(self) -> list[object]:
        return [r for e in self.steps for r in e.replies]

    @property
    def log(self) -> str:
        return "\n".join(line for e in self.steps for line in e.state_changes)


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


def partition_states(
    request: LeaderAndIsrRequest,
) -> dict[TopicPartition, tuple[int, tuple[int, ...]]]:
    return {TopicPartition(s.topic, s.partition): (s.leader, s.isr) for s in request.partitions}


@pytest.fixture
def zk() -> FakeZk:
    """events-0 led by 0, events-1 led by 1; every replica in sync."""
    return FakeZk(
        states={
            T0: LeaderIsrAndEpoch(0, 5, (0, 1, 2), 2, zk_version=4),
            T1: LeaderIsrAndEpoch(1, 2, (1, 2, 0), 2, zk_version=1),
        }
    )


def snapshot(zk: FakeZk, config: dict[str, str] | None = None) -> TopicSnapshot:
    return TopicSnapshot(
        "events",
        {0: (0, 1, 2), 1: (1, 2, 0)},
        config or {},
        {tp.partition: state for tp, state in zk.states.items()},
    )


def elected(zk: FakeZk, brokers: tuple[int, ...] = (0, 1, 2), **config: str) -> ControllerElected:
    return ControllerElected(
        EPOCH,
        EPOCH_VERSION,
        {b: registration(b) for b in brokers},
        (snapshot(zk, config),),
    )


@pytest.fixture
def core(zk: FakeZk) -> ControllerCore:
    """An active controller (broker 0) that knows brokers 0-2 and the topic ``events``."""
    core = ControllerCore(0, LogConfig())
    drive(core, zk, elected(zk))
    zk.writes.clear()
    return core


# ------------------------------------------------------------------ failover


def test_failover_resends_leadership_and_full_metadata_to_every_live_broker(zk: FakeZk) -> None:
    core = ControllerCore(0, LogConfig())
    run = drive(core, zk, elected(zk))
    assert core.active and core.ctx.epoch == EPOCH
    assert run.writes == []
    assert sorted(run.leader_and_isr) == [0, 1, 2]
    assert partition_states(run.leader_and_isr[2]) == {T0: (0, (0, 1, 2)), T1: (1, (1, 2, 0))}
    assert all(r.full for r in run.update_metadata.values())
    assert sorted(run.update_metadata) == [0, 1, 2]


def test_failover_elects_a_live_leader_for_a_partition_whose_leader_is_dead(zk: FakeZk) -> None:
    core = ControllerCore(0, LogConfig())
    run = drive(core, zk, elected(zk, brokers=(0, 2)))
    assert zk.states[T1].leader == 2
    assert zk.states[T1].leader_epoch == 3
    assert run.writes == [
        UpdatePartitionState(
            T1, LeaderIsrAndEpoch(2, 3, (2, 0), EPOCH, zk_version=1), EPOCH_VERSION
        )
    ]
    assert core.ctx.partition_states[T1] is PartitionState.ONLINE_PARTITION
    assert partition_states(run.leader_and_isr[2])[T1] == (2, (2, 0))


def test_failover_initialises_partitions_without_a_state_znode() -> None:
    zk = FakeZk()
    run = drive(ControllerCore(0, LogConfig()), zk, elected(zk))
    assert [type(w) for w in run.writes] == [CreatePartitionState, CreatePartitionState]
    assert zk.states[T0] == LeaderIsrAndEpoch(0, 0, (0, 1, 2), EPOCH, zk_version=0)
    assert zk.states[T1].leader == 1
    assert all(s.is_new for s in run.leader_and_isr[0].partitions)


def restarted_failover(zk: FakeZk, zxids: dict[int, int]) -> ControllerElected:
    """A failover reading brokers registered by transactions ``zxids`` and both partition states
    last written by transaction 100."""
    brokers = {b: replace(registration(b), zxid=zxid) for b, zxid in zxids.items()}
    topic = replace(snapshot(zk), written_at={0: 100, 1: 100})
    return ControllerElected(EPOCH, EPOCH_VERSION, brokers, (topic,))


def test_failover_moves_leadership_off_a_leader_that_registered_again_since_its_election(
    zk: FakeZk,
) -> None:
    # Broker 1 leads events-1 and restarted while no controller ran: its registration is newer.
    run = drive(ControllerCore(0, LogConfig()), zk, restarted_failover(zk, {0: 10, 1: 150, 2: 20}))
    assert zk.states[T1] == LeaderIsrAndEpoch(2, 3, (2, 0), EPOCH, zk_version=2)
    assert zk.states[T0] == LeaderIsrAndEpoch(0, 5, (0, 1, 2), 2, zk_version=4)
    assert partition_states(run.leader_and_isr[1])[T1] == (2, (2, 0))
    assert "brokers [1] registered again since its state was written" in run.log


def test_every_control_request_carries_its_brokers_epoch_from_the_registration(
    zk: FakeZk,
) -> None:
    run = drive(ControllerCore(0, LogConfig()), zk, restarted_failover(zk, {0: 10, 1: 150, 2: 20}))
    epochs = {0: 10, 1: 150, 2: 20}
    assert {b: r.broker_epoch for b, r in run.leader_and_isr.items()} == epochs
    assert {b: r.broker_epoch for b, r in run.update_metadata.items()} == epochs


def test_control_requests_are_unchecked_when_the_registration_zxid_was_not_read(
    zk: FakeZk,
) -> None:
    run = drive(ControllerCore(0, LogConfig()), zk, elected(zk))
    assert {r.broker_epoch for r in run.leader_and_isr.values()} == {-1}


def test_failover_keeps_a_restarted_leader_when_every_in_sync_replica_restarted(
    zk: FakeZk,
) -> None:
    run = drive(
        ControllerCore(0, LogConfig()), zk, restarted_failover(zk, {0: 110, 1: 150, 2: 120})
    )
    assert run.writes == []
    assert partition_states(run.leader_and_isr[1]) == {T0: (0, (0, 1, 2)), T1: (1, (1, 2, 0))}


def test_failover_keeps_a_leader_whose_state_was_written_after_it_registered(zk: FakeZk) -> None:
    run = drive(ControllerCore(0, LogConfig()), zk, restarted_failover(zk, {0: 10, 1: 90, 2: 20}))
    assert run.writes == []


# ------------------------------------------------------------------ broker failure and startup


def test_broker_failure_moves_leadership_and_shrinks_the_isrs_it_was_in(
    core: ControllerCore, zk: FakeZk
) -> None:
    run = drive(core, zk, BrokersChanged({0: registration(0), 2: registration(2)}))
    assert run.steps[0].brokers_removed == (1,)
    assert (zk.states[T1].leader, zk.states[T1].isr) == (2, (2, 0))
    assert (zk.states[T0].leader, zk.states[T0].isr) == (0, (0, 2))
    assert sorted(run.leader_and_isr) == [0, 2]
    assert partition_states(run.leader_and_isr[0]) == {T0: (0, (0, 2)), T1: (2, (2, 0))}
    assert sorted(run.update_metadata) == [0, 2]
    assert [b.broker_id for b in run.update_metadata[0].live_brokers] == [0, 2]
    assert "brokers [1] failed" in run.log


def test_a_failed_compare_and_set_is_decided_again_from_the_fresh_znode(
    core: ControllerCore, zk: FakeZk
) -> None:
    # Leader 1 shrank the ISR of events-1 to (1, 2) but the controller has not heard of it yet.
    zk.states[T1] = LeaderIsrAndEpoch(1, 2, (1, 2), 2, zk_version=2)
    run = drive(core, zk, BrokersChanged({0: registration(0), 2: registration(2)}))
    first, retry = [w for w in run.writes if isinstance(w, UpdatePartitionState) and w.tp == T1][:2]
    assert first.state.zk_version == 1 and first.state.isr == (2, 0)
    assert retry.state.zk_version == 2 and retry.state.isr == (2,)
    assert zk.states[T1] == LeaderIsrAndEpoch(2, 3, (2,), EPOCH, zk_version=3)
    assert partition_states(run.leader_and_isr[2])[T1] == (2, (2,))


def test_no_live_in_sync_replica_keeps_the_partition_offline_without_unclean_election(
    core: ControllerCore, zk: FakeZk
) -> None:
    zk.states[T1] = LeaderIsrAndEpoch(1, 2, (1,), 2, zk_version=2)
    core.ctx.leadership[T1] = zk.states[T1]
    run = drive(core, zk, BrokersChanged({0: registration(0), 2: registration(2)}))
    assert core.ctx.partition_states[T1] is PartitionState.OFFLINE_PARTITION
    assert (zk.states[T1].leader, zk.states[T1].isr) == (-1, (1,))
    assert core.unclean_elections == 0
    assert "no live in-sync replica" in run.log


def test_unclean_election_is_counted_when_the_topic_allows_it(zk: FakeZk) -> None:
    zk.states[T1] = LeaderIsrAndEpoch(1, 2, (1,), 2, zk_version=2)
    core = ControllerCore(0, LogConfig())
    drive(core, zk, elected(zk, (0, 1, 2), **{"unclean.leader.election.enable": "true"}))
    run = drive(core, zk, BrokersChanged({0: registration(0), 2: registration(2)}))
    assert (zk.states[T1].leader, zk.states[T1].isr) == (2, (2,))
    assert core.unclean_elections == 1
    assert "unclean election of events-1" in run.log


@pytest.mark.parametrize(
    "change",
    [
        ConfigsChanged({"events": {"unclean.leader.election.enable": "true"}}, LogConfig()),
        ConfigsChanged({}, LogConfig(unclean_leader_election_enable=True)),
    ],
    ids=["topic override", "broker default"],
)
def test_allowing_unclean_election_live_elects_an_offline_partition_at_once(
    core: ControllerCore, zk: FakeZk, change: ConfigsChanged
) -> None:
    zk.states[T1] = LeaderIsrAndEpoch(1, 2, (1,), 2, zk_version=2)
    core.ctx.leadership[T1] = zk.states[T1]
    drive(core, zk, BrokersChanged({0: registration(0), 2: registration(2)}))
    assert core.ctx.partition_states[T1] is PartitionState.OFFLINE_PARTITION
    run = drive(core, zk, change)
    assert (zk.states[T1].leader, zk.states[T1].isr) == (2, (2,))
    assert core.ctx.partition_states[T1] is PartitionState.ONLINE_PARTITION
    assert core.unclean_elections == 1
    assert partition_states(run.leader_and_isr[2])[T1] == (2, (2,))


def test_a_config_change_that_forbids_unclean_election_leaves_offline_partitions_offline(
    core: ControllerCore, zk: FakeZk
) -> None:
    zk.states[T1] = LeaderIsrAndEpoch(1, 2, (1,), 2, zk_version=2)
    core.ctx.leadership[T1] = zk.states[T1]
    drive(core, zk, BrokersChanged({0: registration(0), 2: registration(2)}))
    drive(core, zk, ConfigsChanged({"events": {"retention.ms": "1000"}}, LogConfig()))
    assert core.ctx.partition_states[T1] is PartitionState.OFFLINE_PARTITION
    assert core.ctx.topic_configs["events"] == {"retention.ms": "1000"}
    assert core.unclean_elections == 0


def test_a_bounced_leader_is_replaced_then_briefed_as_a_started_broker(
    core: ControllerCore, zk: FakeZk
) -> None:
    brokers = {0: registration(0), 1: registration(1, timestamp=2000), 2: registration(2)}
    run = drive(core, zk, BrokersChanged(brokers))
    assert run.steps[0].brokers_removed == (1,)
    assert (zk.states[T1].leader, zk.states[T1].isr) == (2, (2, 0))
    assert partition_states(run.leader_and_isr[1])[T1] == (2, (2, 0))
    assert run.update_metadata[1].full


def test_a_broker_reported_dead_by_ray_fails_over_and_its_stale_znode_is_ignored(
    core: ControllerCore, zk: FakeZk
) -> None:
    run = drive(core, zk, BrokerDied(1, 1000))
    assert zk.states[T1].leader == 2
    assert run.steps[0].brokers_removed == (1,)
    stale = drive(core, zk, BrokersChanged({b: registration(b) for b in (0, 1, 2)}))
    assert 1 not in core.ctx.live_brokers and stale.writes == []
    restarted = drive(core, zk, BrokersChanged({**core.ctx.live_brokers, 1: registration(1, 3000)}))
    assert 1 in core.ctx.live_brokers
    assert restarted.update_metadata[1].full


def test_a_death_report_for_an_older_incarnation_is_ignored(
    core: ControllerCore, zk: FakeZk
) -> None:
    run = drive(core, zk, BrokerDied(1, 999))
    assert run.writes == [] and 1 in core.ctx.live_brokers


# ------------------------------------------------------------------ ISR changes and shutdown


def test_isr_change_notification_propagates_the_new_isr_to_every_broker(
    core: ControllerCore, zk: FakeZk
) -> None:
    zk.states[T0] = LeaderIsrAndEpoch(0, 5, (0, 1), 2, zk_version=5)
    run = drive(core, zk, IsrChanged({T0: zk.states[T0], TopicPartition("gone", 0): None}))
    assert run.writes == [] and run.leader_and_isr == {}
    assert sorted(run.update_metadata) == [0, 1, 2]
    [topic] = run.update_metadata[2].topics
    assert [(p.partition, p.isr) for p in topic.partitions] == [(0, (0, 1))]
    assert core.ctx.leadership[T0].zk_version == 5


def test_a_shutting_down_follower_added_back_to_the_isr_is_taken_out_again(
    core: ControllerCore, zk: FakeZk
) -> None:
    """KIP-841: a stopping broker's last fetch can reach the leader after the controller took it
    out of the ISR; if the leader adds it back, the controller removes it at once."""
    drive(core, zk, ControlledShutdown(41, 1))
    assert zk.states[T0].isr == (0, 2)
    zk.states[T0] = replace(zk.states[T0], isr=(0, 2, 1), zk_version=zk.states[T0].zk_version + 1)
    run = drive(core, zk, IsrChanged({T0: zk.states[T0]}))
    assert zk.states[T0].isr == (0, 2)
    assert "ISR names brokers [1] that are down, shutting down or restarted" in run.log


def test_an_isr_change_of_a_topic_being_deleted_elects_nothing_and_starts_no_replica(
    core: ControllerCore, zk: FakeZk
) -> None:
    """A leader's late ISR write naming a stopping broker, for a topic whose deletion has begun:
    removing that broker would elect a leader and send LeaderAndIsr, recreating replicas the
    deletion had just deleted."""
    drive(core, zk, ControlledShutdown(41, 1))
    core.ctx.topics_to_be_deleted.add(T0[0])
    written = replace(zk.states[T0], isr=(0, 2, 1), zk_version=zk.states[T0].zk_version + 1)
    zk.states[T0] = written
    run = drive(core, zk, IsrChanged({T0: written}))
    assert run.writes == [] and run.leader_and_isr == {}
    assert zk.states[T0] == written


def test_an_isr_written_before_a_broker_registered_again_loses_that_broker(zk: FakeZk) -> None:
    """A late notification of an ISR naming an earlier incarnation of a restarted broker: its log
    may have lost what it had, so it must catch up again before it counts."""
    core = ControllerCore(0, LogConfig())
    event = elected(zk)
    restarted = {**event.brokers, 2: replace(event.brokers[2], zxid=500)}
    drive(core, zk, replace(event, brokers=restarted))
    zk.states[T0] = replace(zk.states[T0], isr=(0, 1, 2), zk_version=zk.states[T0].zk_version + 1)
    drive(core, zk, IsrChanged({T0: zk.states[T0]}, {T0: 400}))
    assert zk.states[T0].isr == (0, 1)
    zk.states[T0] = replace(zk.states[T0], isr=(0, 1, 2), zk_version=zk.states[T0].zk_version + 1)
    kept = drive(core, zk, IsrChanged({T0: zk.states[T0]}, {T0: 600}))
    assert kept.writes == [] and zk.states[T0].isr == (0, 1, 2)


def test_controlled_shutdown_moves_leadership_off_and_answers_with_the_requests(
    core: ControllerCore, zk: FakeZk
) -> None:
    run = drive(core, zk, ControlledShutdown(41, 1))
    assert (zk.states[T1].leader, zk.states[T1].isr) == (2, (2, 0))
    assert zk.states[T0].isr == (0, 2)
    last = run.steps[-1]
    assert last.replies == (ControlledShutdownReply(41, Errors.NONE, 0),)
    assert {r.broker_id for r in last.requests} == {0, 1, 2}
    assert 1 in core.ctx.shutting_down


def test_controlled_shutdown_counts_partitions_no_other_replica_can_take(
    core: ControllerCore, zk: FakeZk
) -> None:
    zk.states[T1] = LeaderIsrAndEpoch(1, 2, (1,), 2, zk_version=2)
    core.ctx.leadership[T1] = zk.states[T1]
    assert drive(core, zk, ControlledShutdown(1, 1)).replies == [
        ControlledShutdownReply(1, Errors.NONE, 0)
    ]
    zk.states[T0] = LeaderIsrAndEpoch(0, 5, (0, 2), 2, zk_version=6)
    core.ctx.leadership[T0] = zk.states[T0]
    core.ctx.shutting_down.clear()
    core.ctx.live_brokers.pop(2)
    assert drive(core, zk, ControlledShutdown(2, 0)).replies == [
        ControlledShutdownReply(2, Errors.NONE, 0)
    ]


def test_controlled_shutdown_of_an_unknown_broker_or_by_an_inactive_controller(
    core: ControllerCore, zk: FakeZk
) -> None:
    assert drive(core, zk, ControlledShutdown(1, 9)).replies == [
        ControlledShutdownReply(1, Errors.NONE, 0)
    ]
    inactive = ControllerCore(1, LogConfig())
    assert drive(inactive, zk, ControlledShutdown(2, 0)).replies == [
        ControlledShutdownReply(2, Errors.NOT_CONTROLLER, -1)
    ]


# ------------------------------------------------------------------ controller failover


def test_resigning_forgets_the_cluster_and_closes_every_channel(
    core: ControllerCore, zk: FakeZk
) -> None:
    run = drive(core, zk, Resigned())
    assert not core.active and core.ctx.assignments == {}
    assert run.steps[0].brokers_removed == (0, 1, 2)
    assert not run.steps[0].release_controller


def test_a_moved_controller_aborts_its_operation_resigns_and_releases_controller(
    core: ControllerCore, zk: FakeZk
) -> None:
    zk.epoch_version += 1
    run = drive(core, zk, ControlledShutdown(5, 1))
    assert run.replies == [ControlledShutdownReply(5, Errors.NOT_CONTROLLER, -1)]
    assert not core.active and not core.awaiting_writes
    assert any(e.release_controller for e in run.steps)
    assert zk.states[T1].leader == 1


def test_a_new_event_while_writes_are_outstanding_is_refused(core: ControllerCore) -> None:
    effects = core.handle(ControlledShutdown(1, 1))
    assert effects.writes and core.awaiting_writes
    with pytest.raises(RuntimeError):
        core.handle(IsrChanged({}))


def test_resigning_while_writes_are_outstanding_abandons_the_operation(
    core: ControllerCore,
) -> None:
    assert core.handle(CreateTopics(4, (NewTopic("audit", 1, 1),))).writes
    effects = core.handle(Resigned())
    moved = "broker 0 stopped being the controller"
    assert effects.replies == (
        CreateTopicsReply(4, (CreateTopicResult("audit", Errors.NOT_CONTROLLER, moved),)),
    )
    assert not core.awaiting_writes and not core.active


def test_events_about_the_cluster_are_ignored_while_inactive(zk: FakeZk) -> None:
    core = ControllerCore(0, LogConfig())
    run = drive(core, zk, BrokersChanged({0: registration(0)}))
    assert run.steps == [Effects()]


# ------------------------------------------------------------------ topic creation


def test_create_topics_writes_fenced_znodes_answers_and_elects_new_leaders(
    core: ControllerCore, zk: FakeZk
) -> None:
    topic = NewTopic("audit", 2, 2, (("retention.ms", "5"),))
    run = drive(core, zk, CreateTopics(9, (topic,), ReplicaPlacement(start_index=0)))
    assert zk.topics["audit"] == CreateTopic(
        "audit", ((0, (0, 1)), (1, (1, 2))), (("retention.ms", "5"),), EPOCH_VERSION
    )
    assert run.replies == [CreateTopicsReply(9, (CreateTopicResult("audit", Errors.NONE),))]
    assert zk.states[TopicPartition("audit", 1)] == LeaderIsrAndEpoch(1, 0, (1, 2), EPOCH, 0)
    assert partition_states(run.leader_and_isr[1])[TopicPartition("audit", 0)] == (0, (0, 1))
    assert "audit" in core.ctx.assignments


@pytest.mark.parametrize(
    ("topic", "error"),
    [
        (NewTopic("events", 1, 1), Errors.TOPIC_ALREADY_EXISTS),
        (NewTopic("ev.ents", 1, 1), Errors.NONE),
        (NewTopic("bad name", 1, 1), Errors.INVALID_TOPIC_EXCEPTION),
        (NewTopic("wide", 1, 4), Errors.INVALID_REPLICATION_FACTOR),
        (NewTopic("conf", 1, 1, (("cleanup.policy", "nonsense"),)), Errors.INVALID_CONFIG),
    ],
)
def test_create_topics_validates_each_topic(
    core: ControllerCore, zk: FakeZk, topic: NewTopic, error: Errors
) -> None:
    [reply] = drive(core, zk, CreateTopics(1, (topic,))).replies
    assert isinstance(reply, CreateTopicsReply)
    assert reply.results[0].error is error


def test_validate_only_topic_creation_answers_each_topic_and_writes_nothing(
    core: ControllerCore, zk: FakeZk
) -> None:
    topics = (NewTopic("audit", 2, 2), NewTopic("wide", 1, 4), NewTopic("events", 1, 1))
    run = drive(core, zk, CreateTopics(3, topics, validate_only=True))
    [reply] = run.replies
    assert isinstance(reply, CreateTopicsReply)
    assert [r.error for r in reply.results] == [
        Errors.NONE,
        Errors.INVALID_REPLICATION_FACTOR,
        Errors.TOPIC_ALREADY_EXISTS,
    ]
    assert run.writes == [] and "audit" not in zk.topics
    assert "audit" not in core.ctx.assignments


def test_a_topic_created_meanwhile_by_another_writer_already_exists(
    core: ControllerCore, zk: FakeZk
) -> None:
    zk.topics["audit"] = CreateTopic("audit", ((0, (0,)),), (), EPOCH_VERSION)
    [reply] = drive(core, zk, CreateTopics(1, (NewTopic("audit", 1, 1),))).replies
    assert isinstance(reply, CreateTopicsReply)
    assert reply.results[0].error is Errors.TOPIC_ALREADY_EXISTS


def test_an_inactive_controller_refuses_topic_creation(zk: FakeZk) -> None:
    [reply] = drive(
        ControllerCore(2, LogConfig()), zk, CreateTopics(1, (NewTopic("a", 1, 1),))
    ).replies
    assert isinstance(reply, CreateTopicsReply)
    assert reply.results[0].error is Errors.NOT_CONTROLLER
    assert zk.writes == []


def test_topic_change_loads_new_topics_and_forgets_deleted_ones(
    core: ControllerCore, zk: FakeZk
) -> None:
    audit = TopicSnapshot("audit", {0: (2, 0)}, {}, {})
    run = drive(core, zk, TopicsChanged(frozenset({"audit"}), (audit,)))
    assert sorted(core.ctx.assignments) == ["audit"]
    assert zk.states[TopicPartition("audit", 0)].leader == 2
    assert partition_states(run.leader_and_isr[2]) == {TopicPartition("audit", 0): (2, (2, 0))}


# ------------------------------------------------------------------ broker answers


def test_an_error_in_a_leader_and_isr_answer_is_logged_and_counted(core: ControllerCore) -> None:
    effects = core.handle(
        ControlResponseError(
            2,
            "leader_and_isr",
            Errors.NONE,
            (PartitionError("events", 1, Errors.KAFKA_STORAGE_ERROR),),
        )
    )
    assert core.response_errors == 1
    assert list(core.recent_response_errors) == [
        "broker 2 failed leader_and_isr for events-1: KAFKA_STORAGE_ERROR"
    ]
    assert effects.state_changes == (
        "[Controller id=0 epoch=3] "
        "broker 2 failed leader_and_isr for events-1: KAFKA_STORAGE_ERROR",
    )
    core.handle(ControlResponseError(1, "update_metadata", Errors.STALE_CONTROLLER_EPOCH))
    assert core.response_errors == 2


# ------------------------------------------------------------------ adding partitions


def grow(core: ControllerCore, zk: FakeZk, *requests: tuple[str, NewPartitions]) -> Run:
    return drive(core, zk, CreatePartitions(5, tuple(requests)))


def test_create_partitions_writes_the_whole_assignment_then_elects_only_the_new_partitions(
    core: ControllerCore, zk: FakeZk
) -> None:
    run = grow(core, zk, ("events", NewPartitions(4)))
    written = dict(zk.grown["events"].assignment)
    assert written[0] == (0, 1, 2) and written[1] == (1, 2, 0)
    assert sorted(written) == [0, 1, 2, 3]
    assert run.replies == [
        CreatePartitionsReply(5, (CreatePartitionsResult("events", Errors.NONE),))
    ]
    new = {TopicPartition("events", 2), TopicPartition("events", 3)}
    created = {w.tp for w in run.writes if isinstance(w, CreatePartitionState)}
    assert created == new
    assert not any(isinstance(w, UpdatePartitionState) for w in run.writes)
    for tp in new:
        assert zk.states[tp].leader == written[tp.partition][0]
        assert core.ctx.partition_states[tp] is PartitionState.ONLINE_PARTITION
    assert core.ctx.assignments["events"] == written


def test_validate_only_growth_answers_each_topic_and_writes_nothing(
    core: ControllerCore, zk: FakeZk
) -> None:
    requests = (("events", NewPartitions(4)), ("nope", NewPartitions(4)))
    run = drive(core, zk, CreatePartitions(5, requests, validate_only=True))
    assert run.replies == [
        CreatePartitionsReply(
            5,
            (
                CreatePartitionsResult("events", Errors.NONE),
                CreatePartitionsResult(
                    "nope", Errors.UNKNOWN_TOPIC_OR_PARTITION, "topic 'nope' does not exist"
                ),
            ),
        )
    ]
    assert run.writes == [] and "events" not in zk.grown
    assert len(core.ctx.assignments["events"]) == 2


def test_new_partitions_start_their_placement_at_partition_zeros_leader(
    core: ControllerCore, zk: FakeZk
) -> None:
    grow(core, zk, ("events", NewPartitions(5)))
    # Kafka's addPartitions: start index = partition 0's leader (broker 0), shift the same, and the
    # walk goes on from partition 2 of 3 brokers; partition 3 wraps, so its followers shift by one.
    assert dict(zk.grown["events"].assignment)[2] == (2, 0, 1)
    assert dict(zk.grown["events"].assignment)[3] == (0, 2, 1)


def test_explicit_new_assignments_are_written_as_given(core: ControllerCore, zk: FakeZk) -> None:
    grow(core, zk, ("events", NewPartitions(3, [[2, 1, 0]])))
    assert dict(zk.grown["events"].assignment)[2] == (2, 1, 0)


@pytest.mark.parametrize(
    ("request_", "error", "message"),
    [
        (("events", NewPartitions(1)), Errors.INVALID_PARTITIONS, "currently has 2 partitions"),
        (("events", NewPartitions(2)), Errors.INVALID_PARTITIONS, "already has 2 partitions"),
        (("nope", NewPartitions(4)), Errors.UNKNOWN_TOPIC_OR_PARTITION, "'nope'"),
        (("events", NewPartitions(3, [[0, 0, 1]])), Errors.INVALID_REPLICA_ASSIGNMENT, "duplicate"),
        (("events", NewPartitions(3, [[0, 1]])), Errors.INVALID_REPLICA_ASSIGNMENT, "inconsistent"),
        (("events", NewPartitions(3, [[0, 1, 7]])), Errors.INVALID_REPLICA_ASSIGNMENT, "[7]"),
        (("events", NewPartitions(4, [[0, 1, 2]])), Errors.INVALID_REPLICA_ASSIGNMENT, "needs 2"),
    ],
)
def test_bad_create_partitions_requests_are_refused_and_write_nothing(
    core: ControllerCore,
    zk: FakeZk,
    request_: tuple[str, NewPartitions],
    error: Errors,
    message: str,
) -> None:
    run = grow(core, zk, request_)
    [reply] = run.replies
    assert isinstance(reply, CreatePartitionsReply)
    [result] = reply.results
    assert result.error is error and message in (result.message or "")
    assert run.writes == [] and zk.grown == {}
    assert sorted(core.ctx.assignments["events"]) == [0, 1]


def test_create_partitions_on_an_inactive_controller_answers_not_controller(zk: FakeZk) -> None:
    core = ControllerCore(2, LogConfig())
    [reply] = grow(core, zk, ("events", NewPartitions(4))).replies
    assert isinstance(reply, CreatePartitionsReply)
    assert reply.results[0].error is Errors.NOT_CONTROLLER


def test_a_topic_named_twice_in_one_request_is_refused_the_second_time(
    core: ControllerCore, zk: FakeZk
) -> None:
    [reply] = grow(core, zk, ("events", NewPartitions(3)), ("events", NewPartitions(4))).replies
    assert isinstance(reply, CreatePartitionsReply)
    assert [r.error for r in reply.results] == [Errors.NONE, Errors.INVALID_REQUEST]
    assert len(zk.grown["events"].assignment) == 3


def test_racks_mixed_with_rackless_brokers_refuse_placement_unless_rack_unaware(
    zk: FakeZk,
) -> None:
    core = ControllerCore(0, LogConfig())
    brokers = {b: replace(registration(b), rack="a" if b else None) for b in (0, 1, 2)}
    drive(core, zk, replace(elected(zk), brokers=brokers))
    [refused] = drive(core, zk, CreateTopics(1, (NewTopic("r", 3, 2),))).replies
    assert isinstance(refused, CreateTopicsReply)
    assert refused.results[0].error is Errors.INVALID_REPLICA_ASSIGNMENT
    assert "[0]" in (refused.results[0].message or "") and "r" not in zk.topics
    unaware = CreateTopics(2, (NewTopic("r", 3, 2),), ReplicaPlacement(rack_aware=False))
    [created] = drive(core, zk, unaware).replies
    assert created == CreateTopicsReply(2, (CreateTopicResult("r", Errors.NONE),))
    safe = CreateTopics(3, (NewTopic("s", 3, 2),), ReplicaPlacement(racks_if_all=True))
    [created] = drive(core, zk, safe).replies
    assert created == CreateTopicsReply(3, (CreateTopicResult("s", Errors.NONE),))


def test_explicit_topic_assignment_is_written_as_given(core: ControllerCore, zk: FakeZk) -> None:
    topic = NewTopic("pinned", -1, -1, replica_assignments={0: [2, 0], 1: [1, 2]})
    drive(core, zk, CreateTopics(1, (topic,)))
    assert zk.topics["pinned"].assignment == ((0, (2, 0)), (1, (1, 2)))
    assert zk.states[TopicPartition("pinned", 0)].leader == 2
