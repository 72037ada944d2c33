"""The record batch: the binary layout that carries records from producer to disk to consumer.

A batch travels unchanged from the producer through the leader, the followers and the segment
files to the consumer; the broker never re-encodes it. The leader only stamps two header fields in
place (the base offset and the partition leader epoch), which is why the CRC starts after them.

Layout (big-endian), Kafka's v2 ``RecordBatch``::

    RecordBatch =>
      base_offset            int64   offset of the first record (assigned by the leader)
      batch_length           int32   bytes that follow this field
      partition_leader_epoch int32   epoch of the leader that appended it (stamped by the leader)
      magic                  int8    always 2
      crc                    uint32  CRC-32C of everything from ``attributes`` to the end
      attributes             int16   see the bit table below
      last_offset_delta      int32   offset of the last record minus base_offset
      first_timestamp        int64   timestamp of the first record (ms)
      max_timestamp          int64   largest timestamp in the batch (ms)
      producer_id            int64   -1 when not idempotent
      producer_epoch         int16   -1 when not idempotent
      base_sequence          int32   -1 when not idempotent
      record_count           int32   number of records that follow
      records                bytes   the records section, compressed as a whole per ``attributes``

    attributes bits: 0-2 compression codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
                     3 timestamp type (0 CreateTime, 1 LogAppendTime), 4 transactional, 5 control,
                     14 columnar: the records section is rafka's msgpack columns, not Kafka's rows.

The records section has one of two layouts. Batches from Kafka clients keep Kafka's varint rows
(``kafka_rows``), so the log serves them back to Kafka clients byte for byte. Batches rafka builds
set the columnar bit and hold msgpack columns::

    Records => msgpack array of columns [offset_deltas, timestamp_deltas, keys, values, headers]
      offset_deltas     nil for a batch as built (0..record_count-1); after compaction, which leaves
                        gaps, an array of int: offset minus base_offset
      timestamp_deltas  array of int: timestamp minus first_timestamp
      keys              nil when every key is null, else an array of bytes-or-nil
      values            array of bytes-or-nil
      headers           nil when no record has headers, else an array (one per record) of
                        arrays of [str key, bytes-or-nil value]

Encoding and decoding columns is a handful of C calls on whole lists rather than Python work per
record, and the Spark bridge gets its Arrow columns without a transpose. ``decode_columns`` reads
either layout, so nothing past it needs to know which one a batch has.
"""

from __future__ import annotations

import gc
import itertools
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import crc32c
import msgpack

from rafka.protocol.errors import CorruptMessageError, UnsupportedCompressionTypeError
from rafka.protocol.records.columns import Record, RecordColumns
from rafka.protocol.records.compression import Compression, compress, decompress
from rafka.protocol.records.kafka_rows import decode_record_section

HEADER = struct.Struct(
    ">q"  # base_offset
    "i"  # batch_length
    "i"  # partition_leader_epoch
    "b"  # magic
    "I"  # crc
    "h"  # attributes
    "i"  # last_offset_delta
    "q"  # first_timestamp
    "q"  # max_timestamp
    "q"  # producer_id
    "h"  # producer_epoch
    "i"  # base_sequence
    "i"  # record_count
)
HEADER_SIZE = HEADER.size
BASE_OFFSET_AND_LENGTH = struct.Struct(">qi")
LOG_OVERHEAD = BASE_OFFSET_AND_LENGTH.size  # bytes before batch_length's coverage starts
LEADER_EPOCH_OFFSET = LOG_OVERHEAD
MAGIC_OFFSET = LEADER_EPOCH_OFFSET + 4
CRC_OFFSET = MAGIC_OFFSET + 1
ATTRIBUTES_OFFSET = CRC_OFFSET + 4
_EPOCH_FIELD = struct.Struct(">i")
_BASE_OFFSET_FIELD = struct.Struct(">q")

MAGIC = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
# Kafka leaves bits 7-15 unused (bit 6 is KIP-534's delete horizon); bit 14 marks our layout.
COLUMNAR_MASK = 0x4000

CREATE_TIME = 0
LOG_APPEND_TIME = 1


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed-size header of one batch, parsed without touching its records."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size_in_bytes(self) -> int:
        """Bytes the whole batch occupies on disk and on the wire."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        """Offset of the batch's last record."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """Offset right after the batch: the log end offset once it is appended."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> Compression:
        """The codec of the records section."""
        return Compression(self.attributes & CODEC_MASK)

    @property
    def timestamp_type(self) -> int:
        """CREATE_TIME (0) or LOG_APPEND_TIME (1)."""
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        """Whether the batch belongs to a transaction."""
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        """Whether the batch carries control records (transaction markers)."""
        return bool(self.attributes & CONTROL_MASK)

    @property
    def is_columnar(self) -> bool:
        """Whether the records section is rafka's msgpack columns rather than Kafka's rows."""
        return bool(self.attributes & COLUMNAR_MASK)


def make_attributes(
    compression: Compression = Compression.NONE,
    timestamp_type: int = CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
) -> int:
    """Pack the attribute bits of a batch header."""
    attributes = int(compression) & CODEC_MASK
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    return attributes


def encode_batch(
    columns: RecordColumns,
    *,
    first_timestamp: int,
    max_timestamp: int,
    last_offset_delta: int,
    base_offset: int = 0,
    attributes: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> bytes:
    """Frame record columns (offsets and timestamps already relative) as one columnar batch.

    The builder and the log cleaner both produce columns; this is the one place that frames them.
    Offset deltas given as ``range(count)``, all-null keys and absent headers are written as nil.
    The columnar bit is set whatever ``attributes`` says.
    """
    attributes |= COLUMNAR_MASK
    count = len(columns.values)
    # Only the builder's range(count) is written as nil; a
    # filtered column (compaction) stays explicit.
    offset_deltas = None if columns.offset_deltas == range(count) else columns.offset_deltas
    keys = None if columns.keys.count(None) == count else columns.keys
    headers = columns.headers if any(columns.headers) else None
    body: bytes = msgpack.packb(
        [offset_deltas, columns.timestamp_deltas, keys, columns.values, headers]
    )
    codec = Compression(attributes & CODEC_MASK)
    if codec is not Compression.NONE:
        body = compress(codec, body)
    tail = (
        HEADER.pack(
            0,
            0,
            0,
            0,
            0,
            attributes,
            last_offset_delta,
            first_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )[ATTRIBUTES_OFFSET:]
        + body
    )
    crc = crc32c.crc32c(tail)
    prefix = HEADER.pack(
        base_offset,
        HEADER_SIZE - LOG_OVERHEAD + len(body),
        partition_leader_epoch,
        MAGIC,
        crc,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    )[:ATTRIBUTES_OFFSET]
    return prefix + tail


def read_header(buf: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Parse the header at ``position``; raise CORRUPT_MESSAGE if it is truncated or malformed."""
    if len(buf) - position < HEADER_SIZE:
        raise CorruptMessageError(
            f"batch header at byte {position} is truncated: "
            f"{len(buf) - position} of {HEADER_SIZE} bytes"
        )
    header = BatchHeader(*HEADER.unpack_from(buf, position))
    if header.magic != MAGIC:
        raise CorruptMessageError(
            f"batch at byte {position} has magic {header.magic}, expected {MAGIC}"
        )
    if header.attributes & CODEC_MASK > max(Compression):
        raise CorruptMessageError(
            f"batch at byte {position} names unknown compression codec "
            f"{header.attributes & CODEC_MASK}"
        )
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptMessageError(f"batch at byte {position} declares length {header.batch_length}")
    if (
        header.record_count < 0
        or header.last_offset_delta < header.record_count - 1
        or (header.record_count > 0 and header.last_offset_delta < 0)
    ):
        raise CorruptMessageError(
            f"batch at byte {position} has record_count {header.record_count} "
            f"and last_offset_delta {header.last_offset_delta}"
        )
    return header


def verify_crc(buf: bytes | bytearray | memoryview, position: int, header: BatchHeader) -> None:
    """Raise CORRUPT_MESSAGE unless the batch at ``position`` is complete and its CRC matches."""
    end = position + header.size_in_bytes
    if end > len(buf):
        raise CorruptMessageError(
            f"batch at byte {position} is truncated: needs {header.size_in_bytes} bytes, "
            f"{len(buf) - position} present"
        )
    actual = crc32c.crc32c(memoryview(buf)[position + ATTRIBUTES_OFFSET : end])
    if actual != header.crc:
        raise CorruptMessageError(
            f"batch at offset {header.base_offset} (byte {position}) fails its CRC: "
            f"stored {header.crc:#010x}, computed {actual:#010x}"
        )


def iter_batches(
    buf: bytes | bytearray | memoryview, position: int = 0, end: int | None = None
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each whole batch in ``buf[position:end]``.

    Stops quietly at a trailing partial batch (a fetch cut at max_bytes ends that way); a malformed
    header raises CORRUPT_MESSAGE. CRCs are not checked here: callers that need it call verify_crc.
    """
    # An ``end`` past the buffer must not let a batch cut short by the buffer pass as whole.
    limit = len(buf) if end is None else min(end, len(buf))
    while limit - position >= HEADER_SIZE:
        header = read_header(buf, position)
        if position + header.size_in_bytes > limit:
            return
        yield position, header
        position += header.size_in_bytes


def records_section(
    buf: bytes | bytearray | memoryview, position: int, header: BatchHeader
) -> bytes:
    """The decompressed records section of the batch at ``position``, in its own layout."""
    start = position + HEADER_SIZE
    body = bytes(memoryview(buf)[start : position + header.size_in_bytes])
    codec = header.compression
    if codec is Compression.NONE:
        return body
    try:
        return decompress(codec, body)
    except (CorruptMessageError, UnsupportedCompressionTypeError):
        # A codec this broker lacks is UNSUPPORTED_COMPRESSION_TYPE
        # (not retriable), not a corrupt batch.
        raise
    except Exception as exc:  # any codec failure means the bytes are not what the producer wrote
        raise CorruptMessageError(
            f"batch at offset {header.base_offset} fails to decompress: {exc}"
        ) from exc


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many small containers at once.

    Decoding a batch allocates a tuple per record; with the GC on, each allocation burst triggers
    collections that rescan them all, which dominates the cost of decoding.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def decode_columns(
    buf: bytes | bytearray | memoryview, position: int, header: BatchHeader
) -> RecordColumns:
    """Decode the batch's records section, in either layout, to columns of the header's length.

    Element types of msgpack columns are not checked here (``validate_records`` does that): a
    CRC-verified batch holds what a builder wrote. Kafka's rows are read field by field, so a
    malformed one is CORRUPT_MESSAGE here.
    """
    if not header.is_columnar:
        return decode_record_section(
            records_section(buf, position, header),
            header.record_count,
            f"batch at offset {header.base_offset}",
        )
    try:
        with gc_paused():
            section = msgpack.unpackb(records_section(buf, position, header), use_list=False)
    except (CorruptMessageError, UnsupportedCompressionTypeError):
        raise
    except Exception as exc:  # msgpack raises several types for malformed input
        raise CorruptMessageError(
            f"batch at offset {header.base_offset} has undecodable records: {exc}"
        ) from exc
    if type(section) is not tuple or len(section) != 5:
        raise CorruptMessageError(
            f"batch at offset {header.base_offset} has no five-column records section"
        )
    count = header.record_count
    offset_deltas, timestamp_deltas, keys, values, headers = section
    if offset_deltas is None:
        offset_deltas = range(count)
    if keys is None:
        keys = (None,) * count
    if headers is None:
        headers = ((),) * count
    for name, column in (
        ("offset", offset_deltas),
        ("timestamp", timestamp_deltas),
        ("key", keys),
        ("value", values),
        ("header", headers),
    ):
        if not isinstance(column, (tuple, range)) or len(column) != count:
            raise CorruptMessageError(
                f"batch at offset {header.base_offset} declares {count} records, "
                f"its {name} column holds "
                f"{len(column) if isinstance(column, tuple) else 'no array of'} entries"
            )
    return RecordColumns(offset_deltas, timestamp_deltas, keys, values, headers)


def decode_records(
    buf: bytes | bytearray | memoryview, position: int = 0, header: BatchHeader | None = None
) -> list[Record]:
    """Decode every record of the batch at ``position`` with absolute offsets and timestamps."""
    if header is None:
        header = read_header(buf, position)
    ods, tds, keys, values, headers = decode_columns(buf, position, header)
    base_offset = header.base_offset
    first_timestamp = header.first_timestamp
    # tuple.__new__ builds each Record in C; calling
    # Record(...) runs a Python-level __new__ per record.
    make = tuple.__new__
    try:
        with gc_paused():
            return [
                make(Record, (base_offset + od, first_timestamp + td, k, v, h))
                for od, td, k, v, h in zip(ods, tds, keys, values, headers, strict=True)
            ]
    except TypeError as exc:
        raise CorruptMessageError(
            f"batch at offset {base_offset} has a malformed record: {exc}"
        ) from exc


def validate_records(
    buf: bytes | bytearray | memoryview, position: int, header: BatchHeader
) -> RecordColumns:
    """Check every record's field types and offsets against the header; return the columns.

    This looks at every record, so the broker runs it only where it must look inside records.
    """
    columns = decode_columns(buf, position, header)
    where = f"batch at offset {header.base_offset}"
    ods = columns.offset_deltas
    if not isinstance(ods, range):
        if (
            any(type(od) is not int for od in ods)
            or any(b <= a for a, b in itertools.pairwise(ods))
            or (ods and ods[0] < 0)
        ):
            raise CorruptMessageError(f"{where} has offset deltas that are not increasing integers")
    if any(type(td) is not int for td in columns.timestamp_deltas):
        raise CorruptMessageError(f"{where} has timestamp deltas that are not integers")
    if any(not (k is None or type(k) is bytes) for k in columns.keys) or any(
        not (v is None or type(v) is bytes) for v in columns.values
    ):
        raise CorruptMessageError(f"{where} has a key or value that is not bytes")
    if any(
        type(hs) is not tuple
        or any(
            type(h) is not tuple
            or len(h) != 2
            or type(h[0]) is not str
            or not (h[1] is None or type(h[1]) is bytes)
            for h in hs
        )
        for hs in columns.headers
    ):
        raise CorruptMessageError(f"{where} has malformed headers")
    if header.record_count and ods[-1] != header.last_offset_delta:
        raise CorruptMessageError(
            f"{where}: last record delta {ods[-1]} differs from header's {header.last_offset_delta}"
        )
    return columns


def stamp(
    buf: bytearray | memoryview, position: int, base_offset: int, partition_leader_epoch: int
) -> None:
    """Set base offset and leader epoch in place; both lie outside the CRC, so it stays valid."""
    _BASE_OFFSET_FIELD.pack_into(buf, position, base_offset)
    _EPOCH_FIELD.pack_into(buf, position + LEADER_EPOCH_OFFSET, partition_leader_epoch)
