"""Tests for rafka.protocol.wire.headers: header versions, header codecs and framing."""

from __future__ import annotations

import pytest

from rafka.protocol.wire.headers import (
    FrameBuffer,
    RequestHeader,
    ResponseHeader,
    encode_frame,
    frame_parts,
    request_header_version,
    response_header_version,
    split_frames,
)
from rafka.protocol.wire.primitives import Reader, WireFormatError, Writer


def _encode_request_header(header: RequestHeader, version: int) -> bytes:
    writer = Writer()
    header.write(writer, version)
    return writer.getvalue()


def test_flexible_requests_use_header_v2_and_others_v1() -> None:
    assert request_header_version(3, 9, flexible=True) == 2
    assert request_header_version(3, 8, flexible=False) == 1


def test_controlled_shutdown_v0_uses_request_header_v0() -> None:
    assert request_header_version(7, 0, flexible=False) == 0


def test_response_header_follows_flexibility_except_for_api_versions() -> None:
    assert response_header_version(3, flexible=True) == 1
    assert response_header_version(3, flexible=False) == 0
    assert response_header_version(18, flexible=True) == 0


def test_request_header_layouts_per_version() -> None:
    header = RequestHeader(api_key=3, api_version=9, correlation_id=258, client_id="ab")
    assert _encode_request_header(header, 0) == bytes.fromhex("0003 0009 00000102")
    assert _encode_request_header(header, 1) == bytes.fromhex("0003 0009 00000102 0002 6162")
    # v2 keeps the classic int16 client id, then an empty tagged-fields section.
    assert _encode_request_header(header, 2) == bytes.fromhex("0003 0009 00000102 0002 6162 00")


def test_null_client_id_is_written_as_minus_one() -> None:
    header = RequestHeader(18, 0, 1, None)
    assert _encode_request_header(header, 1) == bytes.fromhex("0012 0000 00000001 ffff")


@pytest.mark.parametrize("version", [0, 1, 2])
def test_request_header_round_trips_with_the_version_the_callback_picks(version: int) -> None:
    header = RequestHeader(1, 12, -5, "client" if version else None)
    reader = Reader(_encode_request_header(header, version) + b"body")
    seen: list[tuple[int, int]] = []

    def version_for(api_key: int, api_version: int) -> int:
        seen.append((api_key, api_version))
        return version

    assert RequestHeader.read(reader, version_for) == header
    assert seen == [(1, 12)]
    assert reader.remaining == 4


def test_request_header_v2_skips_unknown_tagged_fields() -> None:
    data = bytes.fromhex("0001 000c 00000001 ffff 01 05 02 abcd")
    assert RequestHeader.read(Reader(data), lambda key, version: 2) == RequestHeader(1, 12, 1)


def test_truncated_request_header_names_the_header() -> None:
    with pytest.raises(WireFormatError) as caught:
        RequestHeader.read(Reader(b"\x00\x01\x00"), lambda key, version: 1)
    assert caught.value.field == "request_header"


@pytest.mark.parametrize(("version", "expected"), [(0, "0000002a"), (1, "0000002a00")])
def test_response_header_layouts_and_round_trip(version: int, expected: str) -> None:
    writer = Writer()
    ResponseHeader(42).write(writer, version)
    assert writer.getvalue().hex() == expected
    assert ResponseHeader.read(Reader(writer.getvalue()), version) == ResponseHeader(42)


def test_truncated_response_header_is_a_wire_format_error() -> None:
    with pytest.raises(WireFormatError, match="response_header"):
        ResponseHeader.read(Reader(b"\x00\x00\x00\x01"), 1)


def test_frame_is_the_payload_behind_its_int32_size() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"


def test_encoding_a_frame_over_the_limit_is_refused() -> None:
    with pytest.raises(WireFormatError, match="exceeds"):
        encode_frame(b"abcd", max_size=3)


def test_split_frames_returns_complete_frames_and_leaves_a_partial_one() -> None:
    buffer = encode_frame(b"one") + encode_frame(b"") + encode_frame(b"three")[:6]
    frames, consumed = split_frames(buffer)
    assert frames == [b"one", b""]
    assert consumed == 11


def test_split_frames_refuses_a_size_over_the_limit_before_its_bytes_arrive() -> None:
    with pytest.raises(WireFormatError, match="frame size 1000"):
        split_frames(b"\x00\x00\x03\xe8", max_size=999)


def test_split_frames_refuses_a_negative_size() -> None:
    with pytest.raises(WireFormatError, match="frame size -1"):
        split_frames(b"\xff\xff\xff\xff")


def test_frame_buffer_reassembles_frames_fed_one_byte_at_a_time() -> None:
    stream = encode_frame(b"first") + encode_frame(b"second")
    buffer = FrameBuffer()
    frames: list[bytes] = []
    for index in range(len(stream)):
        frames += buffer.feed(stream[index : index + 1])
    assert frames == [b"first", b"second"]
    assert buffer.pending == 0


def test_frame_buffer_keeps_the_partial_tail() -> None:
    buffer = FrameBuffer(max_size=10)
    assert buffer.feed(encode_frame(b"ab") + b"\x00\x00") == [b"ab"]
    assert buffer.pending == 2
    with pytest.raises(WireFormatError):
        buffer.feed(b"\x00\x0b")


def test_frame_parts_are_prefixed_with_their_total_size_and_refused_over_the_limit() -> None:
    large = b"de" * 40_000
    assert frame_parts([b"abc", large]) == [(3 + 80_000).to_bytes(4, "big") + b"abc", large]
    assert frame_parts([b"abc"]) == [encode_frame(b"abc")]
    with pytest.raises(WireFormatError):
        frame_parts([b"abc", b"d"], max_size=3)
