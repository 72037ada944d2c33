"""Snappy as Kafka's clients frame it: xerial blocks from Java and kafka-python, raw from
librdkafka."""

from __future__ import annotations

import os
import struct

import pytest
from kafka import codec as kafka_codec

from rafka.protocol.records.compression import Compression, compress, decompress

# Incompressible bytes repeated: several 32 KiB xerial blocks that still compress.
DATA = os.urandom(1000) * 100


def test_snappy_round_trips_in_several_xerial_blocks() -> None:
    framed = compress(Compression.SNAPPY, DATA)
    assert framed.startswith(b"\x82SNAPPY\x00")
    assert len(framed) < len(DATA) // 10
    assert decompress(Compression.SNAPPY, framed) == DATA


def test_kafka_python_reads_rafkas_snappy_and_rafka_reads_kafka_pythons() -> None:
    assert kafka_codec.snappy_decode(compress(Compression.SNAPPY, DATA)) == DATA
    assert decompress(Compression.SNAPPY, kafka_codec.snappy_encode(DATA)) == DATA


def test_a_raw_snappy_block_as_librdkafka_sends_it_decodes() -> None:
    raw = kafka_codec.snappy_encode(DATA, xerial_compatible=False)
    assert decompress(Compression.SNAPPY, raw) == DATA


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        (b"\x00\x00", "inside a block length"),
        (struct.pack(">i", 1_000), "overruns the stream"),
        (struct.pack(">i", -1), "overruns the stream"),
    ],
)
def test_a_broken_xerial_stream_is_a_value_error_naming_the_problem(
    tail: bytes, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        decompress(Compression.SNAPPY, compress(Compression.SNAPPY, b"abc") + tail)
