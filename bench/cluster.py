"""Cluster benchmark: produce and consume throughput and acks=all latency on a local cluster.

One producer, 100-byte records, 3 brokers, 6 partitions; replication factor 1 and 3; acks 1 and all;
one consumer; acks=all latency at a throttled 10,000 records/s and one record at a time; and the
memory of an idle partition replica actor. Everything runs in one process against one local cluster,
so ratios are comparable.

Every replica is a process, so the latency runs are made twice: first while the latency topic's 18
replicas are the only ones (as in Kafka's own latency benchmarks, a cluster serving one topic), then
again after the throughput topics added 25 more idle replica processes to the 2 cores.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

import ray
from process_memory import process_memory

from rafka.actors import names
from rafka.cli.perf import ProducerPerf, consumer_perf, producer_perf
from rafka.clients.admin import Admin
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster

NAMESPACE = "rafka-bench"
# 1 MiB batches (Kafka's max.request.size): every produce request is one Ray call with a fixed CPU
# cost across the processes involved, so throughput scales with records per request.
PRODUCER = {"batch_size": 1_048_576, "linger_ms": 5}
ROUND_TRIPS = 2_000
HEADER = ("what", "records/s", "MB/s", "latency", "target", "anchor")
# Issue 18's starting figures (2026-11-24, this machine) and seed 000's (3 brokers on 8-vCPU VMs).
ANCHORS = {
    "produce RF 1, acks=1": "637-650K; seed 1.28M",
    "produce RF 3, acks=all": "519-568K",
    "consume (1 consumer, 6 partitions), poll": "1.3-1.59M; seed 3.06M",
    "acks=all at 10,000 records/s (RF 3), latency topic only": "p99 7.7-8.7 ms",
    "acks=all send().get() one at a time, latency topic only": "p50 2.7 ms",
    "idle partition replica actor": "USS 49 MB",
}
LATENCY_TEST = {"acks": "all", "linger_ms": 0}
WARM_UP_RECORDS = 20_000


def _idle_replica_memory_mb(admin: Admin) -> tuple[float, float, float]:
    """(RSS, PSS, USS) in MB of an idle replica actor's process (``process_memory``)."""
    (leader,) = {p.leader for p in admin.describe_topic("idle").partitions}
    replica = ray.get_actor(names.replica_actor_name("idle", 0, leader), namespace=NAMESPACE)
    memory = process_memory(ray.get(replica.describe.remote(), timeout=30)["pid"])
    return memory.rss_mb, memory.pss_mb, memory.uss_mb


def _warm_up() -> None:
    """Two seconds of the latency workload, not measured.

    A process's first requests to an actor open Ray's connection to it, and a new topic's
    followers are still joining the ISR; that start would count in a short run's p99, and
    latency is measured in steady state.
    """
    producer_perf(NAMESPACE, "lat", WARM_UP_RECORDS, 100, 10_000, LATENCY_TEST, progress=False)


def _throttled_latency(label: str) -> tuple[str, ...]:
    """acks=all at a throttled 10,000 records/s with Kafka's default batching (linger 0, 16 KiB)."""
    result = producer_perf(NAMESPACE, "lat", 100_000, 100, 10_000, LATENCY_TEST, progress=False)
    return (
        f"acks=all at 10,000 records/s (RF 3), {label}",
        f"{result.records_per_s:,.0f}",
        f"{result.mb_per_s:.1f}",
        f"p50 {result.percentile(0.5):.1f} / p99 {result.percentile(0.99):.1f} / "
        f"p99.9 {result.percentile(0.999):.1f} ms",
        "p99 <= 5 ms, p99.9 <= 15 ms",
    )


def _round_trips(label: str) -> tuple[str, ...]:
    """``send(...).get()`` one record at a time: the latency of a lone acks=all request."""
    latencies: list[float] = []
    with Producer(namespace=NAMESPACE, acks="all") as producer:
        for i in range(ROUND_TRIPS):
            started = time.perf_counter()
            producer.send("lat", b"x" * 100, partition=i % 6).get(timeout=30)
            latencies.append((time.perf_counter() - started) * 1000)
    result = ProducerPerf(ROUND_TRIPS, sum(latencies) / 1000, 100, latencies)
    return (
        f"acks=all send().get() one at a time, {label}",
        f"{result.records_per_s:,.0f}",
        "-",
        f"p50 {result.percentile(0.5):.1f} / p99 {result.percentile(0.99):.1f} ms",
        "p50 <= 1.5 ms",
    )


def _produced(label: str, result: ProducerPerf, target: str) -> tuple[str, ...]:
    """A produce run as a table row."""
    return (
        label,
        f"{result.records_per_s:,.0f}",
        f"{result.mb_per_s:.1f}",
        f"p50 {result.percentile(0.5):.0f} / p99 {result.percentile(0.99):.0f} ms",
        target,
    )


def run(records: int = 1_000_000) -> list[tuple[str, ...]]:
    """Run every cluster measurement; return rows of ``HEADER`` (the anchor is the figure the
    target is measured against)."""
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory(prefix="rafka-bench-") as data_dir:
        with LocalCluster(brokers=3, data_dir=data_dir, namespace=NAMESPACE) as cluster:
            admin = cluster.admin()
            admin.create_topic("lat", 6, 3)
            _warm_up()
            latency_rows = [
                _throttled_latency("latency topic only"),
                _round_trips("latency topic only"),
            ]
            admin.create_topic("rf1", 6, 1)
            admin.create_topic("rf3", 6, 3)
            admin.create_topic("idle", 1, 1)
            cases: list[tuple[str, str, Any, str]] = [
                ("produce RF 1, acks=1", "rf1", 1, ">= 1,300,000"),
                ("produce RF 3, acks=1", "rf3", 1, ""),
                ("produce RF 3, acks=all", "rf3", "all", ">= 800,000"),
            ]
            for label, topic, acks, target in cases:
                result = producer_perf(
                    NAMESPACE, topic, records, 100, -1, {**PRODUCER, "acks": acks}, progress=False
                )
                rows.append(_produced(label, result, target))
            columnar = producer_perf(
                NAMESPACE, "rf1", records, 100, -1, {**PRODUCER, "acks": 1}, False, columnar=True
            )
            rows.append(_produced("produce RF 1, acks=1, send_arrow", columnar, ">= 1,300,000"))
            for label, columnar_read, target in (
                ("consume (1 consumer, 6 partitions), poll", False, ">= 2,000,000"),
                ("consume (1 consumer, 6 partitions), poll_arrow", True, ">= 5,000,000"),
            ):
                consumed = consumer_perf(
                    NAMESPACE, "rf1", records, progress=False, columnar=columnar_read
                )
                rows.append(
                    (
                        label,
                        f"{consumed.records_per_s:,.0f}",
                        f"{consumed.bytes / consumed.seconds / 1e6:.1f}",
                        "-",
                        target,
                    )
                )
            rows.extend(latency_rows)
            rows.append(_throttled_latency("43 replicas on the machine"))
            rows.append(_round_trips("43 replicas on the machine"))
            rss, pss, uss = _idle_replica_memory_mb(admin)
            rows.append(
                (
                    "idle partition replica actor",
                    "-",
                    "-",
                    f"USS {uss:.0f} MB, PSS {pss:.0f} MB, RSS {rss:.0f} MB",
                    "USS <= 45 MB",
                )
            )
    return [(*row, ANCHORS.get(row[0], "-")) for row in rows]
