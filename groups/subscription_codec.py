"""The bytes a consumer puts in JoinGroup and gets back from SyncGroup.

The coordinator treats both as opaque: it stores each member's subscription
per assignor name (``MemberMetadata.protocols``) and relays the leader's
per-member assignment without reading either. Only clients decode them, so the
layout is declared once here, as Kafka's ``ConsumerProtocol`` does, and both
sides of a group share it.

Layout (msgpack arrays, version first, as in Kafka's versioned schemas)::

    Subscription => [Version, [Topic ...], [[Topic, Partition] ...], UserData]
    Assignment   => [Version, [[Topic, Partition] ...]]

Decoding reads the known fields and ignores trailing ones, so a member running
a newer version that appends fields still interoperates, which is Kafka's rule
for these schemas too.

Malformed input raises ``ValueError`` naming what was wrong. The choice: a bad
subscription is a broken client, not a group whose protocols disagree, so
``InconsistentGroupProtocolError`` would mislead whoever reads the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgpack  # type: ignore[import-untyped, unused-ignore]

from rafka.groups.assignors import Subscription
from rafka.protocol.types import TopicPartition

VERSION = 0
"""The layout version written; decoding accepts it and any newer one."""


def encode_subscription(subscription: Subscription) -> bytes:
    """Serialise ``subscription`` for JoinGroup, in field order so decoding returns it equal."""
    packed: bytes = msgpack.packb(
        [
            VERSION,
            list(subscription.topics),
            [[topic, partition] for topic, partition in subscription.owned_partitions],
            subscription.user_data,
        ],
        use_bin_type=True,
    )
    return packed


def decode_subscription(data: bytes) -> Subscription:
    """Parse JoinGroup metadata bytes back into a ``Subscription``; ValueError if malformed."""
    fields = _unpack(data, "subscription", min_fields=4)
    topics, owned, user_data = fields[1], fields[2], fields[3]
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise ValueError(
            f"malformed subscription: topics must be a list of strings, got {topics!r}"
        )
    if not isinstance(user_data, bytes):
        raise ValueError(f"malformed subscription: user data must be bytes, got {user_data!r}")
    return Subscription(
        topics=tuple(topics),
        owned_partitions=tuple(_partitions(owned, "subscription")),
        user_data=user_data,
    )


def encode_assignment(partitions: Iterable[TopicPartition]) -> bytes:
    """Serialise one member's assignment for SyncGroup, sorted so equal means equal bytes."""
    packed: bytes = msgpack.packb(
        [VERSION, [[topic, partition] for topic, partition in sorted(partitions)]],
        use_bin_type=True,
    )
    return packed


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """Parse SyncGroup assignment bytes into (topic, partition) pairs; ValueError if malformed.

    Empty bytes mean an empty assignment: the coordinator hands b"" to any
    member the leader left out, and to every member when a rebalance fails.
    """
    if data == b"":
        return []
    return _partitions(_unpack(data, "assignment", min_fields=2)[1], "assignment")


def _unpack(data: bytes, what: str, min_fields: int) -> list[Any]:
    """Unpack a versioned msgpack array of at least ``min_fields`` fields."""
    if not isinstance(data, bytes):
        raise ValueError(f"malformed {what}: expected bytes, got {type(data).__name__}")
    try:
        fields = msgpack.unpackb(data, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise ValueError(f"malformed {what}: not valid msgpack ({exc})") from exc
    if not isinstance(fields, list) or len(fields) < min_fields:
        raise ValueError(
            f"malformed {what}: expected an array of at least {min_fields} fields, got {fields!r}"
        )
    version = fields[0]
    # bool is an int subclass; True must not pass for version 1.
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ValueError(f"malformed {what}: bad version {version!r}")
    return fields


def _partitions(value: Any, what: str) -> list[TopicPartition]:
    """Check and convert a decoded [[topic, partition], ...] list."""
    if not isinstance(value, list):
        raise ValueError(f"malformed {what}: partitions must be a list, got {value!r}")
    partitions: list[TopicPartition] = []
    for pair in value:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or not isinstance(pair[1], int)
            or isinstance(pair[1], bool)
            or pair[1] < 0
        ):
            raise ValueError(f"malformed {what}: expected [topic, partition >= 0], got {pair!r}")
        partitions.append(TopicPartition(pair[0], pair[1]))
    return partitions
