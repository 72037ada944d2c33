"""Fuzz tests: the decoder raises only CORRUPT_MESSAGE or UNSUPPORTED_COMPRESSION_TYPE."""

from __future__ import annotations

import random
import struct
import zlib
from typing import Any

import crc32c
import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rafka.protocol.errors import CorruptMessageError, UnsupportedCompressionTypeError
from rafka.protocol.records.batch import (
    ATTRIBUTES_OFFSET,
    COLUMNAR_MASK,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    decode_records,
    iter_batches,
    read_header,
    validate_records,
    verify_crc,
)
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.compression import Compression

FUZZ = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
TIMEOUT = pytest.mark.timeout(60)


def _installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# Codec ids that decode here; the others (snappy, lz4, zstd without their extras) must be
# refused.
DECODABLE = (
    {0, 1}
    | ({2} if _installed("cramjam") else set())
    | ({3} if _installed("lz4.frame") else set())
    | ({4} if _installed("zstandard") else set())
)
_LENGTH = struct.Struct(">i")


def _allowed(buf, position: int) -> tuple[type[Exception], ...]:
    """The exceptions a decoder call may raise for the batch at ``position``."""
    low_byte = position + ATTRIBUTES_OFFSET + 1
    if low_byte < len(buf) and buf[low_byte] & 0x07 not in DECODABLE:
        return CorruptMessageError, UnsupportedCompressionTypeError
    return (CorruptMessageError,)


def _call(outcomes: dict[str, str], name: str, allowed, fn, *args) -> bool:
    """Run one decoder entry point, recording whether it succeeded or raised an allowed error."""
    try:
        fn(*args)
    except allowed as exc:
        outcomes[name] = type(exc).__name__
        return False
    outcomes[name] = "ok"
    return True


def _exercise(data: bytes, kind: type = bytes) -> dict[str, str]:
    """Feed ``data`` to every decoder entry point; a disallowed exception escapes and fails."""
    buf = kind(data)
    outcomes: dict[str, str] = {}
    allowed = _allowed(buf, 0)
    if _call(outcomes, "read_header", (CorruptMessageError,), read_header, buf):
        header = read_header(buf)
        _call(outcomes, "verify_crc", (CorruptMessageError,), verify_crc, buf, 0, header)
        _call(outcomes, "decode_records", allowed, decode_records, buf, 0, header)
        if _call(outcomes, "validate_records", allowed, validate_records, buf, 0, header):
            # The deep check passing promises records a consumer can use.
            records = decode_records(buf, 0, header)
            assert len(records) == header.record_count
            offsets = [r.offset for r in records]
            assert offsets == sorted(set(offsets))
            assert not offsets or (
                offsets[0] >= header.base_offset and offsets[-1] == header.last_offset
            )
    _call(outcomes, "decode_records(no header)", allowed, decode_records, buf)
    try:
        batches = list(iter_batches(buf))
    except CorruptMessageError:
        outcomes["iter_batches"] = "CorruptMessageError"
        batches = []
    else:
        outcomes["iter_batches"] = "ok"
    end = 0
    for position, header in batches:
        assert position == end and position + header.size_in_bytes <= len(buf)
        end = position + header.size_in_bytes
        at = _allowed(buf, position)
        _call(
            outcomes,
            f"verify_crc@{position}",
            (CorruptMessageError,),
            verify_crc,
            buf,
            position,
            header,
        )
        _call(outcomes, f"decode_records@{position}", at, decode_records, buf, position, header)
        _call(outcomes, f"validate_records@{position}", at, validate_records, buf, position, header)
    return outcomes


def _frame(
    body: bytes,
    *,
    attributes: int = 0,
    record_count: int = 1,
    last_offset_delta: int = 0,
    magic: int = 2,
    batch_length: int | None = None,
    first_timestamp: int = 0,
    base_offset: int = 0,
) -> bytes:
    """Frame any body as a columnar batch with the given header fields and a matching CRC, so
    decoding gets past it to the msgpack reader."""
    length = HEADER_SIZE - LOG_OVERHEAD + len(body) if batch_length is None else batch_length
    raw = bytearray(
        HEADER.pack(
            base_offset,
            length,
            0,
            magic,
            0,
            attributes | COLUMNAR_MASK,
            last_offset_delta,
            first_timestamp,
            first_timestamp,
            -1,
            -1,
            -1,
            record_count,
        )
        + body
    )
    return _recrc(raw)


def _recrc(raw: bytes | bytearray) -> bytes:
    """Recompute the CRC over exactly the bytes verify_crc covers (as far as they are present)."""
    raw = bytearray(raw)
    if len(raw) >= ATTRIBUTES_OFFSET:
        (length,) = _LENGTH.unpack_from(raw, 8)
        end = min(len(raw), LOG_OVERHEAD + max(length, 0))
        raw[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc32c.crc32c(
            bytes(raw[ATTRIBUTES_OFFSET:end])
        ).to_bytes(4, "big")
    return bytes(raw)


def _gzip(data: bytes) -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


KINDS = st.sampled_from([bytes, bytearray, memoryview])
INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
SMALL_COUNT = st.integers(-3, 12)
ATTRIBUTES = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 0x18, 0x39]) | INT16
OPT_BYTES = st.none() | st.binary(max_size=12)
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.binary(max_size=12)
    | st.text(max_size=6)
)
MSGPACK = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.dictionaries(st.text(max_size=3) | st.integers(-3, 3), inner, max_size=3)
    ),
    max_leaves=25,
)
VALID_RECORDS = st.lists(
    st.tuples(
        OPT_BYTES,
        OPT_BYTES,
        st.integers(-(2**40), 2**40),
        st.lists(st.tuples(st.text(max_size=4), OPT_BYTES), max_size=2),
    ),
    min_size=1,
    max_size=6,
)
HEADER_LIKE = st.one_of(
    st.tuples(st.text(max_size=3), OPT_BYTES).map(list),
    st.lists(LEAVES, max_size=3),
    LEAVES,
)
# Near-valid record columns: mostly the right kinds of
# entries, some junk, lengths that may disagree.
COLUMNS = st.tuples(
    st.none() | st.lists(st.integers(-2, 12), max_size=7) | st.lists(LEAVES, max_size=3) | LEAVES,
    st.lists(st.integers(-5, 5), max_size=7) | st.lists(LEAVES, max_size=3) | LEAVES,
    st.none() | st.lists(OPT_BYTES, max_size=7) | st.lists(LEAVES, max_size=3),
    st.lists(OPT_BYTES, max_size=7) | st.lists(LEAVES, max_size=3) | LEAVES,
    st.none()
    | st.lists(st.lists(HEADER_LIKE, max_size=2), max_size=7)
    | st.lists(LEAVES, max_size=3),
).map(list)


def _columns_section(records: list) -> list:
    """The records section a builder writes for ``(key, value, timestamp, headers)`` records."""
    first = records[0][2]
    return [
        None,
        [ts - first for _, _, ts, _ in records],
        [k for k, _, _, _ in records],
        [v for _, v, _, _ in records],
        [[list(h) for h in hs] for _, _, _, hs in records],
    ]


@TIMEOUT
@FUZZ
@given(data=st.binary(max_size=300), kind=KINDS)
def test_random_bytes_raise_only_corrupt_message(data, kind):
    outcomes = _exercise(data, kind)
    assert outcomes["iter_batches"] in {"ok", "CorruptMessageError"}


@TIMEOUT
@FUZZ
@given(cut=st.integers(0, HEADER_SIZE + 20), tail=st.binary(max_size=120), kind=KINDS)
def test_valid_header_prefix_with_random_tail_raises_only_corrupt_message(cut, tail, kind):
    valid = build_batch([(b"key", b"value", 1), (None, b"v2", 2)])
    outcomes = _exercise(valid[:cut] + tail, kind)
    assert "read_header" in outcomes


@TIMEOUT
@FUZZ
@given(
    body=st.binary(max_size=200),
    attributes=ATTRIBUTES,
    record_count=SMALL_COUNT | INT32,
    last_offset_delta=SMALL_COUNT | INT32,
    magic=st.just(2) | st.integers(-128, 127),
    batch_length=st.none() | st.integers(-5, 300) | INT32,
    first_timestamp=st.integers(-(2**63), 2**63 - 1),
)
def test_random_header_fields_with_valid_crc_raise_only_allowed_errors(
    body, attributes, record_count, last_offset_delta, magic, batch_length, first_timestamp
):
    batch = _frame(
        body,
        attributes=attributes,
        record_count=record_count,
        last_offset_delta=last_offset_delta,
        magic=magic,
        batch_length=batch_length,
        first_timestamp=first_timestamp,
    )
    outcomes = _exercise(batch)
    if outcomes["read_header"] == "ok" and batch_length is None:
        assert outcomes["verify_crc"] == "ok"


MUTATION = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10_000), st.integers(0, 7)),
    st.tuples(st.just("set"), st.integers(0, 10_000), st.integers(0, 255)),
    st.tuples(st.just("truncate"), st.integers(0, 10_000), st.just(0)),
    st.tuples(st.just("extend"), st.binary(min_size=1, max_size=40), st.just(0)),
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.integers(0, 255)),
)


def _mutate(batch: bytes, mutations) -> bytes:
    raw = bytearray(batch)
    for op, where, what in mutations:
        if op == "extend":
            raw += where
        elif not raw:
            continue
        elif op == "flip":
            raw[where % len(raw)] ^= 1 << what
        elif op == "set":
            raw[where % len(raw)] = what
        elif op == "truncate":
            del raw[where % len(raw) :]
        else:
            raw.insert(where % len(raw), what)
    return bytes(raw)


@TIMEOUT
@FUZZ
@given(
    records=VALID_RECORDS,
    codec=st.sampled_from([Compression.NONE, Compression.GZIP]),
    mutations=st.lists(MUTATION, min_size=1, max_size=4),
    recompute_crc=st.booleans(),
    kind=KINDS,
)
def test_mutated_valid_batches_raise_only_allowed_errors(
    records, codec, mutations, recompute_crc, kind
):
    mutated = _mutate(build_batch(records, codec), mutations)
    if recompute_crc:
        mutated = _recrc(mutated)
    outcomes = _exercise(mutated, kind)
    assert outcomes["decode_records(no header)"] in {
        "ok",
        "CorruptMessageError",
        "UnsupportedCompressionTypeError",
    }


@TIMEOUT
@FUZZ
@given(
    records=VALID_RECORDS,
    mutations=st.lists(MUTATION, min_size=1, max_size=3),
    before=st.integers(0, 2),
    after=st.integers(0, 2),
)
def test_a_damaged_batch_among_valid_ones_raises_only_corrupt_message(
    records, mutations, before, after
):
    valid = build_batch(records)
    log = valid * before + _mutate(valid, mutations) + valid * after
    outcomes = _exercise(log)
    if before:
        assert (outcomes["read_header"], outcomes["verify_crc"], outcomes["validate_records"]) == (
            "ok",
            "ok",
            "ok",
        )


@TIMEOUT
@FUZZ
@given(
    section=MSGPACK,
    codec=st.sampled_from([0, 1, 2, 3, 4, 5, 7]),
    count_delta=st.integers(-1, 1),
    last_offset_delta=st.none() | SMALL_COUNT,
)
def test_arbitrary_msgpack_record_sections_with_valid_crc_raise_only_allowed_errors(
    section, codec, count_delta, last_offset_delta
):
    body = msgpack.packb(section)
    if codec == 1:
        body = _gzip(body)
    count = (len(section) if isinstance(section, (list, dict)) else 1) + count_delta
    lod = max(count - 1, 0) if last_offset_delta is None else last_offset_delta
    outcomes = _exercise(_frame(body, attributes=codec, record_count=count, last_offset_delta=lod))
    if outcomes["read_header"] == "ok":
        assert outcomes["verify_crc"] == "ok"
        if codec not in DECODABLE:
            assert outcomes["decode_records"] in {
                "UnsupportedCompressionTypeError",
                "CorruptMessageError",
            }


@TIMEOUT
@FUZZ
@given(
    columns=COLUMNS,
    count=st.integers(0, 7),
    lod_shift=st.integers(-1, 3),
    codec=st.sampled_from([Compression.NONE, Compression.GZIP]),
    first_timestamp=st.integers(-(2**62), 2**62),
)
def test_near_valid_columns_raise_only_corrupt_message(
    columns, count, lod_shift, codec, first_timestamp
):
    body = msgpack.packb(columns)
    if codec is Compression.GZIP:
        body = _gzip(body)
    batch = _frame(
        body,
        attributes=int(codec),
        record_count=count,
        last_offset_delta=max(count - 1, 0) + lod_shift,
        first_timestamp=first_timestamp,
    )
    outcomes = _exercise(batch)
    if outcomes["read_header"] == "ok":
        assert outcomes["verify_crc"] == "ok"
        assert outcomes["decode_records"] in {"ok", "CorruptMessageError"}


GZIP_BODY = st.one_of(
    st.binary(max_size=200).map(_gzip),  # valid gzip, random payload
    st.binary(max_size=200),  # not gzip at all
    st.tuples(VALID_RECORDS, st.integers(0, 60)).map(  # valid columns, gzip stream cut short
        lambda t: _gzip(msgpack.packb(_columns_section(t[0])))[: -t[1] - 1]
    ),
    st.tuples(st.binary(max_size=50), st.binary(min_size=1, max_size=20)).map(
        lambda t: _gzip(t[0]) + t[1]
    ),
    st.tuples(st.binary(max_size=50), st.binary(max_size=50)).map(
        lambda t: _gzip(t[0]) + _gzip(t[1])
    ),
    st.binary(max_size=100).map(zlib.compress),  # zlib container, not gzip
    st.binary(max_size=100)
    .map(lambda d: bytearray(_gzip(d)))
    .map(lambda b: bytes(b[:10]) + bytes(reversed(b[10:]))),
)


@TIMEOUT
@FUZZ
@given(body=GZIP_BODY, record_count=SMALL_COUNT)
def test_random_gzip_bodies_raise_only_corrupt_message(body, record_count):
    outcomes = _exercise(
        _frame(
            body,
            attributes=int(Compression.GZIP),
            record_count=record_count,
            last_offset_delta=max(record_count - 1, 0),
        )
    )
    if outcomes["read_header"] == "ok":
        assert outcomes["decode_records"] in {"ok", "CorruptMessageError"}


@TIMEOUT
@FUZZ
@given(
    records=VALID_RECORDS,
    cut=st.integers(0, 30) | st.just(0),
    tail=st.binary(max_size=8) | st.just(b""),
    count_shift=st.sampled_from([0, 0, -1, 1]),
)
def test_gzip_streams_of_real_columns_decode_only_when_intact(records, cut, tail, count_shift):
    body = _gzip(msgpack.packb(_columns_section(records)))
    body = body[: len(body) - cut] + tail
    batch = _frame(
        body,
        attributes=int(Compression.GZIP),
        record_count=len(records) + count_shift,
        last_offset_delta=len(records) - 1,
        first_timestamp=records[0][2],
    )
    outcomes = _exercise(batch)
    if cut == 0 and not tail and count_shift == 0:
        assert outcomes["validate_records"] == "ok"
        assert [r.key for r in decode_records(batch)] == [k for k, _, _, _ in records]
    else:
        assert outcomes["decode_records(no header)"] == "CorruptMessageError"


@TIMEOUT
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_every_truncation_and_byte_overwrite_of_a_valid_batch(codec):
    records: list[tuple[Any, ...]] = [
        (b"key", b"value" * 3, 1_000, [("h", b"x"), ("n", None)]),
        (None, b"", 900),
        (b"k", None, 1_100),
    ]
    batch = build_batch(records, codec)
    assert _exercise(batch)["validate_records"] == "ok"
    for cut in range(len(batch)):
        outcomes = _exercise(batch[:cut])
        assert outcomes.get("verify_crc", "CorruptMessageError") == "CorruptMessageError"
        assert not any(
            name.startswith("verify_crc@") for name in outcomes
        )  # a partial batch is never yielded
    for index in range(len(batch)):
        for value in {0x00, 0xFF, batch[index] ^ 0x01} - {batch[index]}:
            mutated = bytearray(batch)
            mutated[index] = value
            outcomes = _exercise(bytes(mutated))
            if (
                index >= CRC_OFFSET
            ):  # the CRC covers (or is) this byte, so the damage must be caught
                assert outcomes.get("verify_crc", "CorruptMessageError") == "CorruptMessageError"
            _exercise(
                _recrc(mutated)
            )  # same damage behind a matching CRC reaches the record decoder


@TIMEOUT
@pytest.mark.parametrize("seed", range(8))
def test_seeded_random_mutations_raise_only_allowed_errors(seed):
    rng = random.Random(seed)
    records = [
        (
            rng.randbytes(rng.randint(0, 8)) if rng.random() < 0.8 else None,
            rng.randbytes(rng.randint(0, 40)),
            rng.randint(-(2**40), 2**40),
        )
        for _ in range(rng.randint(1, 10))
    ]
    batch = build_batch(records, rng.choice([Compression.NONE, Compression.GZIP]))
    rejected = 0
    for _ in range(150):
        raw = bytearray(batch)
        for _ in range(rng.randint(1, 6)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        if rng.random() < 0.3:
            del raw[rng.randrange(len(raw)) :]
        candidate = _recrc(raw) if rng.random() < 0.7 else bytes(raw)
        rejected += "ok" not in {
            _exercise(candidate).get("validate_records"),
            _exercise(candidate).get("verify_crc"),
        }
    assert rejected > 0
