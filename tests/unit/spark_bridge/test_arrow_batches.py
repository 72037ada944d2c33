"""Tests for rafka.protocol.records.arrow_batches and the schemas declared to Spark (no JVM)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from rafka.protocol.errors import InvalidConfigError
from rafka.protocol.records.arrow_batches import arrow_schema, to_arrow
from rafka.protocol.records.batch import encode_batch, iter_batches, make_attributes, stamp
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.columns import RecordColumns
from rafka.spark_bridge.options import parse_sink_options
from rafka.spark_bridge.sink import validate_columns
from rafka.spark_bridge.source import kafka_schema

T0 = 1_700_000_000_000


def log_of(*batches: bytes, start: int = 0) -> bytes:
    """Concatenate batches as a leader would store them: base offsets stamped one after another."""
    out = bytearray()
    offset = start
    for raw in batches:
        position = len(out)
        out += raw
        stamp(out, position, offset, 0)
        offset = next(iter_batches(out, position))[1].next_offset
    return bytes(out)


def rows(data: bytes, low: int, high: int, headers: bool = False) -> list[dict]:
    batch = to_arrow(
        data, list(iter_batches(data)), low, high, "t", 3, arrow_schema(headers), headers
    )
    return batch.to_pylist()


@pytest.mark.parametrize("headers", [False, True])
def test_arrow_schema_is_exactly_what_pyspark_expects(headers: bool) -> None:
    assert to_arrow_schema(kafka_schema(headers), timezone="UTC").equals(arrow_schema(headers))


def test_columns_carry_every_field_of_every_record() -> None:
    data = log_of(
        build_batch([(b"k0", b"v0", T0, [("h", b"x")]), (None, b"v1", T0 + 5)]),
        build_batch([(b"k2", None, T0 + 9, [("a", None), ("b", b"y")])]),
        start=10,
    )
    got = rows(data, 10, 13, headers=True)
    assert [r["offset"] for r in got] == [10, 11, 12]
    assert [(r["key"], r["value"]) for r in got] == [(b"k0", b"v0"), (None, b"v1"), (b"k2", None)]
    assert [r["headers"] for r in got] == [
        [{"key": "h", "value": b"x"}],
        [],
        [{"key": "a", "value": None}, {"key": "b", "value": b"y"}],
    ]
    assert {(r["topic"], r["partition"], r["timestampType"]) for r in got} == {("t", 3, 0)}
    assert [r["timestamp"] for r in got] == [
        datetime.fromtimestamp((T0 + d) / 1000, timezone.utc) for d in (0, 5, 9)
    ]


def test_only_offsets_in_the_range_are_kept() -> None:
    data = log_of(
        *(
            build_batch([(None, str(i).encode(), T0) for i in range(j, j + 5)])
            for j in range(0, 20, 5)
        )
    )
    assert [r["offset"] for r in rows(data, 3, 12)] == list(range(3, 12))
    assert [r["value"] for r in rows(data, 7, 8)] == [b"7"]
    assert rows(data, 20, 25) == []


def test_compaction_gaps_keep_their_offsets() -> None:
    # A compacted batch: records 1 and 3 were removed, the deltas of the rest stay as they were.
    raw = encode_batch(
        RecordColumns.from_rows(
            [[0, 0, b"a", b"0", []], [2, 1, b"c", b"2", []], [4, 2, b"e", b"4", []]]
        ),
        first_timestamp=T0,
        max_timestamp=T0 + 2,
        last_offset_delta=4,
    )
    data = log_of(raw, start=100)
    assert [(r["offset"], r["value"]) for r in rows(data, 101, 105)] == [(102, b"2"), (104, b"4")]


def test_control_batches_are_skipped() -> None:
    control = encode_batch(
        RecordColumns.from_rows([[0, 0, b"\x00\x00\x00\x00", b"", []]]),
        first_timestamp=T0,
        max_timestamp=T0,
        last_offset_delta=0,
        attributes=make_attributes(is_transactional=True, is_control=True),
    )
    data = log_of(build_batch([(None, b"a", T0)]), control, build_batch([(None, b"b", T0)]))
    assert [(r["offset"], r["value"]) for r in rows(data, 0, 3)] == [(0, b"a"), (2, b"b")]


SINK = parse_sink_options({"topic": "out"})
HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def test_sink_accepts_sparks_kafka_columns() -> None:
    validate_columns(
        StructType(
            [
                StructField("key", StringType()),
                StructField("value", BinaryType()),
                StructField("headers", HEADERS),
                StructField("partition", IntegerType()),
            ]
        ),
        SINK,
    )


@pytest.mark.parametrize(
    "fields, sink, named",
    [
        ([StructField("key", StringType())], SINK, "'value'"),
        ([StructField("value", IntegerType())], SINK, "'value'"),
        ([StructField("value", StringType()), StructField("key", IntegerType())], SINK, "'key'"),
        ([StructField("value", StringType())], parse_sink_options({}), "'topic'"),
        (
            [StructField("value", StringType()), StructField("topic", BinaryType())],
            parse_sink_options({}),
            "'topic'",
        ),
        (
            [StructField("value", StringType()), StructField("partition", StringType())],
            SINK,
            "'partition'",
        ),
        (
            [StructField("value", StringType()), StructField("headers", ArrayType(StringType()))],
            SINK,
            "'headers'",
        ),
    ],
)
def test_sink_refuses_bad_columns_naming_them(fields: list[StructField], sink, named: str) -> None:
    with pytest.raises(InvalidConfigError, match=named):
        validate_columns(StructType(fields), sink)
