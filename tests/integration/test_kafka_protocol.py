"""Kafka's wire protocol on the brokers' listeners, spoken by a real Kafka client (kafka-python):
records written by either kind of client are read by the other, and bad bytes on one connection
disturb nothing else."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.errors import Errors
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY

pytestmark = [
    pytest.mark.timeout(300),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]

RECORDS = 200


@pytest.fixture(scope="module")
def bootstrap(cluster: LocalCluster) -> str:
    """The shared cluster's bootstrap string."""
    return cluster.bootstrap_servers()


def kafka_consumer(bootstrap: str, topic: str, partitions: int) -> KafkaConsumer:
    """A kafka-python consumer assigned every partition of ``topic`` from the start."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    consumer.assign([KafkaTopicPartition(topic, p) for p in range(partitions)])
    return consumer


def address(bootstrap: str) -> tuple[str, int]:
    """The first broker's host and port."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    return host, int(port)


@pytest.fixture
def raw(bootstrap: str) -> Iterator[socket.socket]:
    """A plain TCP connection to one broker's listener."""
    with socket.create_connection(address(bootstrap), timeout=30) as sock:
        yield sock


def read_frame(sock: socket.socket) -> bytes:
    """One size-prefixed frame's payload; b"" if the broker closed the connection."""
    size = sock.recv(4, socket.MSG_WAITALL)
    if len(size) < 4:
        return b""
    return sock.recv(struct.unpack(">i", size)[0], socket.MSG_WAITALL)


def api_versions(sock: socket.socket, version: int, correlation_id: int) -> dict[str, object]:
    """Send an ApiVersions request and decode its answer."""
    header = RequestHeader(18, version, correlation_id, "raw")
    body = {"client_software_name": "raw", "client_software_version": "1"} if version >= 3 else {}
    sock.sendall(DEFAULT_REGISTRY.encode_request(header, body))
    answer_header, answer = DEFAULT_REGISTRY.decode_response(read_frame(sock), header)
    assert answer_header.correlation_id == correlation_id
    return dict(answer)


def test_metadata_names_every_broker_at_its_bootstrap_address(
    cluster: LocalCluster, bootstrap: str, raw: socket.socket
) -> None:
    header = RequestHeader(3, 9, 5, "raw")
    raw.sendall(DEFAULT_REGISTRY.encode_request(header, {"topics": []}))
    _, answer = DEFAULT_REGISTRY.decode_response(read_frame(raw), header)
    brokers = {f"{b['host']}:{b['port']}" for b in answer["brokers"]}
    assert brokers == set(bootstrap.split(","))
    assert len(brokers) == cluster.num_brokers
    assert answer["controller_id"] in {b["node_id"] for b in answer["brokers"]}


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4"])
def test_records_a_kafka_python_producer_writes_are_read_by_both_kinds_of_consumer(
    cluster: LocalCluster, admin: Admin, bootstrap: str, topic_name: str, compression: str
) -> None:
    admin.create_topic(topic_name, 3, 3)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=compression)
    futures = [
        producer.send(
            topic_name,
            key=str(i).encode(),
            value=f"v{i}".encode(),
            headers=[("n", str(i).encode())],
        )
        for i in range(RECORDS)
    ]
    producer.flush(60)
    acknowledged = {(m.partition, m.offset) for m in (f.get(30) for f in futures)}
    producer.close()
    assert len(acknowledged) == RECORDS

    with cluster.consumer(topic_name, group_id=None, auto_offset_reset="earliest") as native:
        seen: list[Any] = []
        deadline = time.monotonic() + 60
        while len(seen) < RECORDS and time.monotonic() < deadline:
            for records in native.poll(timeout_ms=500).values():
                seen.extend(records)
    assert sorted((r.key, r.value, tuple(r.headers)) for r in seen) == sorted(
        (str(i).encode(), f"v{i}".encode(), (("n", str(i).encode()),)) for i in range(RECORDS)
    )
    assert {(r.partition, r.offset) for r in seen} == acknowledged

    consumer = kafka_consumer(bootstrap, topic_name, 3)
    read = list(consumer)
    consumer.close()
    assert {(m.partition, m.offset, m.key, m.value) for m in read} == {
        (r.partition, r.offset, r.key, r.value) for r in seen
    }


def test_records_rafkas_producer_writes_are_read_by_kafka_python_with_their_headers(
    cluster: LocalCluster, admin: Admin, bootstrap: str, topic_name: str
) -> None:
    admin.create_topic(topic_name, 2, 3)
    with cluster.producer(acks="all") as producer:
        for i in range(RECORDS):
            producer.send(
                topic_name,
                f"v{i}".encode(),
                key=str(i).encode(),
                headers=[("n", str(i).encode())],
                timestamp_ms=1_700_000_000_000 + i,
            )
    consumer = kafka_consumer(bootstrap, topic_name, 2)
    read = list(consumer)
    consumer.close()
    assert sorted((m.key, m.value, tuple(m.headers), m.timestamp) for m in read) == sorted(
        (str(i).encode(), f"v{i}".encode(), (("n", str(i).encode()),), 1_700_000_000_000 + i)
        for i in range(RECORDS)
    )
    for partition in range(2):
        offsets = [m.offset for m in read if m.partition == partition]
        assert offsets == list(range(len(offsets)))


def test_api_versions_lists_what_the_broker_serves(
    raw: socket.socket,
) -> None:
    answer = api_versions(raw, 3, 1)
    assert answer["error_code"] == 0
    served = {(k["api_key"], k["min_version"], k["max_version"]) for k in answer["api_keys"]}  # type: ignore[attr-defined]
    assert (0, 3, 9) in served and (1, 4, 12) in served and (18, 0, 3) in served


def test_a_future_api_versions_request_is_answered_in_version_0_with_unsupported_version(
    raw: socket.socket,
) -> None:
    # A flexible-version header: the client id, then an empty tagged-fields section.
    header = struct.pack(">hhih", 18, 99, 7, 3) + b"raw" + b"\x00"
    raw.sendall(struct.pack(">i", len(header)) + header)
    _, answer = DEFAULT_REGISTRY.decode_response(read_frame(raw), RequestHeader(18, 0, 7))
    assert answer["error_code"] == int(Errors.UNSUPPORTED_VERSION)
    assert any(k["api_key"] == 18 for k in answer["api_keys"])


@pytest.mark.parametrize(
    "garbage",
    [
        struct.pack(">i", 200 * 1024 * 1024),  # larger than socket.request.max.bytes
        struct.pack(">i", 3) + b"\x00\x12\x00",  # a header cut short
        struct.pack(">i", 10) + struct.pack(">hhih", 77, 0, 1, 0),  # an api rafka does not serve
        # Metadata v1, null client id, then a topic count far beyond the bytes that follow.
        struct.pack(">i", 14) + struct.pack(">hhih", 3, 1, 1, -1) + b"\x7f\xff\xff\xff",
    ],
    ids=["too-large", "truncated-header", "unknown-api", "malformed-body"],
)
def test_bad_bytes_close_only_their_own_connection(bootstrap: str, garbage: bytes) -> None:
    with (
        socket.create_connection(address(bootstrap), timeout=30) as bad,
        socket.create_connection(address(bootstrap), timeout=30) as good,
    ):
        assert api_versions(good, 3, 1)["error_code"] == 0
        bad.sendall(garbage)
        assert read_frame(bad) == b""
        assert api_versions(good, 3, 2)["error_code"] == 0
