"""Tests for rafka.protocol.records.batch: v2 batch layout, its CRC, stamping and decoding."""

from __future__ import annotations

import dataclasses
from typing import cast

import crc32c
import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rafka.protocol.errors import (
    CorruptMessageError,
    Errors,
    UnsupportedCompressionTypeError,
)
from rafka.protocol.records.batch import (
    ATTRIBUTES_OFFSET,
    COLUMNAR_MASK,
    CRC_OFFSET,
    CREATE_TIME,
    HEADER,
    HEADER_SIZE,
    LEADER_EPOCH_OFFSET,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    BatchHeader,
    decode_records,
    encode_batch,
    iter_batches,
    make_attributes,
    read_header,
    stamp,
    validate_records,
    verify_crc,
)
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.columns import Record, RecordColumns
from rafka.protocol.records.compression import Compression

PROPERTY_SETTINGS = settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _rows_batch(rows: list[list[object]], **fields: int) -> bytes:
    """encode_batch with header defaults derived from the rows."""
    fields.setdefault("first_timestamp", 1_000)
    fields.setdefault("max_timestamp", 1_000)
    if "last_offset_delta" not in fields:
        fields["last_offset_delta"] = cast(int, rows[-1][0]) if rows else -1
    return encode_batch(RecordColumns.from_rows(rows), **fields)


def _reframe(batch: bytes, **changes: int) -> bytes:
    """Rewrite header fields of ``batch`` and recompute the CRC: only those fields are wrong."""
    header = dataclasses.replace(read_header(batch), **changes)
    raw = bytearray(HEADER.pack(*dataclasses.astuple(header)) + batch[HEADER_SIZE:])
    if "crc" not in changes:
        crc = crc32c.crc32c(bytes(raw[ATTRIBUTES_OFFSET:]))
        raw[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc.to_bytes(4, "big")
    return bytes(raw)


def _raw_header(batch: bytes, **changes: int) -> bytes:
    """Overwrite header fields without validating them first (read_header would refuse)."""
    names = (f.name for f in dataclasses.fields(BatchHeader))
    values = dict(zip(names, HEADER.unpack_from(batch), strict=True))
    values.update(changes)
    return HEADER.pack(*values.values()) + batch[HEADER_SIZE:]


def _sample(compression: Compression = Compression.NONE) -> bytes:
    return build_batch(
        [(b"k1", b"v1", 1_000), (None, b"v2", 1_005), (b"k3", None, 1_010)], compression
    )


# ------------------------------------------------------------------ layout and header fields


def test_header_size_is_kafkas_v2_61_bytes():
    assert HEADER_SIZE == 61
    assert (LOG_OVERHEAD, LEADER_EPOCH_OFFSET, MAGIC_OFFSET, CRC_OFFSET, ATTRIBUTES_OFFSET) == (
        12,
        12,
        16,
        17,
        21,
    )


def test_encode_batch_round_trips_every_header_field():
    rows: list[list[object]] = [[0, 0, b"a", b"b", []], [4, -3, None, None, []]]
    batch = encode_batch(
        RecordColumns.from_rows(rows),
        first_timestamp=1_700_000_000_000,
        max_timestamp=1_700_000_000_000,
        last_offset_delta=4,
        base_offset=123_456_789_012,
        attributes=make_attributes(Compression.GZIP, LOG_APPEND_TIME, True, False),
        partition_leader_epoch=17,
        producer_id=987_654_321,
        producer_epoch=3,
        base_sequence=42,
    )
    header = read_header(batch)
    assert header == BatchHeader(
        base_offset=123_456_789_012,
        batch_length=len(batch) - LOG_OVERHEAD,
        partition_leader_epoch=17,
        magic=MAGIC,
        crc=header.crc,
        attributes=COLUMNAR_MASK | 0b11001,
        last_offset_delta=4,
        first_timestamp=1_700_000_000_000,
        max_timestamp=1_700_000_000_000,
        producer_id=987_654_321,
        producer_epoch=3,
        base_sequence=42,
        record_count=2,
    )
    assert header.size_in_bytes == len(batch)
    assert (header.last_offset, header.next_offset) == (123_456_789_016, 123_456_789_017)
    verify_crc(batch, 0, header)


def test_default_header_fields_mean_not_idempotent():
    header = read_header(_sample())
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    assert (header.base_offset, header.partition_leader_epoch) == (0, -1)


@pytest.mark.parametrize("timestamp_type", [CREATE_TIME, LOG_APPEND_TIME])
@pytest.mark.parametrize("transactional", [False, True])
@pytest.mark.parametrize("control", [False, True])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_attribute_bits_round_trip(timestamp_type, transactional, control, codec):
    attributes = make_attributes(codec, timestamp_type, transactional, control)
    assert attributes == int(codec) | timestamp_type << 3 | transactional << 4 | control << 5
    batch = _rows_batch([[0, 0, b"k", b"v", []]], attributes=attributes)
    header = read_header(batch)
    assert header.attributes == COLUMNAR_MASK | attributes
    assert header.is_columnar
    assert header.compression is codec
    assert header.timestamp_type == timestamp_type
    assert header.is_transactional is transactional
    assert header.is_control is control
    assert decode_records(batch) == [Record(0, 1_000, b"k", b"v", ())]


# ------------------------------------------------------------------ compression


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_records_round_trip_per_codec(codec):
    batch = _sample(codec)
    header = read_header(batch)
    assert header.compression is codec
    verify_crc(batch, 0, header)
    validate_records(batch, 0, header)
    assert decode_records(batch) == [
        Record(0, 1_000, b"k1", b"v1", ()),
        Record(1, 1_005, None, b"v2", ()),
        Record(2, 1_010, b"k3", None, ()),
    ]


def test_gzip_shrinks_repetitive_records_and_writes_a_gzip_container():
    records = [(b"key", b"x" * 1_000, 0)] * 20
    plain, gzipped = build_batch(records), build_batch(records, Compression.GZIP)
    assert len(gzipped) < len(plain) // 10
    assert gzipped[HEADER_SIZE : HEADER_SIZE + 2] == b"\x1f\x8b"  # gzip magic, as Kafka writes
    assert decode_records(gzipped) == decode_records(plain)


@pytest.mark.parametrize(
    ("codec", "module"),
    [
        (Compression.SNAPPY, "cramjam"),
        (Compression.LZ4, "lz4.frame"),
        (Compression.ZSTD, "zstandard"),
    ],
)
def test_optional_codecs_round_trip_or_name_their_extra(codec, module):
    records = [(b"k", b"v" * 100, 5), (None, None, 6)]
    extra = f"rafka\\[{codec.name.lower()}\\]"
    if _installed(module):
        batch = build_batch(records, codec)
        assert read_header(batch).compression is codec
        assert [(r.key, r.value, r.timestamp) for r in decode_records(batch)] == [
            (k, v, t) for k, v, t in records
        ]
        return
    with pytest.raises(UnsupportedCompressionTypeError, match=extra) as raised:
        build_batch(records, codec)
    assert raised.value.error is Errors.UNSUPPORTED_COMPRESSION_TYPE
    # A batch that arrives with the codec must be refused the same way, not called corrupt.
    foreign = _reframe(_sample(), attributes=int(codec))
    for check in (decode_records, validate_records):
        with pytest.raises(UnsupportedCompressionTypeError, match=extra):
            check(foreign, 0, read_header(foreign))


def test_compression_from_name_parses_kafka_names():
    assert [
        Compression.from_name(n) for n in (None, "none", " GZIP ", "lz4", "zstd", "snappy")
    ] == [
        Compression.NONE,
        Compression.NONE,
        Compression.GZIP,
        Compression.LZ4,
        Compression.ZSTD,
        Compression.SNAPPY,
    ]
    with pytest.raises(UnsupportedCompressionTypeError, match="brotli"):
        Compression.from_name("brotli")


# ------------------------------------------------------------------ record contents


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_headers_with_none_values_and_unicode_keys_round_trip(codec):
    headers = [
        ("trace-id", b"abc"),
        ("empty", b""),
        ("nothing", None),
        ("ключ", b"\x00\xff"),
        ("🔑", b"x"),
        ("dup", b"1"),
        ("dup", b"2"),
    ]
    batch = build_batch([(b"k", b"v", 7, headers), (b"k2", b"v2", 8)], codec)
    validate_records(batch, 0, read_header(batch))
    first, second = decode_records(batch)
    assert first.headers == tuple(headers)
    assert second.headers == ()


def test_null_key_and_null_value_differ_from_empty_bytes():
    batch = build_batch([(None, None, 0), (b"", b"", 0), (None, b"", 0), (b"", None, 0)])
    validate_records(batch, 0, read_header(batch))
    assert [(r.key, r.value) for r in decode_records(batch)] == [
        (None, None),
        (b"", b""),
        (None, b""),
        (b"", None),
    ]


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_large_values_round_trip(codec):
    big = bytes(range(256)) * 8_192  # 2 MiB, every byte value
    batch = build_batch([(b"big", big, 0), (b"bigger-key" * 10_000, big[::-1], 1)], codec)
    header = read_header(batch)
    verify_crc(batch, 0, header)
    records = decode_records(batch, 0, header)
    assert records[0].value == big
    assert records[1].key == b"bigger-key" * 10_000
    assert records[1].value == big[::-1]


def test_negative_timestamp_deltas_decode_to_earlier_timestamps():
    batch = build_batch(
        [(b"a", b"1", 10_000), (b"b", b"2", 4_000), (b"c", b"3", 12_000), (b"d", b"4", -50)]
    )
    header = read_header(batch)
    assert (header.first_timestamp, header.max_timestamp) == (10_000, 12_000)
    assert [r.timestamp for r in decode_records(batch)] == [10_000, 4_000, 12_000, -50]


# ------------------------------------------------------------------ stamp and CRC


def test_stamp_changes_base_offset_and_epoch_in_place_and_keeps_crc_valid():
    original = _sample(Compression.GZIP)
    buf = bytearray(b"\xaa" * 7 + original)  # stamped at a non-zero position
    stamp(buf, 7, 1_000_000, 42)
    header = read_header(buf, 7)
    assert (header.base_offset, header.partition_leader_epoch) == (1_000_000, 42)
    assert buf[:7] == b"\xaa" * 7
    assert buf[7 + CRC_OFFSET :] == original[CRC_OFFSET:]
    verify_crc(buf, 7, header)
    assert [r.offset for r in decode_records(buf, 7)] == [1_000_000, 1_000_001, 1_000_002]


def test_stamp_works_through_a_memoryview():
    buf = bytearray(_sample())
    stamp(memoryview(buf), 0, 2**62, 2**31 - 1)
    header = read_header(buf)
    assert (header.base_offset, header.partition_leader_epoch) == (2**62, 2**31 - 1)
    verify_crc(buf, 0, header)


def test_verify_crc_detects_a_flipped_bit_anywhere_from_the_crc_field_on():
    batch = _sample(Compression.GZIP)
    header = read_header(batch)
    for index in range(CRC_OFFSET, len(batch)):
        corrupted = bytearray(batch)
        corrupted[index] ^= 1 << (index % 8)
        # A flip in the stored CRC shows in the header read back; a flip
        # after it (where a field may now be nonsense) is checked against
        # the intact header, whose length still frames the batch.
        checked_header = read_header(corrupted) if index < ATTRIBUTES_OFFSET else header
        with pytest.raises(CorruptMessageError, match="CRC"):
            verify_crc(corrupted, 0, checked_header)


def test_verify_crc_ignores_flips_in_base_offset_and_leader_epoch():
    batch = _sample()
    for index in list(range(0, 8)) + list(range(LEADER_EPOCH_OFFSET, MAGIC_OFFSET)):
        corrupted = bytearray(batch)
        corrupted[index] ^= 0x80 >> (index % 8)
        header = read_header(corrupted)
        verify_crc(corrupted, 0, header)
        assert header.crc == read_header(batch).crc


def test_verify_crc_rejects_a_truncated_batch():
    batch = _sample()
    header = read_header(batch)
    with pytest.raises(CorruptMessageError, match="truncated"):
        verify_crc(batch[:-1], 0, header)


# ------------------------------------------------------------------ read_header


@pytest.mark.parametrize("magic", [0, 1, 3, -1, 127])
def test_read_header_rejects_wrong_magic(magic):
    with pytest.raises(CorruptMessageError, match=f"magic {magic}"):
        read_header(_raw_header(_sample(), magic=magic))


@pytest.mark.parametrize("length", [0, 1, 12, 60])
def test_read_header_rejects_truncated_headers(length):
    with pytest.raises(CorruptMessageError, match="truncated"):
        read_header(_sample()[:length])


def test_read_header_at_a_position_counts_from_there():
    batch = _sample()
    assert read_header(b"\x00" * 5 + batch, 5) == read_header(batch)
    with pytest.raises(CorruptMessageError, match="truncated"):
        read_header(batch, len(batch) - HEADER_SIZE + 1)


@pytest.mark.parametrize(
    "changes",
    [
        {"record_count": -1},
        {"record_count": -(2**31)},
        {"record_count": 4, "last_offset_delta": 2},
        {"record_count": 3, "last_offset_delta": -1},
        {"record_count": 1, "last_offset_delta": -(2**31)},
        {"record_count": 0, "last_offset_delta": -2},
        {"batch_length": HEADER_SIZE - LOG_OVERHEAD - 1},
        {"batch_length": -1},
    ],
)
def test_read_header_rejects_nonsense_counts_and_lengths(changes):
    with pytest.raises(CorruptMessageError, match=r"record_count|length"):
        read_header(_raw_header(_sample(), **changes))


def test_read_header_accepts_offset_gaps_left_by_compaction():
    header = read_header(_raw_header(_sample(), record_count=3, last_offset_delta=1_000))
    assert header.next_offset == 1_001


# ------------------------------------------------------------------ iter_batches


def _log(*base_offsets: int) -> bytes:
    parts = []
    for i, base in enumerate(base_offsets):
        buf = bytearray(build_batch([(b"k", b"v" * i, i)] * (i + 1)))
        stamp(buf, 0, base, 1)
        parts.append(bytes(buf))
    return b"".join(parts)


def test_iter_batches_walks_concatenated_batches():
    log = _log(0, 1, 3)
    found = list(iter_batches(log))
    assert [h.base_offset for _, h in found] == [0, 1, 3]
    assert [h.record_count for _, h in found] == [1, 2, 3]
    positions = [p for p, _ in found]
    assert positions[0] == 0
    assert positions[1:] == [p + h.size_in_bytes for p, h in found[:-1]]
    assert found[-1][0] + found[-1][1].size_in_bytes == len(log)
    for position, header in found:
        verify_crc(log, position, header)


@pytest.mark.parametrize("cut", [1, 10, HEADER_SIZE - 1, HEADER_SIZE, HEADER_SIZE + 5])
def test_iter_batches_stops_quietly_at_a_trailing_partial_batch(cut):
    log = _log(0, 1, 3)
    last_size = read_header(log, len(_log(0, 1))).size_in_bytes
    partial = log[: len(log) - last_size + cut]
    assert [h.base_offset for _, h in iter_batches(partial)] == [0, 1]


def test_iter_batches_honours_start_and_end():
    log = _log(0, 1, 3)
    second = len(_log(0))
    assert [h.base_offset for _, h in iter_batches(log, second)] == [1, 3]
    assert [h.base_offset for _, h in iter_batches(log, 0, len(_log(0, 1)))] == [0, 1]
    assert list(iter_batches(log, 0, second - 1)) == []


def test_iter_batches_with_end_past_the_buffer_yields_only_whole_batches():
    log = _log(0, 1)
    assert [h.base_offset for _, h in iter_batches(log[:-3], 0, len(log) + 100)] == [0]
    assert [h.base_offset for _, h in iter_batches(log, 0, len(log) + 100)] == [0, 1]


def test_iter_batches_raises_on_a_malformed_header_mid_log():
    first = _log(0)
    log = first + _raw_header(_log(1), magic=1)
    with pytest.raises(CorruptMessageError, match=f"byte {len(first)}"):
        list(iter_batches(log))


def test_iter_batches_of_empty_buffer_yields_nothing():
    assert list(iter_batches(b"")) == []


# -------------------------------------------------------------- validate_records and decode_records


def test_validate_records_accepts_builder_output_and_compacted_gaps():
    for codec in (Compression.NONE, Compression.GZIP):
        batch = _sample(codec)
        validate_records(batch, 0, read_header(batch))
    gapped = _rows_batch(
        [[0, 0, b"a", b"1", []], [3, 1, b"b", None, []], [9, 2, b"c", b"3", [["h", None]]]]
    )
    header = read_header(gapped)
    validate_records(gapped, 0, header)
    assert [r.offset for r in decode_records(gapped, 0, header)] == [0, 3, 9]


def _section_batch(section: object, record_count: int, last_offset_delta: int) -> bytes:
    """A batch whose records section is ``section`` packed as is, under a header with a good CRC."""
    body = msgpack.packb(section)
    return _reframe(
        _sample()[:HEADER_SIZE] + body,
        batch_length=HEADER_SIZE - LOG_OVERHEAD + len(body),
        record_count=record_count,
        last_offset_delta=last_offset_delta,
    )


@pytest.mark.parametrize(
    ("section", "match"),
    [
        ([None, [0], ["str-key"], [b"v"], None], "not bytes"),
        ([None, [0], None, [12], None], "not bytes"),
        ([None, [0], None, [["list"]], None], "not bytes"),
        ([None, [0], None, [b"v"]], "five-column"),
        ([None, [0], None, [b"v"], None, [b"extra"]], "five-column"),
        ([7], "five-column"),
        ({"offsets": None}, "five-column"),
        ([None, [0, 0], None, [b"v"], None], "timestamp column holds 2"),
        ([None, [0], [b"a", b"b"], [b"v"], None], "key column holds 2"),
        ([None, [0], None, b"v", None], "value column holds no array"),
        ([5, [0], None, [b"v"], None], "offset column holds no array"),
        ([None, [0], None, [b"v"], [[], []]], "header column holds 2"),
        ([[-1], [0], None, [b"v"], None], "deltas"),
        ([[True], [0], None, [b"v"], None], "deltas"),
        ([None, [1.5], None, [b"v"], None], "deltas"),
        ([None, [None], None, [b"v"], None], "deltas"),
        ([None, [0], None, [b"v"], [[["h"]]]], "headers"),
        ([None, [0], None, [b"v"], [[["h", b"1", b"2"]]]], "headers"),
        ([None, [0], None, [b"v"], [[[b"bytes-key", b"1"]]]], "headers"),
        ([None, [0], None, [b"v"], [[["h", "str-value"]]]], "headers"),
        ([None, [0], None, [b"v"], [[["h", 5]]]], "headers"),
        ([None, [0], None, [b"v"], [None]], "headers"),
        ([None, [0], None, [b"v"], [{"h": b"1"}]], "headers"),
        ([None, [0], None, [b"v"], [["h"]]], "headers"),
    ],
)
def test_validate_records_rejects_malformed_columns(section, match):
    batch = _section_batch(section, record_count=1, last_offset_delta=0)
    with pytest.raises(CorruptMessageError, match=match):
        validate_records(batch, 0, read_header(batch))


@pytest.mark.parametrize("offset_deltas", [[0, 2, 1], [0, 0, 2], [1, 1, 2]])
def test_validate_records_rejects_offset_deltas_that_do_not_increase(offset_deltas):
    batch = _section_batch(
        [offset_deltas, [0, 0, 0], None, [b"1", b"2", b"3"], None],
        record_count=3,
        last_offset_delta=2,
    )
    with pytest.raises(CorruptMessageError, match="increasing"):
        validate_records(batch, 0, read_header(batch))


def test_dense_offsets_null_keys_and_empty_headers_are_written_as_nil():
    batch = build_batch([(None, b"a", 1), (None, b"b", 2)])
    header = read_header(batch)
    assert msgpack.unpackb(batch[HEADER_SIZE:]) == [None, [0, 1], None, [b"a", b"b"], None]
    columns = validate_records(batch, 0, header)
    assert columns == RecordColumns(range(2), (0, 1), (None, None), (b"a", b"b"), ((), ()))


@pytest.mark.parametrize(("deltas", "last"), [([0, 1], 2), ([0, 1, 2], 5), ([0, 3], 2)])
def test_validate_records_rejects_last_delta_mismatch(deltas, last):
    batch = _rows_batch([[d, 0, b"k", b"v", []] for d in deltas], last_offset_delta=last)
    with pytest.raises(CorruptMessageError, match="delta"):
        validate_records(batch, 0, read_header(batch))


@pytest.mark.parametrize("record_count", [0, 2, 5])
def test_decode_rejects_record_count_that_differs_from_the_records(record_count):
    batch = _reframe(
        _sample(), record_count=record_count, last_offset_delta=max(record_count - 1, 2)
    )
    verify_crc(batch, 0, read_header(batch))
    for check in (decode_records, validate_records):
        with pytest.raises(CorruptMessageError, match="declares"):
            check(batch, 0, read_header(batch))


@pytest.mark.parametrize(
    "body", [b"", b"\xc1", msgpack.packb({"not": "an array"}), msgpack.packb([[0]]) + b"\x00"]
)
def test_decode_rejects_undecodable_record_sections(body):
    length = HEADER_SIZE - LOG_OVERHEAD + len(body)
    batch = _reframe(
        _sample()[:HEADER_SIZE] + body, batch_length=length, record_count=1, last_offset_delta=0
    )
    with pytest.raises(CorruptMessageError):
        decode_records(batch)


def test_decode_records_gives_absolute_offsets_and_timestamps():
    batch = bytearray(
        _rows_batch(
            [
                [0, 0, b"a", b"1", []],
                [2, 250, b"b", b"2", []],
                [5, -100, None, b"3", [["h", b"x"]]],
            ],
            first_timestamp=1_700_000_000_000,
            max_timestamp=1_700_000_000_250,
        )
    )
    stamp(batch, 0, 5_000, 9)
    assert decode_records(batch) == [
        Record(5_000, 1_700_000_000_000, b"a", b"1", ()),
        Record(5_002, 1_700_000_000_250, b"b", b"2", ()),
        Record(5_005, 1_699_999_999_900, None, b"3", (("h", b"x"),)),
    ]


# ------------------------------------------------------------------ property-based round trip

TIMESTAMPS = st.integers(min_value=-(2**62), max_value=2**62)
OPTIONAL_BYTES = st.none() | st.binary(max_size=64)
HEADERS = st.lists(st.tuples(st.text(max_size=12), OPTIONAL_BYTES), max_size=4)
RECORDS = st.lists(
    st.tuples(OPTIONAL_BYTES, OPTIONAL_BYTES, TIMESTAMPS, HEADERS), min_size=1, max_size=30
)


@PROPERTY_SETTINGS
@given(
    records=RECORDS,
    codec=st.sampled_from([Compression.NONE, Compression.GZIP]),
    base_offset=st.integers(0, 2**62),
    epoch=st.integers(0, 2**31 - 1),
)
def test_arbitrary_records_round_trip(records, codec, base_offset, epoch):
    batch = bytearray(build_batch(records, codec))
    stamp(batch, 0, base_offset, epoch)
    header = read_header(batch)
    assert header.record_count == len(records)
    assert header.first_timestamp == records[0][2]
    assert header.max_timestamp == max(r[2] for r in records)
    assert header.compression is codec
    assert header.size_in_bytes == len(batch)
    verify_crc(batch, 0, header)
    validate_records(batch, 0, header)
    assert decode_records(batch, 0, header) == [
        Record(base_offset + i, ts, key, value, tuple(headers))
        for i, (key, value, ts, headers) in enumerate(records)
    ]
    assert [(p, h) for p, h in iter_batches(bytes(batch) * 2)] == [
        (0, header),
        (len(batch), header),
    ]
