"""Tests for rafka.actors.controller.deletion_steps: topic deletion as the controller core runs it,
event by event, with ZooKeeper writes answered by a fake."""

from __future__ import annotations

from typing import TypeVar

from rafka.actors.controller.core import ControllerCore
from rafka.actors.controller.effects import (
    DeleteTopicsReply,
    DeleteTopicZnodes,
    Effects,
    QueueTopicDeletion,
    ZkWrite,
)
from rafka.actors.controller.events import (
    BrokersChanged,
    ControllerElected,
    CoreEvent,
    DeleteTopics,
    StopReplicaAnswered,
    TopicDeletionsChanged,
    TopicSnapshot,
    ZkWriteSucceeded,
)
from rafka.actors.controller.state_machines import ReplicaState
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.log.config import LogConfig
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import DeleteTopicResult
from rafka.protocol.messages.control import (
    LeaderAndIsrRequest,
    PartitionError,
    StopReplicaRequest,
    UpdateMetadataRequest,
)

EPOCH, EPOCH_VERSION = 7, 6
Request = TypeVar("Request", LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest)
ASSIGNMENT = {0: (0, 1, 2), 1: (1, 2, 0)}


def registration(broker: int) -> BrokerRegistration:
    return BrokerRegistration(broker, f"10.0.0.{broker}", f"node-{broker}", timestamp=1000)


def elected(
    brokers: tuple[int, ...] = (0, 1, 2), deleting: frozenset[str] = frozenset()
) -> ControllerElected:
    states = {p: LeaderIsrAndEpoch(r[0], 1, r, 2, zk_version=1) for p, r in ASSIGNMENT.items()}
    topics = tuple(TopicSnapshot(name, ASSIGNMENT, {}, states) for name in ("events", "keep"))
    return ControllerElected(
        EPOCH, EPOCH_VERSION, {b: registration(b) for b in brokers}, topics, deleting
    )


class Harness:
    """A controller core whose writes always succeed; what each event made it do."""

    def __init__(self, delete_topic_enable: bool = True) -> None:
        self.core = ControllerCore(0, LogConfig(), delete_topic_enable)
        self.writes: list[ZkWrite] = []

    def drive(self, event: CoreEvent) -> list[Effects]:
        steps = [self.core.handle(event)]
        pending = list(steps[0].writes)
        while pending:
            write = pending.pop(0)
            self.writes.append(write)
            steps.append(self.core.handle(ZkWriteSucceeded(write, 0)))
            pending += steps[-1].writes
        return steps


def requests(steps: list[Effects], kind: type[Request]) -> dict[int, list[Request]]:
    found: dict[int, list[Request]] = {}
    for effects in steps:
        for r in effects.requests:
            if isinstance(r.request, kind):
                found.setdefault(r.broker_id, []).append(r.request)
    return found


def deleting(steps: list[Effects]) -> dict[int, set[tuple[str, int]]]:
    """Per broker, the partitions it is asked to stop and delete."""
    return {
        b: {p for r in rs if r.delete for p in r.partitions}
        for b, rs in requests(steps, StopReplicaRequest).items()
    }


def answer_all(h: Harness, steps: list[Effects]) -> list[Effects]:
    """Every broker answers its StopReplica with deletion without error."""
    out: list[Effects] = []
    for broker, partitions in sorted(deleting(steps).items()):
        out += h.drive(StopReplicaAnswered(broker, tuple(sorted(partitions)), Errors.NONE))
    return out


def log(steps: list[Effects]) -> str:
    return "\n".join(line for e in steps for line in e.state_changes)


def test_delete_topics_queues_the_admin_node_answers_and_stops_every_replica() -> None:
    h = Harness()
    h.drive(elected())
    steps = h.drive(DeleteTopics(1, ("events",)))
    assert h.writes == [QueueTopicDeletion("events")]
    assert [r for e in steps for r in e.replies] == [
        DeleteTopicsReply(1, (DeleteTopicResult("events", Errors.NONE),))
    ]
    assert deleting(steps) == {b: {("events", 0), ("events", 1)} for b in (0, 1, 2)}
    updates = requests(steps, UpdateMetadataRequest)
    assert all(u.deleted_topics == ("events",) for rs in updates.values() for u in rs)
    finish = answer_all(h, steps)
    assert h.writes[-1] == DeleteTopicZnodes("events", EPOCH_VERSION)
    assert "events" not in h.core.ctx.assignments and "keep" in h.core.ctx.assignments
    assert "deletion of topic events completed" in log(finish)


def test_delete_topics_refuses_unknown_topics_and_a_disabled_cluster() -> None:
    h = Harness()
    h.drive(elected())
    reply = h.drive(DeleteTopics(1, ("ghost",)))[0].replies[0]
    assert isinstance(reply, DeleteTopicsReply)
    assert reply.results[0].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    disabled = Harness(delete_topic_enable=False)
    disabled.drive(elected())
    reply = disabled.drive(DeleteTopics(2, ("events",)))[0].replies[0]
    assert isinstance(reply, DeleteTopicsReply)
    assert reply.results[0].error is Errors.TOPIC_DELETION_DISABLED
    assert disabled.writes == []
    assert "events" in disabled.core.ctx.assignments


def test_an_inactive_controller_answers_not_controller() -> None:
    reply = Harness().drive(DeleteTopics(1, ("events",)))[0].replies[0]
    assert isinstance(reply, DeleteTopicsReply)
    assert reply.results[0].error is Errors.NOT_CONTROLLER


def test_a_dead_broker_pauses_the_deletion_and_its_return_finishes_it() -> None:
    h = Harness()
    h.drive(elected())
    h.drive(BrokersChanged({b: registration(b) for b in (0, 1)}))
    steps = h.drive(TopicDeletionsChanged(frozenset({"events"})))
    assert sorted(deleting(steps)) == [0, 1]
    assert "deletion of topic events paused" in log(steps)
    answered = answer_all(h, steps)
    assert not any(isinstance(w, DeleteTopicZnodes) for w in h.writes)
    assert "events" in h.core.ctx.assignments
    assert deleting(answered) == {}
    back = h.drive(BrokersChanged({b: registration(b) for b in (0, 1, 2)}))
    # The returning broker gets no leadership for the topic, only its deletion.
    assert all(
        p.topic != "events"
        for rs in requests(back, LeaderAndIsrRequest).values()
        for r in rs
        for p in r.partitions
    )
    assert deleting(back) == {2: {("events", 0), ("events", 1)}}
    answer_all(h, back)
    assert h.writes[-1] == DeleteTopicZnodes("events", EPOCH_VERSION)
    assert "events" not in h.core.ctx.assignments


def test_a_new_controller_resumes_a_deletion_from_the_admin_nodes() -> None:
    h = Harness()
    steps = h.drive(elected(deleting=frozenset({"events"})))
    leadership = {
        p.topic
        for rs in requests(steps, LeaderAndIsrRequest).values()
        for r in rs
        for p in r.partitions
    }
    assert leadership == {"keep"}
    assert deleting(steps) == {b: {("events", 0), ("events", 1)} for b in (0, 1, 2)}
    answer_all(h, steps)
    assert "events" not in h.core.ctx.assignments


def test_a_failed_stop_replica_leaves_the_replica_ineligible() -> None:
    h = Harness()
    h.drive(elected())
    steps = h.drive(DeleteTopics(1, ("events",)))
    error = PartitionError("events", 1, Errors.KAFKA_STORAGE_ERROR)
    h.drive(StopReplicaAnswered(1, (("events", 0), ("events", 1)), Errors.NONE, (error,)))
    states = h.core.ctx.replica_states
    assert states[("events", 0, 1)] is ReplicaState.REPLICA_DELETION_SUCCESSFUL
    assert states[("events", 1, 1)] is ReplicaState.REPLICA_DELETION_INELIGIBLE
    assert deleting(steps)


def test_admin_nodes_of_unknown_topics_are_removed_and_disabled_deletion_ignores_them() -> None:
    h = Harness()
    h.drive(elected())
    h.drive(TopicDeletionsChanged(frozenset({"ghost"})))
    assert h.writes == [DeleteTopicZnodes("ghost", EPOCH_VERSION)]
    disabled = Harness(delete_topic_enable=False)
    disabled.drive(elected())
    steps = disabled.drive(TopicDeletionsChanged(frozenset({"events"})))
    assert disabled.writes == []
    assert "topic deletion is disabled" in log(steps)
