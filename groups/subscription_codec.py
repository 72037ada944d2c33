"""The bytes a consumer puts in JoinGroup and gets back from SyncGroup.

The coordinator treats both as opaque: it stores each member's subscription
per assignor name (``MemberMetadata.protocols``) and relays the leader's
per-member assignment without reading either. Only clients decode them, so the
layout is declared once here, as Kafka's ``ConsumerProtocol`` does, and both
sides of a group share it.

The layout is Kafka's ``ConsumerProtocolSubscription`` and ``ConsumerProtocolAssignment``
(an int16 version, then the body at that version, never flexible), declared with the wire
schema, so a Kafka client and a rafka consumer in one group read each other's bytes::

    Subscription => Version [Topic] UserData [OwnedPartition]{v1+} GenerationId{v2+} RackId{v3+}
    Assignment   => Version [AssignedPartition] UserData
    (Owned|Assigned)Partition => Topic [Partition]

A version newer than the ones declared decodes as the newest one, ignoring the fields it
appends, which is Kafka's rule for these schemas too.

Malformed input raises ``ValueError`` naming what was wrong. The choice: a bad
subscription is a broken client, not a group whose protocols disagree, so
``InconsistentGroupProtocolError`` would mislead whoever reads the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rafka.groups.assignors import Subscription
from rafka.protocol.types import TopicPartition
from rafka.protocol.wire.primitives import Reader, WireFormatError, Writer
from rafka.protocol.wire.schema import BYTES, INT32, STRING, ArrayOf, Field, Message, Struct

_TOPIC_PARTITIONS = Struct(
    "TopicPartition", (Field("topic", STRING), Field("partitions", ArrayOf(INT32)))
)
_SUBSCRIPTION = Message(
    -1,
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    (
        Field("topics", ArrayOf(STRING)),
        Field("user_data", BYTES, nullable_versions="0+", default=None),
        Field("owned_partitions", ArrayOf(_TOPIC_PARTITIONS), "1+"),
        Field("generation_id", INT32, "2+", default=-1),
        Field("rack_id", STRING, "3+", nullable_versions="3+", default=None),
    ),
)
_ASSIGNMENT = Message(
    -1,
    "ConsumerProtocolAssignment",
    "0-3",
    "none",
    (
        Field("assigned_partitions", ArrayOf(_TOPIC_PARTITIONS)),
        Field("user_data", BYTES, nullable_versions="0+", default=None),
    ),
)

SUBSCRIPTION_VERSION = 1
"""The subscription version written: v1 carries the owned partitions the sticky assignors read."""
ASSIGNMENT_VERSION = 0
"""The assignment version written; every version since has the same fields."""


def encode_subscription(subscription: Subscription) -> bytes:
    """Serialise ``subscription`` for JoinGroup (owned partitions sorted, as decoding returns
    them)."""
    return _encode(
        _SUBSCRIPTION,
        SUBSCRIPTION_VERSION,
        {
            "topics": list(subscription.topics),
            "user_data": subscription.user_data or None,
            "owned_partitions": _by_topic(subscription.owned_partitions),
        },
    )


def decode_subscription(data: bytes) -> Subscription:
    """Parse JoinGroup metadata bytes back into a ``Subscription``; ValueError if malformed."""
    body = _decode(_SUBSCRIPTION, data, "subscription")
    return Subscription(
        topics=tuple(body["topics"]),
        owned_partitions=tuple(_partitions(body["owned_partitions"], "subscription")),
        user_data=body["user_data"] or b"",
    )


def encode_assignment(partitions: Iterable[TopicPartition]) -> bytes:
    """Serialise one member's assignment for SyncGroup, sorted so equal means equal bytes."""
    return _encode(_ASSIGNMENT, ASSIGNMENT_VERSION, {"assigned_partitions": _by_topic(partitions)})


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """Parse SyncGroup assignment bytes into (topic, partition) pairs; ValueError if malformed.

    Empty bytes mean an empty assignment: the coordinator hands b"" to any
    member the leader left out, and to every member when a rebalance fails.
    """
    if data == b"":
        return []
    return _partitions(
        _decode(_ASSIGNMENT, data, "assignment")["assigned_partitions"], "assignment"
    )


def _encode(message: Message, version: int, body: dict[str, Any]) -> bytes:
    writer = Writer()
    writer.write_int16(version)
    message.write(writer, body, version)
    return writer.getvalue()


def _decode(message: Message, data: bytes, what: str) -> dict[str, Any]:
    """The body of a versioned ConsumerProtocol message that must fill ``data`` exactly (up to
    the fields of versions newer than the declared ones)."""
    if not isinstance(data, bytes):
        raise ValueError(f"malformed {what}: expected bytes, got {type(data).__name__}")
    reader = Reader(data)
    try:
        version = reader.read_int16()
        if version < 0:
            raise ValueError(f"malformed {what}: bad version {version}")
        newest = message.versions.max
        body = message.read(reader, min(version, newest))
    except WireFormatError as exc:
        raise ValueError(f"malformed {what}: {exc}") from exc
    if version <= newest and reader.remaining:
        raise ValueError(
            f"malformed {what}: {reader.remaining} bytes after the version {version} fields"
        )
    return body


def _by_topic(partitions: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """Sorted (topic, partition) pairs grouped into ConsumerProtocol's per-topic entries."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        grouped.setdefault(topic, []).append(partition)
    return [{"topic": topic, "partitions": parts} for topic, parts in grouped.items()]


def _partitions(entries: list[dict[str, Any]], what: str) -> list[TopicPartition]:
    """The (topic, partition) pairs of decoded per-topic entries; negative partitions are
    malformed."""
    partitions: list[TopicPartition] = []
    for entry in entries:
        for partition in entry["partitions"]:
            if partition < 0:
                raise ValueError(
                    f"malformed {what}: partition {partition} of topic {entry['topic']!r}"
                )
            partitions.append(TopicPartition(entry["topic"], partition))
    return partitions
