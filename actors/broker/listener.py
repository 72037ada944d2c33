"""The broker's Kafka listener: Kafka's framed binary protocol on a TCP port, for any Kafka client.

Each connection is answered in order, as Kafka's network layer does: a client may pipeline
requests and gets the responses in the order it sent them. Requests are taken one at a time, but
a request may leave the slow end of its work running and let the next one in (a produce, once
its batches are queued in order for their partitions' next appends): its handler answers
``Deferred``, and a writer task sends every response in its turn. The listener only frames,
decodes and encodes: what a request means is ``KafkaApis``'s business. A frame larger than
``socket_request_max_bytes`` or bytes that do not decode close that connection with a log line;
the broker and every other connection go on. A request over its client's quota mutes its
connection (``throttle_connection``): its response is sent at once, telling the throttle time, and
the connection's next request is read once that time is over, as Kafka 2.0+ does (KIP-219); the
other connections are served meanwhile.

An SSL listener wraps each connection in TLS (the broker hands it the ``ssl.SSLContext``); a
client that fails the handshake (plaintext bytes, an untrusted certificate, none where one is
required) is dropped before any request is read. Each connection's task knows its listener's name
(``connection_listener``), since Kafka answers Metadata with the endpoints of the listener the
request came in on, and its principal and host (``connection_principal``, ``connection_host``),
which the authorizer checks.

A SASL listener logs each connection in first (``rafka.actors.broker.authentication``): until
then a connection may send only ApiVersions and the SASL requests, in frames no larger than
``sasl_server_max_receive_size``, and a failed login is answered, logged and closed.

The listener runs on the broker actor's event loop, so it needs no thread of its own, and it holds
no Ray or kazoo import: the broker hands it a handler coroutine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
import struct
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from rafka.actors.broker.authentication import AuthenticationRefused, SaslSettings, screen
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.fetch import FileRegion
from rafka.protocol.messages.metadata import ListenerAddress, parse_listeners
from rafka.protocol.wire.headers import API_VERSIONS_KEY, RequestHeader
from rafka.protocol.wire.primitives import FileSlice, Part, WireFormatError
from rafka.protocol.wire.registry import ApiRegistry, WireRequest
from rafka.security.principal import ANONYMOUS, KafkaPrincipal, certificate_principal
from rafka.security.sasl import SaslSession, SaslState

logger = logging.getLogger(__name__)

Body = Mapping[str, Any]


@dataclass(frozen=True)
class Deferred:
    """A request whose ordered part is done: the connection's next request may start while
    ``body`` (its response body, or None for none) completes; it is still answered in turn."""

    body: Awaitable[Body | None]


Handler = Callable[[RequestHeader, Body], Awaitable[Body | Deferred | None]]
Observer = Callable[[str, float], None]
"""Told each answered request's type (Kafka's request name) and its time in milliseconds."""
"""Answers one decoded request with a response body, None when Kafka sends no response (Produce
with acks=0), or ``Deferred``."""

Frame = list[Part]
"""An encoded response: its size prefix and parts, file slices among them sent with sendfile."""

_SIZE = struct.Struct(">i")
# Responses a connection may have pending before the listener stops reading its requests; librdkafka
# keeps up to a million requests in flight, and TCP's backpressure is what slows it down.
MAX_PENDING_RESPONSES = 100
# Longest a client may take over its TLS handshake before its connection is dropped.
SSL_HANDSHAKE_TIMEOUT_S = 10.0

_CONNECTION_LISTENER: ContextVar[str] = ContextVar("connection_listener", default="PLAINTEXT")
_CONNECTION_PRINCIPAL: ContextVar[KafkaPrincipal] = ContextVar(
    "connection_principal", default=ANONYMOUS
)
_CONNECTION_HOST: ContextVar[str] = ContextVar("connection_host", default="127.0.0.1")


class _Mute:
    """When a connection's next request may be read: until then it is muted (Kafka's channel
    muted for a quota's throttle time)."""

    def __init__(self) -> None:
        self.until = 0.0


_CONNECTION_MUTE: ContextVar[_Mute | None] = ContextVar("connection_mute", default=None)


def connection_listener() -> str:
    """The name of the listener whose connection the running request came in on (PLAINTEXT
    outside any connection's task)."""
    return _CONNECTION_LISTENER.get()


def connection_principal() -> KafkaPrincipal:
    """Who the running request's connection is: its SASL user, its client certificate's
    subject, or ``User:ANONYMOUS``."""
    return _CONNECTION_PRINCIPAL.get()


def connection_host() -> str:
    """The address the running request's connection came from (what ACLs call its host)."""
    return _CONNECTION_HOST.get()


def throttle_connection(throttle_ms: int) -> None:
    """Mute the running request's connection for ``throttle_ms``: its responses go on being sent,
    but its next request is not read before then, as Kafka mutes a throttled client's channel
    (KIP-219); no-op outside a connection's task."""
    mute = _CONNECTION_MUTE.get()
    if mute is not None and throttle_ms > 0:
        mute.until = max(mute.until, time.monotonic() + throttle_ms / 1000)


def advertised_endpoints(bound: list[ListenerAddress], advertised: str) -> tuple[str, ...]:
    """What the broker registers: ``advertised_listeners`` (an empty host or port 0 in it taken
    from the bound listener of that name), or the bound listeners themselves."""
    if not advertised.strip():
        return tuple(str(address) for address in bound)
    by_name = {address.listener_name: address for address in bound}
    endpoints = []
    for address in parse_listeners(advertised, "advertised_listeners"):
        listening = by_name.get(address.listener_name)
        if listening is None:
            raise Errors.INVALID_CONFIG.exception(
                f"advertised_listeners: {address} has no listener of that name in listeners"
            )
        endpoints.append(
            str(
                ListenerAddress(
                    address.listener_name,
                    address.host or listening.host,
                    address.port or listening.port,
                )
            )
        )
    return tuple(endpoints)


class KafkaListener:
    """A bound TCP socket serving Kafka's protocol with ``handler``, over TLS with ``ssl_context``
    and logging connections in with ``sasl``; ``start`` begins accepting."""

    def __init__(
        self,
        address: ListenerAddress,
        default_host: str,
        registry: ApiRegistry,
        handler: Handler,
        max_request_bytes: int,
        observe: Observer | None = None,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslSettings | None = None,
    ) -> None:
        host = address.host or default_host
        # Bound now, so the broker can register the port it really got (port 0: any free one).
        self._socket = socket.create_server(
            (host, address.port), family=_family(host), reuse_port=False
        )
        self.address = ListenerAddress(address.listener_name, host, self._socket.getsockname()[1])
        self._registry = registry
        self._handler = handler
        self._observe = observe
        self._max_request_bytes = max_request_bytes
        self._ssl_context = ssl_context
        self._sasl = sasl
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._serving: set[asyncio.Task[Any]] = set()
        self._closing = asyncio.Event()

    async def start(self) -> None:
        """Accept connections on the running event loop."""
        self._server = await asyncio.start_server(
            self._serve,
            sock=self._socket,
            ssl=self._ssl_context,
            ssl_handshake_timeout=SSL_HANDSHAKE_TIMEOUT_S if self._ssl_context else None,
        )

    @property
    def connections(self) -> int:
        """Connections open now."""
        return len(self._writers)

    async def close(self) -> None:
        """Stop accepting, close every open connection and the socket."""
        self._closing.set()
        if self._server is None:
            self._socket.close()
            return
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()
        # Each connection ends once its writer is closed; wait for them to finish their cleanup.
        await asyncio.gather(*self._serving, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        _CONNECTION_LISTENER.set(self.address.listener_name)
        if peer:
            _CONNECTION_HOST.set(str(peer[0]))
        certificate = writer.get_extra_info("peercert")
        if certificate:
            _CONNECTION_PRINCIPAL.set(certificate_principal(certificate["subject"]))
        mute = _Mute()
        _CONNECTION_MUTE.set(mute)
        session = self._sasl.session() if self._sasl is not None else None
        # As Kafka's acceptor does: a Fetch answer goes out in several writes (its head, then each
        # partition's records), and Nagle's algorithm would hold the last of them until the
        # client's delayed acknowledgement, some 40 ms.
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._writers.add(writer)
        serving = asyncio.current_task()
        if serving is not None:
            self._serving.add(serving)
        pending: asyncio.Queue[asyncio.Future[Frame | None] | None] = asyncio.Queue(
            MAX_PENDING_RESPONSES
        )
        sender = asyncio.ensure_future(_send_in_order(pending, writer))
        try:
            while not sender.done():
                payload = await self._read_frame(reader, peer, session)
                if payload is None:
                    break
                response = await self._answer(payload, session)
                if not await _enqueue(pending, response, sender):
                    break
                if session is not None and not self._logged_in(session, peer):
                    break
                await self._unmuted(mute)
            await _enqueue(pending, None, sender)
            await sender
            if self._sasl is not None and session is not None:
                if session.state is SaslState.FAILED:
                    await asyncio.sleep(self._sasl.failure_delay_s)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            logger.debug("connection from %s ended: %s", peer, exc)
        except _CloseConnection as exc:
            logger.warning("closing %s: %s", peer, exc)
        except Exception:
            logger.exception("closing %s: its request failed", peer)
        finally:
            sender.cancel()
            while not pending.empty():
                if (unsent := pending.get_nowait()) is not None:
                    _drop(unsent)
            self._writers.discard(writer)
            if serving is not None:
                self._serving.discard(serving)
            writer.close()

    async def _unmuted(self, mute: _Mute) -> None:
        """Wait until a muted connection's throttle time is over (at once when the listener
        closes)."""
        delay = mute.until - time.monotonic()
        if delay > 0:
            # asyncio's own TimeoutError: on Python 3.10 it is not the builtin one.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._closing.wait(), delay)

    def _logged_in(self, session: SaslSession, peer: Any) -> bool:
        """Whether the connection goes on after its last request: False once its login failed
        (logged here, as Kafka logs a failed authentication)."""
        if session.state is SaslState.FAILED:
            logger.warning(
                "Failed authentication with %s (%s, SASL mechanism %s)",
                peer,
                session.failure,
                session.mechanism,
            )
            return False
        if session.state is SaslState.COMPLETE and session.principal is not None:
            if _CONNECTION_PRINCIPAL.get() != session.principal:
                _CONNECTION_PRINCIPAL.set(session.principal)
                logger.debug("%s authenticated as %s", peer, session.principal)
        return True

    async def _read_frame(
        self, reader: asyncio.StreamReader, peer: Any, session: SaslSession | None
    ) -> bytes | None:
        """The next request frame's payload; None at the end of the stream, or when the frame is
        too large to read (the connection is then closed)."""
        try:
            size_bytes = await reader.readexactly(_SIZE.size)
        except asyncio.IncompleteReadError:
            return None
        (size,) = _SIZE.unpack(size_bytes)
        limit, setting = self._max_request_bytes, "socket.request.max.bytes"
        if (
            self._sasl is not None
            and session is not None
            and session.state is not SaslState.COMPLETE
        ):
            limit, setting = self._sasl.max_receive_bytes, "sasl.server.max.receive.size"
        if size < 0 or size > limit:
            logger.warning(
                "closing %s: a request of %d bytes (%s is %d)", peer, size, setting, limit
            )
            return None
        return await reader.readexactly(size)

    async def _answer(
        self, payload: bytes, session: SaslSession | None = None
    ) -> asyncio.Future[Frame | None]:
        """The response frame for one request frame, None if Kafka sends none, as a future that
        is done unless the handler deferred part of the work; raises _CloseConnection when the
        request cannot be answered at all."""
        registry = self._registry
        answered: asyncio.Future[Frame | None] = asyncio.get_running_loop().create_future()
        try:
            request = registry.decode_request(payload)
        except WireFormatError as exc:
            raise _CloseConnection(f"malformed request: {exc}") from None
        except RafkaError as exc:
            # An api or version not served: its header was readable, so read it for the answer.
            header, _ = registry.read_request_header(payload)
            if exc.error is Errors.UNSUPPORTED_VERSION and header.api_key == API_VERSIONS_KEY:
                answered.set_result(
                    [registry.encode_unsupported_api_versions(header.correlation_id)]
                )
                return answered
            raise _CloseConnection(str(exc)) from None
        if session is not None:
            try:
                reply = screen(session, request.header, request.body)
            except AuthenticationRefused as exc:
                raise _CloseConnection(str(exc)) from None
            if reply is not None:
                answered.set_result(registry.response_parts(request.header, reply))
                return answered
        started = time.perf_counter()
        body = await self._handler(request.header, request.body)
        if not isinstance(body, Deferred):
            answered.set_result(
                None if body is None else registry.response_parts(request.header, body)
            )
            self._observed(request, started)
            return answered

        async def encoded(later: Awaitable[Body | None]) -> Frame | None:
            done = await later
            self._observed(request, started)
            return None if done is None else registry.response_parts(request.header, done)

        return asyncio.ensure_future(encoded(body.body))

    def _observed(self, request: WireRequest, started: float) -> None:
        """Report the request's type and time to the observer, as Kafka's RequestMetrics name
        them: a Fetch is FetchConsumer or FetchFollower by its replica id."""
        if self._observe is None:
            return
        header = request.header
        name = self._registry.api(header.api_key, header.api_version).name
        if name == "Fetch":
            name = "FetchFollower" if request.body.get("replica_id", -1) >= 0 else "FetchConsumer"
        self._observe(name, (time.perf_counter() - started) * 1000)


async def _enqueue(
    pending: asyncio.Queue[asyncio.Future[Frame | None] | None],
    response: asyncio.Future[Frame | None] | None,
    sender: asyncio.Future[None],
) -> bool:
    """Queue a response (None: no more) for the sender; False if the sender has stopped."""
    if not pending.full():
        pending.put_nowait(response)
        return True
    queued = asyncio.ensure_future(pending.put(response))
    await asyncio.wait((queued, sender), return_when=asyncio.FIRST_COMPLETED)
    if queued.done():
        return True
    queued.cancel()
    return False


async def _send_in_order(
    pending: asyncio.Queue[asyncio.Future[Frame | None] | None], writer: asyncio.StreamWriter
) -> None:
    """Write each queued response as it completes, in the order the requests came; a response
    that fails closes the connection, so the reader stops too."""
    try:
        while (response := await pending.get()) is not None:
            frame = await response
            if frame is not None:
                await _send_frame(frame, writer)
    except BaseException:
        writer.close()
        raise


async def _send_frame(frame: Frame, writer: asyncio.StreamWriter) -> None:
    """Write one frame's parts; file slices go from the file to the socket with ``sendfile``."""
    try:
        for part in frame:
            if isinstance(part, bytes):
                writer.write(part)
                continue
            sent = await asyncio.get_running_loop().sendfile(
                writer.transport, part.file, part.position, part.size
            )
            if sent != part.size:
                # The size prefix promised more than the file still holds: the frame cannot be
                # completed, so the connection goes (the client reconnects and fetches again).
                raise ConnectionError(f"sent {sent} of a {part.size}-byte file slice")
        await writer.drain()
    finally:
        close_slices(frame)


def open_region(region: FileRegion) -> FileSlice | None:
    """A replica's file region opened for sending, or None if that file is gone or is no longer
    the one read (a segment deleted or compacted since), and the bytes must be read instead.

    Below the high watermark a segment file only grows, so the open file keeps the region's bytes
    until they are sent, even if the segment is deleted meanwhile.
    """
    try:
        file = open(region.path, "rb")
    except OSError:
        return None
    stat = os.fstat(file.fileno())
    if stat.st_ino != region.inode or stat.st_size < region.position + region.size:
        file.close()
        return None
    return FileSlice(file, region.position, region.size)


def close_slices(frame: Frame) -> None:
    """Close the files of a frame's slices (sent, or dropped with their connection)."""
    for part in frame:
        if isinstance(part, FileSlice):
            part.file.close()


def _drop(unsent: asyncio.Future[Frame | None]) -> None:
    """Cancel a response never sent, closing the files of one already encoded."""
    if unsent.done() and not unsent.cancelled() and unsent.exception() is None:
        if (frame := unsent.result()) is not None:
            close_slices(frame)
    unsent.cancel()


class _CloseConnection(Exception):
    """A request the listener cannot answer: the connection is closed, as Kafka does."""


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
