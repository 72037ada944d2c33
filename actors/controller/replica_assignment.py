"""Where a new topic's replicas go, and which topic names are allowed.

Pure functions used when creating a topic or adding partitions: the controller
(or the admin tool) validates the name, computes the assignment here, then
writes ``/brokers/topics/<t>``.

Placement is replica j of partition p on broker (p + j) mod n, not Kafka's
``AdminUtils``: Kafka starts at a random broker and shifts followers per round to spread load
across many topics; this rule is deterministic, which makes a placement
reproducible and checkable by hand, at the cost of every topic putting
partition 0's leader on the lowest broker id.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from rafka.protocol.errors import (
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


def assign_replicas(
    brokers: Collection[int],
    partitions: int,
    replication_factor: int,
    start_partition: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Place ``partitions`` partitions of ``replication_factor`` replicas each on ``brokers``.

    With the brokers sorted (n of them), partition i's replica j goes on
    ``sorted_brokers[(i + j) mod n]``; replica 0 is the preferred replica, the
    leader while it is healthy. Since j < replication_factor <= n, the replicas
    of one partition land on distinct brokers.

    Partition ids run from ``start_partition``, and i is the partition id, so
    adding partitions to an existing topic continues the same rotation.

    Returns partition id -> replica tuple, preferred replica first.

    Raises:
        InvalidPartitionsError: ``partitions`` < 1 or ``start_partition`` < 0.
        InvalidReplicationFactorError: ``replication_factor`` < 1 or more
            than the number of distinct brokers.
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
    # A set first: a broker listed twice must not count as two places for replicas.
    sorted_brokers = sorted(set(brokers))
    n = len(sorted_brokers)
    if replication_factor > n:
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the {n} available brokers"
        )
    return {
        partition: tuple(sorted_brokers[(partition + j) % n] for j in range(replication_factor))
        for partition in range(start_partition, start_partition + partitions)
    }


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
