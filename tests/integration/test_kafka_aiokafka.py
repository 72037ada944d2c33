"""aiokafka, an asyncio Kafka client, against rafka's Kafka listeners: what it produces (acks=all,
keys, headers, timestamps) rafka's own Consumer reads back at the acknowledged offsets, and what
rafka's Producer writes it reads back unchanged (assign + seek_to_beginning, no group)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

# aiokafka ships no type information (pyproject.toml's mypy overrides do not list it).
from aiokafka import (
    AIOKafkaConsumer,
    AIOKafkaProducer,
)
from aiokafka import TopicPartition as AioTopicPartition

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster

pytestmark = pytest.mark.timeout(300)

RECORDS = 60
PARTITIONS = 2
BASE_TIMESTAMP_MS = 1_700_000_000_000

ReadTopic = Callable[[str, int, int], list[Any]]
"""The ``read_topic`` fixture of conftest.py."""
Row = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int]
"""A record as both kinds of client see it: partition, offset, key, value, headers, timestamp."""


def record(i: int) -> tuple[bytes | None, bytes, list[tuple[str, bytes]], int]:
    """The i-th record's key (every fifth null), value, headers and timestamp."""
    key = None if i % 5 == 0 else f"k{i}".encode()
    return (
        key,
        f"value-{i}".encode(),
        [("n", str(i).encode()), ("src", b"test")],
        BASE_TIMESTAMP_MS + i,
    )


def rows(records: list[Any]) -> list[Row]:
    """Records of either kind of client as sorted rows."""
    return sorted(
        (r.partition, r.offset, r.key, r.value, tuple(r.headers), r.timestamp) for r in records
    )


async def produce_with_aiokafka(bootstrap: str, topic: str, compression: str | None) -> list[Row]:
    """Send RECORDS records with aiokafka at acks=all; the rows as acknowledged, sorted."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", compression_type=compression
    )
    await producer.start()
    try:
        rows = []
        for i in range(RECORDS):
            key, value, headers, timestamp = record(i)
            sent = await producer.send_and_wait(
                topic, value=value, key=key, headers=headers, timestamp_ms=timestamp
            )
            rows.append((sent.partition, sent.offset, key, value, tuple(headers), timestamp))
    finally:
        await producer.stop()
    return sorted(rows)


async def consume_with_aiokafka(bootstrap: str, topic: str, count: int) -> list[Row]:
    """Every record of ``topic`` read by aiokafka (assigned partitions, no group), sorted."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    try:
        partitions = [AioTopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        read: list[Any] = []
        deadline = time.monotonic() + 60
        while len(read) < count and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                read.extend(records)
    finally:
        await consumer.stop()
    return rows(read)


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_records_aiokafka_produces_are_read_by_rafkas_consumer_at_their_offsets(
    cluster: LocalCluster,
    admin: Admin,
    topic_name: str,
    read_topic: ReadTopic,
    compression: str | None,
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    acknowledged = asyncio.run(
        produce_with_aiokafka(cluster.bootstrap_servers(), topic_name, compression)
    )
    assert len({(p, o) for p, o, *_ in acknowledged}) == RECORDS
    assert rows(read_topic(topic_name, PARTITIONS, RECORDS)) == acknowledged
    assert (
        asyncio.run(consume_with_aiokafka(cluster.bootstrap_servers(), topic_name, RECORDS))
        == acknowledged
    )


def test_records_rafkas_producer_writes_are_read_by_aiokafka_unchanged(
    cluster: LocalCluster, admin: Admin, topic_name: str, read_topic: ReadTopic
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    with cluster.producer(acks="all") as producer:
        futures = []
        for i in range(RECORDS):
            key, value, headers, timestamp = record(i)
            futures.append(
                producer.send(topic_name, value, key=key, headers=headers, timestamp_ms=timestamp)
            )
        producer.flush(60)
        acknowledged = {(m.partition, m.offset) for m in (f.get(30) for f in futures)}
    written = rows(read_topic(topic_name, PARTITIONS, RECORDS))
    assert {(p, o) for p, o, *_ in written} == acknowledged
    assert {v: (k, list(h), t) for _, _, k, v, h, t in written} == {
        v: (k, h, t) for k, v, h, t in map(record, range(RECORDS))
    }
    read = asyncio.run(consume_with_aiokafka(cluster.bootstrap_servers(), topic_name, RECORDS))
    assert read == written
