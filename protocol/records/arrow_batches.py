"""Arrow record batches of Spark's Kafka schema, built from fetched record batches column by column.

Both the Spark bridge's readers and ``Consumer.poll_arrow`` use it. PySpark accepts
``pa.RecordBatch`` from ``read()`` when its schema equals the declared one exactly (field order,
types, nullability), and then skips its own per-row conversion. Building the columns from msgpack's
raw rows with ``array`` buffers and Arrow kernels keeps large reads from creating a Python tuple per
row.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from rafka.protocol.records.batch import BatchHeader, decode_columns, gc_paused, verify_crc
from rafka.protocol.records.columns import Header

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow form of Spark's Kafka schema, as PySpark expects it back from ``read()``."""
    fields = [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(("headers", HEADERS_TYPE))
    return pa.schema(fields)


def _int64s(values: array[int]) -> pa.Array:
    """An Arrow int64 array over an ``array('q')``'s buffer, not converted element by element."""
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def to_arrow(
    data: bytes,
    batches: list[tuple[int, BatchHeader]],
    low: int,
    high: int,
    topic: str,
    partition: int,
    schema: pa.Schema,
    include_headers: bool,
    check_crcs: bool = True,
) -> pa.RecordBatch:
    """One Arrow batch of the records in ``batches`` whose offsets lie in [low, high).

    Numbers go through ``array`` buffers and Arrow kernels (timestamp = first_timestamp + delta, in
    microseconds), keys and values straight from msgpack's bytes: no Python work per record beyond
    msgpack's own decoding. Control batches are skipped; ``check_crcs`` verifies each batch's
    CRC-32C first.
    """
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers: list[Sequence[Header]] = []
    offsets = array("q")
    deltas = array("q")
    firsts = array("q")
    types = array("i")
    with gc_paused():
        for start, header in batches:
            if header.is_control or header.record_count == 0:
                continue
            if check_crcs:
                verify_crc(data, start, header)
            ods, tds, ks, vs, hs = decode_columns(data, start, header)
            base = header.base_offset
            # Whole batches come back, so the first may begin
            # before ``low`` and the last end past ``high``.
            first = bisect_left(ods, low - base) if base < low else 0
            last = bisect_left(ods, high - base) if header.next_offset > high else len(ods)
            if first >= last:
                continue
            count = last - first
            if ods[last - 1] - ods[first] == count - 1:  # no compaction gaps: the offsets are a run
                offsets.extend(range(base + ods[first], base + ods[last - 1] + 1))
            else:
                offsets.extend([base + od for od in ods[first:last]])
            deltas.extend(tds[first:last])
            firsts.extend(array("q", (header.first_timestamp,)) * count)
            types.extend(array("i", (header.timestamp_type,)) * count)
            keys.extend(ks[first:last])
            values.extend(vs[first:last])
            if include_headers:
                headers.extend(hs[first:last])
    count = len(offsets)
    millis = pc.add(_int64s(deltas), _int64s(firsts))
    columns = [
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        _int64s(offsets),
        pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC")),
        pa.Array.from_buffers(pa.int32(), count, [None, pa.py_buffer(types)]),
    ]
    if include_headers:
        columns.append(pa.array(headers, HEADERS_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
