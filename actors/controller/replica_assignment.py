"""Where a new topic's replicas go, and which topic names are allowed.

Pure functions used when creating a topic or adding partitions: the controller validates the name,
computes the assignment here, then writes ``/brokers/topics/<t>``.

Placement is Kafka's ``AdminUtils.assignReplicasToBrokers``. Without racks, partition p's first
replica (its preferred leader) goes on broker ``(p + start_index) mod n`` of the sorted broker list
and follower j on ``first + 1 + (shift + j) mod (n - 1)``, where the shift grows by one each time p
wraps around the broker list: leaders go round-robin and followers do not always sit next to the
same leader. Kafka draws the start index and the shift at random for each topic so that topics
created at different times do not all lead on the same broker; fixing both (as a caller may) makes
the layout reproducible, and with both 0 the first n partitions get the seeds' layout, replica j of
partition p on broker ``(p + j) mod n``.

With racks the same walk runs over the rack-alternated broker list (one broker of each rack in
turn), the shift is scaled by the number of racks, and a follower candidate is skipped while its
rack already holds a replica and some rack does not, or its broker already holds one and some
broker does not: every partition spans as many racks as it can, and leaders spread evenly across
racks and brokers.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Iterator, Mapping

from rafka.protocol.errors import (
    Errors,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
)

MAX_TOPIC_NAME_LENGTH = 249
"""Kafka's limit; it keeps ``<topic>-<partition>`` directory names within 255 characters."""

# ASCII only on purpose: names become directory names and metric names, and
# Kafka rejects anything outside this set. [a-zA-Z0-9] in a str pattern does
# not match non-ASCII letters such as 'ü'.
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")

_random = random.Random()

MIXED_RACKS_MESSAGE = (
    "Not all brokers have rack information: brokers {missing} have no rack while others do; "
    "pass rack_aware=False (--disable-rack-aware) to place replicas without racks"
)


def broker_racks(
    racks: Mapping[int, str | None], rack_aware: bool = True, racks_if_all: bool = False
) -> dict[int, str | None]:
    """The racks placement should use for these brokers, as Kafka's ``getBrokerMetadatas``.

    Rack-unaware (``rack_aware=False``, Kafka's ``--disable-rack-aware``) forgets every rack. Else
    the racks are kept, and a broker without one while others have one is
    INVALID_REPLICA_ASSIGNMENT, unless ``racks_if_all`` (Kafka's ``RackAwareMode.Safe``) asks to
    forget the racks then.
    """
    missing = sorted(b for b, rack in racks.items() if rack is None)
    if not rack_aware or (racks_if_all and missing):
        return dict.fromkeys(racks)
    if missing and len(missing) < len(racks):
        raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
            MIXED_RACKS_MESSAGE.format(missing=missing)
        )
    return dict(racks)


def assign_replicas(
    brokers: Collection[int] | Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    start_partition: int = 0,
    start_index: int | None = None,
    replica_shift: int | None = None,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Place ``partitions`` partitions of ``replication_factor`` replicas each on ``brokers``.

    ``brokers`` is a collection of broker ids, or a mapping of broker id to rack (None: no rack);
    when every broker has a rack the placement is rack-aware. Partition ids run from
    ``start_partition`` (adding partitions to a topic continues its walk). ``start_index`` and
    ``replica_shift`` fix what Kafka draws at random: the position in the broker list of partition
    0's first replica and the initial follower shift; a fixed ``start_index`` alone fixes the shift
    to the same value, as Kafka's ``fixedStartIndex`` does.

    Returns partition id -> replica tuple, preferred replica first.

    Raises:
        InvalidPartitionsError: ``partitions`` < 1 or ``start_partition`` < 0.
        InvalidReplicationFactorError: ``replication_factor`` < 1 or more than the number of
            distinct brokers.
        InvalidReplicaAssignmentError: some brokers have a rack and others do not.
    """
    if partitions < 1:
        raise InvalidPartitionsError(f"number of partitions must be at least 1, got {partitions}")
    if start_partition < 0:
        raise InvalidPartitionsError(
            f"partition ids cannot be negative, got start {start_partition}"
        )
    if replication_factor < 1:
        raise InvalidReplicationFactorError(
            f"replication factor must be at least 1, got {replication_factor}"
        )
    racks = broker_racks(brokers if isinstance(brokers, Mapping) else dict.fromkeys(brokers))
    n = len(racks)
    if replication_factor > n:
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the {n} available brokers"
        )
    draw = rng or _random
    start = start_index if start_index is not None else draw.randrange(n)
    if replica_shift is not None:
        shift = replica_shift
    elif start_index is not None:
        shift = start_index
    else:
        shift = draw.randrange(n)
    walk: _RackUnawareWalk | _RackAwareWalk
    if all(rack is None for rack in racks.values()):
        walk = _RackUnawareWalk(sorted(racks))
    else:
        walk = _RackAwareWalk({b: str(r) for b, r in racks.items()})
    assignment: dict[int, tuple[int, ...]] = {}
    for partition in range(start_partition, start_partition + partitions):
        # The shift grows once per full pass over the brokers. Kafka counts the passes from the
        # first partition of the call; counting from partition 0 places partitions added later as
        # if they had been created with the topic (given the same start index and shift).
        wraps = partition // n
        first = (partition + start) % n
        assignment[partition] = walk.replicas(first, shift + wraps, replication_factor)
    return assignment


def _follower_index(first: int, shift: int, j: int, n: int) -> int:
    """Kafka's ``replicaIndex``: the position of the j-th follower candidate after ``first``; it is
    never ``first`` itself, since the offset runs from 1 to n - 1."""
    return (first + 1 + (shift + j) % (n - 1)) % n


class _RackUnawareWalk:
    """Followers at a shifted offset from the leader in the sorted broker list."""

    def __init__(self, brokers: list[int]) -> None:
        self.brokers = brokers

    def replicas(self, first: int, shift: int, replication_factor: int) -> tuple[int, ...]:
        """The replicas of the partition whose first replica is at position ``first``."""
        n = len(self.brokers)
        followers = (
            self.brokers[_follower_index(first, shift, j, n)] for j in range(replication_factor - 1)
        )
        return (self.brokers[first], *followers)


class _RackAwareWalk:
    """Followers picked along the rack-alternated list, skipping racks and brokers already used
    while unused ones remain."""

    def __init__(self, racks: Mapping[int, str]) -> None:
        self.racks = dict(racks)
        self.rack_count = len(set(racks.values()))
        self.brokers = rack_alternated_brokers(racks)

    def replicas(self, first: int, shift: int, replication_factor: int) -> tuple[int, ...]:
        """The replicas of the partition whose first replica is at position ``first``."""
        n = len(self.brokers)
        leader = self.brokers[first]
        chosen = [leader]
        used_racks = {self.racks[leader]}
        candidates = self._candidates(first, shift * self.rack_count, n)
        while len(chosen) < replication_factor:
            broker = next(candidates)
            rack = self.racks[broker]
            rack_ok = rack not in used_racks or len(used_racks) == self.rack_count
            broker_ok = broker not in chosen or len(chosen) == n
            if rack_ok and broker_ok:
                chosen.append(broker)
                used_racks.add(rack)
        return tuple(chosen)

    def _candidates(self, first: int, shift: int, n: int) -> Iterator[int]:
        j = 0
        while True:
            yield self.brokers[_follower_index(first, shift, j, n)]
            j += 1


def rack_alternated_brokers(racks: Mapping[int, str]) -> list[int]:
    """Kafka's ``getRackAlternatedBrokerList``: the lowest broker of each rack (racks in name
    order), then the next of each, and so on, so neighbours in the list sit on different racks."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    deepest = max((len(column) for column in columns), default=0)
    return [column[row] for row in range(deepest) for column in columns if row < len(column)]


def validate_topic_name(name: str) -> None:
    """Check a topic name against Kafka's rules; raise InvalidTopicError naming the rule broken.

    The rules exist because the name becomes a directory (``<topic>-<partition>``)
    and part of metric names: non-empty, at most 249 characters, only ASCII
    letters, digits, '.', '_' and '-', and not '.' or '..' (which are paths).
    """
    if not name:
        raise InvalidTopicError("topic name is illegal: it cannot be empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name {name!r} is illegal: it cannot be '.' or '..'")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"topic name {name!r} is illegal: it is {len(name)} characters long, "
            f"more than the maximum of {MAX_TOPIC_NAME_LENGTH}"
        )
    if _LEGAL_TOPIC_NAME.fullmatch(name) is None:
        raise InvalidTopicError(
            f"topic name {name!r} is illegal: it contains a character other than "
            "ASCII letters, digits, '.', '_' and '-'"
        )


def topic_names_collide(a: str, b: str) -> bool:
    """Whether two topic names map to the same metric name, as Kafka's ``Topic.hasCollision``.

    Metric names replace '.' with '_', so ``a.b`` and ``a_b`` would share
    metrics; Kafka refuses to create one when the other exists. Equal names
    count as colliding too.
    """
    return a.replace(".", "_") == b.replace(".", "_")
