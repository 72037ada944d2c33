"""Ray Data against rafka, run as Ray Data jobs in the test session's Ray cluster: Ray's own Kafka
connectors (``ray.data.read_kafka``, ``Dataset.write_kafka``, on confluent-kafka) through the
brokers' Kafka listeners, and rafka's ``read_rafka``/``write_rafka`` (``rafka.ray_data``) through
Ray. What rafka's producer wrote is read back exactly, and what Ray Data wrote rafka's consumer
reads.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pyarrow as pa
import pytest
import ray

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.types import TopicPartition
from rafka.ray_data import read_rafka, write_rafka
from rafka.ray_data.datasource import RafkaDatasource

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
# Ray Data needs the ray[data] extra (pandas, numpy, fsspec) beside ray itself.
pytest.importorskip("pandas", reason="ray.data needs the ray[data] extra")

PARTITIONS = 2
RECORDS = 60
TS0 = 1_700_000_000_000


def produce(cluster: LocalCluster, topic: str) -> dict[tuple[int, int], tuple[bytes, bytes, int]]:
    """Write RECORDS records round-robin over the partitions with rafka's producer:
    {(partition, offset): (key, value, timestamp_ms)} as acknowledged."""
    with cluster.producer(acks="all") as producer:
        futures = [
            (
                (f"k{i}".encode(), f"v{i}".encode(), TS0 + i),
                producer.send(
                    topic,
                    f"v{i}".encode(),
                    key=f"k{i}".encode(),
                    headers=[("n", str(i).encode())],
                    partition=i % PARTITIONS,
                    timestamp_ms=TS0 + i,
                ),
            )
            for i in range(RECORDS)
        ]
        producer.flush()
        acked = {}
        for record, future in futures:
            meta = future.get(timeout=30)
            acked[(meta.partition, meta.offset)] = record
    return acked


def read_rows(topic: str, bootstrap: str, **offsets: Any) -> list[dict[str, Any]]:
    """The rows ``ray.data.read_kafka`` reads from ``topic``, as plain dicts."""
    dataset = ray.data.read_kafka(topic, bootstrap_servers=bootstrap, timeout_ms=60_000, **offsets)
    return list(dataset.iter_rows())


def test_read_kafka_reads_exactly_what_rafkas_producer_wrote(
    cluster: LocalCluster, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    acked = produce(cluster, topic_name)
    rows = read_rows(topic_name, cluster.bootstrap_servers())
    assert {
        (r["partition"], r["offset"]): (r["key"], r["value"], r["timestamp"]) for r in rows
    } == acked
    assert len(rows) == RECORDS
    assert {r["topic"] for r in rows} == {topic_name}
    assert all(r["headers"] == {"n": r["value"][1:]} for r in rows)


def test_read_kafka_reads_only_the_offset_range_asked_for(
    cluster: LocalCluster, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    acked = produce(cluster, topic_name)
    rows = read_rows(
        topic_name,
        cluster.bootstrap_servers(),
        start_offset={topic_name: {0: 5, 1: 10}},
        end_offset={topic_name: {0: 15}},
    )
    ranges = {0: range(5, 15), 1: range(10, RECORDS // PARTITIONS)}
    assert sorted((r["partition"], r["offset"]) for r in rows) == [
        (p, o) for p in range(PARTITIONS) for o in ranges[p]
    ]
    assert all(acked[(r["partition"], r["offset"])][1] == r["value"] for r in rows)


def test_write_kafka_rows_are_read_by_rafkas_consumer(
    cluster: LocalCluster, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    items = [{"id": i, "name": f"row-{i}"} for i in range(RECORDS)]
    ray.data.from_items(items).write_kafka(
        topic_name,
        cluster.bootstrap_servers(),
        key_field="id",
        producer_config={"acks": "all"},
    )
    seen: list[Any] = []
    with cluster.consumer(group_id=None, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic_name, p) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 60
        while len(seen) < RECORDS and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                seen.extend(records)
    # The key is the row's id as a string, the value the whole row as JSON.
    assert sorted((int(r.key), json.loads(r.value)) for r in seen) == [
        (item["id"], item) for item in items
    ]
    for partition in range(PARTITIONS):
        offsets = sorted(r.offset for r in seen if r.partition == partition)
        assert offsets == list(range(len(offsets)))


def test_read_rafka_reads_exactly_what_rafkas_producer_wrote_as_arrow_columns(
    cluster: LocalCluster, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    acked = produce(cluster, topic_name)
    dataset = read_rafka(topic_name, namespace=cluster.namespace)
    assert dataset.schema().names == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    rows = dataset.take_all()
    assert {
        (r["partition"], r["offset"]): (
            r["key"],
            r["value"],
            int(r["timestamp"].timestamp() * 1000),
        )
        for r in rows
    } == acked
    assert len(rows) == RECORDS
    assert all(r["headers"] == [{"key": "n", "value": r["value"][1:]}] for r in rows)


def test_read_rafka_reads_one_task_per_partition_and_only_the_range_asked_for(
    cluster: LocalCluster, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    acked = produce(cluster, topic_name)
    dataset = read_rafka(
        topic_name,
        namespace=cluster.namespace,
        start_offset={topic_name: {0: 5, 1: 10}},
        end_offset={topic_name: {0: 15}},
    )
    rows = dataset.take_all()
    ranges = {0: range(5, 15), 1: range(10, RECORDS // PARTITIONS)}
    assert sorted((r["partition"], r["offset"]) for r in rows) == [
        (p, o) for p in range(PARTITIONS) for o in ranges[p]
    ]
    assert all(acked[(r["partition"], r["offset"])][1] == r["value"] for r in rows)
    planned = RafkaDatasource([topic_name], 0, "latest", {"namespace": cluster.namespace}, 5_000)
    assert len(planned.get_read_tasks(parallelism=200)) == PARTITIONS


def test_write_rafka_rows_are_read_back_by_poll_arrow_in_order(
    cluster: LocalCluster, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    keys = [f"id-{i % 5}".encode() for i in range(RECORDS)]
    values = [f"row-{i}".encode() for i in range(RECORDS)]
    # One Arrow block, so one write task sends every row in the table's order.
    dataset = ray.data.from_arrow(pa.table({"key": keys, "value": values}))
    write_rafka(dataset, topic_name, namespace=cluster.namespace, producer_config={"acks": "all"})
    seen: list[dict[str, Any]] = []
    with cluster.consumer(group_id=None, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic_name, p) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 60
        while len(seen) < RECORDS and time.monotonic() < deadline:
            seen.extend(consumer.poll_arrow(timeout_ms=500).to_pylist())
    assert sorted((r["key"], r["value"]) for r in seen) == sorted(zip(keys, values, strict=True))
    by_key: dict[bytes, list[bytes]] = {}
    for row in sorted(seen, key=lambda r: (r["partition"], r["offset"])):
        by_key.setdefault(row["key"], []).append(row["value"])
    # One key lives on one partition, so its rows keep the table's order.
    assert all(
        by_key[key] == [v for k, v in zip(keys, values, strict=True) if k == key] for key in by_key
    )
