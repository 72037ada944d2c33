"""Tests for rafka.actors.controller.request_batch and controller_context: one LeaderAndIsr and
UpdateMetadata per broker."""

from __future__ import annotations

import pytest

from rafka.actors.controller.context import ControllerContext
from rafka.actors.controller.request_batch import RequestBatch
from rafka.actors.controller.state_machines import PartitionState, ReplicaState
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.metadata import BrokerMetadata, PartitionMetadata
from rafka.protocol.types import TopicPartition

CONTROLLER_ID = 0
E0, E1, A0 = TopicPartition("events", 0), TopicPartition("events", 1), TopicPartition("audit", 0)


@pytest.fixture
def ctx() -> ControllerContext:
    """Brokers 0-2 registered, 3 dead; events has 2 partitions (one with a replica on 3), audit
    has 1."""
    return ControllerContext(
        epoch=4,
        live_brokers={
            b: BrokerRegistration(b, f"10.0.0.{b}", f"node-{b}", rack=None) for b in (2, 0, 1)
        },
        assignments={"events": {0: (0, 1, 3), 1: (1, 2, 0)}, "audit": {0: (2, 0, 1)}},
        topic_configs={"events": {"retention.ms": "60000", "cleanup.policy": "delete"}},
        leadership={
            E0: LeaderIsrAndEpoch(0, 6, (0, 1), 4, zk_version=9),
            E1: LeaderIsrAndEpoch(1, 2, (1, 2, 0), 3, zk_version=2),
            A0: LeaderIsrAndEpoch(2, 0, (2, 0, 1), 1, zk_version=0),
        },
    )


def metadata_partitions(request) -> dict[tuple[str, int], PartitionMetadata]:
    return {(t.topic, p.partition): p for t in request.topics for p in t.partitions}


# ------------------------------------------------------------------ RequestBatch


def test_empty_batch_sends_nothing(ctx: ControllerContext) -> None:
    assert RequestBatch().build(ctx, CONTROLLER_ID) == ({}, {})


def test_leader_and_isr_goes_only_to_live_brokers(ctx: ControllerContext) -> None:
    batch = RequestBatch()
    batch.add_leader_and_isr(ctx, list(ctx.replicas(E0)), E0)
    leader_and_isr, _ = batch.build(ctx, CONTROLLER_ID)
    assert sorted(leader_and_isr) == [0, 1]


def test_leader_and_isr_carries_the_controllers_view_of_the_partition(
    ctx: ControllerContext,
) -> None:
    batch = RequestBatch()
    batch.add_leader_and_isr(ctx, [1], E0, is_new=True)
    request = batch.build(ctx, CONTROLLER_ID)[0][1]
    assert (request.controller_id, request.controller_epoch) == (CONTROLLER_ID, 4)
    assert request.partitions == (
        LeaderAndIsrPartitionState("events", 0, 4, 0, 6, (0, 1), 9, (0, 1, 3), True),
    )


def test_partitions_for_one_broker_are_gathered_into_one_request(ctx: ControllerContext) -> None:
    batch = RequestBatch()
    for tp in (E0, E1, A0):
        batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)
    leader_and_isr, _ = batch.build(ctx, CONTROLLER_ID)
    assert {
        b: sorted((s.topic, s.partition) for s in r.partitions) for b, r in leader_and_isr.items()
    } == {
        0: [A0, E0, E1],
        1: [A0, E0, E1],
        2: [A0, E1],
    }


def test_later_leadership_of_the_same_partition_replaces_the_earlier(
    ctx: ControllerContext,
) -> None:
    batch = RequestBatch()
    batch.add_leader_and_isr(ctx, [0], E0)
    ctx.leadership[E0] = LeaderIsrAndEpoch(1, 7, (1,), 4, zk_version=10)
    batch.add_leader_and_isr(ctx, [0], E0)
    (state,) = batch.build(ctx, CONTROLLER_ID)[0][0].partitions
    assert (state.leader, state.leader_epoch, state.isr, state.zk_version) == (1, 7, (1,), 10)


def test_leader_and_isr_only_to_dead_brokers_still_updates_everyones_metadata(
    ctx: ControllerContext,
) -> None:
    batch = RequestBatch()
    batch.add_leader_and_isr(ctx, [3], E0)
    leader_and_isr, update = batch.build(ctx, CONTROLLER_ID)
    assert leader_and_isr == {}
    assert sorted(update) == [0, 1, 2]
    assert list(metadata_partitions(update[0])) == [E0]


def test_update_metadata_goes_to_every_live_broker_with_the_live_broker_list(
    ctx: ControllerContext,
) -> None:
    batch = RequestBatch()
    batch.add_update_metadata([E1])
    _, update = batch.build(ctx, CONTROLLER_ID)
    assert sorted(update) == [0, 1, 2]
    expected_brokers = tuple(BrokerMetadata(b, f"10.0.0.{b}", f"node-{b}") for b in (0, 1, 2))
    for request in update.values():
        assert request.live_brokers == expected_brokers
        assert not request.full
        assert metadata_partitions(request) == {
            E1: PartitionMetadata(1, 1, 2, (1, 2, 0), (1, 2, 0))
        }


def test_full_metadata_goes_to_named_brokers_and_partial_to_the_rest(
    ctx: ControllerContext,
) -> None:
    batch = RequestBatch()
    batch.add_update_metadata([E1])
    batch.add_full_metadata([2])
    _, update = batch.build(ctx, CONTROLLER_ID)
    assert update[2].full
    assert sorted(metadata_partitions(update[2])) == [A0, E0, E1]
    for broker in (0, 1):
        assert not update[broker].full
        assert list(metadata_partitions(update[broker])) == [E1]


def test_full_metadata_for_a_dead_broker_is_not_sent(ctx: ControllerContext) -> None:
    batch = RequestBatch()
    batch.add_full_metadata([3])
    _, update = batch.build(ctx, CONTROLLER_ID)
    assert 3 not in update
    assert not any(request.full for request in update.values())


def test_broker_change_forces_update_metadata_without_partitions(ctx: ControllerContext) -> None:
    batch = RequestBatch()
    batch.add_broker_change()
    leader_and_isr, update = batch.build(ctx, CONTROLLER_ID)
    assert leader_and_isr == {}
    assert sorted(update) == [0, 1, 2]
    assert all(
        request.topics == () and len(request.live_brokers) == 3 for request in update.values()
    )


def test_partitions_of_deleted_topics_or_without_leadership_are_left_out(
    ctx: ControllerContext,
) -> None:
    batch = RequestBatch()
    batch.add_update_metadata([E0, A0, TopicPartition("audit", 7)])
    ctx.remove_topic("events")
    request = batch.build(ctx, CONTROLLER_ID)[1][0]
    assert list(metadata_partitions(request)) == [A0]


# ------------------------------------------------------------------ ControllerContext


def test_context_lists_partitions_and_replicas(ctx: ControllerContext) -> None:
    assert sorted(ctx.partitions()) == [A0, E0, E1]
    assert ctx.replicas(E1) == (1, 2, 0)
    assert sorted(ctx.partitions_on({3})) == [E0]
    assert sorted(ctx.partitions_on({2})) == [A0, E1]
    assert sorted(ctx.partitions_led_by({0, 2})) == [A0, E0]


def test_context_liveness_follows_registrations(ctx: ControllerContext) -> None:
    assert ctx.is_live(0) and not ctx.is_live(3)
    del ctx.live_brokers[0]
    assert not ctx.is_live(0)


def test_context_partitions_in_a_state(ctx: ControllerContext) -> None:
    ctx.partition_states = {
        E0: PartitionState.ONLINE_PARTITION,
        E1: PartitionState.OFFLINE_PARTITION,
        A0: PartitionState.ONLINE_PARTITION,
    }
    assert sorted(ctx.partitions_in(PartitionState.ONLINE_PARTITION)) == [A0, E0]
    assert ctx.partitions_in(PartitionState.NEW_PARTITION) == []


def test_remove_topic_forgets_everything_about_it(ctx: ControllerContext) -> None:
    ctx.partition_states = {
        E0: PartitionState.ONLINE_PARTITION,
        A0: PartitionState.ONLINE_PARTITION,
    }
    ctx.replica_states = {
        ("events", 0, 1): ReplicaState.ONLINE_REPLICA,
        ("audit", 0, 2): ReplicaState.ONLINE_REPLICA,
    }
    ctx.remove_topic("events")
    assert list(ctx.assignments) == ["audit"]
    assert ctx.topic_configs == {}
    assert list(ctx.leadership) == [A0]
    assert list(ctx.partition_states) == [A0]
    assert list(ctx.replica_states) == [("audit", 0, 2)]
