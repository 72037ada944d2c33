"""Partition reassignment, the controller's side: seed 000's ten steps (Kafka's
onPartitionReassignment of its ZooKeeper era), with no Ray, no ZooKeeper client and no event loop.

A reassignment moves a partition from its original replicas (OAR) to reassigned ones (RAR). It is
asked for through the admin API (``AlterPartitionReassignments``, validated all or nothing) or by a
tool writing ``/admin/reassign_partitions``; the admin node lists every reassignment in progress,
and the controller then:

1. writes AR := OAR + RAR to the topic's assignment znode;
2. bumps the leader epoch and sends LeaderAndIsr to OAR + RAR;
3. starts RAR - OAR as NewReplica;
4. waits until every replica of RAR is in the ISR (every ISR change checks again);
5. moves RAR to OnlineReplica;
6. caches AR := RAR;
7. keeps a leader of RAR (bumping the epoch) or elects one from RAR;
8. takes OAR - RAR to OfflineReplica: out of the ISR, StopReplica;
9. then to NonExistentReplica: StopReplica with deletion, so their logs leave the disk;
10. writes AR := RAR to ZooKeeper, removes the partition from the admin node and sends
    UpdateMetadata.

AR reaches ZooKeeper last because it is the only lasting record of the assignment: a controller
failover at any step reads the admin node again and resumes, taking the AR it finds (OAR, OAR +
RAR or RAR) as its start, which makes every step safe to repeat.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence

from rafka.actors.controller.context import ReassignedPartition
from rafka.actors.controller.effects import (
    AlterPartitionReassignmentsReply,
    ListPartitionReassignmentsReply,
    SetTopicAssignment,
    UpdatePartitionState,
    WriteReassignments,
    ZkWrite,
)
from rafka.actors.controller.election import reassignment_leader
from rafka.actors.controller.events import (
    AlterPartitionReassignments,
    ListPartitionReassignments,
    PartitionReassignmentsChanged,
    ZkWriteSucceeded,
)
from rafka.actors.controller.operation import OperationRunner, Outcomes, PartitionWrite, Step
from rafka.actors.controller.state_machines import (
    ReplicaKey,
    ReplicaState,
    replica_state_machine,
)
from rafka.actors.zk.data import LeaderIsrAndEpoch
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import PartitionReassignment, ReassignmentResult
from rafka.protocol.types import TopicPartition, partition_name

_R = ReplicaState


class ReassignmentSteps(OperationRunner):
    """The reassignment operations of the controller core (a mixin of ``ControllerCore``)."""

    active: bool

    def _remove_from_isr(self, partitions: list[TopicPartition], brokers: set[int]) -> Step:
        """OfflineReplica's ISR shrink, as the core does it for failed brokers."""
        raise NotImplementedError

    def _topic_deletions(self, names: frozenset[str]) -> Step:
        """Queue topics named for deletion and resume deletions (``TopicDeletionSteps``)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ requests and the admin node

    def _alter_reassignments(self, event: AlterPartitionReassignments) -> Step:
        """Admin AlterPartitionReassignments: refuse the whole request if any partition is
        invalid; otherwise list them in the admin node, answer, and start them."""
        requested = event.reassignments
        if not self.active:
            moved = f"broker {self.broker_id} is not the controller"
            self._reply(
                AlterPartitionReassignmentsReply(
                    event.request_id,
                    tuple(
                        ReassignmentResult(tp, Errors.NOT_CONTROLLER, moved) for tp, _ in requested
                    ),
                )
            )
            return
        results = tuple(
            _twice(tp) if [t for t, _ in requested].count(tp) > 1 else self._validate(tp, replicas)
            for tp, replicas in requested
        )
        refused = [r for r in results if r.error is not Errors.NONE]
        for result in refused:
            self._log(f"reassignment refused, nothing written: {result.message}")
        if refused:
            self._reply(AlterPartitionReassignmentsReply(event.request_id, results))
            return

        def aborted() -> AlterPartitionReassignmentsReply:
            moved = f"broker {self.broker_id} stopped being the controller"
            return AlterPartitionReassignmentsReply(
                event.request_id,
                tuple(ReassignmentResult(tp, Errors.NOT_CONTROLLER, moved) for tp, _ in requested),
            )

        self._abort_reply = aborted
        for tp, replicas in requested:
            self._begin_reassignment(tp, ReassignedPartition(self.ctx.replicas(tp), replicas))
        yield from self._write_admin_node()
        self._reply(AlterPartitionReassignmentsReply(event.request_id, results))
        yield from self._start_reassignments([tp for tp, _ in requested])

    def _reassignments_changed(self, event: PartitionReassignmentsChanged) -> Step:
        """``/admin/reassign_partitions`` as read: start what it names that is not in progress
        (dropping invalid entries), then make the node list exactly what is in progress. On
        becoming controller this resumes every reassignment a previous controller left."""
        ctx = self.ctx
        ctx.reassignments_zk_version = event.zk_version
        started: list[TopicPartition] = []
        for tp, target in sorted(event.partitions.items()):
            known = ctx.partitions_being_reassigned.get(tp)
            if known is not None:
                if known.target != target:
                    self._log(
                        f"{partition_name(tp)} is already being reassigned to "
                        f"{list(known.target)}; not restarted for {list(target)} from the admin "
                        "node"
                    )
                continue
            result = self._validate(tp, target)
            if result.error is not Errors.NONE:
                self._log(f"admin node entry dropped ({result.error.name}): {result.message}")
                continue
            current = ctx.replicas(tp)
            self._begin_reassignment(
                tp, ReassignedPartition(_original_replicas(current, target), target)
            )
            started.append(tp)
        if dict(event.partitions) != self._in_progress() or (
            event.zk_version >= 0 and not ctx.partitions_being_reassigned
        ):
            yield from self._write_admin_node()
        yield from self._start_reassignments(started)

    def _list_reassignments(self, event: ListPartitionReassignments) -> None:
        """Admin ListPartitionReassignments: the reassignments in progress (of the partitions
        asked about), with the whole replica list and the replicas added and removed."""
        if not self.active:
            self._reply(ListPartitionReassignmentsReply(event.request_id, Errors.NOT_CONTROLLER))
            return
        ctx = self.ctx
        wanted = sorted(
            tp
            for tp in ctx.partitions_being_reassigned
            if event.partitions is None or tp in event.partitions
        )
        found = []
        for tp in wanted:
            reassigned = ctx.partitions_being_reassigned[tp]
            original, target = reassigned.original, reassigned.target
            found.append(
                (
                    tp,
                    PartitionReassignment(
                        ctx.replicas(tp),
                        tuple(r for r in target if r not in original),
                        tuple(r for r in original if r not in target),
                    ),
                )
            )
        self._reply(ListPartitionReassignmentsReply(event.request_id, Errors.NONE, tuple(found)))

    def _validate(self, tp: TopicPartition, replicas: Sequence[int]) -> ReassignmentResult:
        """Whether ``tp`` may be reassigned to ``replicas``; the error names what is wrong."""
        ctx = self.ctx
        name = partition_name(tp)
        if tp.topic not in ctx.assignments:
            return _refuse(
                tp, Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {tp.topic!r} does not exist"
            )
        if tp.partition not in ctx.assignments[tp.topic]:
            return _refuse(
                tp,
                Errors.UNKNOWN_TOPIC_OR_PARTITION,
                f"topic {tp.topic!r} has no partition {tp.partition}",
            )
        if ctx.is_queued_for_deletion(tp.topic) or tp.topic in ctx.deletions_awaiting_reassignment:
            return _refuse(
                tp, Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {tp.topic!r} is being deleted"
            )
        known = ctx.partitions_being_reassigned.get(tp)
        if known is not None:
            return _refuse(
                tp,
                Errors.REASSIGNMENT_IN_PROGRESS,
                f"{name} is already being reassigned to {list(known.target)}",
            )
        if not replicas:
            return _refuse(tp, Errors.INVALID_REPLICA_ASSIGNMENT, "the replica list is empty")
        twice = sorted({r for r in replicas if list(replicas).count(r) > 1})
        if twice:
            return _refuse(
                tp,
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"brokers {twice} appear more than once in {list(replicas)}",
            )
        dead = [r for r in replicas if not ctx.is_live(r)]
        if dead:
            return _refuse(
                tp,
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"brokers {dead} are not live (live brokers: {sorted(ctx.live_brokers)})",
            )
        return ReassignmentResult(tp, Errors.NONE)

    def _begin_reassignment(self, tp: TopicPartition, reassigned: ReassignedPartition) -> None:
        self.ctx.partitions_being_reassigned[tp] = reassigned
        self._log(
            f"{partition_name(tp)} reassignment begins: OAR {list(reassigned.original)} "
            f"RAR {list(reassigned.target)}"
        )

    def _in_progress(self) -> dict[TopicPartition, tuple[int, ...]]:
        """What the admin node must list: each reassignment in progress and its target."""
        return {tp: r.target for tp, r in sorted(self.ctx.partitions_being_reassigned.items())}

    def _write_admin_node(self) -> Step:
        """Make ``/admin/reassign_partitions`` list exactly the reassignments in progress. A
        conflict means someone else wrote it since it was read: its watch brings the fresh content,
        which is merged and written again then."""
        ctx = self.ctx
        partitions = tuple(self._in_progress().items())
        if not partitions and ctx.reassignments_zk_version < 0:
            return
        write = WriteReassignments(partitions, ctx.reassignments_zk_version, ctx.epoch_zk_version)
        outcomes = yield from self._perform((write,))
        outcome = outcomes[write]
        if isinstance(outcome, ZkWriteSucceeded):
            ctx.reassignments_zk_version = outcome.zk_version
        else:
            self._log("/admin/reassign_partitions changed meanwhile; rewritten once read again")

    # ------------------------------------------------------------------ the steps

    def _start_reassignments(self, partitions: list[TopicPartition]) -> Step:
        """Steps 1 to 3, then step 4's first check."""
        ctx = self.ctx
        if not partitions:
            return
        original = {tp: ctx.replicas(tp) for tp in partitions}
        growing = {}
        for tp, current in original.items():
            target = ctx.partitions_being_reassigned[tp].target
            union = current + tuple(r for r in target if r not in current)
            if union != current:
                growing[tp] = union
        yield from self._write_assignments(growing, "AR := OAR + RAR")
        partitions = [tp for tp in partitions if tp in ctx.partitions_being_reassigned]
        yield from self._bump_leader_epochs(partitions)
        replicas = replica_state_machine(ctx.replica_states, self._log)
        for tp in partitions:
            adding = [
                r for r in ctx.partitions_being_reassigned[tp].target if r not in original[tp]
            ]
            new = replicas.transition(_keys(tp, adding), _R.NEW_REPLICA)
            if new:
                self._log(
                    f"{partition_name(tp)}: replicas {_brokers(new)} -> NewReplica (RAR - OAR)"
                )
        yield from self._continue_reassignments(partitions)

    def _continue_reassignments(self, partitions: Sequence[TopicPartition]) -> Step:
        """Step 4's check (after an ISR change, say): complete the reassignments of
        ``partitions`` whose every target replica is in the ISR."""
        ctx = self.ctx
        for tp in sorted(set(partitions)):
            reassigned = ctx.partitions_being_reassigned.get(tp)
            state = ctx.leadership.get(tp)
            if reassigned is None or state is None or ctx.is_queued_for_deletion(tp.topic):
                continue
            missing = [r for r in reassigned.target if r not in state.isr]
            if missing:
                self._log(
                    f"{partition_name(tp)}: waiting for replicas {missing} to join ISR "
                    f"{list(state.isr)}"
                )
                continue
            yield from self._complete_reassignment(tp)

    def _complete_reassignment(self, tp: TopicPartition) -> Step:
        """Steps 5 to 10 for a partition whose every target replica is in the ISR."""
        ctx = self.ctx
        name = partition_name(tp)
        target = ctx.partitions_being_reassigned[tp].target
        full = ctx.replicas(tp)
        removing = [r for r in full if r not in target]
        replicas = replica_state_machine(ctx.replica_states, self._log)
        online = replicas.transition(_keys(tp, target), _R.ONLINE_REPLICA)
        self._log(f"{name}: RAR {list(target)} in the ISR; {_brokers(online)} -> OnlineReplica")
        ctx.assignments[tp.topic][tp.partition] = target
        self._log(f"{name}: cached AR := RAR {list(target)}")
        elected = yield from self._elect_reassigned_leader(tp, target)
        if not elected:
            ctx.assignments[tp.topic][tp.partition] = full
            self._log(f"{name}: no replica of RAR {list(target)} can lead yet; waiting")
            return
        if removing:
            yield from self._remove_from_isr([tp], set(removing))
            offline = replicas.transition(_keys(tp, removing), _R.OFFLINE_REPLICA)
            for key in offline:
                self._batch.add_stop_replica(key[2], tp, delete=False)
            self._log(f"{name}: OAR - RAR {_brokers(offline)} -> OfflineReplica (StopReplica)")
            started = replicas.transition(offline, _R.REPLICA_DELETION_STARTED)
            for key in started:
                self._batch.add_stop_replica(key[2], tp, delete=True)
            gone = replicas.transition(
                replicas.transition(started, _R.REPLICA_DELETION_SUCCESSFUL),
                _R.NON_EXISTENT_REPLICA,
            )
            self._log(f"{name}: {_brokers(gone)} -> NonExistentReplica (StopReplica with deletion)")
        yield from self._write_assignments({tp: target}, "AR := RAR")
        if ctx.partitions_being_reassigned.pop(tp, None) is not None:
            yield from self._write_admin_node()
        self._batch.add_update_metadata([tp])
        self._log(f"{name}: reassignment to {list(target)} completed")
        if tp.topic in ctx.deletions_awaiting_reassignment and not any(
            moving.topic == tp.topic for moving in ctx.partitions_being_reassigned
        ):
            ctx.deletions_awaiting_reassignment.discard(tp.topic)
            yield from self._topic_deletions(frozenset({tp.topic}))

    def _elect_reassigned_leader(
        self, tp: TopicPartition, target: tuple[int, ...]
    ) -> Generator[tuple[ZkWrite, ...], Outcomes, bool]:
        """Step 7: a live leader in RAR stays (its epoch bumped, so it learns AR := RAR);
        otherwise the reassigned-partition selector elects one from RAR. Whether it was written."""
        ctx = self.ctx
        written_to: list[TopicPartition] = []

        def decide(tp: TopicPartition) -> PartitionWrite | None:
            current = ctx.leadership.get(tp)
            if current is None:
                return None
            if current.leader in target and current.leader in ctx.electable():
                leader, isr = current.leader, current.isr
            else:
                decision = reassignment_leader(target, current.isr, ctx.electable())
                if decision is None:
                    return None
                leader, isr = decision.leader, decision.isr
            new = LeaderIsrAndEpoch(
                leader, current.leader_epoch + 1, isr, ctx.epoch, current.zk_version
            )
            return UpdatePartitionState(tp, new, ctx.epoch_zk_version)

        def written(tp: TopicPartition, write: PartitionWrite) -> None:
            written_to.append(tp)
            state = write.state
            self._log(
                f"{partition_name(tp)}: leader {state.leader} of RAR, epoch {state.leader_epoch} "
                f"ISR {list(state.isr)}; LeaderAndIsr to {list(ctx.replicas(tp))}"
            )
            self._batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)

        yield from self._retrying([tp], decide, written)
        return bool(written_to)

    def _bump_leader_epochs(self, partitions: list[TopicPartition]) -> Step:
        """Step 2: the same leader and ISR at a new leader epoch, sent to OAR + RAR."""
        ctx = self.ctx

        def decide(tp: TopicPartition) -> PartitionWrite | None:
            current = ctx.leadership.get(tp)
            if current is None:
                return None
            new = LeaderIsrAndEpoch(
                current.leader, current.leader_epoch + 1, current.isr, ctx.epoch, current.zk_version
            )
            return UpdatePartitionState(tp, new, ctx.epoch_zk_version)

        def written(tp: TopicPartition, write: PartitionWrite) -> None:
            state = write.state
            self._log(
                f"{partition_name(tp)}: leader {state.leader} epoch bumped to "
                f"{state.leader_epoch} ISR {list(state.isr)}; LeaderAndIsr to OAR + RAR "
                f"{list(ctx.replicas(tp))}"
            )
            self._batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)

        yield from self._retrying(partitions, decide, written)

    def _write_assignments(
        self, changes: Mapping[TopicPartition, tuple[int, ...]], what: str
    ) -> Step:
        """Write partitions' new AR to their topics' assignment znodes, one write per topic; the
        reassignments of a topic that is gone are dropped."""
        ctx = self.ctx
        by_topic: dict[str, dict[int, tuple[int, ...]]] = {}
        for tp, replicas in changes.items():
            by_topic.setdefault(tp.topic, {})[tp.partition] = replicas
        writes = {
            SetTopicAssignment(
                topic,
                tuple(sorted({**ctx.assignments[topic], **parts}.items())),
                ctx.epoch_zk_version,
            ): topic
            for topic, parts in sorted(by_topic.items())
        }
        outcomes = yield from self._perform(tuple(writes))
        for write, topic in writes.items():
            if isinstance(outcomes[write], ZkWriteSucceeded):
                ctx.assignments[topic] = dict(write.assignment)
                for partition, replicas in sorted(by_topic[topic].items()):
                    self._log(f"{topic}-{partition}: {what}: AR {list(replicas)} written")
                continue
            for partition in by_topic[topic]:
                ctx.partitions_being_reassigned.pop(TopicPartition(topic, partition), None)
            self._log(f"topic {topic} is gone; its reassignments are dropped")


def _original_replicas(current: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, ...]:
    """The OAR of a reassignment resumed from ZooKeeper, which keeps only AR and RAR: AR was
    written as OAR followed by the members of RAR it lacked, so AR's longest tail of RAR members
    is taken as added (none when that tail is all of AR). Only what ``list`` reports depends on
    it; the steps start from the AR found."""
    cut = len(current)
    while cut > 0 and current[cut - 1] in target:
        cut -= 1
    return current if cut == 0 else current[:cut]


def _keys(tp: TopicPartition, brokers: Sequence[int]) -> list[ReplicaKey]:
    return [(tp.topic, tp.partition, broker) for broker in brokers]


def _brokers(keys: Sequence[ReplicaKey]) -> list[int]:
    return [key[2] for key in keys]


def _refuse(tp: TopicPartition, error: Errors, what: str) -> ReassignmentResult:
    """A refusal whose message names the partition and what is wrong."""
    return ReassignmentResult(tp, error, f"{partition_name(tp)}: {what}")


def _twice(tp: TopicPartition) -> ReassignmentResult:
    return _refuse(tp, Errors.INVALID_REQUEST, "appears more than once in the request")
