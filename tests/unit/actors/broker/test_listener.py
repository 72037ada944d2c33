"""The Kafka listener: its config syntax, and framing on a real loopback socket with a fake
handler (one connection's responses in order, deferred ones too; bad frames close only that
connection)."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Mapping
from typing import Any

import pytest

from rafka.actors.broker.listener import Deferred, KafkaListener, advertised_endpoints
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.metadata import ListenerAddress, parse_listeners
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY

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
        ("localhost:9092", "is not PROTOCOL://host:port"),
        ("PLAINTEXT://host", "is not PROTOCOL://host:port"),
        ("PLAINTEXT://host:99999", "is not PROTOCOL://host:port"),
        ("SASL_SSL://host:9093", "security protocol 'SASL_SSL'"),
        ("PLAINTEXT://a:1,PLAINTEXT://b:2", "names a protocol twice"),
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
