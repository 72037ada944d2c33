"""Control records: the COMMIT and ABORT markers that end a transaction in a partition's log.

A marker is a batch of its own with the transactional and control attribute bits set, the
transaction's producer id and epoch, no sequence, and one record. As in Kafka the record's key is
``version int16, type int16`` (0 ABORT, 1 COMMIT) and its value ``version int16,
coordinator_epoch int32``; the batch is framed like every other, so logs, followers and fetches
carry it unchanged.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from rafka.protocol.errors import CorruptMessageError
from rafka.protocol.messages.transactions import WriteTxnMarkersRequest
from rafka.protocol.records.batch import (
    NO_SEQUENCE,
    BatchHeader,
    decode_columns,
    encode_batch,
    make_attributes,
)
from rafka.protocol.records.columns import RecordColumns

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
CONTROL_RECORD_VERSION = 0


class ControlRecordType(enum.IntEnum):
    """What a control record says: the transaction was aborted or committed."""

    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True)
class EndTransactionMarker:
    """A decoded marker: which way the transaction ended, and the coordinator epoch that wrote
    it."""

    control_type: ControlRecordType
    coordinator_epoch: int


def build_marker(
    producer_id: int,
    producer_epoch: int,
    control_type: ControlRecordType,
    coordinator_epoch: int,
    timestamp_ms: int,
) -> bytes:
    """One control batch holding the marker, offsets relative from 0 (the leader assigns them)."""
    key = _KEY.pack(CONTROL_RECORD_VERSION, int(control_type))
    value = _VALUE.pack(CONTROL_RECORD_VERSION, coordinator_epoch)
    return encode_batch(
        RecordColumns(range(1), [0], [key], [value], [()]),
        first_timestamp=timestamp_ms,
        max_timestamp=timestamp_ms,
        last_offset_delta=0,
        attributes=make_attributes(is_transactional=True, is_control=True),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
    )


def marker_for(request: WriteTxnMarkersRequest, timestamp_ms: int) -> bytes:
    """The control batch a WriteTxnMarkers request asks a partition to append."""
    kind = ControlRecordType.COMMIT if request.committed else ControlRecordType.ABORT
    return build_marker(
        request.producer_id, request.producer_epoch, kind, request.coordinator_epoch, timestamp_ms
    )


def parse_marker(
    data: bytes | bytearray | memoryview, position: int, header: BatchHeader
) -> EndTransactionMarker:
    """The marker of the control batch at ``position``; CORRUPT_MESSAGE if it holds none."""
    if not header.is_control:
        raise CorruptMessageError(f"batch at offset {header.base_offset} is not a control batch")
    columns = decode_columns(data, position, header)
    if len(columns.values) != 1 or columns.keys[0] is None or columns.values[0] is None:
        raise CorruptMessageError(f"control batch at offset {header.base_offset} holds no marker")
    key, value = columns.keys[0], columns.values[0]
    if len(key) < _KEY.size or len(value) < _VALUE.size:
        raise CorruptMessageError(f"control record at offset {header.base_offset} is truncated")
    _, kind = _KEY.unpack_from(key)
    _, coordinator_epoch = _VALUE.unpack_from(value)
    try:
        control_type = ControlRecordType(kind)
    except ValueError:
        raise CorruptMessageError(
            f"control record at offset {header.base_offset} has unknown type {kind}"
        ) from None
    return EndTransactionMarker(control_type, coordinator_epoch)
