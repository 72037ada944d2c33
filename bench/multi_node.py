"""Multi-node benchmark: producer throughput as a cluster grows from one Ray node to three.

Seed 000's partitions table, node by node: a Ray cluster on this machine
(``ray.cluster_utils.Cluster``, every node on 127.0.0.1 with its own ``RAFKA_DATA_DIR``, as
tests/integration/test_multi_node.py and examples/ray-cluster.yaml start theirs) starts with the
head alone and ``rafka up`` runs one broker on it; then a node joins and ``rafka up --brokers 2``
adds a broker there, then a third. At each size one producer sends 100-byte records with acks=1 to
new topics (RF 1, spread over every broker): one of ``--partitions`` partitions, and one with a
partition per broker (the seed's shape: more partitions on more brokers). Each size's topics are
deleted before the next size, so no idle replicas are left behind; best of ``REPEATS`` runs, with
the share of the machine's CPU that was busy during the best run of the first topic, and the CPU
this process (the producer) used in it, as a share of one core.

Every node shares this machine's cores, so the figures say what spreading partitions over more
brokers costs or buys when CPU does not grow with them (bench/README.md), not what more machines
give.

Run alone: ``.venv/bin/python bench/multi_node.py [--records N] [--partitions P]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # Ray's own copy: importing Ray puts it on the path
import ray
from ray.cluster_utils import Cluster

from rafka.cli.perf import ProducerPerf, producer_perf
from rafka.clients.admin import Admin
from rafka.cluster import launcher
from rafka.cluster.placement import DATA_DIR_VARIABLE
from rafka.cluster.ray_head import RAY_ENV_DEFAULTS
from rafka.cluster.zookeeper_server import ZooKeeperServer

NAMESPACE = "rafka-bench-multi-node"
NODES = 3
PARTITIONS = 6
RECORDS = 1_000_000
REPEATS = 2
RECORD_SIZE = 100
# The cluster benchmark's producer: 1 MiB batches, 5 ms linger; acks=1 so the brokers' own work,
# not replication, is what spreads.
PRODUCER: dict[str, Any] = {"batch_size": 1_048_576, "linger_ms": 5, "acks": 1}
HEADER = (
    "brokers (Ray nodes)",
    "records/s, fixed partitions",
    "vs 1 broker",
    "machine CPU busy",
    "producer CPU (of 1 core)",
    "records/s, 1 partition per broker",
    "vs 1 broker",
)


def title(records: int, partitions: int) -> str:
    """The table's title."""
    return (
        f"Multi-node (one broker per Ray node on this machine, {partitions} fixed partitions, "
        f"RF 1, acks=1, {records:,} records of {RECORD_SIZE} bytes, best of {REPEATS})"
    )


def _add_node(cluster: Cluster, base: Path, number: int) -> None:
    """Start Ray node ``number`` (0: the head) with its own temp and data directories."""
    directory = base / f"n{number}"
    (directory / "ray").mkdir(parents=True)
    cluster.add_node(
        num_cpus=1,
        node_ip_address="127.0.0.1",
        temp_dir=str(directory / "ray"),
        include_dashboard=False,
        object_store_memory=100 * 1024 * 1024,
        env_vars={**RAY_ENV_DEFAULTS, DATA_DIR_VARIABLE: str(directory / "data")},
    )
    cluster.wait_for_nodes()


def _measure(
    admin: Admin, topic: str, partitions: int, records: int
) -> tuple[ProducerPerf, float, float]:
    """Create ``topic``; the best of ``REPEATS`` producer runs to it (after a short warm-up), the
    percentage of the machine's CPU busy during that run and of one core this process used; delete
    the topic."""
    admin.create_topic(topic, partitions, 1)
    producer_perf(NAMESPACE, topic, records // 20, RECORD_SIZE, -1, PRODUCER, progress=False)
    runs = []
    me = psutil.Process()
    for _ in range(REPEATS):
        psutil.cpu_percent()  # starts the interval the next call measures
        before = sum(me.cpu_times()[:2])
        result = producer_perf(NAMESPACE, topic, records, RECORD_SIZE, -1, PRODUCER, progress=False)
        own = (sum(me.cpu_times()[:2]) - before) / result.seconds * 100
        runs.append((result, psutil.cpu_percent(), own))
    admin.delete_topics([topic], timeout_ms=120_000)
    return max(runs, key=lambda run: run[0].records_per_s)


def run(records: int = RECORDS, partitions: int = PARTITIONS) -> list[tuple[str, ...]]:
    """Grow the cluster node by node, measuring at each size; one table row per size."""
    rows: list[tuple[str, ...]] = []
    # Short: Ray's socket paths inside each node's temp dir must fit in 107 characters.
    with tempfile.TemporaryDirectory(prefix="rmb-") as directory:
        base = Path(directory)
        cluster = Cluster()
        try:
            with ZooKeeperServer(base / "zookeeper") as zookeeper:
                first: tuple[float, float] | None = None
                for size in range(1, NODES + 1):
                    _add_node(cluster, base, size - 1)
                    launcher.up(
                        base / "driver",
                        size,
                        zookeeper.connect_string,
                        str(cluster.address),
                        NAMESPACE,
                        "bench",
                    )
                    admin = Admin(namespace=NAMESPACE)
                    fixed, busy, own = _measure(admin, f"fixed-{size}", partitions, records)
                    spread, _, _ = _measure(admin, f"spread-{size}", size, records)
                    first = first or (fixed.records_per_s, spread.records_per_s)
                    rows.append(
                        (
                            f"{size} ({size})",
                            f"{fixed.records_per_s:,.0f}",
                            f"{fixed.records_per_s / first[0]:.2f}x",
                            f"{busy:.0f}%",
                            f"{own:.0f}%",
                            f"{spread.records_per_s:,.0f}",
                            f"{spread.records_per_s / first[1]:.2f}x",
                        )
                    )
                launcher.down(base / "driver")
        finally:
            ray.shutdown()
            cluster.shutdown()
    return rows


def main() -> None:
    """Print the table alone."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=RECORDS)
    parser.add_argument("--partitions", type=int, default=PARTITIONS)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    print_table(title(args.records, args.partitions), HEADER, run(args.records, args.partitions))


if __name__ == "__main__":
    main()
