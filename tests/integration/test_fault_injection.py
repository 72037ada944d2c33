"""Fault injection under continuous acks=all production: nothing acknowledged is ever lost.

Two producers send records with unique ids to a topic with replication factor 3, min.insync.replicas
2 and unclean election off, while a seeded schedule kills brokers (kill -9), pauses one past its
ZooKeeper session timeout (a GC-pause zombie), expires ZooKeeper sessions, kills the controller's
broker and kills single replica actors, restarting whatever it killed. Afterwards every acknowledged
record must sit at its acknowledged offset, offsets below the HW must have no gaps, each producer's
records must keep their order within a partition, and every replica must hold the same records below
the HW. The report (faults, acknowledged, lost, duplicates, longest unavailability) is printed.
"""

from __future__ import annotations

import itertools
import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from rafka.actors import names
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.clients.records import RecordMetadata
from rafka.cluster import faults
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.records.batch import decode_records, iter_batches
from rafka.protocol.types import TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
NS = "rafka-chaos"
TOPIC = "chaos"
PARTITIONS = 3
SESSION_TIMEOUT_MS = 4000
SEED = int(os.environ.get("RAFKA_CHAOS_SEED", "20261122"))
FAULT_PHASE_S = float(os.environ.get("RAFKA_CHAOS_SECONDS", "50"))


@pytest.fixture(scope="module")
def chaos_cluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    local = LocalCluster(
        brokers=3,
        data_dir=session_dir / "chaos",
        zookeeper=zookeeper.connect_string,
        cluster_name="chaos",
        namespace=NS,
        node_ids=ray_nodes,
        broker_config={
            "zookeeper_session_timeout_ms": SESSION_TIMEOUT_MS,
            "replica_lag_time_max_ms": 3000,
            "replica_fetch_backoff_ms": 100,
            "replica_fetch_wait_max_ms": 200,
        },
    )
    with local:
        yield local


class Workload:
    """Producers sending unique ids with acks=all, recording every acknowledgement."""

    def __init__(self, workers: int, rate_per_worker: float) -> None:
        self.acked: list[tuple[str, RecordMetadata, float]] = []
        self.failed = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(w, rate_per_worker), daemon=True)
            for w in range(workers)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=180)

    def _ack(self, record_id: str, metadata: RecordMetadata) -> None:
        with self._lock:
            self.acked.append((record_id, metadata, time.monotonic()))

    def _fail(self, _error: BaseException) -> None:
        with self._lock:
            self.failed += 1

    def _run(self, worker: int, rate: float) -> None:
        with Producer(
            namespace=NS,
            acks="all",
            linger_ms=2,
            delivery_timeout_ms=120_000,
            request_timeout_ms=10_000,
        ) as producer:
            seq = 0
            started = time.monotonic()
            while not self._stop.is_set():
                record_id = f"w{worker}-{seq:07d}"
                producer.send(TOPIC, record_id.encode()).add_callback(
                    self._ack, record_id
                ).add_errback(self._fail)
                seq += 1
                ahead = seq / rate - (time.monotonic() - started)
                if ahead > 0:
                    self._stop.wait(ahead)
            producer.flush()


class Faults:
    """The seeded fault schedule; at most one broker is down or paused at a time."""

    def __init__(
        self, cluster: LocalCluster, admin: Admin, zookeeper: ZooKeeperServer, rng: random.Random
    ) -> None:
        self.cluster = cluster
        self.admin = admin
        self.zookeeper = zookeeper
        self.rng = rng
        self.injected: list[str] = []

    def run(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        kinds = [
            self.kill_broker,
            self.pause_broker,
            self.expire_session,
            self.kill_controller,
            self.kill_replica,
        ]
        # Every kind once (in a seeded order), then seeded random picks until the time is up.
        schedule = self.rng.sample(kinds, len(kinds))
        while schedule or time.monotonic() < deadline:
            fault = schedule.pop(0) if schedule else self.rng.choice(kinds)
            self.injected.append(fault())
            self.heal()
            time.sleep(self.rng.uniform(1.0, 3.0))  # the schedule's spacing, not synchronisation

    def heal(self) -> None:
        for broker in range(3):
            if broker not in self.cluster.brokers:
                self.cluster.start_broker(broker)
        self.admin.wait_for_cluster(3, 120_000)

    def _victim(self) -> int:
        return self.rng.randrange(3)

    def kill_broker(self) -> str:
        victim = self._victim()
        faults.kill_broker(self.cluster, victim)
        time.sleep(self.rng.uniform(0.5, 2.0))
        return f"kill -9 broker {victim}"

    def kill_controller(self) -> str:
        victim, _ = faults.kill_controller(self.cluster)
        time.sleep(self.rng.uniform(0.5, 2.0))
        return f"kill -9 controller broker {victim}"

    def pause_broker(self) -> str:
        victim = self._victim()
        # A pause longer than the session: the broker comes back a zombie.
        faults.pause_broker(self.cluster, victim, SESSION_TIMEOUT_MS / 1000 + 2)
        return f"SIGSTOP broker {victim} for {SESSION_TIMEOUT_MS / 1000 + 2:.0f}s"

    def expire_session(self) -> str:
        victim = self._victim()
        faults.expire_session(self.cluster, victim)
        return f"expire ZooKeeper session of broker {victim}"

    def kill_replica(self) -> str:
        victim = self._victim()
        partition = self.rng.randrange(PARTITIONS)
        if faults.kill_replica(self.cluster, TOPIC, partition, victim) is None:
            return f"replica {TOPIC}-{partition}@{victim} was already down"
        return f"kill replica {TOPIC}-{partition}@{victim}"


def read_partition(partition: int, end: int) -> list[tuple[int, bytes | None]]:
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest", max_poll_records=100_000)
    consumer.assign([TopicPartition(TOPIC, partition)])
    records: list[tuple[int, bytes | None]] = []
    deadline = time.monotonic() + 120
    while (not records or records[-1][0] < end - 1) and time.monotonic() < deadline:
        records += [
            (r.offset, r.value) for part in consumer.poll(timeout_ms=2000).values() for r in part
        ]
    consumer.close()
    return records


def replica_records(partition: int, broker: int, end: int) -> list[tuple[int, bytes | None]]:
    replica = ray.get_actor(names.replica_actor_name(TOPIC, partition, broker), namespace=NS)
    records: list[tuple[int, bytes | None]] = []
    offset = 0
    while offset < end:
        data = ray.get(replica.read_log.remote(offset, 1 << 20), timeout=60)
        batch = [
            (r.offset, r.value)
            for pos, h in iter_batches(data)
            for r in decode_records(data, pos, h)
            if r.offset >= offset
        ]
        if not batch:
            break
        records += [r for r in batch if r[0] < end]
        offset = batch[-1][0] + 1
    return records


def test_no_acknowledged_record_is_lost_under_injected_faults(
    chaos_cluster: LocalCluster, zookeeper: ZooKeeperServer
) -> None:
    admin = chaos_cluster.admin()
    admin.create_topic(
        TOPIC,
        PARTITIONS,
        3,
        config={"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
    )
    workload = Workload(workers=2, rate_per_worker=150)
    faults = Faults(chaos_cluster, admin, zookeeper, random.Random(SEED))
    workload.start()
    faults.run(FAULT_PHASE_S)
    workload.stop()

    def fully_replicated() -> bool:
        return all(len(p.isr) == 3 for p in admin.describe_topic(TOPIC).partitions)

    deadline = time.monotonic() + 120
    while not fully_replicated():
        assert time.monotonic() < deadline, "the ISRs did not recover after the faults"
        time.sleep(0.2)
    ends = Consumer(namespace=NS).end_offsets([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])

    by_partition: dict[int, list[tuple[int, bytes | None]]] = {
        p: read_partition(p, ends[TopicPartition(TOPIC, p)]) for p in range(PARTITIONS)
    }
    lost = []
    for record_id, metadata, _ in workload.acked:
        stored = dict(by_partition[metadata.partition])
        if stored.get(metadata.offset) != record_id.encode():
            lost.append(
                (record_id, metadata.partition, metadata.offset, stored.get(metadata.offset))
            )
    values = [v for records in by_partition.values() for _, v in records]
    duplicates = len(values) - len(set(values))
    gaps = {
        p: [o for i, (o, _) in enumerate(records) if o != i] for p, records in by_partition.items()
    }
    order_violations = 0
    for p in range(PARTITIONS):
        for worker in range(2):
            seqs = [
                int(v.decode().split("-")[1])  # type: ignore[union-attr]
                for _, v in by_partition[p]
                if v.decode().startswith(f"w{worker}-")  # type: ignore[union-attr]
            ]
            firsts = []
            for seq in seqs:
                if seq not in firsts:
                    firsts.append(seq)
            order_violations += sum(1 for a, b in itertools.pairwise(firsts) if b < a)
    divergent = []
    for p in range(PARTITIONS):
        end = ends[TopicPartition(TOPIC, p)]
        reference = replica_records(p, 0, end)
        for broker in (1, 2):
            if replica_records(p, broker, end) != reference:
                divergent.append((p, broker))
    gaps_s: dict[int, float] = {}
    for p in range(PARTITIONS):
        times = sorted(t for _, m, t in workload.acked if m.partition == p)
        gaps_s[p] = max((b - a for a, b in itertools.pairwise(times)), default=0.0)

    print(
        f"\nfault injection (seed {SEED}, {FAULT_PHASE_S:.0f}s): {len(faults.injected)} faults: "
        f"{faults.injected}"
    )
    print(
        f"acknowledged {len(workload.acked)}, failed sends {workload.failed}, lost {len(lost)}, "
        f"duplicates {duplicates}, "
        "longest gap between acknowledgements per partition (s): "
        f"{ {p: round(g, 2) for p, g in gaps_s.items()} }"
    )
    assert len(workload.acked) > 1000
    assert lost == []
    assert all(not g for g in gaps.values()), f"offset gaps: {gaps}"
    assert order_violations == 0
    assert divergent == []
