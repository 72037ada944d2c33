"""Tests for rafka.protocol.wire.primitives: round trips, and bad input refused cleanly."""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rafka.protocol.errors import Errors, InvalidRequestError
from rafka.protocol.wire.primitives import SPLICE_BYTES, FileSlice, Reader, WireFormatError, Writer


def _round_trip(
    write: Callable[[Writer, Any], None], read: Callable[[Reader], Any], value: Any
) -> Any:
    writer = Writer()
    write(writer, value)
    reader = Reader(writer.getvalue())
    decoded = read(reader)
    assert reader.remaining == 0
    return decoded


def _int_range(bits: int, signed: bool = True) -> st.SearchStrategy[int]:
    if signed:
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return st.integers(0, (1 << bits) - 1)


@pytest.mark.parametrize(
    ("write", "read", "bits", "signed"),
    [
        (Writer.write_int8, Reader.read_int8, 8, True),
        (Writer.write_int16, Reader.read_int16, 16, True),
        (Writer.write_int32, Reader.read_int32, 32, True),
        (Writer.write_int64, Reader.read_int64, 64, True),
        (Writer.write_uint16, Reader.read_uint16, 16, False),
        (Writer.write_uint32, Reader.read_uint32, 32, False),
        (Writer.write_unsigned_varint, Reader.read_unsigned_varint, 32, False),
        (Writer.write_varint, Reader.read_varint, 32, True),
        (Writer.write_varlong, Reader.read_varlong, 64, True),
    ],
)
def test_integers_round_trip_over_their_whole_range(
    write: Callable[[Writer, int], None], read: Callable[[Reader], int], bits: int, signed: bool
) -> None:
    @given(_int_range(bits, signed))
    def check(value: int) -> None:
        assert _round_trip(write, read, value) == value

    check()
    low = -(1 << (bits - 1)) if signed else 0
    high = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    for extreme in (low, high):
        assert _round_trip(write, read, extreme) == extreme
    for outside in (low - 1, high + 1):
        with pytest.raises(WireFormatError):
            write(Writer(), outside)


@given(st.floats(allow_nan=False))
def test_float64_round_trips(value: float) -> None:
    assert _round_trip(Writer.write_float64, Reader.read_float64, value) == value


@given(st.booleans())
def test_boolean_round_trips(value: bool) -> None:
    assert _round_trip(Writer.write_boolean, Reader.read_boolean, value) is value


def test_boolean_reads_any_nonzero_byte_as_true() -> None:
    assert Reader(b"\x02").read_boolean() is True


@given(st.uuids())
def test_uuid_round_trips(value: uuid.UUID) -> None:
    assert _round_trip(Writer.write_uuid, Reader.read_uuid, value) == value


@pytest.mark.parametrize(
    ("write", "value", "expected"),
    [
        (Writer.write_unsigned_varint, 0, "00"),
        (Writer.write_unsigned_varint, 127, "7f"),
        (Writer.write_unsigned_varint, 300, "ac02"),
        (Writer.write_varint, -1, "01"),
        (Writer.write_varint, 1, "02"),
        (Writer.write_varint, -64, "7f"),
        (Writer.write_varlong, 64, "8001"),
        (Writer.write_int16, -1, "ffff"),
        (Writer.write_int32, 258, "00000102"),
    ],
)
def test_known_encodings_match_the_spec(
    write: Callable[[Writer, int], None], value: int, expected: str
) -> None:
    writer = Writer()
    write(writer, value)
    assert writer.getvalue().hex() == expected


_STRING_FORMS = [
    (Writer.write_nullable_string, Reader.read_nullable_string),
    (Writer.write_compact_nullable_string, Reader.read_compact_nullable_string),
]
_BYTES_FORMS = [
    (Writer.write_nullable_bytes, Reader.read_nullable_bytes),
    (Writer.write_compact_nullable_bytes, Reader.read_compact_nullable_bytes),
]


@pytest.mark.parametrize(("write", "read"), _STRING_FORMS)
def test_nullable_strings_round_trip_text_and_null(
    write: Callable[[Writer, Any], None], read: Callable[[Reader], Any]
) -> None:
    @given(st.none() | st.text(max_size=50))
    def check(value: str | None) -> None:
        assert _round_trip(write, read, value) == value

    check()


@pytest.mark.parametrize(("write", "read"), _BYTES_FORMS)
def test_nullable_bytes_round_trip_bytes_and_null(
    write: Callable[[Writer, Any], None], read: Callable[[Reader], Any]
) -> None:
    @given(st.none() | st.binary(max_size=300))
    def check(value: bytes | None) -> None:
        assert _round_trip(write, read, value) == value

    check()


@pytest.mark.parametrize(
    ("write", "read", "value"),
    [
        (Writer.write_string, Reader.read_string, "héllo"),
        (Writer.write_compact_string, Reader.read_compact_string, "héllo"),
        (Writer.write_bytes, Reader.read_bytes, b"\x00\xff"),
        (Writer.write_compact_bytes, Reader.read_compact_bytes, b"\x00\xff"),
    ],
)
def test_non_nullable_forms_round_trip(
    write: Callable[[Writer, Any], None], read: Callable[[Reader], Any], value: Any
) -> None:
    assert _round_trip(write, read, value) == value


def test_compact_and_classic_string_prefixes_follow_the_spec() -> None:
    writer = Writer()
    writer.write_string("ab")
    writer.write_compact_string("ab")
    writer.write_nullable_string(None)
    writer.write_compact_nullable_string(None)
    assert writer.getvalue() == bytes.fromhex("0002 6162 03 6162 ffff 00")


@pytest.mark.parametrize(
    ("read", "data"),
    [
        (Reader.read_string, b"\xff\xff"),
        (Reader.read_compact_string, b"\x00"),
        (Reader.read_bytes, b"\xff\xff\xff\xff"),
        (Reader.read_compact_bytes, b"\x00"),
    ],
)
def test_null_where_not_nullable_is_refused(read: Callable[[Reader], Any], data: bytes) -> None:
    with pytest.raises(WireFormatError, match="null"):
        read(Reader(data))


def test_writing_null_to_a_non_nullable_form_is_refused() -> None:
    with pytest.raises(WireFormatError):
        Writer.write_string(Writer(), None)  # type: ignore[arg-type]


def test_invalid_utf8_is_a_wire_format_error() -> None:
    with pytest.raises(WireFormatError, match="UTF-8"):
        Reader(b"\x00\x01\xff").read_string()


def test_overlong_string_is_refused() -> None:
    with pytest.raises(WireFormatError, match="int16"):
        Writer().write_string("x" * 0x8000)


def _write_int32(writer: Writer, value: int) -> None:
    writer.write_int32(value)


@pytest.mark.parametrize(
    ("write", "read"),
    [
        (Writer.write_nullable_array, Reader.read_nullable_array),
        (Writer.write_compact_nullable_array, Reader.read_compact_nullable_array),
    ],
)
def test_arrays_round_trip_elements_and_null(write: Any, read: Any) -> None:
    @given(st.none() | st.lists(_int_range(32), max_size=20))
    def check(items: list[int] | None) -> None:
        writer = Writer()
        write(writer, items, _write_int32)
        reader = Reader(writer.getvalue())
        assert read(reader, Reader.read_int32) == items
        assert reader.remaining == 0

    check()


def test_array_count_beyond_the_remaining_bytes_is_refused_before_reading() -> None:
    with pytest.raises(WireFormatError, match="claims 1000000 elements"):
        Reader(b"\x00\x0f\x42\x40\x00").read_array(Reader.read_int8)


def test_array_element_errors_name_the_index() -> None:
    data = b"\x00\x00\x00\x02" + b"\x00\x00\x00\x01" + b"\x00\x00"
    with pytest.raises(WireFormatError) as caught:
        Reader(data).read_array(Reader.read_int32)
    assert caught.value.field == "[1]"


@given(st.dictionaries(st.integers(0, 10_000), st.binary(max_size=20), max_size=5))
def test_tagged_fields_round_trip_in_tag_order(fields: dict[int, bytes]) -> None:
    writer = Writer()
    writer.write_tagged_fields(fields)
    assert Reader(writer.getvalue()).read_tagged_fields() == fields


def test_tagged_fields_out_of_order_are_refused() -> None:
    with pytest.raises(WireFormatError, match="out of order"):
        Reader(bytes([2, 3, 0, 1, 0])).read_tagged_fields()


def test_varint_longer_than_five_bytes_is_refused() -> None:
    with pytest.raises(WireFormatError, match="longer than 5"):
        Reader(b"\x80\x80\x80\x80\x80\x01").read_unsigned_varint()


_TRUNCATIONS = [
    (Reader.read_int8, b""),
    (Reader.read_int16, b"\x00"),
    (Reader.read_int32, b"\x00\x00\x00"),
    (Reader.read_int64, b"\x00" * 7),
    (Reader.read_uint16, b"\x00"),
    (Reader.read_uint32, b"\x00"),
    (Reader.read_float64, b"\x00" * 4),
    (Reader.read_boolean, b""),
    (Reader.read_uuid, b"\x00" * 15),
    (Reader.read_unsigned_varint, b"\x80"),
    (Reader.read_varint, b"\xff"),
    (Reader.read_varlong, b"\x80\x80"),
    (Reader.read_string, b"\x00\x05abc"),
    (Reader.read_compact_string, b"\x06abc"),
    (Reader.read_bytes, b"\x00\x00\x00\x05abc"),
    (Reader.read_compact_bytes, b"\x06abc"),
    (Reader.read_tagged_fields, b"\x01\x00\x05ab"),
]


@pytest.mark.parametrize(("read", "data"), _TRUNCATIONS)
def test_truncated_input_raises_wire_format_error_only(
    read: Callable[[Reader], Any], data: bytes
) -> None:
    with pytest.raises(WireFormatError, match="truncated"):
        read(Reader(data))


@given(st.binary(max_size=40))
def test_arbitrary_bytes_never_leak_other_exceptions(data: bytes) -> None:
    for read, _ in _TRUNCATIONS:
        try:
            read(Reader(data))
        except WireFormatError:
            pass


def test_wire_format_error_is_an_invalid_request_that_pickles_with_its_path() -> None:
    error = WireFormatError("truncated int32", "name").within("[0]").within("topics")
    assert isinstance(error, InvalidRequestError)
    assert error.error is Errors.INVALID_REQUEST
    assert error.field == "topics[0].name"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.field, copy.reason) == ("topics[0].name", "truncated int32")


def test_reader_starts_at_the_given_position() -> None:
    reader = Reader(b"\x01\x02", position=1)
    assert reader.read_int8() == 2


def test_large_bytes_are_kept_by_reference_and_small_ones_copied_into_the_buffer() -> None:
    large = bytes(range(256)) * (SPLICE_BYTES // 256)
    writer = Writer()
    writer.write_int32(7)
    writer.write_compact_nullable_bytes(large)
    writer.write_int16(1)
    parts = writer.parts()
    assert len(parts) == 3 and parts[1] is large
    assert writer.getvalue() == b"".join(p for p in parts if isinstance(p, bytes))
    assert len(writer) == 4 + 3 + len(large) + 2
    small = Writer()
    small.write_bytes(b"x" * 100)
    assert small.parts() == [small.getvalue()]


def test_a_file_slice_is_a_part_of_its_own_that_cannot_be_joined(tmp_path: Any) -> None:
    path = tmp_path / "segment.log"
    path.write_bytes(b"0123456789")
    with open(path, "rb") as file:
        piece = FileSlice(file, 2, 5)
        writer = Writer()
        writer.write_nullable_bytes(piece)
        writer.write_int8(0)
        assert writer.parts() == [bytes.fromhex("00000005"), piece, b"\x00"]
        assert len(writer) == 10
        with pytest.raises(WireFormatError):
            writer.getvalue()
