"""`make bench`: run every benchmark and print one table per area.

Figures are measured inside one run on one machine; compare ratios, not absolutes, across machines.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import consumer_groups
import controller_scale
import failover
import idempotence
import kafka_clients
import listener_security
import metrics_cost
import multi_node
import reassignment
import recovery
import redis_streams
import scale
import seed_tables
import spark
import storage
import topic_deletion
import topic_partitions

import cluster


def print_table(title: str, header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    """Print a Markdown table (pasted as is into bench/README.md)."""
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main() -> None:
    """Parse options and run the benchmarks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--storage-mib", type=int, default=1024, help="MiB written by the storage benchmark"
    )
    parser.add_argument(
        "--records", type=int, default=1_000_000, help="records per cluster benchmark run"
    )
    parser.add_argument(
        "--seed-records",
        type=int,
        default=seed_tables.RECORDS,
        help="records per point of the seed tables (fewer for large messages)",
    )
    parser.add_argument(
        "--only",
        choices=(
            "storage",
            "cluster",
            "failover",
            "recovery",
            "groups",
            "spark",
            "topics",
            "reassignment",
            "exactly-once",
            "kafka-clients",
            "security",
            "metrics",
            "multi-node",
            "redis",
            "seed",
            "scale",
        ),
        default=None,
        help="run one area",
    )
    args = parser.parse_args()
    if args.only in (None, "storage"):
        print_table("Storage", ("what", "records/s", "MB/s", "note"), storage.run(args.storage_mib))
    if args.only in (None, "cluster"):
        print_table(
            "Cluster (3 brokers, 6 partitions, 100-byte records)",
            cluster.HEADER,
            cluster.run(args.records),
        )
    if args.only in (None, "failover"):
        print_table(
            "Failover (acks=all producer, RF 3, min.insync.replicas 2, 6 s session timeout)",
            ("fault", "unavailability (longest gap between acks)", "target"),
            failover.run(),
        )
    if args.only in (None, "recovery"):
        print_table(recovery.title(recovery.REPEATS), recovery.HEADER, recovery.run())
    if args.only in (None, "groups"):
        print_table(
            "Consumer groups (3 brokers, 8-partition topic, "
            f"{consumer_groups.SESSION_TIMEOUT_MS / 1000:g} s session timeout, "
            f"{args.records:,} records of 100 bytes)",
            ("what", "figure", "note/target"),
            consumer_groups.run(args.records),
        )
    if args.only in (None, "spark"):
        print_table(
            f"Spark bridge ({args.records:,} records of 100 bytes, local[2])",
            ("what", "rows/s", "note"),
            spark.run(args.records),
        )
    if args.only in (None, "topics"):
        print_table(
            f"Topic deletion ({topic_deletion.PARTITIONS} partitions, "
            f"RF {topic_deletion.REPLICATION})",
            topic_deletion.HEADER,
            topic_deletion.run(),
        )
        print_table(
            f"Adding partitions ({topic_partitions.ADDED}, "
            f"RF {topic_partitions.REPLICATION_FACTOR})",
            topic_partitions.HEADER,
            topic_partitions.run(),
        )
    if args.only in (None, "reassignment"):
        print_table(
            f"Reassignment ({reassignment.MIB} MiB, 2 brokers)",
            reassignment.HEADER,
            reassignment.run(),
        )
    if args.only in (None, "exactly-once"):
        print_table(idempotence.title(idempotence.RECORDS), idempotence.HEADER, idempotence.run())
    if args.only in (None, "metrics"):
        print_table(
            metrics_cost.title(args.records), metrics_cost.HEADER, metrics_cost.run(args.records)
        )
    if args.only in (None, "redis"):
        print_table(
            redis_streams.title(args.records), redis_streams.HEADER, redis_streams.run(args.records)
        )
    if args.only in (None, "seed"):
        for table in seed_tables.run(args.seed_records):
            print_table(table.title, table.header, table.rows)
    if args.only in (None, "multi-node"):
        print_table(
            multi_node.title(args.records, multi_node.PARTITIONS),
            multi_node.HEADER,
            multi_node.run(args.records),
        )
    if args.only in (None, "scale"):
        print_table(scale.title(), scale.HEADER, scale.run(args.records))
        print_table(controller_scale.title(), controller_scale.HEADER, controller_scale.run())
    if args.only in (None, "kafka-clients"):
        print_table(
            kafka_clients.title(kafka_clients.RECORDS), kafka_clients.HEADER, kafka_clients.run()
        )
    if args.only in (None, "security"):
        print_table(
            listener_security.title(listener_security.RECORDS),
            listener_security.HEADER,
            listener_security.run(),
        )


if __name__ == "__main__":
    main()
