"""Tests for rafka.actors.controller.topic_deletion: Kafka's TopicDeletionManager decisions over a
controller context, with no ZooKeeper and no brokers."""

from __future__ import annotations

from rafka.actors.controller.context import ControllerContext
from rafka.actors.controller.request_batch import RequestBatch
from rafka.actors.controller.state_machines import PartitionState, ReplicaState
from rafka.actors.controller.topic_deletion import TopicDeletionManager
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.protocol.types import TopicPartition

R = ReplicaState
T0 = TopicPartition("events", 0)
T1 = TopicPartition("events", 1)


def context(live: tuple[int, ...] = (0, 1, 2)) -> ControllerContext:
    """``events`` with two partitions on brokers 0-2 and ``other`` on broker 0, all online."""
    ctx = ControllerContext(epoch=3)
    ctx.live_brokers = {b: BrokerRegistration(b, "h", f"n{b}") for b in live}
    ctx.assignments = {"events": {0: (0, 1, 2), 1: (1, 2, 0)}, "other": {0: (0,)}}
    for topic, parts in ctx.assignments.items():
        for p, replicas in parts.items():
            tp = TopicPartition(topic, p)
            ctx.leadership[tp] = LeaderIsrAndEpoch(replicas[0], 1, replicas, 3)
            ctx.partition_states[tp] = PartitionState.ONLINE_PARTITION
            for b in replicas:
                ctx.replica_states[(topic, p, b)] = (
                    R.ONLINE_REPLICA if b in live else (R.OFFLINE_REPLICA)
                )
    return ctx


def manager(ctx: ControllerContext, log: list[str] | None = None) -> TopicDeletionManager:
    return TopicDeletionManager(ctx, RequestBatch(), (log if log is not None else []).append)


def stopped(deletion: TopicDeletionManager) -> dict[int, set[TopicPartition]]:
    """Per broker, the partitions the batch asks it to stop and delete."""
    return {
        broker: set(tps) for (broker, delete), tps in deletion.batch.stop_replica.items() if delete
    }


def events_replicas(state: ReplicaState, ctx: ControllerContext) -> list[tuple[str, int, int]]:
    return sorted(k for k, s in ctx.replica_states.items() if k[0] == "events" and s is state)


def test_enqueue_queues_existing_topics_and_returns_unknown_names() -> None:
    ctx = context()
    assert manager(ctx).enqueue(["events", "ghost"]) == ["ghost"]
    assert ctx.topics_to_be_deleted == {"events"}
    assert ctx.is_queued_for_deletion("events")
    assert TopicPartition("events", 0) not in ctx.partitions()


def test_starting_a_deletion_drops_the_partitions_and_stops_every_live_replica() -> None:
    ctx = context()
    deletion = manager(ctx)
    deletion.enqueue(["events"])
    assert deletion.resume() == []
    assert T0 not in ctx.partition_states and T1 not in ctx.partition_states
    assert ctx.partition_states[TopicPartition("other", 0)] is PartitionState.ONLINE_PARTITION
    assert len(events_replicas(R.REPLICA_DELETION_STARTED, ctx)) == 6
    assert stopped(deletion) == {b: {T0, T1} for b in (0, 1, 2)}
    assert deletion.batch.deleted_topics == {"events"}
    _, update = deletion.batch.build(ctx, 0)
    assert all(
        r.deleted_topics == ("events",) and [t.topic for t in r.topics] == []
        for r in update.values()
    )


def test_a_deletion_in_progress_is_not_started_again() -> None:
    ctx = context()
    deletion = manager(ctx)
    deletion.enqueue(["events"])
    deletion.resume()
    again = manager(ctx)
    assert again.resume() == []
    assert stopped(again) == {}


def test_once_every_replica_is_deleted_the_topic_is_ready_then_forgotten() -> None:
    ctx = context()
    deletion = manager(ctx)
    deletion.enqueue(["events"])
    deletion.resume()
    deletion.replicas_deleted(events_replicas(R.REPLICA_DELETION_STARTED, ctx))
    assert deletion.resume() == ["events"]
    deletion.complete("events")
    assert "events" not in ctx.assignments and not ctx.topics_to_be_deleted
    assert events_replicas(R.REPLICA_DELETION_SUCCESSFUL, ctx) == []
    assert not any(k[0] == "events" for k in ctx.replica_states)


def test_a_replica_on_a_dead_broker_pauses_the_deletion_until_its_broker_starts() -> None:
    ctx = context(live=(0, 1))
    deletion = manager(ctx)
    deletion.enqueue(["events"])
    deletion.resume()
    assert events_replicas(R.REPLICA_DELETION_INELIGIBLE, ctx) == [
        ("events", 0, 2),
        ("events", 1, 2),
    ]
    assert ctx.topics_ineligible_for_deletion == {"events"}
    assert sorted(stopped(deletion)) == [0, 1]
    deletion.replicas_deleted(events_replicas(R.REPLICA_DELETION_STARTED, ctx))
    assert manager(ctx).resume() == []  # paused, not failed: nothing else happens
    ctx.live_brokers[2] = BrokerRegistration(2, "h", "n2")
    resumed = manager(ctx)
    resumed.brokers_started({2})
    assert resumed.resume() == []
    assert stopped(resumed) == {2: {T0, T1}}
    resumed.replicas_deleted(events_replicas(R.REPLICA_DELETION_STARTED, ctx))
    assert resumed.resume() == ["events"]


def test_a_broker_dying_mid_deletion_makes_its_started_replicas_ineligible() -> None:
    ctx = context()
    deletion = manager(ctx)
    deletion.enqueue(["events"])
    deletion.resume()
    deletion.replicas_deleted([("events", 0, 1)])
    deletion.fail_replicas([("events", 0, 1), ("events", 1, 1)])
    # The replica already deleted stays deleted; the other one waits for its broker.
    assert ctx.replica_states[("events", 0, 1)] is R.REPLICA_DELETION_SUCCESSFUL
    assert ctx.replica_states[("events", 1, 1)] is R.REPLICA_DELETION_INELIGIBLE
    assert ctx.topics_ineligible_for_deletion == {"events"}


def test_a_retry_stops_only_the_replicas_not_yet_deleted() -> None:
    ctx = context()
    deletion = manager(ctx)
    deletion.enqueue(["events"])
    deletion.resume()
    started = events_replicas(R.REPLICA_DELETION_STARTED, ctx)
    deletion.replicas_deleted([k for k in started if k != ("events", 1, 1)])
    deletion.fail_replicas([("events", 1, 1)])
    retry = manager(ctx)
    retry.brokers_started({1})
    retry.resume()
    assert stopped(retry) == {1: {T1}}


def test_a_stale_answer_for_a_replica_not_being_deleted_is_refused_and_logged() -> None:
    ctx = context()
    log: list[str] = []
    manager(ctx, log).replicas_deleted([("other", 0, 0)])
    assert ctx.replica_states[("other", 0, 0)] is R.ONLINE_REPLICA
    assert log == [
        "invalid transition of replica 0 of other-0 from OnlineReplica to "
        "ReplicaDeletionSuccessful; refused"
    ]
