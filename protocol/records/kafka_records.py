"""Kafka's own v2 records section, and conversion between Kafka's batches and rafka's native ones.

Kafka clients (kafka-python, confluent-kafka, aiokafka, kcat) send and expect ``RecordBatch`` v2.
Its header is the one ``batch`` defines; only the records section differs. Kafka frames each record
as a row of zigzag varints::

    Record =>
      length          varint  bytes of the record after this field
      attributes      int8    unused, written as 0
      timestamp_delta varlong timestamp minus the batch's first_timestamp
      offset_delta    varint  offset minus the batch's base_offset
      key             varint length (-1 for null) then bytes
      value           varint length (-1 for null) then bytes
      headers         varint count, then per header: varint length + utf-8 key,
                      varint length (-1 for null) + bytes value

and compresses the concatenated records as a whole per the codec bits of ``attributes``. A batch
from a Kafka client is validated here as a broker must (magic, CRC-32C, framing, record count).
The broker's Kafka listener converts a client's batches to native ones on the way in and native
batches to Kafka's on the way out; ``stamp_kafka_batch`` is what a log storing Kafka batches as
they came would set on them. Per-record attributes carry nothing in v2 and are dropped on
conversion.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator, Sequence

import crc32c

from rafka.protocol.errors import (
    CorruptMessageError,
    InvalidRecordError,
    UnsupportedVersionError,
)
from rafka.protocol.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    Header,
    Record,
    RecordColumns,
    decode_columns,
    encode_batch,
    iter_batches,
    read_header,
    records_section,
    stamp,
    verify_crc,
)
from rafka.protocol.records.compression import Compression, compress

_CRC_FIELD = struct.Struct(">I")
_ATTRIBUTES_FIELD = struct.Struct(">h")
_MAX_TIMESTAMP_FIELD = struct.Struct(">q")
# max_timestamp follows attributes (int16), last_offset_delta (int32) and first_timestamp (int64).
MAX_TIMESTAMP_OFFSET = ATTRIBUTES_OFFSET + 2 + 4 + 8
# Kafka's varint holds an int32, its varlong an int64.
_VARINT_BITS = 32
_VARLONG_BITS = 64
# Zigzag varints of the numbers below this, the common case for lengths and offset deltas, are
# precomputed: converting a batch between formats encodes several per record.
_SMALL_LIMIT = 1 << 14


def _zigzag_varint(value: int) -> bytes:
    zigzag = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while zigzag >= 0x80:
        out.append(zigzag & 0x7F | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


_SMALL = tuple(_zigzag_varint(n) for n in range(_SMALL_LIMIT))
_MINUS_ONE = b"\x01"
_NO_ATTRIBUTES = b"\x00"  # a record's attributes: unused in v2
_NO_HEADERS = b"\x00"  # a header count of 0
# The header fields a conversion carries over; length, CRC and record count are recomputed.
_FRAMED_FIELDS = (
    "first_timestamp",
    "max_timestamp",
    "last_offset_delta",
    "base_offset",
    "attributes",
    "partition_leader_epoch",
    "producer_id",
    "producer_epoch",
    "base_sequence",
)


def encode_varint(value: int) -> bytes:
    """Kafka's zigzag varint (or varlong) encoding of a signed 64-bit integer."""
    if 0 <= value < _SMALL_LIMIT:
        return _SMALL[value]
    if value == -1:
        return _MINUS_ONE
    return _zigzag_varint(value)


def read_varint(
    data: bytes, position: int, limit: int | None = None, bits: int = 64
) -> tuple[int, int]:
    """Decode the zigzag varint at ``position``; return ``(value, position after it)``.

    ``bits`` is 32 for Kafka's varint, 64 for its varlong. Raises CORRUPT_MESSAGE when the varint
    runs past ``limit`` (default: the end of ``data``) or does not fit in ``bits``.
    """
    limit = len(data) if limit is None else min(limit, len(data))
    if position < limit and data[position] < 0x80:  # most lengths and deltas take one byte
        byte = data[position]
        return (byte >> 1) ^ -(byte & 1), position + 1
    start = position
    end = min(limit, position + (bits + 6) // 7)
    result = 0
    shift = 0
    while position < end:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if result >> bits:
                break
            return (result >> 1) ^ -(result & 1), position
        shift += 7
    else:
        if end == limit:
            raise CorruptMessageError(f"varint at byte {start} runs past the end of its field")
    raise CorruptMessageError(f"varint at byte {start} does not fit in {bits} bits")


def _append_bytes(out: bytearray, data: bytes | None) -> None:
    """Append a nullable byte string as Kafka frames it: varint length (-1 for null), bytes."""
    if data is None:
        out += _MINUS_ONE
    else:
        out += encode_varint(len(data))
        out += data


def _encode_headers(headers: Sequence[Header]) -> bytes:
    out = bytearray(encode_varint(len(headers)))
    for header_key, header_value in headers:
        _append_bytes(out, header_key.encode())
        _append_bytes(out, header_value)
    return bytes(out)


def encode_record_section(columns: RecordColumns) -> bytes:
    """Kafka's uncompressed records section for ``columns`` (offsets and timestamps relative).

    Each record's length is summed from its fields' sizes, so its bytes are joined once, into the
    section, rather than framed first and copied again."""
    parts: list[bytes] = []
    extend = parts.extend
    varint = encode_varint
    for offset_delta, timestamp_delta, key, value, headers in columns.rows():
        timestamp_bytes = varint(timestamp_delta)
        offset_bytes = varint(offset_delta)
        if key is None:
            key_length, key = _MINUS_ONE, b""
        else:
            key_length = varint(len(key))
        if value is None:
            value_length, value = _MINUS_ONE, b""
        else:
            value_length = varint(len(value))
        header_bytes = _encode_headers(headers) if headers else _NO_HEADERS
        size = (
            1  # attributes
            + len(timestamp_bytes)
            + len(offset_bytes)
            + len(key_length)
            + len(key)
            + len(value_length)
            + len(value)
            + len(header_bytes)
        )
        extend(
            (
                varint(size),
                _NO_ATTRIBUTES,
                timestamp_bytes,
                offset_bytes,
                key_length,
                key,
                value_length,
                value,
                header_bytes,
            )
        )
    return b"".join(parts)


class _RecordReader:
    """Reads one records section field by field, naming the record at fault in every error."""

    __slots__ = ("data", "index", "position", "where")

    def __init__(self, data: bytes, where: str) -> None:
        self.data = data
        self.where = where
        self.position = 0
        self.index = 0

    def fail(self, what: str) -> CorruptMessageError:
        """The error for a malformed field of the current record."""
        return CorruptMessageError(f"{self.where}: record {self.index} {what}")

    def varint(self, end: int, bits: int = _VARINT_BITS) -> int:
        """The next varint of ``bits`` bits, which must end by ``end``."""
        try:
            value, position = read_varint(self.data, self.position, end, bits)
        except CorruptMessageError as exc:
            raise self.fail(f"is malformed: {exc.message}") from None
        self.position = position
        return value

    def nullable(self, end: int, field: str) -> bytes | None:
        """The next length-prefixed byte string (length -1 is null), which must end by ``end``."""
        length = self.varint(end)
        if length == -1:
            return None
        start = self.position
        if length < -1 or start + length > end:
            raise self.fail(f"has a {field} of length {length} with {end - start} bytes left")
        self.position = start + length
        return self.data[start : self.position]

    def record(self) -> tuple[int, int, bytes | None, bytes | None, tuple[Header, ...]]:
        """The next record as ``(offset_delta, timestamp_delta, key, value, headers)``."""
        length = self.varint(len(self.data))
        end = self.position + length
        if length < 1 or end > len(self.data):
            raise self.fail(
                f"is truncated: declares {length} bytes, {len(self.data) - self.position} remain"
            )
        self.position += 1  # attributes: unused in v2
        timestamp_delta = self.varint(end, _VARLONG_BITS)
        offset_delta = self.varint(end)
        key = self.nullable(end, "key")
        value = self.nullable(end, "value")
        count = self.varint(end)
        if count < 0:
            raise self.fail(f"declares {count} headers")
        headers: list[Header] = []
        for _ in range(count):
            header_key = self.nullable(end, "header key")
            if header_key is None:
                raise self.fail("has a null header key")
            try:
                name = header_key.decode()
            except UnicodeDecodeError:
                raise self.fail("has a header key that is not utf-8") from None
            headers.append((name, self.nullable(end, "header value")))
        if self.position != end:
            raise self.fail(
                f"declares {length} bytes, its fields take {self.position - end + length}"
            )
        return offset_delta, timestamp_delta, key, value, tuple(headers)


def decode_record_section(data: bytes, record_count: int, where: str = "batch") -> RecordColumns:
    """Columns of Kafka's uncompressed records section holding exactly ``record_count`` records.

    Offset deltas 0..n-1 come back as a ``range``, as the native builder writes them. Raises
    CORRUPT_MESSAGE, naming ``where`` and the record, for any truncated or malformed record, a
    count that differs from ``record_count``, or offset deltas that do not increase from 0 up.
    """
    rows = _well_formed_rows(data, record_count)
    if rows is None:
        rows = _checked_rows(data, record_count, where)
    columns = RecordColumns.from_rows(rows)
    offset_deltas = columns.offset_deltas
    if list(offset_deltas) == list(range(record_count)):
        return columns._replace(offset_deltas=range(record_count))
    if offset_deltas[0] < 0 or any(b <= a for a, b in itertools.pairwise(offset_deltas)):
        raise CorruptMessageError(f"{where} has offset deltas that do not increase from 0 up")
    return columns


Row = tuple[int, int, bytes | None, bytes | None, tuple[Header, ...]]


def _short_varint(data: bytes, position: int, limit: int, bits: int) -> tuple[int, int]:
    """``read_varint`` with its one- and two-byte cases (most lengths and deltas) done first."""
    byte = data[position]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), position + 1
    if position + 1 < limit and data[position + 1] < 0x80:
        zigzag = byte & 0x7F | data[position + 1] << 7
        return (zigzag >> 1) ^ -(zigzag & 1), position + 2
    return read_varint(data, position, limit, bits)


def _short_nullable(data: bytes, position: int, end: int) -> tuple[bytes | None, int]:
    """The length-prefixed byte string at ``position`` (length -1 is null), which must end by
    ``end``; CORRUPT_MESSAGE, without naming the record, when it does not."""
    length, position = _short_varint(data, position, end, _VARINT_BITS)
    if length == -1:
        return None, position
    if length < 0 or position + length > end:
        raise CorruptMessageError("a byte string runs past its record")
    return data[position : position + length], position + length


def _well_formed_rows(data: bytes, record_count: int) -> list[Row] | None:
    """The records of a well-formed section, read in one tight loop; None at the first thing
    amiss, for ``_checked_rows`` to name.

    Most varints in a record (lengths, deltas, counts) take one or two bytes, which
    ``_short_varint`` reads without ``read_varint``'s checks.
    """
    rows: list[Row] = []
    size = len(data)
    position = 0
    try:
        for _ in range(record_count):
            length, position = _short_varint(data, position, size, _VARINT_BITS)
            end = position + length
            if length < 1 or end > size:
                return None
            position += 1  # attributes: unused in v2
            timestamp_delta, position = _short_varint(data, position, end, _VARLONG_BITS)
            offset_delta, position = _short_varint(data, position, end, _VARINT_BITS)
            key, position = _short_nullable(data, position, end)
            value, position = _short_nullable(data, position, end)
            count, position = _short_varint(data, position, end, _VARINT_BITS)
            headers: list[Header] = []
            for _header in range(count):
                name, position = _short_nullable(data, position, end)
                if name is None:
                    return None
                header_value, position = _short_nullable(data, position, end)
                headers.append((name.decode(), header_value))
            if count < 0 or position != end:
                return None
            rows.append((offset_delta, timestamp_delta, key, value, tuple(headers)))
    except (IndexError, CorruptMessageError, UnicodeDecodeError):
        return None
    return rows if position == size else None


def _checked_rows(data: bytes, record_count: int, where: str) -> list[Row]:
    """The records of a section read field by field; raises CORRUPT_MESSAGE naming the record
    and the field at fault."""
    reader = _RecordReader(data, where)
    rows = []
    for index in range(record_count):
        if reader.position == len(data):
            raise CorruptMessageError(
                f"{where} declares {record_count} records, its records section holds {index}"
            )
        reader.index = index
        rows.append(reader.record())
    if reader.position != len(data):
        raise CorruptMessageError(
            f"{where} declares {record_count} records, its records section holds more "
            f"({len(data) - reader.position} bytes left over)"
        )
    return rows


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

    Magic 0/1 is UNSUPPORTED_VERSION; a bad CRC-32C, a length past the bytes, a truncated or
    malformed record, a record count other than the header's, or a last offset delta other than the
    header's is CORRUPT_MESSAGE; a codec this process lacks is UNSUPPORTED_COMPRESSION_TYPE.
    """
    _check_magic(buf, position)
    header = read_header(buf, position)
    verify_crc(buf, position, header)
    where = f"Kafka batch at offset {header.base_offset} (byte {position})"
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
            header.attributes,
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


def kafka_to_native(buf: bytes | bytearray | memoryview, position: int = 0) -> bytes:
    """Validate the Kafka-format batch at ``position`` and re-frame it as a native batch.

    Every header field and every record's offset, timestamp, key, value and headers are kept; the
    records are recompressed with the same codec and the CRC computed afresh.
    """
    header, columns = validate_kafka_batch(buf, position)
    return encode_batch(columns, **{name: getattr(header, name) for name in _FRAMED_FIELDS})


def native_to_kafka(buf: bytes | bytearray | memoryview, position: int = 0) -> bytes:
    """Re-frame the native batch at ``position`` (CRC-checked) as a Kafka-format batch."""
    header = read_header(buf, position)
    verify_crc(buf, position, header)
    return encode_kafka_batch(decode_columns(buf, position, header), header)


def kafka_batches_to_native(buf: bytes | bytearray | memoryview) -> bytes:
    """Convert a client's whole records payload (one or more Kafka batches) to native batches."""
    return b"".join(kafka_to_native(buf, position) for position, _ in iter_kafka_batches(buf))


def native_batches_to_kafka(buf: bytes | bytearray | memoryview) -> bytes:
    """Convert the whole native batches of a log read to Kafka format for a Kafka client.

    A trailing partial batch (a read cut at max_bytes) cannot be converted and is left out, which
    Kafka clients accept as the end of a fetch.
    """
    return b"".join(native_to_kafka(buf, position) for position, _ in iter_batches(buf))


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
