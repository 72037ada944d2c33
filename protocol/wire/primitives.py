"""Kafka's primitive wire types: a reader over a buffer and a writer into one.

Every multi-byte number is big-endian. Varints are protobuf-style base-128 groups, least
significant first; signed varints and varlongs are zigzag-encoded first. "Compact" strings, bytes
and arrays (flexible versions, KIP-482) carry their length as an unsigned varint of ``length + 1``
so that 0 can mean null; the classic forms use an int16 (strings) or int32 (bytes, arrays) length
with -1 for null.

A truncated or malformed input raises ``WireFormatError`` and nothing else, so a listener can turn
any bad frame into one answer (close the connection or reply INVALID_REQUEST).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import BinaryIO, TypeVar

from rafka.protocol.errors import InvalidRequestError

T = TypeVar("T")

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT16 = struct.Struct(">H")
_UINT32 = struct.Struct(">I")
_FLOAT64 = struct.Struct(">d")

# Kafka's readers refuse varints longer than a 32-bit (5 groups) or 64-bit (10 groups) value needs.
_VARINT_MAX_BYTES = 5
_VARLONG_MAX_BYTES = 10


class WireFormatError(InvalidRequestError):
    """Bytes that do not follow the wire format, or a value the format cannot hold.

    ``field`` is the dotted path of the field being read or written when it failed (e.g.
    ``topics[0].name``), filled in as the error travels out of nested structs; ``reason`` is what
    went wrong there.
    """

    def __init__(self, reason: str, field: str | None = None) -> None:
        self.reason = reason
        self.field = field
        super().__init__(f"{field}: {reason}" if field else reason)

    def __reduce__(self) -> tuple[type[WireFormatError], tuple[str, str | None]]:
        return type(self), (self.reason, self.field)

    def within(self, name: str) -> WireFormatError:
        """The same error with ``name`` (a field name or ``[index]``) prefixed to its path."""
        if not self.field:
            path = name
        elif self.field.startswith("["):
            path = name + self.field
        else:
            path = f"{name}.{self.field}"
        return WireFormatError(self.reason, path)


class Reader:
    """Reads primitive values from a buffer, advancing a position; never reads past the end."""

    def __init__(self, data: bytes | bytearray | memoryview, position: int = 0) -> None:
        self._view = memoryview(data).cast("B")
        self.position = position

    @property
    def remaining(self) -> int:
        """How many bytes are left after the position."""
        return len(self._view) - self.position

    def _take(self, size: int, what: str) -> memoryview:
        if size < 0:
            raise WireFormatError(f"negative length {size} for {what}")
        if size > self.remaining:
            raise WireFormatError(
                f"truncated {what} at offset {self.position}: "
                f"needs {size} bytes, {self.remaining} left"
            )
        chunk = self._view[self.position : self.position + size]
        self.position += size
        return chunk

    def _fixed(self, layout: struct.Struct, what: str) -> int:
        value: int = layout.unpack(self._take(layout.size, what))[0]
        return value

    def read_int8(self) -> int:
        """A signed 8-bit integer."""
        return self._fixed(_INT8, "int8")

    def read_int16(self) -> int:
        """A signed big-endian 16-bit integer."""
        return self._fixed(_INT16, "int16")

    def read_int32(self) -> int:
        """A signed big-endian 32-bit integer."""
        return self._fixed(_INT32, "int32")

    def read_int64(self) -> int:
        """A signed big-endian 64-bit integer."""
        return self._fixed(_INT64, "int64")

    def read_uint16(self) -> int:
        """An unsigned big-endian 16-bit integer."""
        return self._fixed(_UINT16, "uint16")

    def read_uint32(self) -> int:
        """An unsigned big-endian 32-bit integer."""
        return self._fixed(_UINT32, "uint32")

    def read_float64(self) -> float:
        """An IEEE 754 double, big-endian."""
        value: float = _FLOAT64.unpack(self._take(_FLOAT64.size, "float64"))[0]
        return value

    def read_boolean(self) -> bool:
        """One byte: 0 is false, anything else true (as Kafka reads it)."""
        return self._take(1, "boolean")[0] != 0

    def read_uuid(self) -> uuid.UUID:
        """A 16-byte UUID, most significant bits first."""
        return uuid.UUID(bytes=bytes(self._take(16, "uuid")))

    def _base128(self, max_bytes: int, what: str) -> int:
        value = 0
        for index in range(max_bytes):
            byte = self._take(1, what)[0]
            value |= (byte & 0x7F) << (7 * index)
            if not byte & 0x80:
                return value
        raise WireFormatError(f"{what} longer than {max_bytes} bytes at offset {self.position}")

    def read_unsigned_varint(self) -> int:
        """An unsigned varint of at most 32 bits."""
        return self._base128(_VARINT_MAX_BYTES, "unsigned varint")

    def read_varint(self) -> int:
        """A zigzag-encoded signed varint of at most 32 bits."""
        return _unzigzag(self._base128(_VARINT_MAX_BYTES, "varint"))

    def read_varlong(self) -> int:
        """A zigzag-encoded signed varint of at most 64 bits."""
        return _unzigzag(self._base128(_VARLONG_MAX_BYTES, "varlong"))

    def _text(self, size: int, what: str) -> str:
        try:
            return str(self._take(size, what), "utf-8")
        except UnicodeDecodeError as exc:
            raise WireFormatError(f"{what} is not valid UTF-8: {exc.reason}") from None

    def read_nullable_string(self) -> str | None:
        """An int16 length (-1 for null) and that many UTF-8 bytes."""
        size = self.read_int16()
        return None if size == -1 else self._text(size, "string")

    def read_string(self) -> str:
        """A non-null string; a null length is malformed."""
        return _not_null(self.read_nullable_string(), "string")

    def read_compact_nullable_string(self) -> str | None:
        """An unsigned varint of length + 1 (0 for null) and that many UTF-8 bytes."""
        size = self.read_unsigned_varint() - 1
        return None if size == -1 else self._text(size, "compact string")

    def read_compact_string(self) -> str:
        """A non-null compact string."""
        return _not_null(self.read_compact_nullable_string(), "compact string")

    def read_nullable_bytes(self) -> bytes | None:
        """An int32 length (-1 for null) and that many bytes."""
        size = self.read_int32()
        return None if size == -1 else bytes(self._take(size, "bytes"))

    def read_bytes(self) -> bytes:
        """Non-null bytes."""
        return _not_null(self.read_nullable_bytes(), "bytes")

    def read_compact_nullable_bytes(self) -> bytes | None:
        """An unsigned varint of length + 1 (0 for null) and that many bytes."""
        size = self.read_unsigned_varint() - 1
        return None if size == -1 else bytes(self._take(size, "compact bytes"))

    def read_compact_bytes(self) -> bytes:
        """Non-null compact bytes."""
        return _not_null(self.read_compact_nullable_bytes(), "compact bytes")

    def _checked_count(self, count: int, what: str) -> int:
        # Every element takes at least one byte, so a larger count is a lie that would otherwise
        # make the decoder allocate (or loop) without bound.
        if count < 0 or count > self.remaining:
            raise WireFormatError(
                f"{what} claims {count} elements with {self.remaining} bytes left"
            )
        return count

    def read_nullable_array(self, element: Callable[[Reader], T]) -> list[T] | None:
        """An int32 count (-1 for null) and that many elements read by ``element``."""
        count = self.read_int32()
        if count == -1:
            return None
        return self._elements(self._checked_count(count, "array"), element)

    def read_array(self, element: Callable[[Reader], T]) -> list[T]:
        """A non-null array."""
        return _not_null(self.read_nullable_array(element), "array")

    def read_compact_nullable_array(self, element: Callable[[Reader], T]) -> list[T] | None:
        """An unsigned varint of count + 1 (0 for null) and that many elements."""
        count = self.read_unsigned_varint() - 1
        if count == -1:
            return None
        return self._elements(self._checked_count(count, "compact array"), element)

    def read_compact_array(self, element: Callable[[Reader], T]) -> list[T]:
        """A non-null compact array."""
        return _not_null(self.read_compact_nullable_array(element), "compact array")

    def _elements(self, count: int, element: Callable[[Reader], T]) -> list[T]:
        items: list[T] = []
        for index in range(count):
            try:
                items.append(element(self))
            except WireFormatError as exc:
                raise exc.within(f"[{index}]") from None
        return items

    def read_tagged_fields(self) -> dict[int, bytes]:
        """A tagged-fields section: a count, then (tag, size, payload) each; tags must ascend."""
        count = self._checked_count(self.read_unsigned_varint(), "tagged fields")
        fields: dict[int, bytes] = {}
        previous = -1
        for _ in range(count):
            tag = self.read_unsigned_varint()
            if tag <= previous:
                raise WireFormatError(f"tagged field {tag} out of order after {previous}")
            previous = tag
            fields[tag] = bytes(self._take(self.read_unsigned_varint(), f"tagged field {tag}"))
        return fields


SPLICE_BYTES = 64 << 10
"""Bytes values at least this large are kept by reference in a ``Writer``'s parts rather than
copied into its buffer, so a large Fetch answer reaches the socket without copies."""


@dataclass(frozen=True)
class FileSlice:
    """Bytes of an open file that a frame carries by reference, for the listener to send with
    ``sendfile`` (Kafka's zero-copy read path); whoever sends or drops the frame closes it."""

    file: BinaryIO
    position: int
    size: int

    def __len__(self) -> int:
        return self.size


Part = bytes | FileSlice
"""A piece of an encoded frame: bytes, or a file slice to be sent from the file."""


class Writer:
    """Appends primitive values to a growing buffer; a value the type cannot hold raises.

    Large bytes values and file slices are kept by reference as separate ``parts``.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._parts: list[Part] = []
        self._parts_size = 0

    def getvalue(self) -> bytes:
        """Everything written so far, as one value (not for frames holding file slices)."""
        if not self._parts:
            return bytes(self._buffer)
        pieces = [p for p in self._parts if isinstance(p, bytes)]
        if len(pieces) != len(self._parts):
            raise WireFormatError("a frame holding file slices is sent in parts, not joined")
        return b"".join([*pieces, self._buffer])

    def parts(self) -> list[Part]:
        """Everything written so far, large values and file slices as they were given."""
        return [*self._parts, bytes(self._buffer)] if self._buffer else list(self._parts)

    def __len__(self) -> int:
        return self._parts_size + len(self._buffer)

    def write_raw(self, data: bytes | bytearray | memoryview | FileSlice) -> None:
        """Append bytes as they are, with no length prefix."""
        if isinstance(data, FileSlice) or (isinstance(data, bytes) and len(data) >= SPLICE_BYTES):
            if self._buffer:
                self._parts.append(bytes(self._buffer))
                self._parts_size += len(self._buffer)
                self._buffer = bytearray()
            self._parts.append(data)
            self._parts_size += len(data)
        else:
            self._buffer += data

    def _fixed(self, layout: struct.Struct, value: float, what: str) -> None:
        try:
            self._buffer += layout.pack(value)
        except struct.error as exc:
            raise WireFormatError(f"{value!r} does not fit {what}: {exc}") from None

    def write_int8(self, value: int) -> None:
        """A signed 8-bit integer."""
        self._fixed(_INT8, value, "int8")

    def write_int16(self, value: int) -> None:
        """A signed big-endian 16-bit integer."""
        self._fixed(_INT16, value, "int16")

    def write_int32(self, value: int) -> None:
        """A signed big-endian 32-bit integer."""
        self._fixed(_INT32, value, "int32")

    def write_int64(self, value: int) -> None:
        """A signed big-endian 64-bit integer."""
        self._fixed(_INT64, value, "int64")

    def write_uint16(self, value: int) -> None:
        """An unsigned big-endian 16-bit integer."""
        self._fixed(_UINT16, value, "uint16")

    def write_uint32(self, value: int) -> None:
        """An unsigned big-endian 32-bit integer."""
        self._fixed(_UINT32, value, "uint32")

    def write_float64(self, value: float) -> None:
        """An IEEE 754 double, big-endian."""
        self._fixed(_FLOAT64, value, "float64")

    def write_boolean(self, value: bool) -> None:
        """One byte, 1 or 0; only a real bool is accepted, so a stray value is not coerced."""
        if not isinstance(value, bool):
            raise WireFormatError(f"{value!r} is not a boolean")
        self._buffer.append(1 if value else 0)

    def write_uuid(self, value: uuid.UUID) -> None:
        """A 16-byte UUID."""
        self._buffer += value.bytes

    def _base128(self, value: int, bits: int, what: str) -> None:
        if not 0 <= value < 1 << bits:
            raise WireFormatError(f"{value} does not fit {what}")
        while value >= 0x80:
            self._buffer.append((value & 0x7F) | 0x80)
            value >>= 7
        self._buffer.append(value)

    def write_unsigned_varint(self, value: int) -> None:
        """An unsigned varint of at most 32 bits."""
        self._base128(value, 32, "unsigned varint")

    def write_varint(self, value: int) -> None:
        """A zigzag-encoded signed 32-bit varint."""
        if not -(1 << 31) <= value < 1 << 31:
            raise WireFormatError(f"{value} does not fit varint")
        self._base128(_zigzag(value), 32, "varint")

    def write_varlong(self, value: int) -> None:
        """A zigzag-encoded signed 64-bit varint."""
        if not -(1 << 63) <= value < 1 << 63:
            raise WireFormatError(f"{value} does not fit varlong")
        self._base128(_zigzag(value), 64, "varlong")

    def write_nullable_string(self, value: str | None) -> None:
        """An int16 length (-1 for null) and the UTF-8 bytes."""
        if value is None:
            self.write_int16(-1)
            return
        encoded = value.encode("utf-8")
        if len(encoded) > 0x7FFF:
            raise WireFormatError(f"string of {len(encoded)} bytes exceeds int16 length")
        self.write_int16(len(encoded))
        self._buffer += encoded

    def write_string(self, value: str) -> None:
        """A non-null string."""
        self.write_nullable_string(_not_null(value, "string"))

    def write_compact_nullable_string(self, value: str | None) -> None:
        """An unsigned varint of length + 1 (0 for null) and the UTF-8 bytes."""
        self.write_compact_nullable_bytes(None if value is None else value.encode("utf-8"))

    def write_compact_string(self, value: str) -> None:
        """A non-null compact string."""
        self.write_compact_nullable_string(_not_null(value, "compact string"))

    def write_nullable_bytes(self, value: bytes | FileSlice | None) -> None:
        """An int32 length (-1 for null) and the bytes."""
        if value is None:
            self.write_int32(-1)
            return
        self.write_int32(len(value))
        self.write_raw(value)

    def write_bytes(self, value: bytes | FileSlice) -> None:
        """Non-null bytes."""
        if value is None:
            raise WireFormatError("null bytes where the field is not nullable")
        self.write_nullable_bytes(value)

    def write_compact_nullable_bytes(self, value: bytes | FileSlice | None) -> None:
        """An unsigned varint of length + 1 (0 for null) and the bytes."""
        if value is None:
            self.write_unsigned_varint(0)
            return
        self.write_unsigned_varint(len(value) + 1)
        self.write_raw(value)

    def write_compact_bytes(self, value: bytes | FileSlice) -> None:
        """Non-null compact bytes."""
        if value is None:
            raise WireFormatError("null compact bytes where the field is not nullable")
        self.write_compact_nullable_bytes(value)

    def write_nullable_array(
        self, items: Iterable[T] | None, element: Callable[[Writer, T], None]
    ) -> None:
        """An int32 count (-1 for null) and each element written by ``element``."""
        if items is None:
            self.write_int32(-1)
            return
        materialised = list(items)
        self.write_int32(len(materialised))
        self._elements(materialised, element)

    def write_array(self, items: Iterable[T], element: Callable[[Writer, T], None]) -> None:
        """A non-null array."""
        self.write_nullable_array(_not_null(items, "array"), element)

    def write_compact_nullable_array(
        self, items: Iterable[T] | None, element: Callable[[Writer, T], None]
    ) -> None:
        """An unsigned varint of count + 1 (0 for null) and each element."""
        if items is None:
            self.write_unsigned_varint(0)
            return
        materialised = list(items)
        self.write_unsigned_varint(len(materialised) + 1)
        self._elements(materialised, element)

    def write_compact_array(self, items: Iterable[T], element: Callable[[Writer, T], None]) -> None:
        """A non-null compact array."""
        self.write_compact_nullable_array(_not_null(items, "compact array"), element)

    def _elements(self, items: list[T], element: Callable[[Writer, T], None]) -> None:
        for index, item in enumerate(items):
            try:
                element(self, item)
            except WireFormatError as exc:
                raise exc.within(f"[{index}]") from None

    def write_tagged_fields(self, fields: dict[int, bytes]) -> None:
        """A tagged-fields section, tags in ascending order as the format requires."""
        self.write_unsigned_varint(len(fields))
        for tag in sorted(fields):
            # The size carries no +1: a tagged payload is never null.
            self.write_unsigned_varint(tag)
            self.write_unsigned_varint(len(fields[tag]))
            self._buffer += fields[tag]


def _zigzag(value: int) -> int:
    return value * 2 if value >= 0 else -value * 2 - 1


def _unzigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _not_null(value: T | None, what: str) -> T:
    if value is None:
        raise WireFormatError(f"null {what} where the field is not nullable")
    return value
