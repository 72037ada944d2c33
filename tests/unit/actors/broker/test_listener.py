"""The Kafka listener: its config syntax, and framing on a real loopback socket with a fake
handler (one connection's responses in order, deferred ones too; bad frames close only that
connection)."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rafka.actors.broker.listener import Deferred, KafkaListener, advertised_endpoints, open_region
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.fetch import FileRegion
from rafka.protocol.messages.metadata import ListenerAddress, parse_listeners
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.primitives import FileSlice
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
