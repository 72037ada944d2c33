"""The ``rafka`` Spark sink on a real local[2] SparkSession and the session's 3-broker cluster."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.partitioner import partition_for_key
from rafka.clients.producer import Producer
from rafka.protocol.types import TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NS = "rafka-test"
SCHEMA = "key string, value binary, headers array<struct<key:string,value:binary>>, partition int"


def read_back(spark: Any, options: dict[str, str], topic: str) -> list[Any]:
    return (
        spark.read.format("rafka")
        .options(**options)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
        .collect()
    )


def test_batch_write_then_read_back_keys_headers_and_partitions(
    spark: Any, rafka_options: dict, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, num_partitions=3, replication_factor=3)
    rows = [
        (
            f"k{i}",
            f"v{i}".encode(),
            [("n", str(i).encode())] if i % 2 else [],
            i % 3 if i < 150 else None,
        )
        for i in range(300)
    ]
    (
        spark.createDataFrame(rows, SCHEMA)
        .repartition(2)
        .write.format("rafka")
        .options(**rafka_options)
        .option("topic", topic_name)
        .option("acks", "all")
        .mode("append")
        .save()
    )
    got = read_back(spark, rafka_options, topic_name)
    assert len(got) == 300
    for r in got:
        i = int(r["value"][1:])
        assert r["key"] == f"k{i}".encode()
        assert [(h["key"], h["value"]) for h in r["headers"]] == (
            [("n", str(i).encode())] if i % 2 else []
        )
        # Explicit partitions are kept; null ones go where Kafka's murmur2 partitioner puts the key.
        assert r["partition"] == (i % 3 if i < 150 else partition_for_key(f"k{i}".encode(), 3))
    by_partition: dict[int, list[int]] = {}
    for r in got:
        by_partition.setdefault(r["partition"], []).append(r["offset"])
    assert all(sorted(offsets) == list(range(len(offsets))) for offsets in by_partition.values())


def test_topic_column_and_the_topic_option_which_wins(
    spark: Any, rafka_options: dict, admin: Admin, topic_name: str
) -> None:
    one, two, forced = (f"{topic_name}-{suffix}" for suffix in ("one", "two", "forced"))
    for topic in (one, two, forced):
        admin.create_topic(topic, num_partitions=1, replication_factor=1)
    df = spark.createDataFrame(
        [(one if i % 2 else two, f"v{i}") for i in range(40)], "topic string, value string"
    )
    df.write.format("rafka").options(**rafka_options).mode("append").save()
    df.write.format("rafka").options(**rafka_options).option("topic", forced).mode("append").save()
    assert sorted(r["value"] for r in read_back(spark, rafka_options, one)) == sorted(
        f"v{i}".encode() for i in range(1, 40, 2)
    )
    assert sorted(r["value"] for r in read_back(spark, rafka_options, two)) == sorted(
        f"v{i}".encode() for i in range(0, 40, 2)
    )
    assert len(read_back(spark, rafka_options, forced)) == 40


def test_streaming_write_restarts_from_its_checkpoint(
    spark: Any, rafka_options: dict, admin: Admin, topic_name: str, tmp_path: Path
) -> None:
    source, sink = f"{topic_name}-in", f"{topic_name}-out"
    admin.create_topic(source, num_partitions=2, replication_factor=1)
    admin.create_topic(sink, num_partitions=2, replication_factor=1)

    def send(values: range) -> None:
        with Producer(namespace=NS) as producer:
            for i in values:
                producer.send(source, f"v{i}".encode(), key=f"k{i}".encode())

    def run_until_caught_up() -> None:
        query = (
            spark.readStream.format("rafka")
            .options(**rafka_options)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "150")
            .load()
            .selectExpr("key", "upper(cast(value as string)) as value")
            .writeStream.format("rafka")
            .options(**rafka_options)
            .option("topic", sink)
            .option("linger.ms", "5")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(180)
        assert query.exception() is None

    send(range(200))
    run_until_caught_up()
    send(range(200, 260))
    run_until_caught_up()  # the restart continues from the checkpoint: nothing is written twice
    got = read_back(spark, rafka_options, sink)
    assert sorted(r["value"] for r in got) == sorted(f"V{i}".encode() for i in range(260))
    assert all(r["key"] == b"k" + r["value"][1:] for r in got)


def test_bad_writes_fail_naming_the_column_or_option(
    spark: Any, rafka_options: dict, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, num_partitions=3, replication_factor=1)
    good = spark.createDataFrame([("a", 1)], "value string, partition int")
    cases = [
        (
            spark.createDataFrame([("a",)], "key string"),
            {"topic": topic_name},
            "append",
            "option 'value'",
        ),
        (good, {}, "append", "option 'topic'"),
        (good, {"topic": topic_name}, "overwrite", "option 'mode'"),
        (good, {"topic": topic_name, "acks": "2"}, "append", "option 'acks'"),
        (
            spark.createDataFrame([("a", 7)], "value string, partition int"),
            {"topic": topic_name},
            "append",
            "not 7",
        ),
        (
            good.drop("partition"),
            {"topic": f"{topic_name}-missing"},
            "append",
            f"{topic_name}-missing",
        ),
    ]
    for df, options, mode, message in cases:
        with pytest.raises(Exception) as info:
            df.write.format("rafka").options(**rafka_options, **options).mode(mode).save()
        assert message in str(info.value), f"{options}: {str(info.value)[:2000]}"


def test_a_write_to_a_missing_topic_fails_before_any_task_with_one_message_naming_it(
    spark: Any, rafka_options: dict, topic_name: str
) -> None:
    missing = f"{topic_name}-missing"
    frame = spark.createDataFrame([("a",)], "value string")
    with pytest.raises(Exception) as info:
        frame.write.format("rafka").options(**rafka_options).option("topic", missing).mode(
            "append"
        ).save()
    message = str(info.value)
    assert (
        f"UNKNOWN_TOPIC_OR_PARTITION (3): option 'topic': topic '{missing}' does not exist"
        in message
    ), message
    assert "JVM stacktrace" not in message and "at org.apache.spark" not in message, message
    assert len(message.splitlines()) < 30, message


def read_committed(
    topic: str, partitions: int, eventually: Callable[..., Any]
) -> tuple[list[Any], dict[TopicPartition, int]]:
    """Every value a read_committed consumer reads from ``topic`` once no transaction is open on it
    (its last stable offsets reached the high watermarks), and those high watermarks."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with (
        Consumer(namespace=NS, isolation_level="read_committed", fetch_max_wait_ms=100) as c,
        Consumer(namespace=NS) as uncommitted,
    ):

        def settled() -> dict[TopicPartition, int] | None:
            high_watermarks = uncommitted.end_offsets(tps)
            return high_watermarks if c.end_offsets(tps) == high_watermarks else None

        ends = eventually(settled, 30, f"every transaction on {topic} to end")
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)
        seen: list[Any] = []

        def caught_up() -> bool:
            for records in c.poll(timeout_ms=200).values():
                seen.extend(r.value for r in records)
            return all(c.position(tp) >= ends[tp] for tp in tps)

        eventually(caught_up, 30, f"a read_committed consumer to read {topic} to its end")
    return seen, ends


def test_a_transactional_write_is_read_committed_once_and_a_failed_one_not_at_all(
    spark: Any, rafka_options: dict, admin: Admin, topic_name: str, eventually: Any
) -> None:
    from pyspark.sql.functions import udf

    admin.create_topic(topic_name, num_partitions=2, replication_factor=1)
    options = {**rafka_options, "topic": topic_name, "transactional.id.prefix": topic_name}
    spark.range(0, 400, 1, 4).selectExpr("cast(id as string) as value").write.format(
        "rafka"
    ).options(**options).mode("append").save()
    written, ends = read_committed(topic_name, 2, eventually)
    assert sorted(written) == sorted(str(i).encode() for i in range(400))

    @udf("string")
    def fail_on_the_last_row(n: int) -> str:
        if n == 399:
            raise ValueError("the last partition fails")
        return f"again-{n}"

    failing = spark.range(0, 400, 1, 4).select(fail_on_the_last_row("id").alias("value"))
    with pytest.raises(Exception, match="the last partition fails"):
        failing.write.format("rafka").options(**options).option(
            "transaction.timeout.ms", "5000"
        ).mode("append").save()
    after, ends_after = read_committed(topic_name, 2, eventually)
    # Tasks wrote rows (the log grew: an empty transaction writes no marker either), but their
    # transactions were aborted: nothing new is read.
    assert sum(ends_after.values()) > sum(ends.values())
    assert sorted(after) == sorted(written)
