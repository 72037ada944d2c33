"""The main job (``make demo``): a three-broker cluster producing and consuming a million records.

It starts ZooKeeper, Ray and three brokers on this machine (loopback only), creates a topic with 6
partitions and replication factor 3, produces 1,000,000 records of 100 bytes with acks=all, consumes
them back, checks every partition's count against its high watermark, reads the topic again with
Spark (``spark.read.format("rafka")``) and aggregates it, and shuts everything down. The cluster's
data (about 300 MB) goes to a temporary directory that is removed at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import scratch

import rafka
from rafka.cli.perf import consumer_perf, producer_perf
from rafka.cli.topics import format_description

NAMESPACE = "rafka-demo"


def spark_step(records: int) -> None:
    """Read the demo topic back through the Spark bridge and aggregate it with Spark SQL."""
    import ray
    from pyspark.sql import functions as F
    from spark_setup import spark_session

    print("== reading the topic with Spark: spark.read.format('rafka').option('subscribe', 'demo')")
    started = time.perf_counter()
    spark = spark_session("rafka-demo")
    try:
        frame = (
            spark.read.format("rafka")
            .option("subscribe", "demo")
            .option("rafka.namespace", NAMESPACE)
            .option("rafka.ray.address", ray.get_runtime_context().gcs_address)
            .load()
        )
        per_partition = (
            frame.groupBy("partition")
            .agg(
                F.count("*").alias("records"),
                F.min("offset").alias("first_offset"),
                F.max("offset").alias("last_offset"),
                F.avg(F.length("value")).alias("avg_value_bytes"),
            )
            .orderBy("partition")
        )
        per_partition.show()
        total = per_partition.agg(F.sum("records")).first()[0]
        print(
            f"   Spark read {total:,} records in {time.perf_counter() - started:.1f}s "
            "(session start included)"
        )
        assert total == records, "Spark did not read every record"
    finally:
        spark.stop()


def main() -> None:
    """Run the demo."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="default: a fresh temporary directory"
    )
    scratch.add_keep_argument(parser)
    args = parser.parse_args()
    started = time.perf_counter()
    with scratch.directory(args.data_dir, args.keep, "rafka-demo-", "the cluster's data") as data:
        run(args.records, data)
    print(f"done in {time.perf_counter() - started:.1f}s")


def run(records: int, data_dir: Path) -> None:
    """Start the cluster in ``data_dir``, produce and consume ``records`` records, read them with
    Spark, stop the cluster."""
    started = time.perf_counter()
    print(f"== starting ZooKeeper, Ray and 3 brokers (data in {data_dir})")
    with rafka.LocalCluster(brokers=3, data_dir=data_dir, namespace=NAMESPACE) as cluster:
        admin = cluster.admin()
        described = admin.describe_cluster()
        print(
            f"   up in {time.perf_counter() - started:.1f}s: brokers "
            f"{[b.broker_id for b in described.brokers]}, "
            f"controller {described.controller_id}"
        )
        print("== creating topic 'demo' (6 partitions, replication factor 3)")
        print(
            format_description(admin.create_topic("demo", num_partitions=6, replication_factor=3))
        )
        print(f"== producing {records:,} records of 100 bytes with acks=all")
        produced = producer_perf(
            NAMESPACE,
            "demo",
            records,
            100,
            -1,
            {"acks": "all", "batch_size": 1_048_576, "linger_ms": 5},
        )
        print("   " + produced.summary())
        print(f"== consuming {records:,} records")
        consumed = consumer_perf(NAMESPACE, "demo", records)
        print("   " + consumed.summary().replace("\n", "\n   "))
        consumer = cluster.consumer()
        ends = consumer.end_offsets([rafka.TopicPartition("demo", p) for p in range(6)])
        print(
            f"== high watermarks per partition: {[ends[tp] for tp in sorted(ends)]} (sum "
            f"{sum(ends.values()):,})"
        )
        assert consumed.records == records == sum(ends.values()), "records were lost or duplicated"
        spark_step(records)
        print("== shutting down")


if __name__ == "__main__":
    main()
