"""Request and response headers, which header version a message uses, and size-prefixed frames.

Every Kafka request and response travels as a frame: an int32 size and that many bytes. A request
frame holds a request header and the body; a response frame a response header and the body.

Request header versions (Kafka's ``RequestHeader.json``): v0 is api key, api version and
correlation id; v1 adds the nullable client id; v2 adds a tagged-fields section. The client id
keeps its classic int16-length form even in v2, so old brokers can still log who sent a request
they cannot parse. Response header v0 is the correlation id; v1 adds tagged fields.

Flexible request versions use request header v2 and response header v1, others v1 and v0. Two
exceptions: ApiVersions responses always use response header v0, because a client reads that
answer before it knows which versions the broker speaks (KIP-511); ControlledShutdown v0 used
request header v0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rafka.protocol.wire.primitives import Part, Reader, WireFormatError, Writer

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7

# Kafka's socket.request.max.bytes default: the largest frame a broker accepts.
DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024
_SIZE_BYTES = 4


def request_header_version(api_key: int, api_version: int, flexible: bool) -> int:
    """The request header version for a request at ``api_version``."""
    if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return 0
    return 2 if flexible else 1


def response_header_version(api_key: int, flexible: bool) -> int:
    """The response header version for a response; ApiVersions always uses v0."""
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if flexible else 0


@dataclass(frozen=True)
class RequestHeader:
    """The header that starts every request."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None

    def write(self, writer: Writer, header_version: int) -> None:
        """Append this header in ``header_version`` (0, 1 or 2)."""
        writer.write_int16(self.api_key)
        writer.write_int16(self.api_version)
        writer.write_int32(self.correlation_id)
        if header_version >= 1:
            writer.write_nullable_string(self.client_id)
        if header_version >= 2:
            writer.write_tagged_fields({})

    @classmethod
    def read(cls, reader: Reader, header_version_for: Callable[[int, int], int]) -> RequestHeader:
        """Read a header whose version ``header_version_for(api_key, api_version)`` decides.

        The version is only known once the api key and version are read, hence the callback.
        Unknown tagged fields are skipped.
        """
        try:
            api_key = reader.read_int16()
            api_version = reader.read_int16()
            correlation_id = reader.read_int32()
            header_version = header_version_for(api_key, api_version)
            client_id = reader.read_nullable_string() if header_version >= 1 else None
            if header_version >= 2:
                reader.read_tagged_fields()
        except WireFormatError as exc:
            raise exc.within("request_header") from None
        return cls(api_key, api_version, correlation_id, client_id)


@dataclass(frozen=True)
class ResponseHeader:
    """The header that starts every response: the correlation id of its request."""

    correlation_id: int

    def write(self, writer: Writer, header_version: int) -> None:
        """Append this header in ``header_version`` (0 or 1)."""
        writer.write_int32(self.correlation_id)
        if header_version >= 1:
            writer.write_tagged_fields({})

    @classmethod
    def read(cls, reader: Reader, header_version: int) -> ResponseHeader:
        """Read a header in ``header_version``; unknown tagged fields are skipped."""
        try:
            correlation_id = reader.read_int32()
            if header_version >= 1:
                reader.read_tagged_fields()
        except WireFormatError as exc:
            raise exc.within("response_header") from None
        return cls(correlation_id)


def encode_frame(payload: bytes, max_size: int = DEFAULT_MAX_FRAME_BYTES) -> bytes:
    """Prefix ``payload`` with its int32 size; refuse one larger than ``max_size``."""
    return _size_prefix(len(payload), max_size) + payload


def frame_parts(parts: list[Part], max_size: int = DEFAULT_MAX_FRAME_BYTES) -> list[Part]:
    """``parts`` preceded by their total int32 size (joined to the first part when that is bytes,
    so a small frame stays one write); refuse a frame larger than ``max_size``."""
    prefix = _size_prefix(sum(len(part) for part in parts), max_size)
    if parts and isinstance(parts[0], bytes):
        return [prefix + parts[0], *parts[1:]]
    return [prefix, *parts]


def _size_prefix(size: int, max_size: int) -> bytes:
    if size > max_size:
        raise WireFormatError(f"frame of {size} bytes exceeds the {max_size}-byte limit")
    writer = Writer()
    writer.write_int32(size)
    return writer.getvalue()


def split_frames(
    buffer: bytes | bytearray | memoryview, max_size: int = DEFAULT_MAX_FRAME_BYTES
) -> tuple[list[bytes], int]:
    """The complete frames at the start of ``buffer`` and how many bytes they took.

    A trailing partial frame is left for the caller to complete with more input. A size that is
    negative or above ``max_size`` raises at once, before its bytes arrive, as Kafka's broker
    refuses such a receive rather than buffer it.
    """
    reader = Reader(buffer)
    frames: list[bytes] = []
    consumed = 0
    while reader.remaining >= _SIZE_BYTES:
        size = reader.read_int32()
        if size < 0 or size > max_size:
            raise WireFormatError(f"frame size {size} is outside 0..{max_size}")
        if reader.remaining < size:
            break
        frames.append(bytes(buffer[reader.position : reader.position + size]))
        reader.position += size
        consumed = reader.position
    return frames, consumed


class FrameBuffer:
    """Accumulates bytes from a stream and hands out each complete frame's payload once."""

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._pending = bytearray()
        self._max_size = max_size

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data`` and return the payloads of the frames it completed."""
        self._pending += data
        frames, consumed = split_frames(self._pending, self._max_size)
        del self._pending[:consumed]
        return frames

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a complete frame."""
        return len(self._pending)
