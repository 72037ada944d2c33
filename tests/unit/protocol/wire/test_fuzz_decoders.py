"""Fuzz tests of the wire decoders a listener feeds with a client's bytes: whatever arrives,
``decode_request`` and the Kafka records decoders raise only rafka's declared errors (a
``RafkaError`` carrying a Kafka error code), never IndexError, struct.error or the like."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rafka.protocol.errors import RafkaError
from rafka.protocol.records.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_SIZE, decode_records
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.compression import Compression
from rafka.protocol.records.kafka_records import (
    decode_kafka_records,
    iter_kafka_batches,
    native_to_kafka,
    validate_kafka_batches,
)
from rafka.protocol.records.kafka_rows import decode_record_section, read_varint
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY

FUZZ = settings(
    max_examples=400,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
pytestmark = pytest.mark.timeout(120)

SERVED = [
    (r.api_key, version)
    for r in DEFAULT_REGISTRY.supported_versions()
    for version in range(r.min_version, r.max_version + 1)
]
_SIZE = struct.Struct(">i")


def declared_only(decode: Callable[..., Any], *args: Any) -> None:
    """Call a decoder; a RafkaError is a proper refusal, anything else fails the test."""
    try:
        decode(*args)
    except RafkaError:
        pass


def valid_request(api_key: int, version: int) -> bytes:
    """A well-formed request payload (frame size stripped) with every body field at its default."""
    frame = DEFAULT_REGISTRY.encode_request(RequestHeader(api_key, version, 7, "fuzz"), {})
    return frame[_SIZE.size :]


@st.composite
def mangled(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` cut short, extended with random bytes, or with a few bytes overwritten."""
    buf = bytearray(data)
    how = draw(st.sampled_from(["truncate", "extend", "overwrite"]))
    if how == "truncate":
        return bytes(buf[: draw(st.integers(0, max(0, len(buf) - 1)))])
    if how == "extend":
        return bytes(buf) + draw(st.binary(min_size=1, max_size=64))
    for _ in range(draw(st.integers(1, 4))):
        if buf:
            buf[draw(st.integers(0, len(buf) - 1))] = draw(st.integers(0, 255))
    return bytes(buf)


@given(st.binary(max_size=256))
@FUZZ
def test_random_bytes_as_a_request_raise_only_rafka_errors(payload: bytes) -> None:
    declared_only(DEFAULT_REGISTRY.decode_request, payload)


@given(st.sampled_from(SERVED), st.binary(max_size=256))
@FUZZ
def test_a_served_header_with_a_garbage_body_raises_only_rafka_errors(
    served: tuple[int, int], body: bytes
) -> None:
    api_key, version = served
    header = DEFAULT_REGISTRY.read_request_header(valid_request(api_key, version))[1].position
    declared_only(DEFAULT_REGISTRY.decode_request, valid_request(api_key, version)[:header] + body)


@given(st.sampled_from(SERVED), st.data())
@FUZZ
def test_a_mangled_valid_request_raises_only_rafka_errors(
    served: tuple[int, int], data: st.DataObject
) -> None:
    declared_only(DEFAULT_REGISTRY.decode_request, data.draw(mangled(valid_request(*served))))


@given(st.integers(-(2**15), 2**15 - 1), st.integers(-(2**15), 2**15 - 1), st.binary(max_size=64))
@FUZZ
def test_any_api_key_and_version_raise_only_rafka_errors(
    api_key: int, version: int, rest: bytes
) -> None:
    payload = struct.pack(">hhi", api_key, version, 1) + rest
    declared_only(DEFAULT_REGISTRY.decode_request, payload)


@st.composite
def kafka_batches(draw: st.DrawFn) -> bytes:
    """A valid Kafka-format batch of a few records, in any codec this process has."""
    records = draw(
        st.lists(
            st.tuples(
                st.none() | st.binary(max_size=8),
                st.none() | st.binary(max_size=16),
                st.integers(0, 2**41),
                st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4))),
            ),
            min_size=1,
            max_size=4,
        )
    )
    codec = draw(st.sampled_from([Compression.NONE, Compression.GZIP, Compression.LZ4]))
    return native_to_kafka(build_batch(records, codec))


def resealed(batch: bytes) -> bytes:
    """``batch`` with its CRC recomputed, so a decoder looks past the CRC at the mangled bytes."""
    if len(batch) < HEADER_SIZE:
        return batch
    buf = bytearray(batch)
    struct.pack_into(">I", buf, CRC_OFFSET, crc32c.crc32c(bytes(buf[ATTRIBUTES_OFFSET:])))
    return bytes(buf)


@given(st.binary(max_size=300))
@FUZZ
def test_random_bytes_as_kafka_records_raise_only_rafka_errors(payload: bytes) -> None:
    declared_only(validate_kafka_batches, payload)
    declared_only(decode_records, payload)
    declared_only(decode_kafka_records, payload)
    declared_only(lambda: list(iter_kafka_batches(payload)))


@given(kafka_batches(), st.data())
@FUZZ
def test_mangled_kafka_batches_raise_only_rafka_errors(batch: bytes, data: st.DataObject) -> None:
    broken = data.draw(mangled(batch))
    for candidate in (broken, resealed(broken), batch + broken):
        declared_only(validate_kafka_batches, candidate)
        declared_only(decode_records, candidate)
        declared_only(decode_kafka_records, candidate)


@given(st.binary(max_size=200), st.integers(-5, 50))
@FUZZ
def test_random_records_sections_raise_only_rafka_errors(section: bytes, count: int) -> None:
    declared_only(decode_record_section, section, count)


@given(st.binary(max_size=12), st.integers(0, 12), st.sampled_from([32, 64]))
@FUZZ
def test_random_varints_raise_only_rafka_errors(data: bytes, position: int, bits: int) -> None:
    declared_only(read_varint, data, position, None, bits)
