"""Tests for rafka.protocol.wire.registry: the ApiVersions answer and whole frames."""

from __future__ import annotations

import uuid

import pytest

from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.wire.apis import API_VERSIONS, METADATA
from rafka.protocol.wire.headers import RequestHeader, ResponseHeader, split_frames
from rafka.protocol.wire.primitives import WireFormatError
from rafka.protocol.wire.registry import DEFAULT_REGISTRY, ApiRegistry, VersionRange, WireRequest


def _payload(frame: bytes) -> bytes:
    frames, consumed = split_frames(frame)
    assert consumed == len(frame)
    [payload] = frames
    return payload


def test_supported_versions_derive_from_the_declarations() -> None:
    assert DEFAULT_REGISTRY.supported_versions() == [
        VersionRange(0, 3, 9),
        VersionRange(1, 4, 12),
        VersionRange(2, 1, 7),
        VersionRange(3, 0, 12),
        VersionRange(8, 0, 8),
        VersionRange(9, 0, 8),
        VersionRange(10, 0, 4),
        VersionRange(11, 0, 9),
        VersionRange(12, 0, 4),
        VersionRange(13, 0, 5),
        VersionRange(14, 0, 5),
        VersionRange(15, 0, 5),
        VersionRange(16, 0, 4),
        VersionRange(17, 1, 1),
        VersionRange(18, 0, 3),
        VersionRange(19, 0, 7),
        VersionRange(20, 0, 6),
        VersionRange(21, 0, 2),
        VersionRange(22, 0, 4),
        VersionRange(23, 0, 4),
        VersionRange(24, 0, 3),
        VersionRange(25, 0, 3),
        VersionRange(26, 0, 3),
        VersionRange(28, 0, 3),
        VersionRange(29, 1, 3),
        VersionRange(30, 1, 3),
        VersionRange(31, 1, 3),
        VersionRange(32, 0, 4),
        VersionRange(33, 0, 2),
        VersionRange(36, 0, 2),
        VersionRange(37, 0, 3),
        VersionRange(42, 0, 2),
        VersionRange(44, 0, 1),
        VersionRange(50, 0, 0),
        VersionRange(51, 0, 0),
        VersionRange(60, 0, 2),
    ]


def test_a_registry_of_fewer_apis_advertises_only_those() -> None:
    registry = ApiRegistry([METADATA, API_VERSIONS])
    body = registry.api_versions_body(throttle_time_ms=3)
    assert body == {
        "error_code": 0,
        "api_keys": [
            {"api_key": 3, "min_version": 0, "max_version": 12},
            {"api_key": 18, "min_version": 0, "max_version": 3},
        ],
        "throttle_time_ms": 3,
    }
    assert 0 not in registry


def test_declaring_an_api_key_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        ApiRegistry([METADATA, METADATA])


def test_api_versions_v0_request_frame_golden_bytes() -> None:
    frame = DEFAULT_REGISTRY.encode_request(RequestHeader(18, 0, 1, "kafka-python"), {})
    assert frame == bytes.fromhex(
        "00000016"  # size 22
        "0012 0000 00000001"  # ApiVersions v0, correlation id 1
        "000c 6b61666b612d707974686f6e"  # header v1's client id "kafka-python"; empty body
    )


def test_api_versions_v3_request_frame_golden_bytes() -> None:
    body = {"client_software_name": "kcat", "client_software_version": "1.0"}
    frame = DEFAULT_REGISTRY.encode_request(RequestHeader(18, 3, 7, "cli"), body)
    assert frame == bytes.fromhex(
        "00000018"  # size 24
        "0012 0003 00000007"  # ApiVersions v3, correlation id 7
        "0003 636c69 00"  # header v2: classic int16-length client id "cli", empty tags
        "05 6b636174 04 312e30"  # compact strings "kcat" and "1.0"
        "00"  # the body's empty tags
    )
    request = DEFAULT_REGISTRY.decode_request(_payload(frame))
    assert request == WireRequest(RequestHeader(18, 3, 7, "cli"), body)


def test_metadata_v1_request_frame_golden_bytes_decode() -> None:
    frame = bytes.fromhex(
        "00000014"  # size 20
        "0003 0001 00000005 0001 63"  # Metadata v1, correlation id 5, client "c"
        "00000001 0003 666f6f"  # topics ["foo"]
    )
    request = DEFAULT_REGISTRY.decode_request(_payload(frame))
    assert request.header == RequestHeader(3, 1, 5, "c")
    # topic_id exists from v10 only, so it decodes as its default, the zero UUID.
    assert request.body["topics"] == [{"topic_id": uuid.UUID(int=0), "name": "foo"}]
    assert request.body["allow_auto_topic_creation"] is True


def test_produce_v3_request_frame_golden_bytes() -> None:
    body = {
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"abc"}]}],
    }
    frame = DEFAULT_REGISTRY.encode_request(RequestHeader(0, 3, 9, "p"), body)
    assert frame == bytes.fromhex(
        "00000029"  # size 41
        "0000 0003 00000009 0001 70"  # Produce v3, correlation id 9, client "p"
        "ffff ffff 00007530"  # null transactional id, acks -1, timeout 30000
        "00000001 0001 74"  # one topic "t"
        "00000001 00000000 00000003 616263"  # partition 0 with 3 bytes of records
    )


def test_api_versions_response_uses_header_v0_even_when_flexible() -> None:
    frame = DEFAULT_REGISTRY.encode_response(
        RequestHeader(18, 3, 7, "cli"), DEFAULT_REGISTRY.api_versions_body()
    )
    payload = _payload(frame)
    assert payload[:4].hex() == "00000007"
    assert payload[4:6].hex() == "0000"  # error code right after the correlation id: no tags
    header, body = DEFAULT_REGISTRY.decode_response(payload, RequestHeader(18, 3, 7, "cli"))
    assert header == ResponseHeader(7)
    assert body["api_keys"][3] == {"api_key": 3, "min_version": 0, "max_version": 12}


def test_flexible_responses_use_header_v1() -> None:
    request = RequestHeader(3, 9, 11, "c")
    payload = _payload(DEFAULT_REGISTRY.encode_response(request, {}))
    assert payload[:5] == bytes.fromhex("0000000b 00")  # correlation id, empty header tags
    header, body = DEFAULT_REGISTRY.decode_response(payload, request)
    assert (header.correlation_id, body["topics"]) == (11, [])


def test_api_versions_v0_response_frame_golden_bytes() -> None:
    registry = ApiRegistry([API_VERSIONS])
    frame = registry.encode_response(RequestHeader(18, 0, 7), registry.api_versions_body())
    assert frame == bytes.fromhex(
        "00000010"  # size 16
        "00000007"  # response header v0: the correlation id
        "0000"  # no error
        "00000001 0012 0000 0003"  # one range: ApiVersions 0-3
    )


def test_unsupported_api_versions_request_is_answered_in_v0_with_the_ranges() -> None:
    frame = DEFAULT_REGISTRY.encode_unsupported_api_versions(correlation_id=4)
    header, body = DEFAULT_REGISTRY.decode_response(_payload(frame), RequestHeader(18, 0, 4))
    assert header.correlation_id == 4
    assert body["error_code"] == Errors.UNSUPPORTED_VERSION
    assert len(body["api_keys"]) == 36


@pytest.mark.parametrize(
    ("key", "version", "tags"),
    [
        (99, 0, ""),  # an api never declared: header v1
        (0, 2, ""),  # Produce below the served range
        (18, 4, "00"),  # a newer ApiVersions is flexible ("3+"), so its header is v2
    ],
)
def test_unknown_api_key_or_version_is_unsupported_with_the_header_still_readable(
    key: int, version: int, tags: str
) -> None:
    payload = bytes.fromhex(f"{key:04x}{version:04x}00000003ffff" + tags)
    with pytest.raises(RafkaError) as caught:
        DEFAULT_REGISTRY.decode_request(payload)
    assert caught.value.error is Errors.UNSUPPORTED_VERSION
    header, reader = DEFAULT_REGISTRY.read_request_header(payload)
    assert header == RequestHeader(key, version, 3, None)
    assert reader.remaining == 0


def test_truncated_request_body_is_a_wire_format_error() -> None:
    frame = DEFAULT_REGISTRY.encode_request(
        RequestHeader(3, 1, 1, "c"), {"topics": [{"name": "foo"}]}
    )
    with pytest.raises(WireFormatError) as caught:
        DEFAULT_REGISTRY.decode_request(_payload(frame)[:-1])
    assert caught.value.field == "topics[0].name"


@pytest.mark.parametrize(
    ("key", "version", "expected"), [(3, 8, 1), (3, 9, 2), (7, 0, 0), (99, 0, 1)]
)
def test_request_header_version_follows_the_declared_flexibility(
    key: int, version: int, expected: int
) -> None:
    assert DEFAULT_REGISTRY.request_header_version(key, version) == expected
