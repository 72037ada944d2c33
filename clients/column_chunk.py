"""Arrow tables cut into per-partition column chunks, one produce batch each (``send_arrow``).

A table's columns are checked and normalised once (``ProducerColumns``), rows are grouped by the
partition the producer chose for them, keeping their order within a partition, and each group is cut
into runs that fit ``batch_size``. A chunk carries plain lists, which ``RecordBatchBuilder.extend``
takes whole: no Python call per record beyond Arrow's own conversion to ``bytes``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from rafka.protocol.errors import MessageTooLargeError, UnknownTopicOrPartitionError
from rafka.protocol.records.builder import RECORD_OVERHEAD, headers_size

HeaderTuple = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class ColumnChunk:
    """Rows bound for one partition that fit one batch, as the builder's columns."""

    partition: int
    values: list[bytes | None]
    keys: list[bytes | None] | None
    timestamps: list[int] | int
    headers: list[HeaderTuple] | None
    size: int

    @property
    def count(self) -> int:
        """Rows in the chunk."""
        return len(self.values)


def _binary(data: pa.Table, name: str) -> pa.ChunkedArray | None:
    """Column ``name`` as binary (strings as their UTF-8 bytes), or None when absent."""
    if name not in data.column_names:
        return None
    column = data.column(name)
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return column.cast(pa.binary())
    if pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind):
        return column.cast(pa.binary())
    if pa.types.is_binary(kind):
        return column
    raise TypeError(f"column {name!r} must be binary or string, not {kind}")


def _timestamps(data: pa.Table, default_ms: int) -> pa.ChunkedArray | int:
    """The ``timestamp`` column in epoch milliseconds (nulls take ``default_ms``), or
    ``default_ms`` for every row when there is no such column."""
    if "timestamp" not in data.column_names:
        return default_ms
    column = data.column("timestamp")
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms", tz=column.type.tz)).cast(pa.int64())
    elif pa.types.is_integer(column.type):
        column = column.cast(pa.int64())
    else:
        raise TypeError(
            f"column 'timestamp' must be a timestamp or int64 milliseconds, not {column.type}"
        )
    return pc.fill_null(column, default_ms)


def _headers(data: pa.Table) -> pa.ChunkedArray | None:
    if "headers" not in data.column_names:
        return None
    column = data.column("headers")
    kind = column.type
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)) or [
        f.name for f in kind.value_type
    ] != ["key", "value"]:
        raise TypeError(
            f"column 'headers' must be list<struct<key: string, value: binary>>, not {kind}"
        )
    return column


@dataclass(frozen=True)
class ProducerColumns:
    """A table's producer columns, checked: ``value`` (required), ``key``, ``partition``,
    ``timestamp`` and ``headers``; other columns (``topic``, ``offset``...) are ignored, so a
    table from ``Consumer.poll_arrow`` can be sent on as it is."""

    values: pa.ChunkedArray
    keys: pa.ChunkedArray | None
    partitions: pa.ChunkedArray | None
    timestamps: pa.ChunkedArray | int
    headers: pa.ChunkedArray | None

    @classmethod
    def of(cls, data: pa.Table | pa.RecordBatch, default_timestamp_ms: int) -> ProducerColumns:
        """Check and normalise ``data``'s columns; TypeError names the column that is wrong."""
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if not isinstance(table, pa.Table):
            raise TypeError(f"send_arrow takes a pyarrow Table or RecordBatch, not {type(data)}")
        values = _binary(table, "value")
        if values is None:
            raise TypeError("the table needs a 'value' column (binary or string)")
        partitions = None
        if "partition" in table.column_names:
            partitions = table.column("partition")
            if not pa.types.is_integer(partitions.type):
                raise TypeError(f"column 'partition' must be an integer, not {partitions.type}")
        return cls(
            values,
            _binary(table, "key"),
            partitions,
            _timestamps(table, default_timestamp_ms),
            _headers(table),
        )

    def __len__(self) -> int:
        return len(self.values)

    def row_sizes(self) -> list[int]:
        """Each row's size as the batch builder estimates it."""
        size = pc.add(pc.fill_null(pc.binary_length(self.values), 0), RECORD_OVERHEAD)
        if self.keys is not None:
            size = pc.add(size, pc.fill_null(pc.binary_length(self.keys), 0))
        sizes: list[int] = size.to_pylist()
        if self.headers is not None:
            for row, headers in enumerate(self.headers.to_pylist()):
                if headers:
                    sizes[row] += headers_size((h["key"], h["value"]) for h in headers)
        return sizes

    def take(self, rows: Sequence[int] | None) -> ProducerColumns:
        """The columns of ``rows`` (all when None), in that order."""
        if rows is None:
            return self
        indices = pa.array(rows, pa.int64())
        return ProducerColumns(
            self.values.take(indices),
            None if self.keys is None else self.keys.take(indices),
            None if self.partitions is None else self.partitions.take(indices),
            self.timestamps if isinstance(self.timestamps, int) else self.timestamps.take(indices),
            None if self.headers is None else self.headers.take(indices),
        )

    def chunk(self, partition: int, start: int, end: int, size: int) -> ColumnChunk:
        """Rows [start, end) as one chunk for ``partition``."""
        count = end - start
        timestamps = self.timestamps
        headers = None
        if self.headers is not None:
            headers = [
                tuple((h["key"], h["value"]) for h in row or ())
                for row in self.headers.slice(start, count).to_pylist()
            ]
        return ColumnChunk(
            partition,
            self.values.slice(start, count).to_pylist(),
            None if self.keys is None else self.keys.slice(start, count).to_pylist(),
            timestamps
            if isinstance(timestamps, int)
            else timestamps.slice(start, count).to_pylist(),
            headers,
            size,
        )


def runs(sizes: Sequence[int], budget: int) -> Iterator[tuple[int, int, int]]:
    """Cut rows into consecutive runs of at most ``budget`` bytes (a row larger than the budget
    is a run of its own): yields (start, end, bytes)."""
    ends = list(accumulate(sizes))
    start, before = 0, 0
    while start < len(ends):
        end = max(bisect_right(ends, before + budget, lo=start), start + 1)
        yield start, end, ends[end - 1] - before
        before = ends[end - 1]
        start = end


class Partitioner(Protocol):
    """The producer's partitioner: ``(topic, key, partition count, available) -> partition``."""

    def __call__(
        self, topic: str, key: bytes | None, num_partitions: int, available: Sequence[int]
    ) -> int: ...


def _rows_by_partition(
    columns: ProducerColumns,
    topic: str,
    partitioner: Partitioner,
    count: int,
    available: Sequence[int],
) -> tuple[dict[int, list[int]], list[int]]:
    """Rows with a partition (from the ``partition`` column, or the partitioner for a key) grouped
    by partition in table order, and the rows left for the sticky choice (no key, no partition)."""
    explicit = columns.partitions.to_pylist() if columns.partitions is not None else None
    keys = columns.keys.to_pylist() if columns.keys is not None else None
    grouped: dict[int, list[int]] = {}
    keyless: list[int] = []
    for row in range(len(columns)):
        partition = explicit[row] if explicit is not None else None
        if partition is None:
            key = keys[row] if keys is not None else None
            if key is None:
                keyless.append(row)
                continue
            partition = partitioner(topic, key, count, available)
        elif not 0 <= partition < count:
            raise UnknownTopicOrPartitionError(
                f"row {row}: topic {topic!r} has partitions 0..{count - 1}, not {partition}"
            )
        grouped.setdefault(partition, []).append(row)
    return grouped, keyless


def plan_chunks(
    columns: ProducerColumns,
    topic: str,
    partitioner: Partitioner,
    count: int,
    available: Sequence[int],
    partition: int | None,
    budget: int,
    max_record_size: int,
) -> Iterator[ColumnChunk]:
    """The chunks ``send_arrow`` queues, each at most ``budget`` bytes of records.

    ``partition`` sends every row there. Otherwise a row goes to its ``partition`` column's value,
    else to its key's partition, and rows with neither go, a batch at a time, to the partition the
    partitioner picks for a record without a key (sticky: it moves on after each batch). Every
    check runs before the first chunk is yielded, so a refused table queues nothing."""
    sizes = columns.row_sizes()
    largest = max(sizes, default=0)
    if largest > max_record_size:
        raise MessageTooLargeError(
            f"row {sizes.index(largest)} is about {largest} bytes, "
            f"over max_request_size={max_record_size}"
        )
    if partition is not None:
        if not 0 <= partition < count:
            raise UnknownTopicOrPartitionError(
                f"topic {topic!r} has partitions 0..{count - 1}, not {partition}"
            )
        groups: list[tuple[int | None, list[int] | None]] = [(partition, None)]
    elif columns.partitions is None and columns.keys is None:
        groups = [(None, None)]
    else:
        grouped, keyless = _rows_by_partition(columns, topic, partitioner, count, available)
        groups = [(p, rows) for p, rows in grouped.items()]
        if keyless:
            groups.append((None, keyless))
    on_new_batch = getattr(partitioner, "on_new_batch", None)
    for target, rows in groups:
        group = columns.take(rows)
        group_sizes = sizes if rows is None else [sizes[row] for row in rows]
        for start, end, size in runs(group_sizes, budget):
            chosen = target
            if chosen is None:
                chosen = partitioner(topic, None, count, available)
                if on_new_batch is not None:
                    on_new_batch(topic, count, chosen, available)
            yield group.chunk(chosen, start, end, size)
