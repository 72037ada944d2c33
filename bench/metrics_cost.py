"""What recording metrics costs: produce and consume throughput with metrics on and off.

Two 3-broker clusters run side by side on the same Ray and ZooKeeper, one with ``metrics.enabled``
true, one false (the clients' recording is switched with their cluster's). The same workload (one
producer, 100-byte records, RF 1, acks=1, 6 partitions; then one consumer reading them back) runs
on each in turn, the order swapped every round, so drifts of this shared machine's load fall on
both sides alike and no cluster start is timed.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from rafka.cli.perf import consumer_perf, producer_perf
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.metrics import catalog
from rafka.metrics.registry import MetricsRegistry

HEADER = ("metrics", "produce records/s (median)", "consume records/s (median)", "rounds")
ROUNDS = 8
PRODUCER = {"batch_size": 1_048_576, "linger_ms": 5, "acks": 1}
NAMESPACES = {True: "rafka-bench-metrics-on", False: "rafka-bench-metrics-off"}


def title(records: int) -> str:
    """The table's title."""
    return (
        f"Metrics cost ({records:,} records of 100 bytes per round, RF 1, acks=1, 6 partitions, "
        f"{ROUNDS} rounds on two clusters side by side)"
    )


def _round(enabled: bool, records: int, index: int) -> tuple[float, float]:
    namespace = NAMESPACES[enabled]
    topic = f"m{index}"
    client = {"metrics_enabled": enabled}
    produced = producer_perf(
        namespace, topic, records, 100, -1, {**PRODUCER, **client}, progress=False
    )
    consumed = consumer_perf(namespace, topic, records, progress=False, consumer_config=client)
    return produced.records_per_s, consumed.records_per_s


def _measure(records: int, data_dir: Path) -> dict[bool, list[tuple[float, float]]]:
    measured: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    with ExitStack() as stack:
        zookeeper = stack.enter_context(ZooKeeperServer(data_dir / "zookeeper"))
        for enabled, namespace in NAMESPACES.items():
            cluster = stack.enter_context(
                LocalCluster(
                    brokers=3,
                    data_dir=data_dir / namespace,
                    zookeeper=zookeeper.connect_string,
                    cluster_name=namespace,
                    namespace=namespace,
                    broker_config={"metrics_enabled": enabled},
                )
            )
            admin = cluster.admin()
            for index in range(ROUNDS):
                admin.create_topic(f"m{index}", 6, 1)
        for index in range(ROUNDS):
            order = (True, False) if index % 2 == 0 else (False, True)
            for enabled in order:
                measured[enabled].append(_round(enabled, records, index))
    return measured


def _recording_ns(enabled: bool, repeats: int = 200_000) -> float:
    """Nanoseconds a replica spends recording one produce request and one fetch (the broker's
    hot path), measured in this process."""
    registry = MetricsRegistry(enabled)
    messages = registry.counter(catalog.MESSAGES_IN, broker=0, topic="t")
    size = registry.counter(catalog.BYTES_IN, broker=0, topic="t")
    requests = registry.counter(catalog.REQUESTS, broker=0, request="Produce")
    times = registry.histogram(catalog.REQUEST_TOTAL_TIME, broker=0, request="Produce")
    started = time.perf_counter_ns()
    for _ in range(repeats):
        begun = time.perf_counter()
        messages.inc(9000)
        size.inc(1_000_000)
        requests.inc()
        times.observe((time.perf_counter() - begun) * 1000)
    return (time.perf_counter_ns() - started) / repeats


def run(records: int = 1_000_000) -> list[tuple[str, ...]]:
    """Rounds on both clusters; rows of medians and the on/off ratio."""
    with tempfile.TemporaryDirectory(prefix="rafka-bench-metrics-") as data_dir:
        measured = _measure(records, Path(data_dir))
    medians = {
        enabled: (
            statistics.median(p for p, _ in runs),
            statistics.median(c for _, c in runs),
        )
        for enabled, runs in measured.items()
    }
    rows: list[tuple[str, ...]] = [
        (
            "on" if enabled else "off",
            f"{medians[enabled][0]:,.0f}",
            f"{medians[enabled][1]:,.0f}",
            ", ".join(f"{p / 1000:,.0f}K / {c / 1000:,.0f}K" for p, c in measured[enabled]),
        )
        for enabled in (True, False)
    ]
    on, off = medians[True], medians[False]
    rows.append(
        ("on / off", f"{on[0] / off[0]:.3f}", f"{on[1] / off[1]:.3f}", "target >= 0.98 each")
    )
    rows.append(
        (
            "recording one request",
            f"{_recording_ns(True):,.0f} ns on",
            f"{_recording_ns(False):,.0f} ns off",
            "a replica's counters and timer per produce request, in process",
        )
    )
    return rows


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row))
