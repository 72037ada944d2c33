"""Kafka clients' batches: validating what they produce, and serving what they fetch.

Kafka clients (kafka-python, confluent-kafka, aiokafka, kcat) send and expect ``RecordBatch`` v2
with Kafka's varint rows (``kafka_rows``). A batch from a Kafka client is validated here as a
broker must (magic, CRC-32C, framing, record count) and then stored as it came; on the way out,
Kafka-layout batches pass through untouched and only rafka's columnar batches are re-framed as
Kafka's. ``stamp_kafka_batch`` is what the leader sets on a stored batch, LogAppendTime included.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import crc32c

from rafka.protocol.errors import (
    CorruptMessageError,
    InvalidRecordError,
    UnsupportedVersionError,
)
from rafka.protocol.records.batch import (
    ATTRIBUTES_OFFSET,
    COLUMNAR_MASK,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    decode_columns,
    iter_batches,
    read_header,
    records_section,
    stamp,
    verify_crc,
)
from rafka.protocol.records.columns import Record, RecordColumns
from rafka.protocol.records.compression import Compression, compress
from rafka.protocol.records.kafka_rows import decode_record_section, encode_record_section

_CRC_FIELD = struct.Struct(">I")
_ATTRIBUTES_FIELD = struct.Struct(">h")
_MAX_TIMESTAMP_FIELD = struct.Struct(">q")
# max_timestamp follows attributes (int16), last_offset_delta (int32) and first_timestamp (int64).
MAX_TIMESTAMP_OFFSET = ATTRIBUTES_OFFSET + 2 + 4 + 8


def _check_magic(buf: bytes | bytearray | memoryview, position: int) -> None:
    """Refuse message sets of magic 0 and 1 (their magic sits at the same byte as v2's)."""
    if len(buf) - position <= MAGIC_OFFSET:
        raise CorruptMessageError(
            f"batch at byte {position} is truncated: {len(buf) - position} bytes"
        )
    magic = struct.unpack_from(">b", buf, position + MAGIC_OFFSET)[0]
    if magic in (0, 1):
        raise UnsupportedVersionError(
            f"batch at byte {position} is a magic {magic} message set; only magic {MAGIC} "
            "record batches are accepted"
        )


def iter_kafka_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each batch of a client's records, which must be whole.

    Unlike ``batch.iter_batches`` (which stops quietly at a fetch's trailing partial batch), a
    client's produce payload is all whole batches: anything left over is CORRUPT_MESSAGE.
    """
    position = 0
    while position < len(buf):
        _check_magic(buf, position)
        header = read_header(buf, position)
        if position + header.size_in_bytes > len(buf):
            raise CorruptMessageError(
                f"batch at byte {position} declares length {header.batch_length}, "
                f"{len(buf) - position - LOG_OVERHEAD} bytes follow"
            )
        yield position, header
        position += header.size_in_bytes


def validate_kafka_batch(
    buf: bytes | bytearray | memoryview, position: int = 0
) -> tuple[BatchHeader, RecordColumns]:
    """Check the Kafka-format batch at ``position`` as a broker must; return header and records.

    Magic 0/1 is UNSUPPORTED_VERSION; a bad CRC-32C, a length past the bytes, the columnar
    attribute bit, a truncated or malformed record, a record count other than the header's, or a
    last offset delta other than the header's is CORRUPT_MESSAGE; a codec this process lacks is
    UNSUPPORTED_COMPRESSION_TYPE.
    """
    _check_magic(buf, position)
    header = read_header(buf, position)
    verify_crc(buf, position, header)
    where = f"Kafka batch at offset {header.base_offset} (byte {position})"
    if header.is_columnar:
        raise CorruptMessageError(
            f"{where} sets attribute bit {COLUMNAR_MASK.bit_length() - 1}, which rafka keeps for "
            "its own records layout"
        )
    columns = decode_record_section(
        records_section(buf, position, header), header.record_count, where
    )
    if header.record_count and columns.offset_deltas[-1] != header.last_offset_delta:
        raise CorruptMessageError(
            f"{where}: last record's offset delta {columns.offset_deltas[-1]} differs from the "
            f"header's {header.last_offset_delta}"
        )
    return header, columns


def check_client_batch(header: BatchHeader, columns: RecordColumns) -> None:
    """Kafka's checks on a batch a client produces, beyond those the log makes on every batch.

    A client numbers its records 0..n-1 with no gaps, and an idempotent producer (one with a
    producer id) gives every batch a sequence; anything else is INVALID_RECORD. Control batches,
    empty batches and null keys on compacted topics are the log's to refuse.
    """
    where = f"batch at offset {header.base_offset} from a client"
    if columns.offset_deltas != range(header.record_count) or (
        header.last_offset_delta != header.record_count - 1
    ):
        raise InvalidRecordError(
            f"{where} has {header.record_count} records but offset deltas up to "
            f"{header.last_offset_delta} with gaps: a producer numbers them 0..n-1"
        )
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise InvalidRecordError(
            f"{where} has producer id {header.producer_id} but base sequence {header.base_sequence}"
        )


def decode_kafka_records(buf: bytes | bytearray | memoryview, position: int = 0) -> list[Record]:
    """Validate the Kafka-format batch at ``position``; its records, offsets and times absolute."""
    header, columns = validate_kafka_batch(buf, position)
    return [
        Record(header.base_offset + od, header.first_timestamp + td, key, value, tuple(headers))
        for od, td, key, value, headers in columns.rows()
    ]


def _reseal(buf: bytearray | memoryview, position: int, size: int) -> None:
    """Recompute the CRC-32C of the batch of ``size`` bytes at ``position`` after a change."""
    crc = crc32c.crc32c(memoryview(buf)[position + ATTRIBUTES_OFFSET : position + size])
    _CRC_FIELD.pack_into(buf, position + CRC_OFFSET, crc)


def encode_kafka_batch(columns: RecordColumns, header: BatchHeader) -> bytes:
    """Frame ``columns`` as a Kafka-format batch with ``header``'s fields, compressed per its codec.

    ``batch_length``, ``magic``, ``crc`` and ``record_count`` are computed, not taken from it.
    """
    body = encode_record_section(columns)
    if header.compression is not Compression.NONE:
        body = compress(header.compression, body)
    frame = bytearray(
        HEADER.pack(
            header.base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(body),
            header.partition_leader_epoch,
            MAGIC,
            0,
            header.attributes & ~COLUMNAR_MASK,
            header.last_offset_delta,
            header.first_timestamp,
            header.max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            len(columns.values),
        )
    )
    frame += body
    _reseal(frame, 0, len(frame))
    return bytes(frame)


def validate_kafka_batches(buf: bytes | bytearray | memoryview) -> list[BatchHeader]:
    """Validate a client's whole records payload (one or more Kafka batches) before it is stored
    as it is; its batches' headers, or the error of the first batch at fault."""
    return [validate_kafka_batch(buf, position)[0] for position, _ in iter_kafka_batches(buf)]


def native_to_kafka(buf: bytes | bytearray | memoryview, position: int = 0) -> bytes:
    """Re-frame the columnar batch at ``position`` (CRC-checked) as a Kafka-layout batch."""
    header = read_header(buf, position)
    verify_crc(buf, position, header)
    return encode_kafka_batch(decode_columns(buf, position, header), header)


def as_kafka_batches(buf: bytes) -> bytes:
    """The whole batches of a log read in Kafka's layout, for a Kafka client.

    Batches stored as a Kafka client produced them pass through untouched (a read of only those is
    returned as it is); columnar ones are re-framed. A trailing partial batch (a read cut at
    max_bytes) is left out, which Kafka clients accept as the end of a fetch.
    """
    parts: list[bytes | memoryview] = []
    view = memoryview(buf)
    converted = False
    end = 0
    for position, header in iter_batches(buf):
        end = position + header.size_in_bytes
        if header.is_columnar:
            parts.append(native_to_kafka(buf, position))
            converted = True
        else:
            parts.append(view[position:end])
    if not converted and end == len(buf):
        return buf
    return b"".join(parts)


def stamp_kafka_batch(
    buf: bytearray | memoryview,
    position: int,
    base_offset: int,
    partition_leader_epoch: int,
    log_append_time_ms: int | None = None,
) -> None:
    """Set what the leader sets on a client's batch in place, leaving its records untouched.

    Base offset and leader epoch lie outside the CRC. On a topic with
    ``message_timestamp_type=LogAppendTime`` pass ``log_append_time_ms``: as in Kafka the
    timestamp-type bit and ``max_timestamp`` are set too and the CRC recomputed.
    """
    stamp(buf, position, base_offset, partition_leader_epoch)
    if log_append_time_ms is None:
        return
    header = read_header(buf, position)
    _ATTRIBUTES_FIELD.pack_into(
        buf, position + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_MASK
    )
    _MAX_TIMESTAMP_FIELD.pack_into(buf, position + MAX_TIMESTAMP_OFFSET, log_append_time_ms)
    _reseal(buf, position, header.size_in_bytes)
