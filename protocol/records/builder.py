"""Builds one record batch from records appended one by one (the producer's partition buffer)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rafka.protocol.records.batch import (
    HEADER_SIZE,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    encode_batch,
    make_attributes,
)
from rafka.protocol.records.columns import RecordColumns
from rafka.protocol.records.compression import Compression

# msgpack framing of one record in its columns: a delta, a
# bin header, a key marker and a headers marker.
RECORD_OVERHEAD = 16
# What each header adds to a record's size estimate beside its key and value.
HEADER_OVERHEAD = 4
_NONE_TYPE = type(None)
_BYTES_OR_NONE = frozenset({bytes, _NONE_TYPE})


def _check_headers(
    headers: Sequence[tuple[str, bytes | None]],
) -> tuple[tuple[str, bytes | None], ...]:
    checked: list[tuple[str, bytes | None]] = []
    for item in headers:
        if (
            len(item) != 2
            or not isinstance(item[0], str)
            or not (item[1] is None or isinstance(item[1], bytes))
        ):
            raise TypeError(f"a header must be a (str, bytes or None) pair, got {item!r}")
        checked.append((item[0], item[1]))
    return tuple(checked)


def headers_size(headers: Iterable[tuple[str, bytes | None]]) -> int:
    """What ``headers`` add to a record's size estimate."""
    return sum(len(k) + (len(v) if v else 0) + HEADER_OVERHEAD for k, v in headers)


def _check_column(name: str, column: Sequence[bytes | None]) -> int:
    """Bytes in a key or value column; TypeError names the first entry not bytes or None."""
    if not set(map(type, column)) <= _BYTES_OR_NONE:
        bad = next(item for item in column if item is not None and type(item) is not bytes)
        raise TypeError(f"{name} must be bytes or None, got {type(bad).__name__}")
    try:
        return sum(map(len, column))  # type: ignore[arg-type]  # a None raises, handled below
    except TypeError:  # some entries are None
        return sum(len(item) for item in column if item is not None)


class RecordBatchBuilder:
    """Accumulate records into a batch's columns; ``build()`` frames them with the batch header.

    Records arrive one at a time (``append``, the producer's path) or as whole columns (``extend``,
    for callers that already hold lists of values, such as tools and the storage benchmark).
    Offsets are relative (0, 1, 2, ...): the leader assigns the real base offset on append.
    """

    __slots__ = (
        "_first_ts",
        "_headers",
        "_keys",
        "_max_ts",
        "_size",
        "_timestamp_deltas",
        "_values",
        "base_sequence",
        "batch_size",
        "compression",
        "is_transactional",
        "producer_epoch",
        "producer_id",
    )

    def __init__(
        self,
        compression: Compression = Compression.NONE,
        batch_size: int = 16384,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
    ) -> None:
        self._timestamp_deltas: list[int] = []
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        # Few records carry headers: keep them by offset delta rather than a column of empties.
        self._headers: dict[int, tuple[tuple[str, bytes | None], ...]] = {}
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
        # This is the producer's per-record hot path: a few
        # type checks, three list appends, no other calls.
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
            size += headers_size(checked)
        values = self._values
        delta = len(values)
        if fit and delta and self._size + size > self.batch_size:
            return -1
        if delta == 0:
            self._first_ts = self._max_ts = timestamp_ms
        elif timestamp_ms > self._max_ts:
            self._max_ts = timestamp_ms
        values.append(value)
        self._keys.append(key)
        self._timestamp_deltas.append(timestamp_ms - self._first_ts)
        if checked:
            self._headers[delta] = checked
        self._size += size
        return delta

    def extend(
        self,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None = None,
        timestamp_ms: int | Sequence[int] = 0,
        headers: Sequence[Sequence[tuple[str, bytes | None]]] | None = None,
    ) -> int:
        """Append whole columns: ``values``, optional ``keys`` and ``headers`` of the same length,
        and one timestamp for all or one per record. Checks every entry before adding any; returns
        the first offset delta.

        Unlike ``try_append`` this takes every record, so callers size their columns to the batch.
        """
        count = len(values)
        size = RECORD_OVERHEAD * count + _check_column("value", values)
        if keys is not None:
            if len(keys) != count:
                raise ValueError(f"{len(keys)} keys for {count} values")
            size += _check_column("key", keys)
        checked: dict[int, tuple[tuple[str, bytes | None], ...]] = {}
        if headers is not None:
            if len(headers) != count:
                raise ValueError(f"{len(headers)} header lists for {count} values")
            for row, row_headers in enumerate(headers):
                if row_headers:
                    checked[row] = _check_headers(row_headers)
                    size += headers_size(checked[row])
        if isinstance(timestamp_ms, int):
            first = last = timestamp_ms
        else:
            if len(timestamp_ms) != count:
                raise ValueError(f"{len(timestamp_ms)} timestamps for {count} values")
            if count and not all(type(t) is int for t in timestamp_ms):
                raise TypeError("timestamps must be int milliseconds")
            first, last = (timestamp_ms[0], max(timestamp_ms)) if count else (0, 0)
        delta = len(self._values)
        if count == 0:
            return delta
        if delta == 0:
            self._first_ts, self._max_ts = first, last
        elif last > self._max_ts:
            self._max_ts = last
        base = self._first_ts
        if isinstance(timestamp_ms, int):
            self._timestamp_deltas += [timestamp_ms - base] * count
        else:
            self._timestamp_deltas += [t - base for t in timestamp_ms]
        self._keys += [None] * count if keys is None else keys
        for row, row_headers in checked.items():
            self._headers[delta + row] = row_headers
        self._values += values
        self._size += size
        return delta

    def is_full(self) -> bool:
        """Whether the batch has reached ``batch_size`` and should be sent."""
        return self._size >= self.batch_size

    @property
    def record_count(self) -> int:
        """Number of records appended so far."""
        return len(self._values)

    @property
    def estimated_size(self) -> int:
        """Uncompressed size estimate of the batch in bytes."""
        return self._size

    def build(self) -> bytes:
        """Frame the records as one batch with relative offsets from 0."""
        count = len(self._values)
        if not count:
            raise ValueError("cannot build an empty batch")
        headers: Sequence[Sequence[tuple[str, bytes | None]]]
        if self._headers:
            headers = [self._headers.get(delta, ()) for delta in range(count)]
        else:
            headers = ((),) * count
        return encode_batch(
            RecordColumns(range(count), self._timestamp_deltas, self._keys, self._values, headers),
            first_timestamp=self._first_ts,
            max_timestamp=self._max_ts,
            last_offset_delta=count - 1,
            attributes=make_attributes(self.compression, is_transactional=self.is_transactional),
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
        )


def build_batch(
    records: Iterable[
        tuple[bytes | None, bytes | None, int]
        | tuple[bytes | None, bytes | None, int, Sequence[tuple[str, bytes | None]]]
    ],
    compression: Compression = Compression.NONE,
) -> bytes:
    """Build one batch from ``(key, value, timestamp_ms[, headers])`` tuples (tools and tests)."""
    builder = RecordBatchBuilder(compression=compression, batch_size=1 << 62)
    for record in records:
        builder.append(record[2], record[0], record[1], record[3] if len(record) > 3 else ())
    return builder.build()
