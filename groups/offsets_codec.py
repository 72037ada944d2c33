"""The records a group coordinator keeps in ``__consumer_offsets``; which partition holds a group.

Two kinds of record share the compacted topic, told apart by the key's version as in Kafka's
``GroupMetadataManager``: versions 0/1 key a committed offset by (group, topic, partition);
version 2 keys a group's metadata by group id. Compaction keeps the latest value per key, and a
tombstone (no value) deletes it, so the log alone rebuilds every coordinator's memory after a move.

Layouts (msgpack arrays, version first)::

    OffsetKey    => [1, Group, Topic, Partition]
    OffsetValue  => [1, Offset, Metadata, CommitTimestamp]
    GroupKey     => [2, Group]
    GroupValue   => [1, ProtocolType, Generation, Protocol, Leader, CurrentStateTimestamp,
                     [[MemberId, ClientId, ClientHost, SessionTimeout, RebalanceTimeout,
                       Subscription, Assignment] ...]]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgpack  # type: ignore[import-untyped, unused-ignore]

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
VALUE_VERSION = 1


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (a signed 32-bit int over UTF-16 code units), so every client and
    broker -- and Kafka itself -- maps a group id to the same offsets partition."""
    h = 0
    for unit in _utf16_units(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition owning ``group_id``: Kafka's ``Utils.abs(hash) % n``."""
    h = java_string_hash(group_id)
    # Utils.abs is Math.abs with Integer.MIN_VALUE mapped to 0, not the producer's
    # ``h & 0x7fffffff``: the two disagree for every negative hash, which would place the group on
    # another partition than Kafka does.
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


@dataclass(frozen=True)
class OffsetKey:
    """Key of a committed offset."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    """Key of a group's metadata."""

    group: str


@dataclass(frozen=True)
class OffsetValue:
    """A committed offset: the next offset the group consumes, its metadata and commit time."""

    offset: int
    metadata: str
    commit_timestamp: int


@dataclass(frozen=True)
class StoredMember:
    """A member as persisted with its group, enough to resume a Stable group after a move."""

    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupValue:
    """A group's generation, chosen assignor, leader and members at the end of a rebalance."""

    protocol_type: str
    generation_id: int
    protocol: str | None
    leader_id: str | None
    state_timestamp: int
    members: tuple[StoredMember, ...]


def encode_key(key: OffsetKey | GroupKey) -> bytes:
    """The record key for ``key``."""
    if isinstance(key, OffsetKey):
        return _pack([OFFSET_KEY_VERSION, key.group, key.topic, key.partition])
    return _pack([GROUP_KEY_VERSION, key.group])


def encode_offset(value: OffsetValue) -> bytes:
    """The record value of a committed offset."""
    return _pack([VALUE_VERSION, value.offset, value.metadata, value.commit_timestamp])


def encode_group(value: GroupValue) -> bytes:
    """The record value of a group's metadata."""
    members = [
        [
            m.member_id,
            m.client_id,
            m.client_host,
            m.session_timeout_ms,
            m.rebalance_timeout_ms,
            m.subscription,
            m.assignment,
        ]
        for m in value.members
    ]
    return _pack(
        [
            VALUE_VERSION,
            value.protocol_type,
            value.generation_id,
            value.protocol,
            value.leader_id,
            value.state_timestamp,
            members,
        ]
    )


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    """Parse a record key; ValueError naming the problem if it is not one of ours."""
    fields = _unpack(data, "key")
    version = fields[0]
    if version in (0, OFFSET_KEY_VERSION) and len(fields) >= 4:
        return OffsetKey(
            _text(fields[1], "group"), _text(fields[2], "topic"), _int(fields[3], "partition")
        )
    if version == GROUP_KEY_VERSION and len(fields) >= 2:
        return GroupKey(_text(fields[1], "group"))
    raise ValueError(
        f"__consumer_offsets key has unknown version {version!r} or too few fields ({len(fields)})"
    )


def decode_offset(data: bytes) -> OffsetValue:
    """Parse a committed offset's value."""
    fields = _unpack(data, "offset value")
    if len(fields) < 4:
        raise ValueError(f"offset value has {len(fields)} fields, expected 4")
    return OffsetValue(
        _int(fields[1], "offset"), _text(fields[2], "metadata"), _int(fields[3], "commit timestamp")
    )


def decode_group(data: bytes) -> GroupValue:
    """Parse a group's metadata value; ValueError naming the problem if it is malformed."""
    fields = _unpack(data, "group value")
    if len(fields) < 7:
        raise ValueError(f"group value has {len(fields)} fields, expected 7")
    if not isinstance(fields[6], list):
        raise ValueError(f"group members must be an array, got {type(fields[6]).__name__}")
    members = tuple(_member(m) for m in fields[6])
    return GroupValue(
        _text(fields[1], "protocol type"),
        _int(fields[2], "generation"),
        _optional_text(fields[3], "protocol"),
        _optional_text(fields[4], "leader"),
        _int(fields[5], "state timestamp"),
        members,
    )


def _member(fields: Any) -> StoredMember:
    # Checked rather than coerced: the coordinator's load retries on ValueError only, and coercion
    # hides corruption (bytes(5) is five zero bytes, str(None) is "None").
    if not isinstance(fields, list) or len(fields) < 7:
        raise ValueError(f"group member must be an array of 7 fields, got {fields!r:.100}")
    return StoredMember(
        _text(fields[0], "member id"),
        _text(fields[1], "client id"),
        _text(fields[2], "client host"),
        _int(fields[3], "session timeout"),
        _int(fields[4], "rebalance timeout"),
        _bytes(fields[5], "subscription"),
        _bytes(fields[6], "assignment"),
    )


def _pack(fields: list[Any]) -> bytes:
    packed: bytes = msgpack.packb(fields)
    return packed


def _unpack(data: bytes, what: str) -> list[Any]:
    try:
        fields = msgpack.unpackb(data)
    except (ValueError, msgpack.UnpackException) as exc:
        raise ValueError(f"__consumer_offsets {what} is not valid msgpack: {exc}") from None
    if not isinstance(fields, list) or not fields:
        raise ValueError(
            f"__consumer_offsets {what} must be a non-empty array, got {type(fields).__name__}"
        )
    return fields


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    return value


def _optional_text(value: Any, what: str) -> str | None:
    return None if value is None else _text(value, what)


def _bytes(value: Any, what: str) -> bytes:
    if not isinstance(value, bytes):
        raise ValueError(f"{what} must be bytes, got {type(value).__name__}")
    return value


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, got {type(value).__name__}")
    return value
