"""Scale benchmark: 200 partition replicas on one machine, what they cost and what they carry.

A ``LocalCluster`` of 4 brokers (the embedded ZooKeeper and a local Ray, as ``rafka up`` starts
them) gets one topic of 200 partitions with replication factor 1, so every broker hosts 50 replica
actors, each a process of its own. Measured: the time the cluster takes to start; the time to
create the topic (until ``create_topic`` returns, and until every partition's leader replica
answers that it leads); the memory of every replica process (USS and PSS, median, max and total)
beside an empty Ray actor, the brokers' other actors and Ray's own processes; the CPU they use
while idle; and acks=1
throughput of one producer spread over all 200 partitions against a 4-partition topic on the same
cluster.

Run standalone: ``.venv/bin/python bench/scale.py [--partitions N] [--brokers B]
[--records R]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import ray
from process_memory import ProcessMemory, cpu_seconds, process_memory, processes_running

from rafka.actors import names
from rafka.cli.perf import producer_perf
from rafka.cluster.local_cluster import LocalCluster

NAMESPACE = "rafka-bench-scale"
BROKERS = 4
PARTITIONS = 200
TOPIC = "spread"
NARROW_TOPIC = "narrow"
NARROW_PARTITIONS = 4
PRODUCER = {"batch_size": 1_048_576, "linger_ms": 5, "acks": 1}
CREATE_TIMEOUT_MS = 1_800_000
IDLE_SAMPLE_S = 10.0
HEADER = ("what", "figure", "note")

# Ray's own processes of one session, by a fragment of their command line.
RAY_PROCESSES = {
    "GCS server": "gcs_server",
    "raylet": "raylet/raylet",
    "autoscaler monitor": "autoscaler/_private/monitor.py",
    "log monitor": "log_monitor.py",
    "dashboard agent": "dashboard/agent.py",
    "runtime env agent": "runtime_env/agent/main.py",
}


def _mb(values: Iterable[float]) -> str:
    listed = list(values)
    return (
        f"median {statistics.median(listed):.1f} / max {max(listed):.1f} / "
        f"total {sum(listed):,.0f} MB"
    )


def _replica_pids(leaders: dict[int, int], timeout_s: float = 1800.0) -> dict[int, int]:
    """Partition -> pid of its leader replica, once each one answers that it leads."""
    pids: dict[int, int] = {}
    deadline = time.monotonic() + timeout_s
    while len(pids) < len(leaders):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(leaders) - len(pids)} partitions have no acting leader")
        for partition, broker in leaders.items():
            if partition in pids:
                continue
            try:
                replica = ray.get_actor(
                    names.replica_actor_name(TOPIC, partition, broker), namespace=NAMESPACE
                )
                described = ray.get(replica.describe.remote(), timeout=30)
            except (ValueError, ray.exceptions.RayError):
                continue
            if described["role"] == "leader":
                pids[partition] = described["pid"]
        time.sleep(0.05)
    return pids


def _empty_actor_memory() -> ProcessMemory:
    """An actor with one method that returns its pid: what any Ray actor process costs."""

    # Defined here so that cloudpickle sends the class by value (this module is not importable in a
    # Ray worker).
    @ray.remote(num_cpus=0)
    class Empty:
        def pid(self) -> int:
            return os.getpid()

    actor = Empty.remote()  # type: ignore[attr-defined]
    memory = process_memory(ray.get(actor.pid.remote(), timeout=60))
    ray.kill(actor)
    return memory


def _companion_memory(cluster: LocalCluster) -> dict[str, list[ProcessMemory]]:
    """Memory of each broker's own actors (broker, controller, coordinators), by kind."""
    kinds = {
        "broker": names.broker_actor_name,
        "controller": names.controller_actor_name,
        "group coordinator": names.coordinator_actor_name,
        "transaction coordinator": names.transaction_coordinator_actor_name,
    }
    found: dict[str, list[ProcessMemory]] = {kind: [] for kind in kinds}
    for broker in range(cluster.num_brokers):
        processes = cluster.broker_processes(broker)
        for kind, name in kinds.items():
            if name(broker) in processes:
                found[kind].append(process_memory(processes[name(broker)]))
    return found


def _ray_pids() -> dict[str, list[int]]:
    """Ray's own processes of this session, by kind."""
    node = ray._private.worker._global_node
    assert node is not None, "Ray is not started"
    session = Path(node.get_session_dir_path()).name
    return {
        kind: sorted(processes_running(program, session)) for kind, program in RAY_PROCESSES.items()
    }


def _idle_cpu(pids: dict[str, list[int]]) -> list[tuple[str, ...]]:
    """Per kind, the share of one core its processes use while the cluster is idle."""
    before = {pid: cpu_seconds(pid) for group in pids.values() for pid in group}
    time.sleep(IDLE_SAMPLE_S)
    rows: list[tuple[str, ...]] = []
    for kind, group in pids.items():
        used = sum(cpu_seconds(pid) - before[pid] for pid in group)
        rows.append(
            (
                f"idle CPU: {kind} ({len(group)})",
                f"{used / IDLE_SAMPLE_S:.1%} of one core",
                f"over {IDLE_SAMPLE_S:.0f} s, nothing produced or consumed",
            )
        )
    return rows


def _memory_rows(cluster: LocalCluster, replicas: list[ProcessMemory]) -> list[tuple[str, ...]]:
    empty = _empty_actor_memory()
    rows: list[tuple[str, ...]] = [
        (
            f"replica process USS ({len(replicas)} idle leaders)",
            _mb(m.uss_mb for m in replicas),
            "target <= 45 MB each",
        ),
        (
            "replica process PSS",
            _mb(m.pss_mb for m in replicas),
            f"RSS median {statistics.median(m.rss_mb for m in replicas):.0f} MB",
        ),
        (
            "replica process threads",
            f"median {statistics.median(m.threads for m in replicas):.0f}",
            "Ray's pools: 64 default + 8 replication + 2 control, and its own",
        ),
        (
            "empty Ray actor (one method)",
            f"USS {empty.uss_mb:.1f} / PSS {empty.pss_mb:.1f} MB",
            f"{empty.threads} threads",
        ),
    ]
    total_pss = sum(m.pss_mb for m in replicas)
    ray_memory = {kind: [process_memory(p) for p in pids] for kind, pids in _ray_pids().items()}
    for kind, memories in [*_companion_memory(cluster).items(), *ray_memory.items()]:
        if not memories:
            rows.append((kind, "not running", ""))
            continue
        total_pss += sum(m.pss_mb for m in memories)
        rows.append(
            (
                f"{kind} ({len(memories)})",
                f"USS {sum(m.uss_mb for m in memories):.1f} / PSS "
                f"{sum(m.pss_mb for m in memories):.1f} MB",
                "total" if len(memories) > 1 else "",
            )
        )
    zookeeper = processes_running("java", "ZooKeeperServerMain", NAMESPACE)
    for pid in zookeeper:
        total_pss += process_memory(pid).pss_mb
    rows.append(
        (
            "whole cluster, PSS of every process above",
            f"{total_pss / 1000:.2f} GB",
            f"ZooKeeper included ({len(zookeeper)} found)",
        )
    )
    return rows


def _produce_row(topic: str, partitions: int, records: int) -> tuple[str, ...]:
    result = producer_perf(NAMESPACE, topic, records, 100, -1, PRODUCER, progress=False)
    return (
        f"produce RF 1, acks=1, {partitions} partitions",
        f"{result.records_per_s:,.0f} records/s ({result.mb_per_s:.1f} MB/s)",
        f"p50 {result.percentile(0.5):.0f} / p99 {result.percentile(0.99):.0f} ms",
    )


def run(
    records: int = 1_000_000, partitions: int = PARTITIONS, brokers: int = BROKERS
) -> list[tuple[str, ...]]:
    """Start the cluster, create the topic, weigh every process and produce; the table rows."""
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory(prefix=f"{NAMESPACE}-") as data_dir:
        started = time.monotonic()
        cluster = LocalCluster(brokers=brokers, data_dir=data_dir, namespace=NAMESPACE)
        with cluster:
            rows.append(
                (
                    f"start ZooKeeper, Ray and {brokers} brokers (LocalCluster, as rafka up)",
                    f"{time.monotonic() - started:.1f} s",
                    "until a controller is elected and every broker is registered",
                )
            )
            admin = cluster.admin(request_timeout_ms=CREATE_TIMEOUT_MS)
            started = time.monotonic()
            described = admin.create_topic(TOPIC, partitions, 1, timeout_ms=CREATE_TIMEOUT_MS)
            returned = time.monotonic() - started
            pids = _replica_pids({p.partition: p.leader for p in described.partitions})
            rows.append(
                (
                    f"create a topic of {partitions} partitions, RF 1",
                    f"{time.monotonic() - started:.1f} s",
                    f"until every leader acts; create_topic returned after {returned:.1f} s",
                )
            )
            replicas = [process_memory(pid) for pid in pids.values()]
            rows.extend(_memory_rows(cluster, replicas))
            rows.extend(_idle_cpu({"replica processes": list(pids.values()), **_ray_pids()}))
            rows.append(
                (
                    "load average (1, 5, 15 min)",
                    " / ".join(f"{x:.1f}" for x in os.getloadavg()),
                    "after the topic's creation",
                )
            )
            admin.create_topic(NARROW_TOPIC, NARROW_PARTITIONS, 1)
            rows.append(_produce_row(TOPIC, partitions, records))
            rows.append(_produce_row(NARROW_TOPIC, NARROW_PARTITIONS, records))
    return rows


def title(partitions: int = PARTITIONS, brokers: int = BROKERS) -> str:
    """The table's heading."""
    return f"Scale ({partitions} partition replicas on {brokers} brokers, one machine)"


def main() -> None:
    """Print the table as Markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=PARTITIONS, help="of the topic")
    parser.add_argument("--brokers", type=int, default=BROKERS, help="brokers in the cluster")
    parser.add_argument("--records", type=int, default=1_000_000, help="records per produce run")
    args = parser.parse_args()
    from run import print_table

    print_table(
        title(args.partitions, args.brokers),
        HEADER,
        run(args.records, args.partitions, args.brokers),
    )


if __name__ == "__main__":
    main()
