"""The broker's Kafka listener: Kafka's framed binary protocol on a TCP port, for any Kafka client.

Each connection is read one frame at a time and answered in order, as Kafka's network layer does
(a client may pipeline requests; it gets the responses in the order it sent them). The listener
only frames, decodes and encodes: what a request means is ``KafkaApis``'s business. A frame larger
than ``socket_request_max_bytes`` or bytes that do not decode close that connection with a log
line; the broker and every other connection go on.

The listener runs on the broker actor's event loop, so it needs no thread of its own, and it holds
no Ray or kazoo import: the broker hands it a handler coroutine.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.metadata import ListenerAddress, parse_listeners
from rafka.protocol.wire.headers import API_VERSIONS_KEY, RequestHeader
from rafka.protocol.wire.primitives import WireFormatError
from rafka.protocol.wire.registry import ApiRegistry

logger = logging.getLogger(__name__)

Handler = Callable[[RequestHeader, Mapping[str, Any]], Awaitable[Mapping[str, Any] | None]]
"""Answers one decoded request with a response body, or None when Kafka sends no response
(Produce with acks=0)."""

_SIZE = struct.Struct(">i")


def advertised_endpoints(bound: list[ListenerAddress], advertised: str) -> tuple[str, ...]:
    """What the broker registers: ``advertised_listeners`` (an empty host or port 0 in it taken
    from the bound listener of that protocol), or the bound listeners themselves."""
    if not advertised.strip():
        return tuple(str(address) for address in bound)
    by_protocol = {address.security_protocol: address for address in bound}
    endpoints = []
    for address in parse_listeners(advertised, "advertised_listeners"):
        listening = by_protocol.get(address.security_protocol)
        if listening is None:
            raise Errors.INVALID_CONFIG.exception(
                f"advertised_listeners: {address} has no listener of that protocol in listeners"
            )
        endpoints.append(
            str(
                ListenerAddress(
                    address.security_protocol,
                    address.host or listening.host,
                    address.port or listening.port,
                )
            )
        )
    return tuple(endpoints)


class KafkaListener:
    """A bound TCP socket serving Kafka's protocol with ``handler``; ``start`` begins accepting."""

    def __init__(
        self,
        address: ListenerAddress,
        default_host: str,
        registry: ApiRegistry,
        handler: Handler,
        max_request_bytes: int,
    ) -> None:
        host = address.host or default_host
        # Bound now, so the broker can register the port it really got (port 0: any free one).
        self._socket = socket.create_server(
            (host, address.port), family=_family(host), reuse_port=False
        )
        self.address = ListenerAddress(
            address.security_protocol, host, self._socket.getsockname()[1]
        )
        self._registry = registry
        self._handler = handler
        self._max_request_bytes = max_request_bytes
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        """Accept connections on the running event loop."""
        self._server = await asyncio.start_server(self._serve, sock=self._socket)

    @property
    def connections(self) -> int:
        """Connections open now."""
        return len(self._writers)

    async def close(self) -> None:
        """Stop accepting, close every open connection and the socket."""
        if self._server is None:
            self._socket.close()
            return
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        self._writers.add(writer)
        try:
            while True:
                try:
                    size_bytes = await reader.readexactly(_SIZE.size)
                except asyncio.IncompleteReadError:
                    return
                (size,) = _SIZE.unpack(size_bytes)
                if size < 0 or size > self._max_request_bytes:
                    logger.warning(
                        "closing %s: a request of %d bytes (socket.request.max.bytes is %d)",
                        peer,
                        size,
                        self._max_request_bytes,
                    )
                    return
                payload = await reader.readexactly(size)
                response = await self._answer(payload)
                if response is None:
                    continue
                writer.write(response)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            logger.debug("connection from %s ended: %s", peer, exc)
        except _CloseConnection as exc:
            logger.warning("closing %s: %s", peer, exc)
        except Exception:
            logger.exception("closing %s: its request failed", peer)
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, payload: bytes) -> bytes | None:
        """The response frame for one request frame, None if Kafka sends none; raises
        _CloseConnection when the request cannot be answered at all."""
        registry = self._registry
        try:
            request = registry.decode_request(payload)
        except WireFormatError as exc:
            raise _CloseConnection(f"malformed request: {exc}") from None
        except RafkaError as exc:
            # An api or version not served: its header was readable, so read it for the answer.
            header, _ = registry.read_request_header(payload)
            if exc.error is Errors.UNSUPPORTED_VERSION and header.api_key == API_VERSIONS_KEY:
                return registry.encode_unsupported_api_versions(header.correlation_id)
            raise _CloseConnection(str(exc)) from None
        body = await self._handler(request.header, request.body)
        if body is None:
            return None
        return registry.encode_response(request.header, body)


class _CloseConnection(Exception):
    """A request the listener cannot answer: the connection is closed, as Kafka does."""


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
