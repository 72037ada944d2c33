"""The declaration language for Kafka messages, and the codec every declaration gets from it.

A message is declared once as data, the way Kafka's ``clients/.../common/message/*.json`` files
declare it: an api key, the versions it is valid in, the versions that are "flexible" (KIP-482),
and fields, each with the versions it exists in, the versions it may be null in, and optionally a
tag making it a tagged field. Encoding and decoding at a given version are derived from that:

* a field outside its versions is neither written nor read; decoding gives it its default;
* in flexible versions strings, bytes and arrays use their compact forms and every struct ends
  with a tagged-fields section; a tagged field is written there only when it differs from its
  default, and unknown tags are skipped on decode;
* nested structs and arrays of structs follow the same rules recursively.

Decoded values are plain ``dict[str, Any]`` keyed by the snake_case field names, arrays are lists
and structs nested dicts, so a handler reads ``body["topics"][0]["name"]``. Encoding accepts any
mapping; a missing key takes the field's default and an undeclared key is an error (a typo would
otherwise vanish silently).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeAlias

from rafka.protocol.errors import Errors
from rafka.protocol.wire.primitives import Reader, WireFormatError, Writer

Body = dict[str, Any]
"""A decoded message or struct: field name to value."""

_UNSET: Any = object()


@dataclass(frozen=True)
class Versions:
    """An inclusive version range: ``"0+"``, ``"1-3"``, ``"3"`` or ``"none"`` in Kafka's syntax."""

    low: int
    high: int | None

    @staticmethod
    @cache
    def parse(text: str) -> Versions:
        """Parse Kafka's range syntax; ``"none"`` is the empty range."""
        if text == "none":
            return Versions(0, -1)
        if text.endswith("+"):
            return Versions(int(text[:-1]), None)
        low, _, high = text.partition("-")
        return Versions(int(low), int(high) if high else int(low))

    def __contains__(self, version: int) -> bool:
        return self.low <= version and (self.high is None or version <= self.high)

    @property
    def max(self) -> int:
        """The highest version of a closed range (open ranges have none)."""
        if self.high is None:
            raise ValueError(f"open range {self.low}+ has no maximum")
        return self.high


@dataclass(frozen=True)
class Primitive:
    """A fixed-width type: how to read and write it, and its zero value."""

    name: str
    zero: Any
    read: Callable[[Reader], Any]
    write: Callable[[Writer, Any], None]


@dataclass(frozen=True)
class Blob:
    """A length-prefixed type (string, bytes, records) whose prefix depends on the version."""

    name: str
    zero: Any
    text: bool


@dataclass(frozen=True)
class ArrayOf:
    """An array of ``element``, itself any type (arrays of structs included)."""

    element: WireType


@dataclass(frozen=True)
class Struct:
    """A named group of fields, used as a nested field's type or an array's element."""

    name: str
    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        _check_fields(self.name, self.fields)


WireType: TypeAlias = Primitive | Blob | ArrayOf | Struct
"""Any type a field may have."""

INT8 = Primitive("int8", 0, Reader.read_int8, Writer.write_int8)
INT16 = Primitive("int16", 0, Reader.read_int16, Writer.write_int16)
INT32 = Primitive("int32", 0, Reader.read_int32, Writer.write_int32)
INT64 = Primitive("int64", 0, Reader.read_int64, Writer.write_int64)
UINT16 = Primitive("uint16", 0, Reader.read_uint16, Writer.write_uint16)
UINT32 = Primitive("uint32", 0, Reader.read_uint32, Writer.write_uint32)
FLOAT64 = Primitive("float64", 0.0, Reader.read_float64, Writer.write_float64)
BOOL = Primitive("bool", False, Reader.read_boolean, Writer.write_boolean)
UUID = Primitive("uuid", uuid.UUID(int=0), Reader.read_uuid, Writer.write_uuid)
STRING = Blob("string", "", text=True)
BYTES = Blob("bytes", b"", text=False)
# A record batch set travels as (nullable) bytes; rafka.protocol.records parses the payload.
RECORDS = Blob("records", None, text=False)


@dataclass(frozen=True)
class Field:
    """One field of a struct or message, with the version ranges it obeys.

    ``versions``, ``nullable_versions`` and ``tagged_versions`` use Kafka's range syntax. A
    tagged field needs a ``tag``, unique within its struct. ``default`` replaces the type's zero
    value (0, False, "", b"", an empty array, a struct of defaults); it must be immutable.
    """

    name: str
    type: WireType
    versions: str = "0+"
    nullable_versions: str = "none"
    tagged_versions: str = "none"
    tag: int | None = None
    default: Any = _UNSET

    def __post_init__(self) -> None:
        tagged = Versions.parse(self.tagged_versions) != Versions.parse("none")
        if tagged != (self.tag is not None):
            raise ValueError(f"field {self.name}: a tag and tagged_versions go together")

    def present_in(self, version: int) -> bool:
        """Whether the field exists at ``version``."""
        return version in Versions.parse(self.versions)

    def nullable_in(self, version: int) -> bool:
        """Whether the field may be null at ``version``."""
        return version in Versions.parse(self.nullable_versions)

    def tagged_in(self, version: int) -> bool:
        """Whether the field travels in the tagged-fields section at ``version``."""
        return version in Versions.parse(self.tagged_versions)

    def default_value(self) -> Any:
        """The value the field takes when absent (a fresh list or dict for arrays and structs)."""
        if self.default is not _UNSET:
            return self.default
        return _zero(self.type)


def _zero(kind: WireType) -> Any:
    if isinstance(kind, (Primitive, Blob)):
        return kind.zero
    if isinstance(kind, ArrayOf):
        return []
    return {f.name: f.default_value() for f in kind.fields}


def _check_fields(owner: str, fields: tuple[Field, ...]) -> None:
    names = [f.name for f in fields]
    tags = [f.tag for f in fields if f.tag is not None]
    if len(set(names)) != len(names) or len(set(tags)) != len(tags):
        raise ValueError(f"{owner}: field names and tags must be unique")


@dataclass(frozen=True)
class Message:
    """A request or response body: api key, valid and flexible versions, and its fields."""

    api_key: int
    name: str
    valid_versions: str
    flexible_versions: str
    fields: tuple[Field, ...]
    _struct: Struct = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_struct", Struct(self.name, self.fields))

    @property
    def versions(self) -> Versions:
        """The versions this message is declared for."""
        return Versions.parse(self.valid_versions)

    def is_flexible(self, version: int) -> bool:
        """Whether ``version`` uses compact types and tagged fields."""
        return version in Versions.parse(self.flexible_versions)

    def _check_version(self, version: int) -> None:
        if version not in self.versions:
            raise Errors.UNSUPPORTED_VERSION.exception(
                f"{self.name} version {version} is outside {self.valid_versions}"
            )

    def write(self, writer: Writer, values: Mapping[str, Any], version: int) -> None:
        """Append the body of ``values`` at ``version`` to ``writer``."""
        self._check_version(version)
        _write_struct(writer, self._struct, values, version, self.is_flexible(version))

    def read(self, reader: Reader, version: int) -> Body:
        """Read a body at ``version`` from ``reader``; trailing bytes are left unread."""
        self._check_version(version)
        return _read_struct(reader, self._struct, version, self.is_flexible(version))

    def encode(self, values: Mapping[str, Any], version: int) -> bytes:
        """The body of ``values`` at ``version`` as bytes."""
        writer = Writer()
        self.write(writer, values, version)
        return writer.getvalue()

    def decode(self, data: bytes | bytearray | memoryview, version: int) -> Body:
        """Decode a body at ``version`` from ``data``."""
        return self.read(Reader(data), version)


@dataclass(frozen=True)
class Api:
    """One Kafka API: its request and response declarations, which share key and versions."""

    request: Message
    response: Message

    def __post_init__(self) -> None:
        if (self.request.api_key, self.request.valid_versions) != (
            self.response.api_key,
            self.response.valid_versions,
        ):
            raise ValueError(f"{self.name}: request and response disagree on key or versions")

    @property
    def key(self) -> int:
        """The api key."""
        return self.request.api_key

    @property
    def name(self) -> str:
        """The API's name, e.g. ``Metadata``."""
        return self.request.name.removesuffix("Request")

    @property
    def min_version(self) -> int:
        """The lowest version declared."""
        return self.request.versions.low

    @property
    def max_version(self) -> int:
        """The highest version declared."""
        return self.request.versions.max


# The "authorized operations" value meaning "not requested" (INT32_MIN), in Metadata and
# DescribeGroups.
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def declare_api(
    key: int,
    name: str,
    versions: str,
    flexible: str,
    request: tuple[Field, ...],
    response: tuple[Field, ...],
) -> Api:
    """An API whose request and response share key, valid versions and flexible versions."""
    return Api(
        Message(key, f"{name}Request", versions, flexible, request),
        Message(key, f"{name}Response", versions, flexible, response),
    )


# (text, flexible, nullable) -> how a string or bytes field is read and written.
_BLOB_CODECS: dict[
    tuple[bool, bool, bool], tuple[Callable[[Reader], Any], Callable[[Writer, Any], None]]
] = {
    (True, False, False): (Reader.read_string, Writer.write_string),
    (True, False, True): (Reader.read_nullable_string, Writer.write_nullable_string),
    (True, True, False): (Reader.read_compact_string, Writer.write_compact_string),
    (True, True, True): (Reader.read_compact_nullable_string, Writer.write_compact_nullable_string),
    (False, False, False): (Reader.read_bytes, Writer.write_bytes),
    (False, False, True): (Reader.read_nullable_bytes, Writer.write_nullable_bytes),
    (False, True, False): (Reader.read_compact_bytes, Writer.write_compact_bytes),
    (False, True, True): (Reader.read_compact_nullable_bytes, Writer.write_compact_nullable_bytes),
}


def _scalar_codec(
    kind: Primitive | Blob, flexible: bool, nullable: bool
) -> tuple[Callable[[Reader], Any], Callable[[Writer, Any], None]]:
    if isinstance(kind, Primitive):
        return kind.read, kind.write
    return _BLOB_CODECS[kind.text, flexible, nullable]


def _read_value(
    reader: Reader, kind: WireType, version: int, flexible: bool, nullable: bool
) -> Any:
    if isinstance(kind, (Primitive, Blob)):
        return _scalar_codec(kind, flexible, nullable)[0](reader)
    if isinstance(kind, Struct):
        if nullable:
            # Kafka writes a nullable struct as an int8 presence marker (-1 null, 1 present).
            if reader.read_int8() < 0:
                return None
        return _read_struct(reader, kind, version, flexible)

    def element(inner: Reader) -> Any:
        return _read_value(inner, kind.element, version, flexible, False)

    if flexible:
        if nullable:
            return reader.read_compact_nullable_array(element)
        return reader.read_compact_array(element)
    return reader.read_nullable_array(element) if nullable else reader.read_array(element)


def _write_value(
    writer: Writer, kind: WireType, value: Any, version: int, flexible: bool, nullable: bool
) -> None:
    if value is None and not nullable:
        raise WireFormatError(f"null {_type_name(kind)} where the field is not nullable")
    if isinstance(kind, (Primitive, Blob)):
        try:
            _scalar_codec(kind, flexible, nullable)[1](writer, value)
        except (TypeError, AttributeError):
            # A value of the wrong Python type; name the field rather than leak the TypeError.
            raise WireFormatError(f"{value!r} is not a {kind.name}") from None
    elif isinstance(kind, Struct):
        if nullable:
            writer.write_int8(-1 if value is None else 1)
        if value is not None:
            _write_struct(writer, kind, value, version, flexible)
    else:
        if value is not None and not isinstance(value, (list, tuple)):
            raise WireFormatError(f"{value!r} is not a list for {_type_name(kind)}")

        def element(inner: Writer, item: Any) -> None:
            _write_value(inner, kind.element, item, version, flexible, False)

        if flexible:
            writer.write_compact_nullable_array(value, element)
        else:
            writer.write_nullable_array(value, element)


def _type_name(kind: WireType) -> str:
    if isinstance(kind, ArrayOf):
        return f"[]{_type_name(kind.element)}"
    return kind.name


def _read_struct(reader: Reader, struct: Struct, version: int, flexible: bool) -> Body:
    body: Body = {}
    tagged: dict[int, Field] = {}
    for f in struct.fields:
        if not f.present_in(version):
            body[f.name] = f.default_value()
        elif flexible and f.tagged_in(version):
            assert f.tag is not None
            tagged[f.tag] = f
            body[f.name] = f.default_value()
        else:
            try:
                body[f.name] = _read_value(
                    reader, f.type, version, flexible, f.nullable_in(version)
                )
            except WireFormatError as exc:
                raise exc.within(f.name) from None
    if flexible:
        for tag, payload in reader.read_tagged_fields().items():
            known = tagged.get(tag)
            if known is None:
                continue  # KIP-482: a reader skips tags it does not know
            try:
                body[known.name] = _read_value(
                    Reader(payload), known.type, version, flexible, known.nullable_in(version)
                )
            except WireFormatError as exc:
                raise exc.within(known.name) from None
    return body


def _write_struct(
    writer: Writer, struct: Struct, values: Mapping[str, Any], version: int, flexible: bool
) -> None:
    declared = {f.name for f in struct.fields}
    unknown = [name for name in values if name not in declared]
    if unknown:
        raise WireFormatError(f"{struct.name} declares no field {', '.join(sorted(unknown))}")
    tagged: dict[int, bytes] = {}
    for f in struct.fields:
        if not f.present_in(version):
            continue
        value = values.get(f.name, _UNSET)
        if value is _UNSET:
            value = f.default_value()
        try:
            if flexible and f.tagged_in(version):
                if value != f.default_value():
                    assert f.tag is not None
                    payload = Writer()
                    _write_value(payload, f.type, value, version, flexible, f.nullable_in(version))
                    tagged[f.tag] = payload.getvalue()
            else:
                _write_value(writer, f.type, value, version, flexible, f.nullable_in(version))
        except WireFormatError as exc:
            raise exc.within(f.name) from None
    if flexible:
        writer.write_tagged_fields(tagged)
