"""Spark bridge benchmark: Spark batch write and read of 100-byte records next to the plain clients.

One run, one cluster (``LocalCluster``, 3 brokers, replication factor 1, acks=1), one machine:
(a) the plain Producer writes N records, (b) a Spark local[2] job writes N records through the
``rafka`` sink, (c) the plain Consumer reads (a)'s N records, (d) a Spark job reads them through the
``rafka`` source into Spark's ``noop`` sink (every row is materialised, nothing else is done).
Spark's Python workers connect to Ray on their first task and keep their producer, as in a real
application, so warm-up jobs run before the timed ones: a small write before (b), and reading back
(b)'s records (which checks them) before (d). Each reader runs three times and keeps its best run,
because the JVM's JIT keeps speeding Spark up over the first few jobs. Target (issue 18): (d) >=
0.8 x (c).

Run alone with ``python bench/spark.py [--records N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

RECORD_SIZE = 100
PARTITIONS = 4
FETCH_BYTES = 4 << 20  # the plain consumer's perf-test fetch size, used by both readers
PRODUCER_CONFIG = {"batch_size": 262_144, "linger_ms": 5}
NAMESPACE = "rafka-bench-spark"
READ_RUNS = 3  # reads leave the data in place: keep each reader's best run on this noisy machine


def _spark_session():
    """A local[2] SparkSession set up as the platform needs it (loopback only, venv Python, UTC)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rafka-bench")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    from rafka.spark_bridge import register

    register(spark)
    return spark


def _timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def run(records: int = 1_000_000) -> list[tuple[str, str, str]]:
    """Measure (a)-(d) in one run; return table rows (what, rows/s, note)."""
    import ray

    from rafka.cli.perf import consumer_perf, producer_perf
    from rafka.cluster.local_cluster import LocalCluster

    work = Path(tempfile.mkdtemp(prefix="rafka-bench-spark-"))
    os.environ.setdefault("RAY_TMPDIR", str(work / "ray"))
    (work / "ray").mkdir(exist_ok=True)
    try:
        with LocalCluster(brokers=3, data_dir=work / "data", namespace=NAMESPACE) as cluster:
            admin = cluster.admin()
            for topic in (
                "plain",
                "spark-out",
                "warm",
            ):  # 4 partitions each, spread over the 3 brokers
                admin.create_topic(topic, num_partitions=PARTITIONS, replication_factor=1)
            plain_write = producer_perf(
                NAMESPACE,
                "plain",
                records,
                RECORD_SIZE,
                producer_config=PRODUCER_CONFIG,
                progress=False,
            )
            plain_reads = [
                consumer_perf(NAMESPACE, "plain", records, progress=False) for _ in range(READ_RUNS)
            ]

            spark = _spark_session()
            cluster_options = {
                "rafka.ray.address": ray.get_runtime_context().gcs_address,
                "rafka.namespace": NAMESPACE,
            }
            sink_options = {
                **cluster_options,
                "batch.size": str(PRODUCER_CONFIG["batch_size"]),
                "linger.ms": str(PRODUCER_CONFIG["linger_ms"]),
            }

            def write(topic: str, count: int) -> None:
                (
                    spark.range(count, numPartitions=2)
                    .selectExpr(f"cast(repeat('x', {RECORD_SIZE}) as binary) as value")
                    .write.format("rafka")
                    .options(**sink_options)
                    .option("topic", topic)
                    .mode("append")
                    .save()
                )

            def read(topic: str) -> None:
                (
                    spark.read.format("rafka")
                    .options(**cluster_options)
                    .option("subscribe", topic)
                    .option("kafka.max.partition.fetch.bytes", str(FETCH_BYTES))
                    .load()
                    .write.format("noop")
                    .mode("overwrite")
                    .save()
                )

            write("warm", 10_000)  # workers connect to Ray and start their producers
            spark_write_s = _timed(lambda: write("spark-out", records))
            # Checking what (b) wrote also warms the read path up (Python workers, the JVM's JIT).
            read_count = (
                spark.read.format("rafka")
                .options(**cluster_options)
                .option("subscribe", "spark-out")
                .load()
                .count()
            )
            spark_read_s = min(_timed(lambda: read("plain")) for _ in range(READ_RUNS))
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if read_count != records:
        raise RuntimeError(f"the Spark write left {read_count} records in the topic, not {records}")
    plain_write_rate = plain_write.records_per_s
    plain_read_rate = max(run.records_per_s for run in plain_reads)
    if any(run.records != records for run in plain_reads):
        raise RuntimeError(
            f"the plain consumer read {[run.records for run in plain_reads]} records, not {records}"
        )
    spark_write_rate = records / spark_write_s
    spark_read_rate = records / spark_read_s
    return [
        (
            "(a) plain Producer write (one process)",
            f"{plain_write_rate:,.0f}",
            f"{records:,} x {RECORD_SIZE} B, {PARTITIONS} partitions, acks=1",
        ),
        (
            "(b) Spark batch write, local[2]",
            f"{spark_write_rate:,.0f}",
            f"(b)/(a) = {spark_write_rate / plain_write_rate:.2f}",
        ),
        (
            "(c) plain Consumer read (one process)",
            f"{plain_read_rate:,.0f}",
            f"best of {READ_RUNS}, {FETCH_BYTES >> 20} MiB fetches",
        ),
        (
            "(d) Spark batch read into noop, local[2]",
            f"{spark_read_rate:,.0f}",
            f"best of {READ_RUNS}; (d)/(c) = {spark_read_rate / plain_read_rate:.2f} "
            "(target >= 0.8)",
        ),
    ]


def main() -> None:
    """Print the table (Markdown, as bench/run.py does)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    rows = run(args.records)
    print("\n### Spark bridge\n")
    print("| what | rows/s | note |")
    print("|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
