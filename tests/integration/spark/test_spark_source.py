"""The ``rafka`` Spark source on a real local[2] SparkSession and the session's 3-broker cluster."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.types import TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NS = "rafka-test"
TS0 = 1_700_000_000_000


def produce(
    topic: str, count: int, partitions: int, namespace: str = NS, **config: Any
) -> dict[tuple[int, int], tuple]:
    """Send ``count`` records round-robin over explicit partitions.

    Record i has timestamp TS0 + 10 * (i // partitions).

    Returns {(partition, offset): (key, value, headers, timestamp_ms)} as acknowledged.
    """
    sent: dict[tuple[int, int], tuple] = {}
    with Producer(namespace=namespace, linger_ms=2, **config) as producer:
        futures = []
        for i in range(count):
            record = (
                f"k{i}".encode(),
                f"v{i}".encode(),
                [("n", str(i).encode()), ("e", None)] if i % 3 == 0 else [],
                TS0 + 10 * (i // partitions),
            )
            futures.append(
                (
                    record,
                    producer.send(
                        topic, record[1], record[0], record[2], i % partitions, record[3]
                    ),
                )
            )
        producer.flush()
        for record, future in futures:
            meta = future.get(timeout=30)
            sent[(meta.partition, meta.offset)] = record
    return sent


def read(spark: Any, options: dict[str, str], **extra: str) -> Any:
    return spark.read.format("rafka").options(**options, **extra).load()


def offsets_by_partition(rows: list[Any]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for row in rows:
        found.setdefault(row["partition"], []).append(row["offset"])
    return {p: sorted(offsets) for p, offsets in sorted(found.items())}


def test_batch_read_returns_exactly_what_was_produced(
    spark: Any, rafka_options: dict, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, num_partitions=3, replication_factor=3)
    sent = produce(topic_name, 3000, 3)
    df = read(spark, rafka_options, subscribe=topic_name, includeHeaders="true", minPartitions="7")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "binary"),
        ("value", "binary"),
        ("topic", "string"),
        ("partition", "int"),
        ("offset", "bigint"),
        ("timestamp", "timestamp"),
        ("timestampType", "int"),
        ("headers", "array<struct<key:string,value:binary>>"),
    ]
    assert (
        df.rdd.getNumPartitions() == 6
    )  # minPartitions=7 over three equal ranges: round(7/3) = 2 tasks each, as in Spark
    got = {
        (r["partition"], r["offset"]): (
            r["key"],
            r["value"],
            [(h["key"], h["value"]) for h in r["headers"]],
            round(r["timestamp"].replace(tzinfo=timezone.utc).timestamp() * 1000),
        )
        for r in df.collect()
    }
    assert got == sent
    counts = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
    assert counts == {0: 1000, 1: 1000, 2: 1000}
    assert {
        (r["topic"], r["timestampType"])
        for r in df.select("topic", "timestampType").distinct().collect()
    } == {(topic_name, 0)}


def test_assign_and_subscribe_pattern_select_partitions(
    spark: Any, rafka_options: dict, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(f"{topic_name}-x", num_partitions=3, replication_factor=1)
    admin.create_topic(f"{topic_name}-y", num_partitions=1, replication_factor=1)
    produce(f"{topic_name}-x", 90, 3)
    produce(f"{topic_name}-y", 10, 1)
    assigned = read(spark, rafka_options, assign=json.dumps({f"{topic_name}-x": [0, 2]})).collect()
    assert offsets_by_partition(assigned) == {0: list(range(30)), 2: list(range(30))}
    matched = (
        read(spark, rafka_options, subscribePattern=re.escape(topic_name) + "-[xy]")
        .groupBy("topic")
        .count()
        .collect()
    )
    assert {r["topic"]: r["count"] for r in matched} == {
        f"{topic_name}-x": 90,
        f"{topic_name}-y": 10,
    }


def test_starting_and_ending_offsets_and_timestamps(
    spark: Any, rafka_options: dict, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, num_partitions=3, replication_factor=1)
    produce(topic_name, 60, 3)  # 20 records per partition; offset j has timestamp TS0 + 10 * j
    starting = {topic_name: {"0": 5, "1": -2, "2": 19}}
    ending = {topic_name: {"0": 8, "1": -1, "2": 20}}
    rows = read(
        spark,
        rafka_options,
        subscribe=topic_name,
        startingOffsets=json.dumps(starting),
        endingOffsets=json.dumps(ending),
    ).collect()
    assert offsets_by_partition(rows) == {0: [5, 6, 7], 1: list(range(20)), 2: [19]}

    rows = read(
        spark,
        rafka_options,
        subscribe=topic_name,
        startingTimestamp=str(TS0 + 145),
        endingTimestamp=str(TS0 + 170),
    ).collect()
    assert offsets_by_partition(rows) == {0: [15, 16], 1: [15, 16], 2: [15, 16]}
    assert {r["timestamp"] for r in rows} == {
        datetime.fromtimestamp((TS0 + 10 * j) / 1000, timezone.utc).replace(tzinfo=None)
        for j in (15, 16)
    }

    by_timestamp = {topic_name: {"0": TS0, "1": TS0 + 100, "2": TS0 + 10_000}}
    rows = read(
        spark,
        rafka_options,
        assign=json.dumps({topic_name: [0, 1, 2]}),
        startingOffsetsByTimestamp=json.dumps(by_timestamp),
        startingOffsetsByTimestampStrategy="latest",
    ).collect()
    assert offsets_by_partition(rows) == {0: list(range(20)), 1: list(range(10, 20))}


def test_bad_options_fail_naming_the_option(
    spark: Any, rafka_options: dict, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, num_partitions=2, replication_factor=1)
    produce(topic_name, 4, 2)
    cases = [
        (
            {"subscribe": topic_name, "assign": json.dumps({topic_name: [0]})},
            "exactly one of 'assign', 'subscribe' or 'subscribePattern'",
        ),
        (
            {"subscribe": f"{topic_name}-missing"},
            f"option 'subscribe': unknown topic '{topic_name}-missing'",
        ),
        ({"assign": json.dumps({topic_name: [0, 5]})}, "option 'assign': topic"),
        (
            {"subscribe": topic_name, "startingOffsets": f'{{"{topic_name}": {{"0": 1,'},
            "option 'startingOffsets': malformed JSON",
        ),
        (
            {"subscribe": topic_name, "startingOffsets": json.dumps({topic_name: {"0": 0}})},
            "option 'startingOffsets': must name every partition",
        ),
        (
            {
                "subscribe": topic_name,
                "startingOffsetsByTimestamp": json.dumps({topic_name: {"0": TS0 * 2, "1": 0}}),
            },
            "option 'startingOffsetsByTimestamp': no record at or after",
        ),
        (
            {"subscribe": topic_name, "rafka.cluster.id": "another-cluster"},
            "option 'rafka.cluster.id'",
        ),
        ({"subscribe": topic_name, "rafka.ray.address": "127.0.0.1:1"}, "127.0.0.1:1"),
    ]
    for options, message in cases:
        with pytest.raises(Exception) as info:
            read(spark, {**rafka_options, **options}).collect()
        assert message in str(info.value), f"{options}: {str(info.value)[:2000]}"
    with pytest.raises(
        Exception, match="option 'endingOffsets': ending offsets are not valid in streaming"
    ):
        spark.readStream.format("rafka").options(
            **rafka_options, subscribe=topic_name, endingOffsets="latest"
        ).load().writeStream.format("memory").queryName("never").start().awaitTermination(60)


def test_fail_on_data_loss_after_retention(
    spark: Any,
    session_dir: Path,
    zookeeper: ZooKeeperServer,
    ray_nodes: list[str],
    rafka_options: dict,
    eventually: Callable[..., Any],
) -> None:
    namespace = "rafka-spark-retention"
    with LocalCluster(
        brokers=1,
        data_dir=session_dir / "spark-retention",
        zookeeper=zookeeper.connect_string,
        cluster_name="spark-retention",
        namespace=namespace,
        node_ids=ray_nodes[:1],
        broker_config={"log_retention_check_interval_ms": 200},
    ) as cluster:
        cluster.admin().create_topic(
            "aged",
            num_partitions=1,
            replication_factor=1,
            config={"segment.bytes": 2048, "retention.bytes": 2048},
        )
        produce("aged", 300, 1, namespace=namespace, batch_size=512)
        consumer = Consumer(namespace=namespace)
        tp = TopicPartition("aged", 0)
        log_start = eventually(
            lambda: consumer.beginning_offsets([tp])[tp],
            60,
            "retention to delete the first segments",
        )
        high_watermark = consumer.end_offsets([tp])[tp]
        options = {
            **rafka_options,
            "rafka.namespace": namespace,
            "subscribe": "aged",
            "startingOffsets": json.dumps({"aged": {"0": 0}}),
        }

        with pytest.raises(Exception, match="failOnDataLoss") as info:
            read(spark, options).collect()
        assert "aged-0" in str(info.value)

        offsets = sorted(
            r["offset"]
            for r in read(spark, options, failOnDataLoss="false").select("offset").collect()
        )
        log_start_after = consumer.beginning_offsets([tp])[tp]
        assert log_start <= offsets[0] <= log_start_after
        assert offsets == list(range(offsets[0], high_watermark))


def test_streaming_query_restarted_from_its_checkpoint_reads_every_record_once(
    spark: Any,
    rafka_options: dict,
    admin: Admin,
    topic_name: str,
    tmp_path: Path,
    eventually: Callable[..., Any],
) -> None:
    first, added = f"{topic_name}-a", f"{topic_name}-b"
    admin.create_topic(first, num_partitions=2, replication_factor=3)
    produced = [0]
    stop = threading.Event()

    def keep_producing() -> None:
        # acks=all: flush() returns once the records are below the high watermark, so the final
        # processAllAvailable() sees them; with acks=1 the followers may not have caught up yet.
        with Producer(namespace=NS, linger_ms=2, acks="all") as producer:
            while not stop.is_set():
                for _ in range(20):
                    producer.send(first, str(produced[0]).encode())
                    produced[0] += 1
                producer.flush()
                time.sleep(0.05)  # pacing: a steady trickle, not synchronisation

    def start() -> Any:
        return (
            spark.readStream.format("rafka")
            .options(**rafka_options)
            .option("subscribePattern", re.escape(topic_name) + "-[ab]")
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "500")
            .load()
            .selectExpr("topic", "partition", "offset", "cast(value as string) as value")
            .writeStream.format("parquet")
            .option("path", str(tmp_path / "out"))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="100 milliseconds")
            .start()
        )

    def batches_with_rows(query: Any) -> int:
        return sum(1 for p in query.recentProgress if p["numInputRows"] > 0)

    producer = threading.Thread(target=keep_producing, daemon=True)
    producer.start()
    try:
        query = start()
        eventually(lambda: batches_with_rows(query) >= 3, 120, "three micro-batches with data")
        assert max(p["numInputRows"] for p in query.recentProgress) <= 500
        query.stop()
        # A topic matching the pattern appears while the
        # query is down: it is read from its earliest offset.
        admin.create_topic(added, num_partitions=1, replication_factor=1)
        with Producer(namespace=NS) as extra:
            for i in range(100):
                extra.send(added, f"b{i}".encode())
        query = start()
        eventually(
            lambda: batches_with_rows(query) >= 2, 120, "two micro-batches after the restart"
        )
    finally:
        stop.set()
        producer.join(30)
    query.processAllAvailable()
    query.stop()
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert len({(r["topic"], r["partition"], r["offset"]) for r in rows}) == len(rows)
    assert sorted(int(r["value"]) for r in rows if r["topic"] == first) == list(range(produced[0]))
    assert sorted(r["value"] for r in rows if r["topic"] == added) == sorted(
        f"b{i}" for i in range(100)
    )


def test_available_now_reads_everything_in_capped_batches(
    spark: Any, rafka_options: dict, admin: Admin, topic_name: str, tmp_path: Path
) -> None:
    admin.create_topic(topic_name, num_partitions=2, replication_factor=1)
    produce(topic_name, 1000, 2)
    name = topic_name.replace("-", "_").replace(".", "_")
    query = (
        spark.readStream.format("rafka")
        .options(**rafka_options)
        .option("subscribe", topic_name)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "300")
        .load()
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 1000 and max(sizes) <= 300 and len(sizes) >= 4
    assert (
        spark.sql(f"select count(distinct partition, offset) as n from {name}").collect()[0]["n"]
        == 1000
    )
