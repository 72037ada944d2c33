"""Partition leader election: which replica leads a partition, and with which ISR.

Pure functions after Kafka's ``PartitionLeaderElectionAlgorithms`` (the
``OfflinePartitionLeaderSelector`` and friends of 0.8-0.11; see Kafka's design docs on
replication and unclean leader election, and KIP-106). The
controller gathers the facts -- the assignment (AR), the ISR read from
``/brokers/topics/<t>/partitions/<p>/state``, the live brokers -- and calls one
of these; writing the decision to ZooKeeper and sending LeaderAndIsr stay with
the controller, so every rule here is testable without Ray or ZooKeeper.

Every selector walks replicas in *assignment* order, never ISR order: the
first assigned replica is the preferred one, so the order in which brokers
rejoined the ISR must not decide who leads.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from enum import Enum

NO_LEADER = -1
"""The leader id of a partition that has none (offline), as in Kafka's ``LeaderAndIsr.NoLeader``."""


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """One election's decision: the new leader and the ISR the controller writes with it."""

    leader: int
    isr: tuple[int, ...]


class ElectionStrategy(Enum):
    """Why the controller is electing, which picks the selector function to call.

    The controller's partition state machine receives one of these with the
    Online target state, as Kafka's ``PartitionLeaderElectionStrategy`` does.
    """

    OFFLINE = "offline"  # the leader died or the partition was offline: offline_leader
    REASSIGNMENT = "reassignment"  # the replica set is moving: reassignment_leader
    PREFERRED = "preferred"  # rebalancing leadership: preferred_leader
    CONTROLLED_SHUTDOWN = "controlled_shutdown"  # a broker is leaving: controlled_shutdown_leader


def offline_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    unclean_allowed: bool,
) -> tuple[LeaderAndIsr, bool]:
    """Elect a leader for a partition whose leader died or that is Offline.

    Returns the decision and whether it was *unclean*, i.e. may lose committed
    records, so the caller can log it and count it as Kafka's
    ``UncleanLeaderElectionsPerSec`` does. Three outcomes, in order:

    * clean: the first assigned replica that is live and in the ISR; the ISR
      keeps its old order minus the dead members.
    * unclean, only if ``unclean_allowed``: the first live assigned replica;
      it alone forms the ISR, since nothing else is known to match its log.
    * none: ``NO_LEADER`` with the ISR unchanged. Kafka keeps the old ISR so
      that the moment any of those replicas returns it can be elected cleanly
      (with ISR (0, 1) and both down, whichever comes back leads).
    """
    live_isr = tuple(replica for replica in isr if replica in live)
    clean = _first(assignment, lambda replica: replica in live_isr)
    if clean is not None:
        return LeaderAndIsr(clean, live_isr), False
    if unclean_allowed:
        unclean = _first(assignment, lambda replica: replica in live)
        if unclean is not None:
            return LeaderAndIsr(unclean, (unclean,)), True
    return LeaderAndIsr(NO_LEADER, tuple(isr)), False


def reassignment_leader(
    reassignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
) -> LeaderAndIsr | None:
    """Elect a leader from the target replicas of a reassignment, or None if none qualifies.

    Picks the first target replica that is live and in the ISR. The ISR is left
    unchanged: the old replicas leave it later, when they are taken offline.
    """
    leader = _first(reassignment, lambda replica: replica in live and replica in isr)
    return None if leader is None else LeaderAndIsr(leader, tuple(isr))


def preferred_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
) -> LeaderAndIsr | None:
    """Move leadership to the preferred (first assigned) replica if it is live and in the ISR.

    Returns None otherwise; only the preferred replica is ever chosen, since
    the point is to restore the placement's leader spread. The caller skips
    partitions the preferred replica already leads (Kafka's ELECTION_NOT_NEEDED).
    """
    if not assignment:
        return None
    preferred = assignment[0]
    if preferred in live and preferred in isr:
        return LeaderAndIsr(preferred, tuple(isr))
    return None


def controlled_shutdown_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
) -> LeaderAndIsr | None:
    """Move leadership off brokers that are shutting down, or None if no other replica can lead.

    The shutting-down brokers leave the ISR first, so that acks=all writes stop
    waiting for them; the leader is then the first assigned replica that is
    live, staying, and still in that ISR.
    """
    remaining_isr = tuple(replica for replica in isr if replica not in shutting_down)
    leader = _first(
        assignment,
        lambda replica: replica in live and replica in remaining_isr,
    )
    return None if leader is None else LeaderAndIsr(leader, remaining_isr)


def _first(replicas: Sequence[int], eligible: Callable[[int], bool]) -> int | None:
    """The first replica in ``replicas`` order that is ``eligible``, or None."""
    return next((replica for replica in replicas if eligible(replica)), None)
