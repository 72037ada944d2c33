"""The Kafka listener: its config syntax, and framing on a real loopback socket with a fake
handler (one connection's responses in order, deferred ones too; bad frames close only that
connection; a throttled connection muted while the others are served); on a SASL listener, the
login that comes before any request reaches the handler."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import struct
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from kafka.net.sasl.scram import ScramClient

from rafka.actors.broker.authentication import SaslSettings
from rafka.actors.broker.listener import (
    Deferred,
    KafkaListener,
    advertised_endpoints,
    connection_principal,
    open_region,
    throttle_connection,
)
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.fetch import FileRegion
from rafka.protocol.messages.metadata import ListenerAddress, parse_listeners
from rafka.protocol.wire.headers import API_VERSIONS_KEY, RequestHeader
from rafka.protocol.wire.primitives import FileSlice
from rafka.protocol.wire.registry import DEFAULT_REGISTRY
from rafka.protocol.wire.sasl_apis import SASL_AUTHENTICATE, SASL_HANDSHAKE
from rafka.security.principal import ANONYMOUS, KafkaPrincipal
from rafka.security.sasl import SaslSession
from rafka.security.scram import CredentialCache, ScramCredential, ScramMechanism

pytestmark = pytest.mark.timeout(60)


def test_listeners_parse_kafkas_syntax_with_an_empty_host_and_port_0_allowed() -> None:
    assert parse_listeners("PLAINTEXT://:0") == [ListenerAddress("PLAINTEXT", "", 0)]
    assert parse_listeners(" plaintext://10.0.0.1:9092 ") == [
        ListenerAddress("PLAINTEXT", "10.0.0.1", 9092)
    ]
    assert parse_listeners("PLAINTEXT://[::1]:9092") == [ListenerAddress("PLAINTEXT", "::1", 9092)]
    assert parse_listeners("") == []


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("localhost:9092", "is not NAME://host:port"),
        ("PLAINTEXT://host", "is not NAME://host:port"),
        ("PLAINTEXT://host:99999", "is not NAME://host:port"),
        ("PLAIN-TEXT://host:9093", "listener name 'PLAIN-TEXT'"),
        ("PLAINTEXT://a:1,PLAINTEXT://b:2", "names a listener twice"),
    ],
)
def test_a_malformed_listener_is_invalid_config_naming_it(value: str, named: str) -> None:
    with pytest.raises(RafkaError) as raised:
        parse_listeners(value)
    assert raised.value.error is Errors.INVALID_CONFIG
    assert named in str(raised.value)


def test_advertised_listeners_default_to_the_bound_ones_and_fill_in_host_and_port() -> None:
    bound = [ListenerAddress("PLAINTEXT", "127.0.0.1", 40001)]
    assert advertised_endpoints(bound, "") == ("PLAINTEXT://127.0.0.1:40001",)
    assert advertised_endpoints(bound, "PLAINTEXT://kafka.example:0") == (
        "PLAINTEXT://kafka.example:40001",
    )
    assert advertised_endpoints(bound, "PLAINTEXT://:9092") == ("PLAINTEXT://127.0.0.1:9092",)


def test_an_advertised_listener_without_a_bound_one_of_its_protocol_is_invalid_config() -> None:
    with pytest.raises(RafkaError) as raised:
        advertised_endpoints([], "PLAINTEXT://h:9092")
    assert raised.value.error is Errors.INVALID_CONFIG


def metadata_frame(correlation_id: int) -> bytes:
    return DEFAULT_REGISTRY.encode_request(
        RequestHeader(3, 1, correlation_id, "test"), {"topics": []}
    )


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    try:
        size = await reader.readexactly(4)
    except asyncio.IncompleteReadError:
        return b""
    return await reader.readexactly(struct.unpack(">i", size)[0])


def test_pipelined_requests_are_answered_in_order_and_bad_bytes_close_only_their_connection() -> (
    None
):
    async def scenario() -> None:
        async def handler(header: RequestHeader, _body: Mapping[str, Any]) -> dict[str, Any]:
            # The first request is the slowest: its answer must still come first.
            await asyncio.sleep(0.05 if header.correlation_id == 1 else 0)
            return {"brokers": [], "controller_id": header.correlation_id, "topics": []}

        listener = KafkaListener(
            ListenerAddress("PLAINTEXT", "127.0.0.1", 0), "", DEFAULT_REGISTRY, handler, 1024
        )
        await listener.start()
        port = listener.address.port
        assert port > 0
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(metadata_frame(1) + metadata_frame(2) + metadata_frame(3))
        ids = []
        for _ in range(3):
            _, body = DEFAULT_REGISTRY.decode_response(
                await read_frame(reader), RequestHeader(3, 1, 0)
            )
            ids.append(body["controller_id"])
        assert ids == [1, 2, 3]
        bad_reader, bad_writer = await asyncio.open_connection("127.0.0.1", port)
        bad_writer.write(struct.pack(">i", 4096))  # over the listener's 1024-byte limit
        assert await read_frame(bad_reader) == b""
        writer.write(metadata_frame(4))
        _, body = DEFAULT_REGISTRY.decode_response(await read_frame(reader), RequestHeader(3, 1, 0))
        assert body["controller_id"] == 4
        writer.close()
        bad_writer.close()
        await listener.close()

    asyncio.run(scenario())


def test_a_deferred_answer_lets_the_next_request_in_and_is_still_sent_first() -> None:
    async def scenario() -> None:
        second_taken = asyncio.Event()

        async def first_answer() -> dict[str, Any]:
            await second_taken.wait()
            return {"brokers": [], "controller_id": 1, "topics": []}

        async def handler(header: RequestHeader, _body: Mapping[str, Any]) -> Any:
            if header.correlation_id == 1:
                return Deferred(first_answer())
            # Request 1's answer waits for this one to be taken: a listener that took requests
            # strictly one after another would never get here.
            second_taken.set()
            return {"brokers": [], "controller_id": header.correlation_id, "topics": []}

        listener = KafkaListener(
            ListenerAddress("PLAINTEXT", "127.0.0.1", 0), "", DEFAULT_REGISTRY, handler, 1024
        )
        await listener.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.address.port)
        writer.write(metadata_frame(1) + metadata_frame(2))
        ids = []
        for _ in range(2):
            header, body = DEFAULT_REGISTRY.decode_response(
                await asyncio.wait_for(read_frame(reader), 10), RequestHeader(3, 1, 0)
            )
            ids.append((header.correlation_id, body["controller_id"]))
        assert ids == [(1, 1), (2, 2)]
        writer.close()
        await listener.close()

    asyncio.run(scenario())


def test_a_deferred_answer_that_fails_closes_its_connection() -> None:
    async def scenario() -> None:
        async def broken() -> dict[str, Any]:
            raise RuntimeError("the replica went away")

        async def handler(header: RequestHeader, _body: Mapping[str, Any]) -> Any:
            if header.correlation_id == 1:
                return Deferred(broken())
            return {"brokers": [], "controller_id": header.correlation_id, "topics": []}

        listener = KafkaListener(
            ListenerAddress("PLAINTEXT", "127.0.0.1", 0), "", DEFAULT_REGISTRY, handler, 1024
        )
        await listener.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.address.port)
        writer.write(metadata_frame(1) + metadata_frame(2))
        assert await asyncio.wait_for(read_frame(reader), 10) == b""
        writer.close()
        await asyncio.wait_for(listener.close(), 10)
        assert listener.connections == 0

    asyncio.run(scenario())


def test_a_request_without_a_response_sends_nothing_and_the_next_one_is_answered() -> None:
    async def scenario() -> None:
        async def handler(header: RequestHeader, _body: Mapping[str, Any]) -> Any:
            if header.correlation_id == 1:
                return None
            return {"brokers": [], "controller_id": header.correlation_id, "topics": []}

        listener = KafkaListener(
            ListenerAddress("PLAINTEXT", "127.0.0.1", 0), "", DEFAULT_REGISTRY, handler, 1024
        )
        await listener.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.address.port)
        writer.write(metadata_frame(1) + metadata_frame(2))
        header, _ = DEFAULT_REGISTRY.decode_response(
            await read_frame(reader), RequestHeader(3, 1, 0)
        )
        assert header.correlation_id == 2
        writer.close()
        await listener.close()

    asyncio.run(scenario())


def test_closing_the_listener_closes_its_open_connections() -> None:
    async def scenario() -> None:
        async def handler(header: RequestHeader, _body: Mapping[str, Any]) -> dict[str, Any]:
            return {"brokers": [], "controller_id": header.correlation_id, "topics": []}

        listener = KafkaListener(
            ListenerAddress("PLAINTEXT", "127.0.0.1", 0), "", DEFAULT_REGISTRY, handler, 1024
        )
        await listener.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.address.port)
        writer.write(metadata_frame(1))
        assert await read_frame(reader)
        assert listener.connections == 1
        await asyncio.wait_for(listener.close(), 5)
        assert await read_frame(reader) == b""
        assert listener.connections == 0
        writer.close()

    asyncio.run(scenario())


def fetch_answer(records: Any) -> dict[str, Any]:
    partition = {
        "partition_index": 0,
        "error_code": 0,
        "high_watermark": 1,
        "last_stable_offset": 1,
        "log_start_offset": 0,
        "aborted_transactions": None,
        "records": records,
    }
    return {"error_code": 0, "responses": [{"topic": "t", "partitions": [partition]}]}


def fetch_frame(correlation_id: int) -> bytes:
    body = {"max_wait_ms": 0, "min_bytes": 1, "topics": []}
    return DEFAULT_REGISTRY.encode_request(RequestHeader(1, 12, correlation_id, "test"), body)


def test_a_file_slice_is_sent_from_the_file_and_closed_and_the_next_answer_follows(
    tmp_path: Path,
) -> None:
    content = bytes(range(251)) * 4_000  # about 1 MB, more than a socket buffer takes at once
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(content)
    stat = path.stat()
    region = FileRegion(str(path), stat.st_ino, 1_000, len(content) - 2_000)
    opened: list[FileSlice] = []

    async def scenario() -> None:
        async def handler(header: RequestHeader, _body: Mapping[str, Any]) -> dict[str, Any]:
            if header.api_key == 1:
                piece = open_region(region)
                assert piece is not None
                opened.append(piece)
                return fetch_answer(piece)
            return {"brokers": [], "controller_id": header.correlation_id, "topics": []}

        listener = KafkaListener(
            ListenerAddress("PLAINTEXT", "127.0.0.1", 0), "", DEFAULT_REGISTRY, handler, 1024
        )
        await listener.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.address.port)
        writer.write(fetch_frame(1) + metadata_frame(2))
        _, fetched = DEFAULT_REGISTRY.decode_response(
            await asyncio.wait_for(read_frame(reader), 10), RequestHeader(1, 12, 1)
        )
        header, body = DEFAULT_REGISTRY.decode_response(
            await asyncio.wait_for(read_frame(reader), 10), RequestHeader(3, 1, 2)
        )
        records = fetched["responses"][0]["partitions"][0]["records"]
        assert records == content[1_000:-1_000]
        assert (header.correlation_id, body["controller_id"]) == (2, 2)
        writer.close()
        await listener.close()

    asyncio.run(scenario())
    assert len(opened) == 1 and opened[0].file.closed


def test_a_region_of_a_replaced_shortened_or_missing_file_is_not_opened(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"x" * 100)
    inode = path.stat().st_ino
    piece = open_region(FileRegion(str(path), inode, 10, 90))
    assert piece is not None and piece.file.read() == b"x" * 100
    piece.file.close()
    assert open_region(FileRegion(str(path), inode, 10, 91)) is None
    assert open_region(FileRegion(str(path), inode + 1, 0, 10)) is None
    assert open_region(FileRegion(str(tmp_path / "gone.log"), inode, 0, 10)) is None


# A SASL listener: each connection logs in (SCRAM or PLAIN) before its requests reach the handler.

SASL_USERS = CredentialCache()
SASL_USERS.update(
    "alice", {m: ScramCredential.from_password(m, "alice-secret") for m in ScramMechanism}
)
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_MAX_RECEIVE_BYTES = 512
ALICE = KafkaPrincipal.user("alice")
DEADLINE_S = 10.0
METADATA_KEY = 3


class RecordingHandler:
    """A fake KafkaApis: answers ApiVersions and Metadata, recording each request's api key and
    its connection's principal."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, KafkaPrincipal]] = []

    async def __call__(self, header: RequestHeader, _body: Mapping[str, Any]) -> dict[str, Any]:
        self.seen.append((header.api_key, connection_principal()))
        if header.api_key == API_VERSIONS_KEY:
            return DEFAULT_REGISTRY.api_versions_body()
        return {"brokers": [], "controller_id": header.correlation_id, "topics": []}


async def sasl_listener(handler: RecordingHandler, failure_delay_s: float = 0.0) -> KafkaListener:
    settings = SaslSettings(
        lambda: SaslSession(SASL_MECHANISMS, SASL_USERS), SASL_MAX_RECEIVE_BYTES, failure_delay_s
    )
    listener = KafkaListener(
        ListenerAddress("SASL_PLAINTEXT", "127.0.0.1", 0),
        "",
        DEFAULT_REGISTRY,
        handler,
        1 << 20,
        sasl=settings,
    )
    await listener.start()
    return listener


class KafkaConnection:
    """A client's end of one connection: Kafka frames over a loopback socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.correlation_id = 0

    @staticmethod
    async def open(listener: KafkaListener) -> KafkaConnection:
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.address.port)
        return KafkaConnection(reader, writer)

    def frame(
        self, api_key: int, version: int, body: Mapping[str, Any]
    ) -> tuple[RequestHeader, bytes]:
        self.correlation_id += 1
        header = RequestHeader(api_key, version, self.correlation_id, "test")
        return header, DEFAULT_REGISTRY.encode_request(header, body)

    async def answer(self, header: RequestHeader) -> Mapping[str, Any]:
        """The answer to the request sent with ``header``, within the deadline."""
        payload = await asyncio.wait_for(read_frame(self.reader), DEADLINE_S)
        assert payload, f"the connection closed instead of answering api key {header.api_key}"
        response_header, body = DEFAULT_REGISTRY.decode_response(payload, header)
        assert response_header.correlation_id == header.correlation_id
        return body

    async def ask(self, api_key: int, version: int, body: Mapping[str, Any]) -> Mapping[str, Any]:
        header, frame = self.frame(api_key, version, body)
        self.writer.write(frame)
        return await self.answer(header)

    async def handshake(self, mechanism: str) -> Mapping[str, Any]:
        return await self.ask(SASL_HANDSHAKE.key, 1, {"mechanism": mechanism})

    async def authenticate(self, token: bytes) -> Mapping[str, Any]:
        return await self.ask(SASL_AUTHENTICATE.key, 2, {"auth_bytes": token})

    async def scram_login(self, mechanism: str, user: str, password: str) -> Mapping[str, Any]:
        """A SCRAM exchange with kafka-python's client after the handshake: the server-final
        answer, its signature checked by the client."""
        client = ScramClient(user, password, mechanism)
        first = await self.authenticate(client.first_message())
        assert first["error_code"] == 0
        client.process_server_first_message(bytes(first["auth_bytes"]))
        final = await self.authenticate(client.final_message())
        assert final["error_code"] == 0
        client.process_server_final_message(bytes(final["auth_bytes"]))
        return final

    async def log_in(self) -> None:
        assert (await self.handshake("SCRAM-SHA-256"))["error_code"] == 0
        await self.scram_login("SCRAM-SHA-256", "alice", "alice-secret")

    async def closed(self) -> bool:
        """Whether the broker closes the connection (EOF within the deadline) sending nothing
        more."""
        return await asyncio.wait_for(self.reader.read(), DEADLINE_S) == b""

    def close(self) -> None:
        self.writer.close()


def metadata_body(topics: int = 0) -> dict[str, Any]:
    return {"topics": [{"name": f"topic-{n:04}"} for n in range(topics)]}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_scram_login_lets_the_connections_requests_through_as_the_user(mechanism: str) -> None:
    handler = RecordingHandler()

    async def scenario() -> None:
        listener = await sasl_listener(handler)
        client = await KafkaConnection.open(listener)
        assert (await client.ask(API_VERSIONS_KEY, 3, {}))["error_code"] == 0  # before login
        handshake = await client.handshake(mechanism)
        assert (handshake["error_code"], handshake["mechanisms"]) == (0, list(SASL_MECHANISMS))
        final = await client.scram_login(mechanism, "alice", "alice-secret")
        assert (final["error_message"], final["session_lifetime_ms"]) == (None, 0)
        # Logged in, a frame over the pre-login limit (sasl_server_max_receive_size) is served.
        big = metadata_body(60)
        assert len(client.frame(METADATA_KEY, 1, big)[1]) > SASL_MAX_RECEIVE_BYTES
        answer = await client.ask(METADATA_KEY, 1, big)
        assert answer["controller_id"] == client.correlation_id
        client.close()
        await listener.close()

    asyncio.run(scenario())
    # The SASL requests never reached the handler; the request after the login ran as alice.
    assert handler.seen == [(API_VERSIONS_KEY, ANONYMOUS), (METADATA_KEY, ALICE)]


def test_a_plain_login_lets_the_connections_requests_through_as_the_user() -> None:
    handler = RecordingHandler()

    async def scenario() -> None:
        listener = await sasl_listener(handler)
        client = await KafkaConnection.open(listener)
        assert (await client.handshake("PLAIN"))["error_code"] == 0
        login = await client.ask(SASL_AUTHENTICATE.key, 0, {"auth_bytes": b"\0alice\0alice-secret"})
        assert (login["error_code"], bytes(login["auth_bytes"])) == (0, b"")
        assert (await client.ask(METADATA_KEY, 1, metadata_body()))["brokers"] == []
        client.close()
        await listener.close()

    asyncio.run(scenario())
    assert handler.seen == [(METADATA_KEY, ALICE)]


def test_a_request_before_the_login_closes_the_connection_without_reaching_the_handler(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = RecordingHandler()

    async def scenario() -> None:
        listener = await sasl_listener(handler)
        first = await KafkaConnection.open(listener)
        first.writer.write(first.frame(METADATA_KEY, 1, metadata_body())[1])
        assert await first.closed()
        # Between the handshake and the login too.
        second = await KafkaConnection.open(listener)
        assert (await second.handshake("PLAIN"))["error_code"] == 0
        second.writer.write(second.frame(METADATA_KEY, 1, metadata_body())[1])
        assert await second.closed()
        first.close()
        second.close()
        await listener.close()

    with caplog.at_level(logging.WARNING, logger="rafka.actors.broker.listener"):
        asyncio.run(scenario())
    assert handler.seen == []
    assert caplog.text.count("before the connection authenticated") == 2


def test_a_wrong_password_is_answered_logged_and_closed_after_the_failure_delay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = RecordingHandler()
    delay_s = 0.3
    held_s: list[float] = []

    async def scenario() -> None:
        listener = await sasl_listener(handler, failure_delay_s=delay_s)
        client = await KafkaConnection.open(listener)
        assert (await client.handshake("SCRAM-SHA-256"))["error_code"] == 0
        scram = ScramClient("alice", "guess", "SCRAM-SHA-256")
        first = await client.authenticate(scram.first_message())
        scram.process_server_first_message(bytes(first["auth_bytes"]))
        # The wrong proof, with a Metadata request pipelined behind it.
        final_header, final = client.frame(
            SASL_AUTHENTICATE.key, 2, {"auth_bytes": scram.final_message()}
        )
        sent = time.monotonic()
        client.writer.write(final + client.frame(METADATA_KEY, 1, metadata_body())[1])
        refused = await client.answer(final_header)
        assert refused["error_code"] == Errors.SASL_AUTHENTICATION_FAILED
        assert "SCRAM-SHA-256" in refused["error_message"]
        assert await client.closed()
        held_s.append(time.monotonic() - sent)
        client.close()
        await listener.close()

    with caplog.at_level(logging.WARNING, logger="rafka.actors.broker.listener"):
        asyncio.run(scenario())
    assert handler.seen == []
    assert "Failed authentication with" in caplog.text
    assert "invalid user credentials" in caplog.text
    assert held_s[0] >= delay_s


def test_a_handshake_for_a_mechanism_not_offered_is_answered_and_the_connection_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        listener = await sasl_listener(RecordingHandler())
        client = await KafkaConnection.open(listener)
        answer = await client.handshake("GSSAPI")
        assert answer["error_code"] == Errors.UNSUPPORTED_SASL_MECHANISM
        assert answer["mechanisms"] == list(SASL_MECHANISMS)
        assert await client.closed()
        client.close()
        await listener.close()

    with caplog.at_level(logging.WARNING, logger="rafka.actors.broker.listener"):
        asyncio.run(scenario())
    assert "Failed authentication with" in caplog.text
    assert "'GSSAPI'" in caplog.text


def api_versions_frame_of(payload_size: int) -> bytes:
    """An ApiVersions request frame whose payload is ``payload_size`` bytes."""
    for length in range(payload_size):
        body = {"client_software_name": "x" * length, "client_software_version": "1"}
        frame = DEFAULT_REGISTRY.encode_request(RequestHeader(API_VERSIONS_KEY, 3, 1, "t"), body)
        if len(frame) - 4 == payload_size:
            return frame
    raise AssertionError(f"no ApiVersions request of {payload_size} bytes")


def test_a_frame_over_sasl_server_max_receive_size_before_login_closes_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = RecordingHandler()

    async def scenario() -> None:
        listener = await sasl_listener(handler)
        client = await KafkaConnection.open(listener)
        client.writer.write(api_versions_frame_of(SASL_MAX_RECEIVE_BYTES))  # at the limit
        assert (await client.answer(RequestHeader(API_VERSIONS_KEY, 3, 1)))["error_code"] == 0
        client.writer.write(api_versions_frame_of(SASL_MAX_RECEIVE_BYTES + 1))
        assert await client.closed()
        client.close()
        await listener.close()

    with caplog.at_level(logging.WARNING, logger="rafka.actors.broker.listener"):
        asyncio.run(scenario())
    assert handler.seen == [(API_VERSIONS_KEY, ANONYMOUS)]
    assert f"sasl.server.max.receive.size is {SASL_MAX_RECEIVE_BYTES}" in caplog.text


def test_garbage_sasl_bytes_close_only_their_connection_and_a_new_one_still_logs_in() -> None:
    handler = RecordingHandler()

    async def scenario() -> None:
        listener = await sasl_listener(handler)
        steady = await KafkaConnection.open(listener)
        await steady.log_in()
        # A SCRAM token that is not one.
        token = await KafkaConnection.open(listener)
        assert (await token.handshake("SCRAM-SHA-256"))["error_code"] == 0
        refused = await token.authenticate(b"\xff\x00 not a client-first message")
        assert refused["error_code"] == Errors.SASL_AUTHENTICATION_FAILED
        assert await token.closed()
        # A frame that is not a request at all.
        noise = await KafkaConnection.open(listener)
        noise.writer.write(struct.pack(">i", 16) + b"\xff" * 16)
        assert await noise.closed()
        answer = await steady.ask(METADATA_KEY, 1, metadata_body())
        assert answer["controller_id"] == steady.correlation_id
        fresh = await KafkaConnection.open(listener)
        await fresh.log_in()
        assert (await fresh.ask(METADATA_KEY, 1, metadata_body()))["brokers"] == []
        for connection in (steady, token, noise, fresh):
            connection.close()
        await listener.close()

    asyncio.run(scenario())
    assert handler.seen == [(METADATA_KEY, ALICE), (METADATA_KEY, ALICE)]


FUZZ_CASES = 300


def fuzz_bytes(rng: random.Random) -> bytes:
    """What an attacker might send a SASL listener before logging in: size prefixes that lie
    (negative, over the limit, longer than what follows), random payloads, and SASL requests
    with random mechanisms and tokens."""
    kind = rng.randrange(5)
    noise = rng.randbytes(rng.randrange(64))
    if kind == 0:  # a size prefix over the pre-login limit, up to the largest int32
        return struct.pack(">i", rng.randrange(SASL_MAX_RECEIVE_BYTES + 1, 2**31)) + noise
    if kind == 1:  # a negative size
        return struct.pack(">i", -rng.randrange(1, 2**31)) + noise
    if kind == 2:  # a frame of random bytes, possibly shorter than its prefix says
        return struct.pack(">i", rng.randrange(SASL_MAX_RECEIVE_BYTES + 1)) + noise
    header = RequestHeader(SASL_HANDSHAKE.key, 1, rng.randrange(2**31), "fuzz")
    handshake = DEFAULT_REGISTRY.encode_request(
        header, {"mechanism": rng.choice([*SASL_MECHANISMS, noise.hex(), ""])}
    )
    if kind == 3:
        return handshake
    token = RequestHeader(SASL_AUTHENTICATE.key, rng.randrange(3), 2, "fuzz")
    return handshake + DEFAULT_REGISTRY.encode_request(token, {"auth_bytes": noise})


def test_fuzzed_bytes_before_login_never_reach_the_handler_and_the_listener_serves_on() -> None:
    rng = random.Random(int(os.environ.get("RAFKA_FUZZ_SEED", "19")))
    handler = RecordingHandler()

    async def scenario() -> None:
        listener = await sasl_listener(handler)
        steady = await KafkaConnection.open(listener)
        await steady.log_in()
        for _ in range(FUZZ_CASES):
            attacker = await KafkaConnection.open(listener)
            attacker.writer.write(fuzz_bytes(rng))
            attacker.writer.write_eof()
            # Whatever the broker answers, it ends the connection: nothing here logs in.
            await asyncio.wait_for(attacker.reader.read(), DEADLINE_S)
            attacker.close()
        assert (await steady.ask(METADATA_KEY, 1, metadata_body()))["brokers"] == []
        fresh = await KafkaConnection.open(listener)
        await fresh.log_in()
        assert (await fresh.ask(METADATA_KEY, 1, metadata_body()))["brokers"] == []
        assert listener.connections == 2
        steady.close()
        fresh.close()
        await listener.close()

    asyncio.run(scenario())
    assert handler.seen == [(METADATA_KEY, ALICE), (METADATA_KEY, ALICE)]


THROTTLE_MS = 500


def test_a_throttled_answer_is_sent_at_once_and_the_next_request_read_after_the_throttle() -> None:
    async def scenario() -> None:
        handled: dict[int, float] = {}

        async def handler(header: RequestHeader, _body: Mapping[str, Any]) -> dict[str, Any]:
            handled[header.correlation_id] = time.monotonic()
            if header.correlation_id == 1:
                throttle_connection(THROTTLE_MS)
            return {"brokers": [], "controller_id": header.correlation_id, "topics": []}

        listener = KafkaListener(
            ListenerAddress("PLAINTEXT", "127.0.0.1", 0), "", DEFAULT_REGISTRY, handler, 1024
        )
        await listener.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.address.port)
        writer.write(metadata_frame(1) + metadata_frame(2))
        await asyncio.wait_for(read_frame(reader), 10)
        answered_first = time.monotonic()
        other_reader, other_writer = await asyncio.open_connection(
            "127.0.0.1", listener.address.port
        )
        other_writer.write(metadata_frame(3))
        await asyncio.wait_for(read_frame(other_reader), 10)
        answered_other = time.monotonic()
        await asyncio.wait_for(read_frame(reader), 10)
        # The throttled answer and another connection's both came before the throttle was over.
        assert answered_first - handled[1] < THROTTLE_MS / 1000
        assert answered_other - handled[1] < THROTTLE_MS / 1000
        assert handled[2] - handled[1] >= THROTTLE_MS / 1000
        writer.close()
        other_writer.close()
        await listener.close()

    asyncio.run(scenario())


def test_closing_the_listener_does_not_wait_out_a_connections_throttle() -> None:
    async def scenario() -> None:
        async def handler(header: RequestHeader, _body: Mapping[str, Any]) -> dict[str, Any]:
            throttle_connection(60_000)
            return {"brokers": [], "controller_id": header.correlation_id, "topics": []}

        listener = KafkaListener(
            ListenerAddress("PLAINTEXT", "127.0.0.1", 0), "", DEFAULT_REGISTRY, handler, 1024
        )
        await listener.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.address.port)
        writer.write(metadata_frame(1))
        await asyncio.wait_for(read_frame(reader), 10)
        await asyncio.wait_for(listener.close(), 5)
        assert listener.connections == 0
        writer.close()

    asyncio.run(scenario())
