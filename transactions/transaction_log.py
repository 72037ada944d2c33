"""The records of ``__transaction_state``, and which of its partitions holds a transactional id.

One record per transition, keyed by transactional id, in a compacted topic: the latest value of each
key is the id's state, so replaying a partition rebuilds every coordinator's memory after a move. A
tombstone (no value) forgets an expired id. Layouts (msgpack arrays, version first)::

    TxnKey   => [0, TransactionalId]
    TxnValue => [0, ProducerId, LastProducerId, ProducerEpoch, LastProducerEpoch, TimeoutMs,
                 State, [[Topic, Partition] ...], StartTimestamp, LastUpdateTimestamp]

``State`` is the state's Kafka name (``Ongoing``); DEAD and PREPARE_EPOCH_FENCE are never written.
"""

from __future__ import annotations

from typing import Any

import msgpack  # type: ignore[import-untyped, unused-ignore]

from rafka.groups.offsets_codec import partition_for as group_partition_for
from rafka.protocol.types import TopicPartition
from rafka.transactions.transaction_metadata import TxnTransitMetadata
from rafka.transactions.transaction_state import TransactionState

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0
UNWRITTEN_STATES = frozenset({TransactionState.DEAD, TransactionState.PREPARE_EPOCH_FENCE})


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition owning ``transactional_id``: Kafka's
    ``Utils.abs(hashCode) % n``, the same function that places a group id."""
    return group_partition_for(transactional_id, num_partitions)


def encode_key(transactional_id: str) -> bytes:
    """The record key of a transactional id."""
    return _pack([KEY_VERSION, transactional_id])


def encode_value(value: TxnTransitMetadata) -> bytes:
    """The record value of a transactional id's state."""
    if value.state in UNWRITTEN_STATES:
        raise ValueError(f"state {value.state.value} is never written to {TRANSACTION_STATE_TOPIC}")
    partitions = [[tp.topic, tp.partition] for tp in sorted(value.partitions)]
    return _pack(
        [
            VALUE_VERSION,
            value.producer_id,
            value.last_producer_id,
            value.producer_epoch,
            value.last_producer_epoch,
            value.timeout_ms,
            value.state.value,
            partitions,
            value.start_timestamp,
            value.last_update_timestamp,
        ]
    )


def decode_key(data: bytes) -> str:
    """The transactional id of a record key; ValueError naming the problem if it is not one."""
    fields = _unpack(data, "key")
    if fields[0] != KEY_VERSION or len(fields) < 2 or not isinstance(fields[1], str):
        raise ValueError(f"{TRANSACTION_STATE_TOPIC} key {fields!r:.100} is not [0, id]")
    return fields[1]


def decode_value(data: bytes) -> TxnTransitMetadata:
    """A transactional id's state from its record value; ValueError if malformed."""
    fields = _unpack(data, "value")
    if fields[0] != VALUE_VERSION or len(fields) < 10:
        raise ValueError(
            f"{TRANSACTION_STATE_TOPIC} value has version {fields[0]!r} and {len(fields)} fields"
        )
    ints = [_int(fields[i], name) for i, name in _INT_FIELDS]
    try:
        state = TransactionState(fields[6])
    except ValueError:
        raise ValueError(f"unknown transaction state {fields[6]!r}") from None
    if not isinstance(fields[7], list):
        raise ValueError(f"partitions must be an array, got {type(fields[7]).__name__}")
    partitions = frozenset(_partition(p) for p in fields[7])
    return TxnTransitMetadata(
        ints[0], ints[1], ints[2], ints[3], ints[4], state, partitions, ints[5], ints[6]
    )


_INT_FIELDS = (
    (1, "producer id"),
    (2, "last producer id"),
    (3, "producer epoch"),
    (4, "last producer epoch"),
    (5, "timeout"),
    (8, "start timestamp"),
    (9, "last update timestamp"),
)


def _partition(fields: Any) -> TopicPartition:
    if (
        not isinstance(fields, list)
        or len(fields) != 2
        or not isinstance(fields[0], str)
        or not isinstance(fields[1], int)
    ):
        raise ValueError(f"a transaction partition must be [topic, partition], got {fields!r:.100}")
    return TopicPartition(fields[0], fields[1])


def _pack(fields: list[Any]) -> bytes:
    return bytes(msgpack.packb(fields))


def _unpack(data: bytes, what: str) -> list[Any]:
    """A record's fields: a non-empty msgpack array, else ValueError."""
    try:
        fields = msgpack.unpackb(data)
    except (ValueError, msgpack.UnpackException) as exc:
        fields = exc
    if isinstance(fields, list) and fields:
        return fields
    raise ValueError(f"{TRANSACTION_STATE_TOPIC} {what} is not a non-empty msgpack array: {fields}")


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, got {type(value).__name__}")
    return value
