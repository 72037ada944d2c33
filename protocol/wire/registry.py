"""The registry of declared APIs, the ApiVersions answer derived from it, and whole-frame codecs.

A listener hands ``decode_request`` the payload of one frame and gets the header and the body;
it answers with ``encode_response``, which picks the response header version from the request's
api and version. ``encode_request`` and ``decode_response`` are the client's side of the same
exchange (used by tests and tools).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rafka.protocol.errors import Errors
from rafka.protocol.wire.apis import API_VERSIONS, DECLARED_APIS
from rafka.protocol.wire.headers import (
    RequestHeader,
    ResponseHeader,
    encode_frame,
    frame_parts,
    request_header_version,
    response_header_version,
)
from rafka.protocol.wire.primitives import Part, Reader, Writer
from rafka.protocol.wire.schema import Api, Body


@dataclass(frozen=True)
class VersionRange:
    """The versions of one API a broker serves, as the ApiVersions answer lists them."""

    api_key: int
    min_version: int
    max_version: int


class ApiRegistry:
    """The APIs a broker serves, keyed by api key."""

    def __init__(self, apis: Iterable[Api] = DECLARED_APIS) -> None:
        self._apis: dict[int, Api] = {}
        for api in apis:
            if api.key in self._apis:
                raise ValueError(f"api key {api.key} declared twice")
            self._apis[api.key] = api

    def __contains__(self, api_key: int) -> bool:
        return api_key in self._apis

    def api(self, api_key: int, api_version: int) -> Api:
        """The API for ``api_key``; raises UnsupportedVersionError if the key or version is not."""
        api = self._apis.get(api_key)
        if api is None:
            raise Errors.UNSUPPORTED_VERSION.exception(f"api key {api_key} is not supported")
        if api_version not in api.request.versions:
            raise Errors.UNSUPPORTED_VERSION.exception(
                f"{api.name} version {api_version} is outside {api.min_version}-{api.max_version}"
            )
        return api

    def supported_versions(self) -> list[VersionRange]:
        """Every api key with its min and max version, in api-key order."""
        return [
            VersionRange(key, api.min_version, api.max_version)
            for key, api in sorted(self._apis.items())
        ]

    def is_flexible(self, api_key: int, api_version: int) -> bool:
        """Whether the request version is flexible; unknown keys and versions count as not."""
        api = self._apis.get(api_key)
        return api is not None and api.request.is_flexible(api_version)

    def request_header_version(self, api_key: int, api_version: int) -> int:
        """The request header version a client uses for this api and version."""
        return request_header_version(api_key, api_version, self.is_flexible(api_key, api_version))

    def api_versions_body(
        self, error: Errors = Errors.NONE, throttle_time_ms: int = 0
    ) -> dict[str, Any]:
        """The ApiVersions response body listing every served api key and version range."""
        return {
            "error_code": int(error),
            "api_keys": [
                {"api_key": r.api_key, "min_version": r.min_version, "max_version": r.max_version}
                for r in self.supported_versions()
            ],
            "throttle_time_ms": throttle_time_ms,
        }

    def read_request_header(
        self, payload: bytes | bytearray | memoryview
    ) -> tuple[RequestHeader, Reader]:
        """The request header of a frame's payload and a reader positioned at the body."""
        reader = Reader(payload)
        return RequestHeader.read(reader, self.request_header_version), reader

    def decode_request(self, payload: bytes | bytearray | memoryview) -> WireRequest:
        """Decode one request frame's payload (the bytes after the size).

        Raises WireFormatError for malformed bytes and UnsupportedVersionError for an api key or
        version not served; a listener that must still answer reads the header first with
        ``read_request_header``.
        """
        header, reader = self.read_request_header(payload)
        api = self.api(header.api_key, header.api_version)
        return WireRequest(header, api.request.read(reader, header.api_version))

    def encode_response(self, header: RequestHeader, body: Mapping[str, Any]) -> bytes:
        """The size-prefixed response frame answering the request with ``header``."""
        return encode_frame(self._response(header, body).getvalue())

    def response_parts(self, header: RequestHeader, body: Mapping[str, Any]) -> list[Part]:
        """The same frame as parts, so large record sets and file slices in a Fetch answer
        reach the socket without being copied into it."""
        return frame_parts(self._response(header, body).parts())

    def _response(self, header: RequestHeader, body: Mapping[str, Any]) -> Writer:
        api = self.api(header.api_key, header.api_version)
        flexible = api.response.is_flexible(header.api_version)
        writer = Writer()
        ResponseHeader(header.correlation_id).write(
            writer, response_header_version(header.api_key, flexible)
        )
        api.response.write(writer, body, header.api_version)
        return writer

    def encode_unsupported_api_versions(self, correlation_id: int) -> bytes:
        """The answer to an ApiVersions request at a version not served (KIP-511).

        The broker replies in version 0, which every client can read, with UNSUPPORTED_VERSION
        and its ranges, so the client can retry at a version both sides know.
        """
        body = self.api_versions_body(Errors.UNSUPPORTED_VERSION)
        return self.encode_response(RequestHeader(API_VERSIONS.key, 0, correlation_id), body)

    def encode_request(self, header: RequestHeader, body: Mapping[str, Any]) -> bytes:
        """The size-prefixed request frame a client sends."""
        api = self.api(header.api_key, header.api_version)
        writer = Writer()
        header.write(writer, self.request_header_version(header.api_key, header.api_version))
        api.request.write(writer, body, header.api_version)
        return encode_frame(writer.getvalue())

    def decode_response(
        self, payload: bytes | bytearray | memoryview, request: RequestHeader
    ) -> tuple[ResponseHeader, Body]:
        """Decode a response frame's payload answering ``request``."""
        api = self.api(request.api_key, request.api_version)
        flexible = api.response.is_flexible(request.api_version)
        reader = Reader(payload)
        header = ResponseHeader.read(reader, response_header_version(request.api_key, flexible))
        return header, api.response.read(reader, request.api_version)


@dataclass(frozen=True)
class WireRequest:
    """A decoded request: its header and its body."""

    header: RequestHeader
    body: Body


DEFAULT_REGISTRY = ApiRegistry()
"""The registry of every API declared in ``rafka.protocol.wire.apis``."""
