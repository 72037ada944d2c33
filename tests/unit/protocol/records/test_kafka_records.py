"""Kafka's v2 batches: golden bytes, round trips with columnar batches, pass-through, validation."""

from __future__ import annotations

import dataclasses
import struct
import sys
import zlib
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rafka.protocol.errors import (
    CorruptMessageError,
    Errors,
    RafkaError,
    UnsupportedCompressionTypeError,
    UnsupportedVersionError,
)
from rafka.protocol.records.batch import (
    ATTRIBUTES_OFFSET,
    COLUMNAR_MASK,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    BatchHeader,
    decode_records,
    encode_batch,
    make_attributes,
    read_header,
    verify_crc,
)
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.columns import Record, RecordColumns
from rafka.protocol.records.compression import Compression
from rafka.protocol.records.control import ControlRecordType, build_marker, parse_marker
from rafka.protocol.records.kafka_records import (
    as_kafka_batches,
    check_client_batch,
    decode_kafka_records,
    encode_kafka_batch,
    iter_kafka_batches,
    native_to_kafka,
    stamp_kafka_batch,
    validate_kafka_batch,
    validate_kafka_batches,
)
from rafka.protocol.records.kafka_rows import (
    _checked_rows,
    _well_formed_rows,
    decode_record_section,
    encode_record_section,
    encode_varint,
    read_varint,
)

PROPERTY = settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TIMEOUT = pytest.mark.timeout(120)

# Worked out by hand from Kafka's documented RecordBatch v2 layout: base offset 0, leader epoch -1,
# no producer, first timestamp 1000, max timestamp 1005, two records:
#   offset 0, time 1000, key null, value b"hi", no headers
#   offset 1, time 1005, key b"k", value b"v", header ("h1", b"x")
GOLDEN_RECORDS = bytes.fromhex(
    "10"  # length 8 (zigzag 16)
    "00"  # attributes
    "00"  # timestamp delta 0
    "00"  # offset delta 0
    "01"  # key length -1: null
    "04"  # value length 2
    "6869"  # b"hi"
    "00"  # 0 headers
    "1a"  # length 13 (zigzag 26)
    "00"  # attributes
    "0a"  # timestamp delta 5
    "02"  # offset delta 1
    "02"  # key length 1
    "6b"  # b"k"
    "02"  # value length 1
    "76"  # b"v"
    "02"  # 1 header
    "04"  # header key length 2
    "6831"  # "h1"
    "02"  # header value length 1
    "78"  # b"x"
)
GOLDEN_TAIL = (
    bytes.fromhex(
        "0000"  # attributes
        "00000001"  # last offset delta 1
        "00000000000003e8"  # first timestamp 1000
        "00000000000003ed"  # max timestamp 1005
        "ffffffffffffffff"  # producer id -1
        "ffff"  # producer epoch -1
        "ffffffff"  # base sequence -1
        "00000002"  # record count 2
    )
    + GOLDEN_RECORDS
)
GOLDEN = (
    bytes.fromhex(
        "0000000000000000"  # base offset 0
        "00000048"  # batch length 72: 4 epoch + 1 magic + 4 crc + 63
        "ffffffff"  # partition leader epoch -1
        "02"  # magic 2
        "e026698f"  # CRC-32C of GOLDEN_TAIL
    )
    + GOLDEN_TAIL
)
GOLDEN_COLUMNS = RecordColumns(range(2), (0, 5), (None, b"k"), (b"hi", b"v"), ((), (("h1", b"x"),)))
GOLDEN_HEADER = BatchHeader(
    base_offset=0,
    batch_length=0,
    partition_leader_epoch=-1,
    magic=2,
    crc=0,
    attributes=0,
    last_offset_delta=1,
    first_timestamp=1000,
    max_timestamp=1005,
    producer_id=-1,
    producer_epoch=-1,
    base_sequence=-1,
    record_count=0,
)


def frame(records: bytes, record_count: int, last_offset_delta: int, attributes: int = 0) -> bytes:
    """A batch around a hand-made records section, with a correct CRC (so records are reached)."""
    head = bytearray(
        HEADER.pack(
            0,
            HEADER_SIZE - LOG_OVERHEAD + len(records),
            -1,
            2,
            0,
            attributes,
            last_offset_delta,
            1000,
            1000,
            -1,
            -1,
            -1,
            record_count,
        )
    )
    batch = head + records
    struct.pack_into(">I", batch, CRC_OFFSET, crc32c.crc32c(bytes(batch[ATTRIBUTES_OFFSET:])))
    return bytes(batch)


def error_of(call: Any, *args: Any) -> RafkaError:
    """The rafka error ``call(*args)`` raises (the test fails if it raises none)."""
    with pytest.raises(RafkaError) as info:
        call(*args)
    return info.value


# --- varints ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (63, "7e"),
        (64, "8001"),
        (-65, "8101"),
        (300, "d804"),
        (2**63 - 1, "feffffffffffffffff01"),
        (-(2**63), "ffffffffffffffffff01"),
    ],
)
def test_varints_use_kafkas_zigzag_encoding(value: int, encoded: str) -> None:
    assert encode_varint(value).hex() == encoded
    assert read_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


@given(st.integers(-(2**63), 2**63 - 1))
@PROPERTY
def test_every_int64_survives_a_varint_round_trip(value: int) -> None:
    encoded = encode_varint(value)
    assert read_varint(encoded + b"\x00", 0) == (value, len(encoded))


def test_a_varint_cut_short_or_overlong_is_a_corrupt_message() -> None:
    assert error_of(read_varint, b"\x80\x80", 0).error is Errors.CORRUPT_MESSAGE
    assert error_of(read_varint, b"\x80" * 11, 0).error is Errors.CORRUPT_MESSAGE
    # Eleven bytes, or ten whose last sets bits past the 64th, do not fit an int64 varlong.
    assert error_of(read_varint, b"\xff" * 9 + b"\x03", 0).error is Errors.CORRUPT_MESSAGE
    # Five bytes hold an int32 varint only if the last adds no more than 4 bits.
    assert read_varint(b"\xfe\xff\xff\xff\x0f", 0, None, 32) == (2**31 - 1, 5)
    assert error_of(read_varint, b"\xfe\xff\xff\xff\x1f", 0, None, 32).error is (
        Errors.CORRUPT_MESSAGE
    )


# --- golden bytes -------------------------------------------------------------------------------


def test_golden_crc_is_the_crc32c_of_attributes_to_the_end() -> None:
    assert crc32c.crc32c(GOLDEN_TAIL) == 0xE026698F
    assert len(GOLDEN) == LOG_OVERHEAD + 0x48


def test_encoding_two_records_gives_the_golden_bytes() -> None:
    assert encode_record_section(GOLDEN_COLUMNS) == GOLDEN_RECORDS
    assert encode_kafka_batch(GOLDEN_COLUMNS, GOLDEN_HEADER) == GOLDEN


def test_decoding_the_golden_batch_gives_its_two_records() -> None:
    assert decode_kafka_records(GOLDEN) == [
        Record(0, 1000, None, b"hi", ()),
        Record(1, 1005, b"k", b"v", (("h1", b"x"),)),
    ]
    header, columns = validate_kafka_batch(GOLDEN)
    assert header.record_count == 2
    assert columns.offset_deltas == range(2)


def columnar(kafka: bytes) -> bytes:
    """The Kafka batch re-framed as a columnar one with the same header, as the cleaner writes."""
    header, columns = validate_kafka_batch(kafka)
    return encode_batch(
        columns,
        first_timestamp=header.first_timestamp,
        max_timestamp=header.max_timestamp,
        last_offset_delta=header.last_offset_delta,
        base_offset=header.base_offset,
        attributes=header.attributes,
        partition_leader_epoch=header.partition_leader_epoch,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
    )


def test_the_logs_decoder_reads_the_golden_batch_as_kafkas_reader_does() -> None:
    assert not read_header(GOLDEN).is_columnar
    assert decode_records(GOLDEN) == decode_kafka_records(GOLDEN)


def test_the_golden_batch_framed_as_columns_converts_back_byte_for_byte() -> None:
    native = columnar(GOLDEN)
    assert read_header(native).is_columnar
    assert decode_records(native) == decode_kafka_records(GOLDEN)
    assert native_to_kafka(native) == GOLDEN


# --- round trips --------------------------------------------------------------------------------

HEADER_VALUE = st.one_of(st.none(), st.binary(max_size=8))
RECORD = st.tuples(
    st.integers(-(2**40), 2**40),  # timestamp delta
    st.one_of(st.none(), st.binary(max_size=20)),  # key
    st.one_of(st.none(), st.binary(max_size=40)),  # value
    st.lists(
        st.tuples(st.text(st.characters(codec="utf-8"), max_size=6), HEADER_VALUE),
        max_size=3,
    ).map(tuple),
)


@st.composite
def batches(draw: st.DrawFn, codecs: tuple[Compression, ...] = (Compression.NONE,)) -> bytes:
    """A native batch with arbitrary header fields and records, offsets possibly compacted."""
    records = draw(st.lists(RECORD, max_size=12))
    if not records or draw(st.booleans()):
        offset_deltas: range | list[int] = range(len(records))
    else:
        gaps = draw(st.lists(st.integers(1, 4), min_size=len(records), max_size=len(records)))
        offset_deltas = [sum(gaps[: i + 1]) - 1 for i in range(len(records))]
        if offset_deltas == list(range(len(records))):
            # A builder writes dense deltas as a range; native bytes compare equal only then.
            offset_deltas = range(len(records))
    columns = RecordColumns(
        offset_deltas,
        [r[0] for r in records],
        [r[1] for r in records],
        [r[2] for r in records],
        [r[3] for r in records],
    )
    first = draw(st.integers(-1, 2**50))
    last_offset_delta = offset_deltas[-1] if records else draw(st.integers(-1, 5))
    return encode_batch(
        columns,
        first_timestamp=first,
        max_timestamp=draw(st.integers(-1, 2**50)),
        last_offset_delta=last_offset_delta,
        base_offset=draw(st.integers(0, 2**62)),
        attributes=make_attributes(
            draw(st.sampled_from(codecs)),
            timestamp_type=draw(st.integers(0, 1)),
            is_transactional=draw(st.booleans()),
            is_control=draw(st.booleans()),
        ),
        partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
        producer_id=draw(st.integers(-1, 2**63 - 1)),
        producer_epoch=draw(st.integers(-1, 2**15 - 1)),
        base_sequence=draw(st.integers(-1, 2**31 - 1)),
    )


def same_fields(a: BatchHeader, b: BatchHeader) -> bool:
    """Whether two headers agree on everything but the length, CRC and layout of their records."""
    return dataclasses.replace(
        a, batch_length=0, crc=0, attributes=a.attributes & ~COLUMNAR_MASK
    ) == dataclasses.replace(b, batch_length=0, crc=0, attributes=b.attributes & ~COLUMNAR_MASK)


@TIMEOUT
@given(batches())
@PROPERTY
def test_native_to_kafka_to_native_keeps_header_and_records(native: bytes) -> None:
    kafka = native_to_kafka(native)
    verify_crc(kafka, 0, read_header(kafka))
    assert not read_header(kafka).is_columnar
    assert same_fields(read_header(kafka), read_header(native))
    assert decode_kafka_records(kafka) == decode_records(native)
    assert decode_records(kafka) == decode_records(native)
    back = columnar(kafka)
    assert same_fields(read_header(back), read_header(native))
    assert decode_records(back) == decode_records(native)
    assert back == native


@TIMEOUT
@given(batches())
@PROPERTY
def test_kafka_to_columnar_to_kafka_is_byte_identical_when_uncompressed(native: bytes) -> None:
    kafka = native_to_kafka(native)
    assert native_to_kafka(columnar(kafka)) == kafka


@TIMEOUT
@given(batches(codecs=(Compression.GZIP,)))
@PROPERTY
def test_gzip_batches_round_trip_with_their_codec(native: bytes) -> None:
    kafka = native_to_kafka(native)
    header = read_header(kafka)
    assert header.compression is Compression.GZIP
    section = zlib.decompress(bytes(kafka[HEADER_SIZE:]), wbits=31)
    assert decode_record_section(section, header.record_count) == decode_record_section(
        encode_record_section(validate_kafka_batch(kafka)[1]), header.record_count
    )
    back = columnar(kafka)
    assert read_header(back).compression is Compression.GZIP
    assert decode_records(back) == decode_records(native)


def test_a_gzip_batch_written_by_another_compressor_decodes() -> None:
    # A client's gzip stream differs from ours (level, header fields); only the container matters.
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = compressor.compress(GOLDEN_RECORDS) + compressor.flush()
    batch = frame(body, 2, 1, attributes=int(Compression.GZIP))
    assert [r.value for r in decode_kafka_records(batch)] == [b"hi", b"v"]


@pytest.mark.parametrize(
    ("codec", "module"), [(Compression.LZ4, "lz4"), (Compression.ZSTD, "zstandard")]
)
def test_an_installed_optional_codec_round_trips(codec: Compression, module: str) -> None:
    pytest.importorskip(module)
    kafka = encode_kafka_batch(GOLDEN_COLUMNS, dataclasses.replace(GOLDEN_HEADER, attributes=codec))
    assert read_header(kafka).compression is codec
    assert decode_kafka_records(kafka) == decode_kafka_records(GOLDEN)
    assert decode_records(columnar(kafka)) == decode_kafka_records(GOLDEN)


def test_a_zstd_frame_without_content_size_decodes() -> None:
    zstandard = pytest.importorskip("zstandard")
    body = zstandard.ZstdCompressor(write_content_size=False).compress(GOLDEN_RECORDS)
    batch = frame(body, 2, 1, attributes=int(Compression.ZSTD))
    assert decode_kafka_records(batch) == decode_kafka_records(GOLDEN)


def test_a_transaction_marker_converts_both_ways() -> None:
    native = build_marker(7, 3, ControlRecordType.COMMIT, 11, 1234)
    kafka = native_to_kafka(native)
    header = read_header(kafka)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch) == (7, 3)
    # Kafka's control record: key (version 0, type 1 COMMIT), value (version 0, epoch 11).
    assert decode_kafka_records(kafka)[0].key == bytes.fromhex("00000001")
    assert decode_kafka_records(kafka)[0].value == bytes.fromhex("00000000000b")
    back = columnar(kafka)
    marker = parse_marker(back, 0, read_header(back))
    assert (marker.control_type, marker.coordinator_epoch) == (ControlRecordType.COMMIT, 11)


def test_a_read_of_kafka_batches_is_served_as_it_is() -> None:
    first = native_to_kafka(build_batch([(b"a", b"1", 10)]))
    second = native_to_kafka(build_batch([(None, b"2", 20), (b"c", None, 21)]))
    read = first + second
    assert as_kafka_batches(read) is read
    validate_kafka_batches(read)


def test_only_the_columnar_batches_of_a_mixed_read_are_converted() -> None:
    kafka = native_to_kafka(build_batch([(b"a", b"1", 10)]))
    native = build_batch([(None, b"2", 20), (b"c", None, 21)])
    served = as_kafka_batches(kafka + native + kafka)
    assert served == kafka + native_to_kafka(native) + kafka
    assert [p for p, _ in iter_kafka_batches(served)] == [
        0,
        len(kafka),
        len(kafka) + len(native_to_kafka(native)),
    ]


def test_a_trailing_partial_batch_is_left_out_of_a_kafka_read() -> None:
    first = native_to_kafka(build_batch([(b"a", b"1", 10)]))
    second = build_batch([(None, b"2", 20)])
    assert as_kafka_batches(first + second[:-3]) == first
    assert as_kafka_batches(second + first[:-3]) == native_to_kafka(second)


def test_a_client_batch_claiming_the_columnar_layout_is_corrupt() -> None:
    batch = bytearray(GOLDEN)
    attributes = struct.unpack_from(">h", batch, ATTRIBUTES_OFFSET)[0]
    struct.pack_into(">h", batch, ATTRIBUTES_OFFSET, attributes | COLUMNAR_MASK)
    batch[CRC_OFFSET:ATTRIBUTES_OFFSET] = struct.pack(
        ">I", crc32c.crc32c(batch[ATTRIBUTES_OFFSET:])
    )
    error = error_of(validate_kafka_batches, bytes(batch))
    assert error.error is Errors.CORRUPT_MESSAGE and "bit 14" in str(error)


# --- stamping -----------------------------------------------------------------------------------


def test_stamping_sets_offset_and_epoch_and_keeps_the_records_and_crc() -> None:
    batch = bytearray(GOLDEN)
    stamp_kafka_batch(batch, 0, 500, 9)
    header, _ = validate_kafka_batch(batch)
    assert (header.base_offset, header.partition_leader_epoch) == (500, 9)
    assert batch[CRC_OFFSET:] == GOLDEN[CRC_OFFSET:]
    assert [r.offset for r in decode_kafka_records(batch)] == [500, 501]


def test_stamping_works_through_a_memoryview_into_a_larger_buffer() -> None:
    buffer = bytearray(b"\xff" * 7 + GOLDEN)
    stamp_kafka_batch(memoryview(buffer), 7, 42, 3, log_append_time_ms=5_000)
    header, _ = validate_kafka_batch(buffer, 7)
    assert (header.base_offset, header.partition_leader_epoch, header.max_timestamp) == (
        42,
        3,
        5_000,
    )


def test_stamping_log_append_time_sets_the_type_bit_and_max_timestamp_and_reseals() -> None:
    batch = bytearray(GOLDEN)
    stamp_kafka_batch(batch, 0, 500, 9, log_append_time_ms=99_000)
    header, _ = validate_kafka_batch(batch)
    assert header.timestamp_type == 1
    assert (header.first_timestamp, header.max_timestamp) == (1000, 99_000)
    assert batch[HEADER_SIZE:] == GOLDEN[HEADER_SIZE:]


# --- validation ---------------------------------------------------------------------------------


def test_a_bad_crc_is_a_corrupt_message() -> None:
    batch = bytearray(GOLDEN)
    batch[-1] ^= 0x01
    error = error_of(validate_kafka_batch, bytes(batch))
    assert error.error is Errors.CORRUPT_MESSAGE and "CRC" in str(error)


@pytest.mark.parametrize("magic", [0, 1])
def test_an_old_message_set_is_unsupported_version(magic: int) -> None:
    batch = bytearray(GOLDEN)
    batch[MAGIC_OFFSET] = magic
    error = error_of(validate_kafka_batch, bytes(batch))
    assert isinstance(error, UnsupportedVersionError)
    assert error.error.value == 35 and f"magic {magic}" in str(error)
    assert error_of(validate_kafka_batches, bytes(batch)).error is Errors.UNSUPPORTED_VERSION


def test_an_unknown_magic_is_a_corrupt_message() -> None:
    batch = bytearray(GOLDEN)
    batch[MAGIC_OFFSET] = 3
    error = error_of(validate_kafka_batch, bytes(batch))
    assert error.error is Errors.CORRUPT_MESSAGE and "magic 3" in str(error)


def test_a_truncated_record_is_a_corrupt_message() -> None:
    error = error_of(validate_kafka_batch, frame(GOLDEN_RECORDS[:-2], 2, 1))
    assert error.error is Errors.CORRUPT_MESSAGE and "record 1" in str(error)


def test_a_record_longer_than_its_fields_is_a_corrupt_message() -> None:
    records = bytearray(GOLDEN_RECORDS)
    records[0] = 0x12  # record 0 claims 9 bytes; its fields take 8
    error = error_of(validate_kafka_batch, frame(bytes(records), 2, 1))
    assert error.error is Errors.CORRUPT_MESSAGE and "record 0" in str(error)


def test_a_batch_cut_short_is_a_corrupt_message() -> None:
    error = error_of(validate_kafka_batch, GOLDEN[:-5])
    assert error.error is Errors.CORRUPT_MESSAGE and "truncated" in str(error)
    assert error_of(validate_kafka_batches, GOLDEN[:-5]).error is Errors.CORRUPT_MESSAGE
    assert error_of(validate_kafka_batches, GOLDEN + b"\x00").error is Errors.CORRUPT_MESSAGE


@pytest.mark.parametrize(("declared", "phrase"), [(3, "holds 2"), (1, "holds more")])
def test_a_record_count_other_than_the_header_is_a_corrupt_message(
    declared: int, phrase: str
) -> None:
    error = error_of(validate_kafka_batch, frame(GOLDEN_RECORDS, declared, max(declared - 1, 1)))
    assert error.error is Errors.CORRUPT_MESSAGE
    assert f"declares {declared} records" in str(error) and phrase in str(error)


def test_a_last_offset_delta_other_than_the_last_records_is_a_corrupt_message() -> None:
    error = error_of(validate_kafka_batch, frame(GOLDEN_RECORDS, 2, 4))
    assert error.error is Errors.CORRUPT_MESSAGE and "offset delta" in str(error)


def test_offset_deltas_that_do_not_increase_are_a_corrupt_message() -> None:
    columns = GOLDEN_COLUMNS._replace(offset_deltas=(1, 1))
    error = error_of(validate_kafka_batch, frame(encode_record_section(columns), 2, 1))
    assert error.error is Errors.CORRUPT_MESSAGE and "offset deltas" in str(error)


def test_a_timestamp_delta_past_int64_is_a_corrupt_message_naming_the_record() -> None:
    records = bytearray(GOLDEN_RECORDS)
    records[2:3] = b"\xff" * 9 + b"\x03"  # record 0's timestamp delta, 2**65 zigzagged
    records[0] = 0x22  # its length, now 17
    error = error_of(validate_kafka_batch, frame(bytes(records), 2, 1))
    assert error.error is Errors.CORRUPT_MESSAGE
    assert "record 0" in str(error) and "64 bits" in str(error)


def test_a_header_key_that_is_not_utf8_is_a_corrupt_message() -> None:
    records = GOLDEN_RECORDS.replace(bytes.fromhex("046831"), bytes.fromhex("04ff31"))
    error = error_of(validate_kafka_batch, frame(records, 2, 1))
    assert error.error is Errors.CORRUPT_MESSAGE and "utf-8" in str(error)


CODEC_MODULES = {
    Compression.SNAPPY: "cramjam",
    Compression.LZ4: "lz4.frame",
    Compression.ZSTD: "zstandard",
}


@pytest.mark.parametrize("codec", list(CODEC_MODULES), ids=lambda c: c.name.lower())
def test_a_codec_not_available_is_unsupported_compression_type_naming_it(
    codec: Compression, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, CODEC_MODULES[codec], None)  # as if its extra were missing
    batch = frame(b"\x00" * 10, 2, 1, attributes=int(codec))
    error = error_of(validate_kafka_batch, batch)
    assert isinstance(error, UnsupportedCompressionTypeError)
    assert error.error.value == 76 and codec.name.lower() in str(error)


def test_a_gzip_section_that_does_not_decompress_is_a_corrupt_message() -> None:
    batch = frame(b"not gzip at all", 2, 1, attributes=int(Compression.GZIP))
    assert error_of(validate_kafka_batch, batch).error is Errors.CORRUPT_MESSAGE


@TIMEOUT
@given(st.data())
@PROPERTY
def test_any_mangled_records_section_raises_only_a_rafka_error(data: st.DataObject) -> None:
    records = bytearray(GOLDEN_RECORDS)
    for _ in range(data.draw(st.integers(1, 4))):
        records[data.draw(st.integers(0, len(records) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(records)))
    count = data.draw(st.integers(0, 3))
    batch = frame(bytes(records[:cut]), count, max(count - 1, 0))
    try:
        validate_kafka_batch(batch)
    except (CorruptMessageError, UnsupportedVersionError):
        pass


@TIMEOUT
@given(st.data())
@PROPERTY
def test_the_quick_reader_reads_what_the_careful_one_does_or_leaves_it_to_it(
    data: st.DataObject,
) -> None:
    records = bytearray(GOLDEN_RECORDS)
    for _ in range(data.draw(st.integers(1, 4))):
        records[data.draw(st.integers(0, len(records) - 1))] = data.draw(st.integers(0, 255))
    section = bytes(records[: data.draw(st.integers(0, len(records)))])
    count = data.draw(st.integers(0, 3))
    try:
        careful = _checked_rows(section, count, "batch")
    except CorruptMessageError:
        careful = None
    quick = _well_formed_rows(section, count)
    assert quick is None or quick == careful


def test_the_quick_reader_reads_long_varints_keys_and_headers() -> None:
    columns = RecordColumns(
        range(300),
        [i * 1_000_003 for i in range(300)],
        [None if i % 2 else b"k" * i for i in range(300)],
        [b"v" * (i * 7) for i in range(300)],
        [(("h", b"x"), ("empty", None)) if i % 3 == 0 else () for i in range(300)],
    )
    section = encode_record_section(columns)
    quick = _well_formed_rows(section, 300)
    assert quick is not None
    assert quick == _checked_rows(section, 300, "batch")
    assert RecordColumns.from_rows(quick) == RecordColumns.from_rows(list(columns.rows()))


# --- a client's batch ---------------------------------------------------------------------------


def test_a_client_batch_numbered_from_zero_without_gaps_passes() -> None:
    check_client_batch(*validate_kafka_batch(GOLDEN))


def test_a_client_batch_with_offset_gaps_is_an_invalid_record() -> None:
    columns = GOLDEN_COLUMNS._replace(offset_deltas=(0, 2))
    header, columns = validate_kafka_batch(frame(encode_record_section(columns), 2, 2))
    error = error_of(check_client_batch, header, columns)
    assert error.error is Errors.INVALID_RECORD and "0..n-1" in str(error)


def test_an_idempotent_client_batch_without_a_sequence_is_an_invalid_record() -> None:
    header = dataclasses.replace(GOLDEN_HEADER, producer_id=5, producer_epoch=0)
    header, columns = validate_kafka_batch(encode_kafka_batch(GOLDEN_COLUMNS, header))
    error = error_of(check_client_batch, header, columns)
    assert error.error is Errors.INVALID_RECORD and "base sequence -1" in str(error)


@TIMEOUT
@given(st.data())
@PROPERTY
def test_any_flipped_byte_of_a_batch_raises_only_a_rafka_error(data: st.DataObject) -> None:
    batch = bytearray(GOLDEN)
    index = data.draw(st.integers(0, len(batch) - 1))
    batch[index] ^= data.draw(st.integers(1, 255))
    try:
        validate_kafka_batch(bytes(batch))
    except (CorruptMessageError, UnsupportedVersionError, UnsupportedCompressionTypeError):
        return
    # Only the fields outside the CRC may change without an error.
    assert index < MAGIC_OFFSET
