"""Tests for rafka.protocol.records.builder: the producer's per-partition RecordBatchBuilder."""

from __future__ import annotations

import sys

import pytest

from rafka.protocol.errors import UnsupportedCompressionTypeError
from rafka.protocol.records.batch import (
    HEADER_SIZE,
    decode_records,
    read_header,
    validate_records,
    verify_crc,
)
from rafka.protocol.records.builder import (
    RECORD_OVERHEAD,
    RecordBatchBuilder,
    build_batch,
)
from rafka.protocol.records.columns import Record
from rafka.protocol.records.compression import Compression


def test_append_returns_consecutive_offset_deltas():
    builder = RecordBatchBuilder()
    assert [builder.append(100 + i, b"k", b"v") for i in range(5)] == [0, 1, 2, 3, 4]
    assert builder.record_count == 5


def test_build_frames_relative_offsets_and_timestamps():
    builder = RecordBatchBuilder()
    builder.append(500, b"a", b"1")
    builder.append(900, None, b"2", [("h", b"x")])
    builder.append(100, b"c", None)
    batch = builder.build()
    header = read_header(batch)
    assert (header.base_offset, header.partition_leader_epoch) == (0, -1)
    assert (header.record_count, header.last_offset_delta) == (3, 2)
    assert (header.first_timestamp, header.max_timestamp) == (500, 900)
    verify_crc(batch, 0, header)
    validate_records(batch, 0, header)
    assert decode_records(batch) == [
        Record(0, 500, b"a", b"1", ()),
        Record(1, 900, None, b"2", (("h", b"x"),)),
        Record(2, 100, b"c", None, ()),
    ]


def test_build_carries_producer_fields_compression_and_transactional_bit():
    builder = RecordBatchBuilder(
        compression=Compression.GZIP,
        producer_id=77,
        producer_epoch=4,
        base_sequence=1_000,
        is_transactional=True,
    )
    builder.append(1, b"k", b"v")
    header = read_header(builder.build())
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 4, 1_000)
    assert header.compression is Compression.GZIP
    assert header.is_transactional is True
    assert header.is_control is False
    assert header.timestamp_type == 0


def test_build_of_an_empty_builder_raises_value_error():
    with pytest.raises(ValueError, match="empty"):
        RecordBatchBuilder().build()


def test_build_with_a_codec_whose_extra_is_missing_raises_naming_it(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setitem(sys.modules, "cramjam", None)  # as if rafka[snappy] were not installed
    builder = RecordBatchBuilder(compression=Compression.SNAPPY)
    builder.append(0, b"k", b"v")
    with pytest.raises(UnsupportedCompressionTypeError, match=r"rafka\[snappy\]"):
        builder.build()


def test_build_twice_gives_the_same_bytes():
    builder = RecordBatchBuilder()
    builder.append(3, b"k", b"v")
    assert builder.build() == builder.build()


# ------------------------------------------------------------------ sizes


def test_estimated_size_starts_at_the_header_and_grows_with_each_record():
    builder = RecordBatchBuilder()
    assert builder.estimated_size == HEADER_SIZE
    builder.append(0, None, None)
    assert builder.estimated_size == HEADER_SIZE + RECORD_OVERHEAD
    builder.append(0, b"key", b"value!")
    assert builder.estimated_size == HEADER_SIZE + 2 * RECORD_OVERHEAD + 9
    before = builder.estimated_size
    builder.append(0, b"", b"", [("hdr", b"12345"), ("n", None)])
    assert builder.estimated_size > before + RECORD_OVERHEAD + 3 + 5 + 1


@pytest.mark.parametrize("value_size", [0, 10, 1_000, 50_000])
def test_estimated_size_is_not_below_the_uncompressed_batch(value_size):
    builder = RecordBatchBuilder()
    for i in range(10):
        builder.append(i, b"key-%d" % i, b"v" * value_size, [("h", b"x")])
    assert builder.estimated_size >= len(builder.build())


def test_is_full_once_the_estimate_reaches_batch_size():
    builder = RecordBatchBuilder(batch_size=HEADER_SIZE + 2 * (RECORD_OVERHEAD + 10))
    assert not builder.is_full()
    builder.append(0, b"k" * 5, b"v" * 5)
    assert not builder.is_full()
    builder.append(0, b"k" * 5, b"v" * 5)
    assert builder.estimated_size == builder.batch_size
    assert builder.is_full()


def test_empty_builder_takes_even_an_oversized_record():
    builder = RecordBatchBuilder(batch_size=100)
    assert builder.try_append(0, b"k", b"v" * 10_000) == 0
    assert builder.is_full()
    assert builder.try_append(0, None, None) == -1
    assert builder.record_count == 1


def test_try_append_compares_the_next_record_with_batch_size():
    size = HEADER_SIZE + 2 * RECORD_OVERHEAD + 20
    exact = RecordBatchBuilder(batch_size=size)
    exact.append(0, b"0123456789", None)
    assert exact.try_append(0, b"01234", b"56789") == 1  # lands exactly on batch_size
    over = RecordBatchBuilder(batch_size=size)
    over.append(0, b"0123456789", None)
    assert over.try_append(0, b"01234", b"567890") == -1
    assert over.try_append(0, None, b"x" * 11) == -1
    assert over.record_count == 1 and over.estimated_size == HEADER_SIZE + RECORD_OVERHEAD + 10


def test_try_append_room_scales_with_batch_size():
    small, large = RecordBatchBuilder(batch_size=200), RecordBatchBuilder(batch_size=20_000)
    for builder in (small, large):
        builder.append(0, b"k", b"v")
    assert small.try_append(0, b"k", b"v" * 1_000) == -1
    assert large.try_append(0, b"k", b"v" * 1_000) == 1


# ------------------------------------------------------------------ type checks


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("str-key", b"v", "key must be bytes"),
        (bytearray(b"k"), b"v", "key must be bytes"),
        (memoryview(b"k"), b"v", "key must be bytes"),
        (1, b"v", "key must be bytes"),
        (b"k", "str-value", "value must be bytes"),
        (b"k", bytearray(b"v"), "value must be bytes"),
        (b"k", 3.5, "value must be bytes"),
    ],
)
def test_append_rejects_keys_and_values_that_are_not_bytes(key, value, match):
    builder = RecordBatchBuilder()
    with pytest.raises(TypeError, match=match):
        builder.append(0, key, value)
    assert builder.record_count == 0
    assert builder.estimated_size == HEADER_SIZE


@pytest.mark.parametrize(
    "headers",
    [
        [("h",)],
        [("h", b"1", b"2")],
        [(b"bytes-key", b"1")],
        [("h", "str-value")],
        [("h", 5)],
        [("h", bytearray(b"1"))],
        [(None, b"1")],
        [("ok", b"1"), ("bad", 1)],
    ],
)
def test_append_rejects_malformed_headers(headers):
    builder = RecordBatchBuilder()
    with pytest.raises(TypeError, match="header"):
        builder.append(0, b"k", b"v", headers)
    assert builder.record_count == 0


def test_rejected_record_leaves_no_trace_in_the_batch():
    builder = RecordBatchBuilder()
    builder.append(100, b"k", b"v")
    size = builder.estimated_size
    with pytest.raises(TypeError):
        builder.append(999, b"k", b"v", [("h", 1)])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        builder.append(5_000, "k", b"v")  # type: ignore[arg-type]
    assert (builder.record_count, builder.estimated_size) == (1, size)
    header = read_header(builder.build())
    assert (header.first_timestamp, header.max_timestamp, header.record_count) == (100, 100, 1)


def test_rejected_first_record_does_not_set_the_first_timestamp():
    builder = RecordBatchBuilder()
    with pytest.raises(TypeError):
        builder.append(999, b"k", b"v", [("h", 1)])  # type: ignore[list-item]
    builder.append(100, b"k", b"v")
    builder.append(50, b"k", b"v")
    header = read_header(builder.build())
    assert (header.first_timestamp, header.max_timestamp) == (100, 100)


# ------------------------------------------------------------------ build_batch


def test_build_batch_accepts_three_and_four_tuples():
    batch = build_batch([(b"k", b"v", 10), (None, None, 20, [("h", None)]), (b"", b"", 5, ())])
    assert decode_records(batch) == [
        Record(0, 10, b"k", b"v", ()),
        Record(1, 20, None, None, (("h", None),)),
        Record(2, 5, b"", b"", ()),
    ]


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_build_batch_applies_compression(codec):
    batch = build_batch(((b"k", b"v" * 100, t) for t in range(3)), codec)
    header = read_header(batch)
    assert header.compression is codec
    assert [r.value for r in decode_records(batch)] == [b"v" * 100] * 3


def test_build_batch_never_splits_however_large():
    batch = build_batch([(b"k", b"v" * 100_000, t) for t in range(50)])
    assert read_header(batch).record_count == 50


def test_build_batch_of_nothing_raises_value_error():
    with pytest.raises(ValueError, match="empty"):
        build_batch([])


def test_build_batch_propagates_type_errors():
    with pytest.raises(TypeError, match="value must be bytes"):
        build_batch([(b"k", "v", 0)])  # type: ignore[list-item]


# ------------------------------------------------------------------ extend: whole columns at once


def test_extend_builds_the_same_batch_as_one_append_per_record():
    keys = [b"a", None, b"c"]
    values = [b"1", b"22", None]
    timestamps = [700, 650, 900]
    one_by_one = RecordBatchBuilder()
    for key, value, ts in zip(keys, values, timestamps, strict=True):
        one_by_one.append(ts, key, value)
    columns = RecordBatchBuilder()
    assert columns.extend(values, keys, timestamps) == 0
    assert columns.build() == one_by_one.build()
    assert columns.estimated_size == one_by_one.estimated_size


def test_extend_after_append_continues_offsets_and_keeps_headers():
    builder = RecordBatchBuilder()
    builder.append(1_000, b"k", b"first", [("h", b"x")])
    assert builder.extend([b"second", b"third"], timestamp_ms=1_005) == 1
    builder.append(990, None, b"fourth")
    batch = builder.build()
    header = read_header(batch)
    assert (header.first_timestamp, header.max_timestamp, header.record_count) == (1_000, 1_005, 4)
    assert decode_records(batch) == [
        Record(0, 1_000, b"k", b"first", (("h", b"x"),)),
        Record(1, 1_005, None, b"second", ()),
        Record(2, 1_005, None, b"third", ()),
        Record(3, 990, None, b"fourth", ()),
    ]


@pytest.mark.parametrize(
    ("values", "keys", "timestamps", "error", "match"),
    [
        ([b"ok", "text"], None, 0, TypeError, "value must be bytes or None, got str"),
        ([b"ok"], [7], 0, TypeError, "key must be bytes or None, got int"),
        ([b"ok", b"ok"], [b"k"], 0, ValueError, "1 keys for 2 values"),
        ([b"ok"], None, [1, 2], ValueError, "2 timestamps for 1 values"),
        ([b"ok"], None, [1.5], TypeError, "timestamps must be int"),
    ],
)
def test_extend_rejects_bad_columns_and_adds_nothing(values, keys, timestamps, error, match):
    builder = RecordBatchBuilder()
    builder.append(10, None, b"kept")
    before = (builder.record_count, builder.estimated_size, builder.build())
    with pytest.raises(error, match=match):
        builder.extend(values, keys, timestamps)
    assert (builder.record_count, builder.estimated_size, builder.build()) == before


def test_extend_with_no_records_changes_nothing():
    builder = RecordBatchBuilder()
    assert builder.extend([]) == 0
    assert builder.record_count == 0 and builder.estimated_size == HEADER_SIZE
