"""Kafka's v2 records section: each record a row of zigzag varints.

::

    Record =>
      length          varint  bytes of the record after this field
      attributes      int8    unused, written as 0
      timestamp_delta varlong timestamp minus the batch's first_timestamp
      offset_delta    varint  offset minus the batch's base_offset
      key             varint length (-1 for null) then bytes
      value           varint length (-1 for null) then bytes
      headers         varint count, then per header: varint length + utf-8 key,
                      varint length (-1 for null) + bytes value

Kafka compresses the concatenated records as a whole per the codec bits of the batch's
``attributes``; this module sees them uncompressed. Per-record attributes carry nothing in v2 and
are not kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from rafka.protocol.errors import CorruptMessageError
from rafka.protocol.records.columns import Header, RecordColumns

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
