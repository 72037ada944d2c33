"""Client-side partition assignors: which member of a consumer group reads which partition.

In Kafka's group protocol the coordinator never assigns partitions itself. It
agrees on one assignor with every member (``choose_protocol``), picks a leader
member and hands it all members' subscriptions in the JoinGroup response; the
leader runs the assignor and returns the result in SyncGroup (Kafka's consumer group protocol).
So an assignor is a pure function of (partition count per topic, subscription
per member), kept here with no Ray or I/O and looked up by name
(``get_assignor``), as ``partition.assignment.strategy`` names it in Kafka.

Every assignor returns an entry for every member, an empty list for a member
that gets nothing, each list sorted. Subscribed topics missing from
``partitions_per_topic`` (not created yet, or no metadata) are skipped, as
Kafka's assignors do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from rafka.protocol.errors import Errors
from rafka.protocol.types import TopicPartition

Assignment = dict[str, list[TopicPartition]]
"""Member id -> the sorted (topic, partition) pairs it should consume."""


@dataclass(frozen=True)
class Subscription:
    """What one member sends the leader: its topics and what it owned before.

    ``owned_partitions`` is the member's assignment from the previous
    generation; only the sticky assignors read it, to keep partitions where
    they are. ``user_data`` is opaque to every assignor here and is carried for
    custom ones, as in Kafka's ``ConsumerPartitionAssignor.Subscription``.
    """

    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartition, ...] = ()
    user_data: bytes = b""


class Assignor(Protocol):
    """A named assignment strategy; ``name`` is what members advertise in JoinGroup."""

    name: str

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        """Map each member id to the sorted partitions it should consume."""
        ...


def _empty_assignment(subscriptions: Mapping[str, Subscription]) -> Assignment:
    """An entry per member, so members that get nothing still hear so in SyncGroup."""
    return {member: [] for member in sorted(subscriptions)}


def _partitions_of(
    partitions_per_topic: Mapping[str, int], topics: Iterable[str]
) -> list[TopicPartition]:
    """Every existing partition of ``topics``, sorted by (topic, partition)."""
    return [
        TopicPartition(topic, partition)
        for topic in sorted(set(topics))
        for partition in range(partitions_per_topic.get(topic, 0))
    ]


def _members_per_topic(subscriptions: Mapping[str, Subscription]) -> dict[str, list[str]]:
    """Topic -> the sorted ids of the members subscribed to it."""
    members: dict[str, list[str]] = {}
    for member in sorted(subscriptions):
        for topic in set(subscriptions[member].topics):
            members.setdefault(topic, []).append(member)
    return members


class RangeAssignor:
    """Kafka's default: per topic, contiguous ranges of partitions to the sorted members.

    For each topic, its subscribers are sorted by member id and its P
    partitions split into C ranges; the first ``P mod C`` members get one
    extra (Kafka's RangeAssignor docs: 10 partitions, 3 members -> 4, 3, 3). Each topic is split
    on its own, so with many topics the first members are favoured every time
    (two topics of 10 give the first member 8 partitions, the others 6); the
    upside is that partition i of co-partitioned topics lands on one member.
    """

    name = "range"

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        """Split each topic's partitions into contiguous ranges over its subscribers."""
        assignment = _empty_assignment(subscriptions)
        for topic, members in _members_per_topic(subscriptions).items():
            quota, extra = divmod(partitions_per_topic.get(topic, 0), len(members))
            start = 0
            for index, member in enumerate(members):
                length = quota + (1 if index < extra else 0)
                assignment[member].extend(
                    TopicPartition(topic, p) for p in range(start, start + length)
                )
                start += length
        return {member: sorted(tps) for member, tps in assignment.items()}


class RoundRobinAssignor:
    """All topic-partitions sorted, dealt one at a time to the sorted members in turn.

    A member not subscribed to a partition's topic is skipped for it (Kafka's
    ``CircularIterator``). With identical subscriptions the counts differ by at
    most one across all topics, fixing range's bias; with different
    subscriptions no balance is promised (Kafka's RoundRobinAssignor docs
    make identical subscriptions a precondition). Kafka sorts by hash code; sorting by
    name gives the same evenness and a reproducible result.
    """

    name = "roundrobin"

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        """Deal every subscribed partition to the next member that subscribes to its topic."""
        assignment = _empty_assignment(subscriptions)
        members = list(assignment)
        topics_of = {member: set(sub.topics) for member, sub in subscriptions.items()}
        all_topics: set[str] = set().union(*topics_of.values())
        position = 0
        for topic, partition in _partitions_of(partitions_per_topic, all_topics):
            # Terminates: the topic came from some member's subscription.
            while topic not in topics_of[members[position % len(members)]]:
                position += 1
            assignment[members[position % len(members)]].append(TopicPartition(topic, partition))
            position += 1
        return assignment


def _claimants(subscriptions: Mapping[str, Subscription]) -> dict[TopicPartition, set[str]]:
    """Partition -> every member that says it owned it in the previous generation."""
    claims: dict[TopicPartition, set[str]] = {}
    for member, sub in subscriptions.items():
        for tp in sub.owned_partitions:
            claims.setdefault(tp, set()).add(member)
    return claims


def _sticky_target(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
) -> Assignment:
    """The balanced assignment closest to the owned one that a greedy pass finds.

    Kafka's sticky goals, in priority order: (1) balance -- if member A has at
    least two more partitions than member B, none of A's partitions may go to
    B (so members with equal subscriptions differ by at most one); (2) keep as
    many previously owned partitions in place as possible. Approximation used
    here (Kafka searches harder, and uses generations to settle conflicts):

    1. keep each owned partition that still exists, is still subscribed, and
       is claimed by exactly one member (a double claim is treated as unowned);
    2. give each remaining partition, fewest possible takers first, to the
       least-loaded member subscribed to its topic;
    3. while some member has two more than a member that could take one of its
       partitions, move one over, preferring a partition the donor did not own.

    Each move lowers the sum of squared counts, so step 3 ends, and when it
    ends goal (1) holds exactly. For goal (2), nothing moves unless balance
    needs it; with equal subscriptions each member keeps min(valid owned, new
    count) partitions, the optimum (the tests check both properties), but with
    different subscriptions the moves chosen are not proven minimal.
    """
    topics_of = {member: frozenset(sub.topics) for member, sub in subscriptions.items()}
    takers = _members_per_topic(subscriptions)
    owned = {member: frozenset(sub.owned_partitions) for member, sub in subscriptions.items()}
    current: dict[str, set[TopicPartition]] = {member: set() for member in subscriptions}

    for (topic, partition), members in _claimants(subscriptions).items():
        if len(members) != 1:
            continue  # two members think they own it; neither claim can be trusted
        (member,) = members
        if 0 <= partition < partitions_per_topic.get(topic, 0) and topic in topics_of[member]:
            current[member].add(TopicPartition(topic, partition))

    kept: set[TopicPartition] = set().union(*current.values())
    unassigned = [tp for tp in _partitions_of(partitions_per_topic, takers) if tp not in kept]
    unassigned.sort(key=lambda tp: (len(takers[tp[0]]), tp))
    for tp in unassigned:
        member = min(takers[tp[0]], key=lambda m: (len(current[m]), m))
        current[member].add(tp)

    while (move := _find_move(current, topics_of, owned)) is not None:
        tp, donor, receiver = move
        current[donor].remove(tp)
        current[receiver].add(tp)
    return {member: sorted(current[member]) for member in sorted(current)}


def _find_move(
    current: Mapping[str, set[TopicPartition]],
    topics_of: Mapping[str, frozenset[str]],
    owned: Mapping[str, frozenset[TopicPartition]],
) -> tuple[TopicPartition, str, str] | None:
    """One (partition, donor, receiver) move that narrows a gap of two or more, or None."""
    by_load = sorted(current, key=lambda m: (len(current[m]), m))
    for donor in reversed(by_load):
        for receiver in by_load:
            if len(current[donor]) - len(current[receiver]) < 2:
                break  # receivers only get fuller from here on
            movable = [tp for tp in current[donor] if tp[0] in topics_of[receiver]]
            if movable:
                # Moving a partition the donor never owned costs no stickiness.
                return min(movable, key=lambda tp: (tp in owned[donor], tp)), donor, receiver
    return None


class StickyAssignor:
    """Balanced like round robin, but keeps partitions with their previous owners.

    Moving a partition costs the new owner a cold cache and the offset
    hand-over, so a rebalance should move as few as balance allows; see
    ``_sticky_target`` for the goals and the approximation. All partitions
    change hands within one rebalance (eager protocol: every member revokes
    everything before rejoining).
    """

    name = "sticky"

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        """The sticky, balanced assignment for this generation."""
        return _sticky_target(partitions_per_topic, subscriptions)


class CooperativeStickyAssignor:
    """The sticky target, reached in two rebalances so no member stops consuming (KIP-429).

    In incremental rebalancing members keep consuming their partitions while
    they rejoin. A partition moving from A to B must therefore be revoked by A
    before B may start on it, or both would consume it at once. So this
    rebalance withholds it: it is left out of A's assignment (A revokes it,
    then rejoins) and out of B's; the follow-up rebalance, where nobody owns
    it any more, gives it to B.
    """

    name = "cooperative-sticky"

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        """The sticky target minus partitions another member still owns."""
        claims = _claimants(subscriptions)
        return {
            member: [tp for tp in tps if not claims.get(tp, set()) - {member}]
            for member, tps in _sticky_target(partitions_per_topic, subscriptions).items()
        }


def revoked_partitions(
    owned: Iterable[TopicPartition], assigned: Iterable[TopicPartition]
) -> list[TopicPartition]:
    """The sorted partitions a member owned but was not assigned: it must stop consuming these."""
    return sorted(set(owned) - set(assigned))


ASSIGNORS: dict[str, Assignor] = {
    assignor.name: assignor
    for assignor in (
        RangeAssignor(),
        RoundRobinAssignor(),
        StickyAssignor(),
        CooperativeStickyAssignor(),
    )
}
"""Assignor name (as members advertise it in JoinGroup) -> the assignor."""


def get_assignor(name: str) -> Assignor:
    """The assignor registered under ``name``; ValueError naming the known ones otherwise."""
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise ValueError(
            f"unknown partition assignor {name!r}; known assignors: {', '.join(sorted(ASSIGNORS))}"
        ) from None


def choose_protocol(member_protocols: Sequence[Sequence[str]]) -> str:
    """The first assignor, in the first member's preference order, that every member supports.

    ``member_protocols`` holds each member's assignor names in preference
    order. Ranking by one member's order (rather than Kafka's vote) keeps the
    choice predictable; the coordinator passes the leader first.

    Raises:
        ValueError: there are no members, so there is nothing to agree on.
        InconsistentGroupProtocolError: no assignor is common to all members
            (Kafka error 23).
    """
    if not member_protocols:
        raise ValueError("cannot choose a protocol for a group with no members")
    common = set(member_protocols[0]).intersection(*member_protocols[1:])
    for name in member_protocols[0]:
        if name in common:
            return name
    raise Errors.INCONSISTENT_GROUP_PROTOCOL.exception(
        "no assignor is supported by every member; members offer "
        + "; ".join(str(list(protocols)) for protocols in member_protocols)
    )
