"""Per-batch compression codecs, numbered as in Kafka's batch attributes.

gzip comes from the standard library; snappy, lz4 and zstd need their optional extras
(``rafka[snappy]``, ``rafka[lz4]``, ``rafka[zstd]``). Asking for a codec that is not installed is
UNSUPPORTED_COMPRESSION_TYPE, never a silent fallback: a batch must decode the same everywhere it
travels.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from enum import IntEnum

from rafka.protocol.errors import UnsupportedCompressionTypeError


class Compression(IntEnum):
    """Kafka's compression codec ids (attribute bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def from_name(cls, name: str | None) -> Compression:
        """Parse Kafka's ``compression.type`` values: none, gzip, snappy, lz4, zstd."""
        if name is None:
            return cls.NONE
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise UnsupportedCompressionTypeError(
                f"compression_type {name!r} is not one of none, gzip, snappy, lz4, zstd"
            ) from None


def _gzip_compress(data: bytes) -> bytes:
    # wbits=31 writes a gzip container, as Kafka's gzip codec does; level 1 favours throughput.
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


def _gzip_decompress(data: bytes) -> bytes:
    decompressor = zlib.decompressobj(31)
    out = decompressor.decompress(data)
    if not decompressor.eof or decompressor.unused_data:
        raise ValueError("gzip stream is truncated or has trailing bytes")
    return out


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compatible with 1
_XERIAL_BLOCK = 32 * 1024


def _snappy_codec() -> tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]:
    """Snappy as Kafka's clients write it: Java's (and kafka-python's) xerial framing of 32 KiB
    raw blocks, each behind its big-endian int32 length; librdkafka may send one raw block."""
    from cramjam import snappy

    def compress(data: bytes) -> bytes:
        out = bytearray(_XERIAL_HEADER)
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
            out += struct.pack(">i", len(block)) + block
        return bytes(out)

    def decompress(data: bytes) -> bytes:
        if not data.startswith(_XERIAL_MAGIC):
            return bytes(snappy.decompress_raw(data))
        out = bytearray()
        view = memoryview(data)[len(_XERIAL_HEADER) :]
        while view:
            if len(view) < 4:
                raise ValueError("snappy stream ends inside a block length")
            (length,) = struct.unpack_from(">i", view)
            if length < 0 or length > len(view) - 4:
                raise ValueError(f"snappy block of {length} bytes overruns the stream")
            out += bytes(snappy.decompress_raw(bytes(view[4 : 4 + length])))
            view = view[4 + length :]
        return bytes(out)

    return compress, decompress


def _codec(codec: Compression) -> tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]:
    """Return (compress, decompress) for ``codec`` or raise UNSUPPORTED_COMPRESSION_TYPE."""
    if codec is Compression.GZIP:
        return _gzip_compress, _gzip_decompress
    try:
        if codec is Compression.SNAPPY:
            return _snappy_codec()
        if codec is Compression.LZ4:
            import lz4.frame

            return lz4.frame.compress, lz4.frame.decompress
        if codec is Compression.ZSTD:
            import zstandard

            def zstd_decompress(data: bytes) -> bytes:
                # A streaming decompressor: Java clients write frames without a content size.
                out: bytes = zstandard.ZstdDecompressor().decompressobj().decompress(data)
                return out

            return zstandard.ZstdCompressor().compress, zstd_decompress
    except ImportError:
        raise UnsupportedCompressionTypeError(
            f"{codec.name.lower()} needs the optional extra rafka[{codec.name.lower()}]"
        ) from None
    raise UnsupportedCompressionTypeError(
        f"compression codec {codec.name.lower()} is not supported"
    )


def compress(codec: Compression, data: bytes) -> bytes:
    """Compress a records section with ``codec``."""
    return _codec(codec)[0](data)


def decompress(codec: Compression, data: bytes) -> bytes:
    """Decompress a records section written with ``codec``."""
    return _codec(codec)[1](data)
