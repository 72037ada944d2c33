"""Leader elections asked for by an operator, and the automatic leader balance: the controller's
side of Kafka's ElectLeaders (KIP-460), ``/admin/preferred_replica_election`` and
checkAndTriggerAutoLeaderRebalance.

A preferred election moves a partition's leadership to its preferred replica (the first of its
assigned replicas) only if that broker is alive and in the ISR, so no acknowledged record can be
lost; the move is a conditional write of the state znode with a bumped leader epoch, followed by
LeaderAndIsr to the replicas and UpdateMetadata to every broker, like any other leader move. A
partition that does not move is reported with the reason. An unclean election (KIP-460) gives an
offline partition, one with no live in-sync replica, a live replica outside the ISR.

The automatic balance looks, per broker, at the partitions whose preferred replica it is: past
``leader.imbalance.per.broker.percentage`` of them led by another broker, it runs the preferred
election for those that can move. Like the core, this mixin has no Ray, no ZooKeeper client and no
event loop: the shell's timer only posts ``LeaderImbalanceCheck``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from rafka.actors.controller.context import ControllerContext
from rafka.actors.controller.effects import (
    ClearPreferredReplicaElection,
    ElectLeadersReply,
    UpdatePartitionState,
)
from rafka.actors.controller.election import LeaderAndIsr, offline_leader, preferred_leader
from rafka.actors.controller.events import (
    ElectLeaders,
    LeaderImbalanceCheck,
    PreferredElectionRequested,
)
from rafka.actors.controller.operation import OperationRunner, PartitionWrite, Step
from rafka.actors.controller.state_machines import PartitionState
from rafka.actors.zk.data import LeaderIsrAndEpoch
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import ElectLeadersResult
from rafka.protocol.types import ElectionType, TopicPartition

Results = dict[TopicPartition, ElectLeadersResult]


@dataclass(frozen=True)
class BrokerImbalance:
    """One broker's share of the leadership it should hold: the partitions whose preferred replica
    it is (with a leader), and those of them another broker leads."""

    broker_id: int
    preferred: int
    not_led: tuple[TopicPartition, ...]

    @property
    def ratio(self) -> float:
        """The fraction of this broker's preferred partitions it does not lead."""
        return len(self.not_led) / self.preferred if self.preferred else 0.0

    def exceeds(self, percentage: int) -> bool:
        """Whether the imbalance is past ``percentage`` percent (strictly, as in Kafka)."""
        return self.ratio > percentage / 100


def leader_imbalance(
    assignments: Mapping[TopicPartition, Sequence[int]], leaders: Mapping[TopicPartition, int]
) -> list[BrokerImbalance]:
    """Per preferred broker, in broker order: how many partitions prefer it and which of them it
    does not lead. Partitions without a known leader are left out, as in Kafka."""
    preferred: dict[int, list[TopicPartition]] = {}
    for tp, replicas in assignments.items():
        if replicas and tp in leaders:
            preferred.setdefault(replicas[0], []).append(tp)
    return [
        BrokerImbalance(
            broker,
            len(partitions),
            tuple(sorted(tp for tp in partitions if leaders[tp] != broker)),
        )
        for broker, partitions in sorted(preferred.items())
    ]


def preferred_not_available(
    tp: TopicPartition, replicas: Sequence[int], isr: Collection[int], live: Collection[int]
) -> str:
    """Why ``tp``'s preferred replica cannot lead: its broker is down, or it is out of the ISR."""
    preferred = replicas[0]
    if preferred not in live:
        return f"preferred replica {preferred} of {tp.topic}-{tp.partition} is down"
    return (
        f"preferred replica {preferred} of {tp.topic}-{tp.partition} is not in the ISR "
        f"{sorted(isr)}"
    )


class PreferredElection(OperationRunner):
    """The ElectLeaders request, the preferred-replica election admin node and the automatic
    leader balance, mixed into ``ControllerCore``."""

    active: bool
    unclean_elections: int

    def _became_online(self, tp: TopicPartition, previous: PartitionState, is_new: bool) -> None:
        """Mark ``tp`` OnlinePartition and send its new leadership."""
        raise NotImplementedError

    def _elect_leaders(self, event: ElectLeaders) -> Step:
        """Admin ElectLeaders: elect the asked leader of each partition (every partition if none
        is named) and answer with one result per partition."""
        if not self.active:
            moved = ElectLeadersResult(
                Errors.NOT_CONTROLLER, f"broker {self.broker_id} is not the controller"
            )
            refused = tuple((tp, moved) for tp in event.partitions or ())
            self._reply(ElectLeadersReply(event.request_id, refused, Errors.NOT_CONTROLLER))
            return
        partitions = tuple(self.ctx.partitions()) if event.partitions is None else event.partitions
        results: Results = {}

        def reply() -> ElectLeadersReply:
            moved = ElectLeadersResult(
                Errors.NOT_CONTROLLER, f"broker {self.broker_id} stopped being the controller"
            )
            return ElectLeadersReply(
                event.request_id, tuple((tp, results.get(tp, moved)) for tp in partitions)
            )

        self._abort_reply = reply
        if event.election_type is ElectionType.PREFERRED:
            yield from self._preferred_elections(partitions, results, "ElectLeaders request")
        else:
            yield from self._unclean_elections(partitions, results)
        self._reply(reply())

    def _admin_preferred_election(self, event: PreferredElectionRequested) -> Step:
        """``/admin/preferred_replica_election`` names partitions: elect their preferred replicas,
        then delete the node, so the next request can be written (Kafka's
        PreferredReplicaLeaderElection event)."""
        results: Results = {}
        yield from self._preferred_elections(event.partitions, results, "admin node")
        for tp, result in sorted(results.items()):
            if result.error not in (Errors.NONE, Errors.ELECTION_NOT_NEEDED):
                self._log(
                    f"{tp.topic}-{tp.partition} not moved: {result.error.name}: {result.message}"
                )
        yield from self._perform((ClearPreferredReplicaElection(self.ctx.epoch_zk_version),))

    def _check_leader_imbalance(self, event: LeaderImbalanceCheck) -> Step:
        """Kafka's checkAndTriggerAutoLeaderRebalance: per broker past the imbalance threshold,
        elect the preferred replica of its partitions that can move back to it. Nothing moves
        while a reassignment runs, as in Kafka: it is about to change the replicas."""
        ctx = self.ctx
        if ctx.partitions_being_reassigned:
            return
        leaders = {tp: ctx.leadership[tp].leader for tp in ctx.partitions() if tp in ctx.leadership}
        imbalances = leader_imbalance({tp: ctx.replicas(tp) for tp in leaders}, leaders)
        live = ctx.electable()
        candidates: list[TopicPartition] = []
        for imbalance in imbalances:
            if not imbalance.exceeds(event.imbalance_percentage):
                continue
            movable = [
                tp
                for tp in imbalance.not_led
                if preferred_leader(ctx.replicas(tp), ctx.leadership[tp].isr, live) is not None
            ]
            if movable:
                self._log(
                    f"leader imbalance of broker {imbalance.broker_id} is "
                    f"{imbalance.ratio:.0%} (past {event.imbalance_percentage}%): moving "
                    f"{len(movable)} partitions back to it"
                )
                candidates += movable
        if candidates:
            yield from self._preferred_elections(candidates, {}, "automatic leader balance")

    def _preferred_elections(
        self, partitions: Sequence[TopicPartition], results: Results, trigger: str
    ) -> Step:
        """Move each partition's leadership to its preferred replica where it may lead; fill
        ``results`` with each partition's outcome."""
        ctx = self.ctx
        before: dict[TopicPartition, LeaderIsrAndEpoch] = {}

        def decide(tp: TopicPartition) -> PartitionWrite | None:
            current = self._current(tp, results)
            if current is None:
                return None
            replicas = ctx.replicas(tp)
            if current.leader == replicas[0]:
                results[tp] = ElectLeadersResult(
                    Errors.ELECTION_NOT_NEEDED,
                    f"preferred replica {replicas[0]} already leads {tp.topic}-{tp.partition}",
                )
                return None
            live = ctx.electable()
            decision = preferred_leader(replicas, current.isr, live)
            if decision is None:
                results[tp] = ElectLeadersResult(
                    Errors.PREFERRED_LEADER_NOT_AVAILABLE,
                    preferred_not_available(tp, replicas, current.isr, live),
                )
                return None
            before[tp] = current
            return _elected(tp, current, decision, ctx)

        def written(tp: TopicPartition, write: PartitionWrite) -> None:
            old, new = before[tp], write.state
            results[tp] = ElectLeadersResult(Errors.NONE)
            self._log(
                f"{tp.topic}-{tp.partition}: preferred replica election ({trigger}): leader "
                f"{old.leader} -> {new.leader} epoch {new.leader_epoch} ISR {list(new.isr)}"
            )
            self._batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)

        yield from self._elections(partitions, results, decide, written)

    def _unclean_elections(self, partitions: Sequence[TopicPartition], results: Results) -> Step:
        """KIP-460's unclean election: a partition with no live in-sync replica gets a live
        replica outside the ISR (which may lose acknowledged records); a led partition needs
        none."""
        ctx = self.ctx
        previous: dict[TopicPartition, PartitionState] = {}

        def decide(tp: TopicPartition) -> PartitionWrite | None:
            current = self._current(tp, results)
            if current is None:
                return None
            live = ctx.electable()
            if current.leader in live:
                results[tp] = ElectLeadersResult(
                    Errors.ELECTION_NOT_NEEDED,
                    f"{tp.topic}-{tp.partition} is led by live broker {current.leader}",
                )
                return None
            decision, _ = offline_leader(ctx.replicas(tp), current.isr, live, True)
            if decision.leader < 0:
                results[tp] = ElectLeadersResult(
                    Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                    f"no replica of {tp.topic}-{tp.partition} among "
                    f"{list(ctx.replicas(tp))} is alive",
                )
                return None
            previous[tp] = ctx.partition_states.get(tp, PartitionState.OFFLINE_PARTITION)
            return _elected(tp, current, decision, ctx)

        def written(tp: TopicPartition, write: PartitionWrite) -> None:
            results[tp] = ElectLeadersResult(Errors.NONE)
            self.unclean_elections += 1
            self._log(
                f"unclean election of {tp.topic}-{tp.partition} (ElectLeaders request): replica "
                f"{write.state.leader} leads outside the old ISR; data may be lost"
            )
            self._became_online(tp, previous[tp], is_new=False)

        yield from self._elections(partitions, results, decide, written)

    def _elections(
        self,
        partitions: Sequence[TopicPartition],
        results: Results,
        decide: Callable[[TopicPartition], PartitionWrite | None],
        written: Callable[[TopicPartition, PartitionWrite], None],
    ) -> Step:
        """Write each decision, deciding again after a conflict; a partition still undecided
        after every attempt is reported as timed out."""
        yield from self._retrying(sorted(set(partitions)), decide, written)
        for tp in partitions:
            results.setdefault(
                tp,
                ElectLeadersResult(
                    Errors.REQUEST_TIMED_OUT,
                    f"the state of {tp.topic}-{tp.partition} kept changing during the election",
                ),
            )

    def _current(self, tp: TopicPartition, results: Results) -> LeaderIsrAndEpoch | None:
        """``tp``'s leadership, or None with the reason in ``results`` when it cannot be
        elected."""
        ctx = self.ctx
        topic = ctx.assignments.get(tp.topic)
        if topic is None or tp.partition not in topic or ctx.is_queued_for_deletion(tp.topic):
            results[tp] = ElectLeadersResult(
                Errors.UNKNOWN_TOPIC_OR_PARTITION,
                f"partition {tp.topic}-{tp.partition} does not exist",
            )
            return None
        current = ctx.leadership.get(tp)
        if current is None:
            results[tp] = ElectLeadersResult(
                Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                f"{tp.topic}-{tp.partition} has no leader state yet",
            )
        return current


def _elected(
    tp: TopicPartition, current: LeaderIsrAndEpoch, decision: LeaderAndIsr, ctx: ControllerContext
) -> UpdatePartitionState:
    """The conditional write making ``decision`` ``tp``'s leadership, with a bumped leader epoch."""
    new = LeaderIsrAndEpoch(
        decision.leader, current.leader_epoch + 1, decision.isr, ctx.epoch, current.zk_version
    )
    return UpdatePartitionState(tp, new, ctx.epoch_zk_version)
