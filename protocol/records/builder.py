"""Builds one record batch from records appended one at a time (the producer's per-partition buffer)."""

from __future__ import annotations

from typing import Iterable, Sequence

from rafka.protocol.records.batch import (
    HEADER_SIZE,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    encode_batch,
    make_attributes,
)
from rafka.protocol.records.compression import Compression

# msgpack framing of one record: array marker, two small ints, two bin headers and the headers array.
RECORD_OVERHEAD = 16


def _check_headers(headers: Sequence[tuple[str, bytes | None]]) -> list[tuple[str, bytes | None]]:
    checked: list[tuple[str, bytes | None]] = []
    for item in headers:
        if len(item) != 2 or not isinstance(item[0], str) or not (item[1] is None or isinstance(item[1], bytes)):
            raise TypeError(f"a header must be a (str, bytes or None) pair, got {item!r}")
        checked.append((item[0], item[1]))
    return checked


class RecordBatchBuilder:
    """Accumulate records into a batch; ``build()`` frames them with the batch header.

    Offsets are relative (0, 1, 2, ...): the leader assigns the real base offset on append.
    """

    __slots__ = ("_rows", "_size", "_first_ts", "_max_ts", "compression", "batch_size",
                 "producer_id", "producer_epoch", "base_sequence", "is_transactional")

    def __init__(
        self,
        compression: Compression = Compression.NONE,
        batch_size: int = 16384,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
    ) -> None:
        self._rows: list[tuple[object, ...]] = []
        self._size = HEADER_SIZE
        self._first_ts = 0
        self._max_ts = 0
        self.compression = compression
        self.batch_size = batch_size
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional

    def append(
        self,
        timestamp_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] = (),
    ) -> int:
        """Add one record and return its offset delta within the batch."""
        return self.try_append(timestamp_ms, key, value, headers, fit=False)

    def try_append(
        self,
        timestamp_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        fit: bool = True,
    ) -> int:
        """Append only if the record keeps the batch under ``batch_size`` (an empty batch takes any
        record, and ``fit=False`` takes any record); return its offset delta, or -1 when it does not
        fit and nothing was added."""
        # This is the producer's per-record hot path: a few type checks, one tuple, no other calls.
        if key is None:
            size = RECORD_OVERHEAD
        elif type(key) is bytes:
            size = RECORD_OVERHEAD + len(key)
        else:
            raise TypeError(f"key must be bytes or None, got {type(key).__name__}")
        if value is not None:
            if type(value) is not bytes:
                raise TypeError(f"value must be bytes or None, got {type(value).__name__}")
            size += len(value)
        # Headers are checked before anything changes, so a rejected record leaves no trace.
        checked = _check_headers(headers) if headers else ()
        if checked:
            size += sum(len(k) + (len(v) if v else 0) + 4 for k, v in checked)
        rows = self._rows
        delta = len(rows)
        if fit and delta and self._size + size > self.batch_size:
            return -1
        if delta == 0:
            self._first_ts = self._max_ts = timestamp_ms
        elif timestamp_ms > self._max_ts:
            self._max_ts = timestamp_ms
        rows.append((delta, timestamp_ms - self._first_ts, key, value, checked))
        self._size += size
        return delta

    def is_full(self) -> bool:
        """Whether the batch has reached ``batch_size`` and should be sent."""
        return self._size >= self.batch_size

    @property
    def record_count(self) -> int:
        """Number of records appended so far."""
        return len(self._rows)

    @property
    def estimated_size(self) -> int:
        """Uncompressed size estimate of the batch in bytes."""
        return self._size

    def build(self) -> bytes:
        """Frame the records as one batch with relative offsets from 0."""
        if not self._rows:
            raise ValueError("cannot build an empty batch")
        return encode_batch(
            self._rows,
            first_timestamp=self._first_ts,
            max_timestamp=self._max_ts,
            last_offset_delta=len(self._rows) - 1,
            attributes=make_attributes(self.compression, is_transactional=self.is_transactional),
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
        )


def build_batch(
    records: Iterable[tuple[bytes | None, bytes | None, int] | tuple[bytes | None, bytes | None, int, Sequence[tuple[str, bytes | None]]]],
    compression: Compression = Compression.NONE,
) -> bytes:
    """Build one batch from ``(key, value, timestamp_ms[, headers])`` tuples: a convenience for tools and tests."""
    builder = RecordBatchBuilder(compression=compression, batch_size=1 << 62)
    for record in records:
        builder.append(record[2], record[0], record[1], record[3] if len(record) > 3 else ())
    return builder.build()
