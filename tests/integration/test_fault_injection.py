"""Fault injection under continuous acks=all production: nothing acknowledged is ever lost, no
partition stays unavailable, and the replicas end identical.

Two producers send records with unique ids to each partition in turn of a topic with replication
factor 3, min.insync.replicas 2 and unclean election off, while a seeded schedule kills brokers
(kill -9), pauses one past its ZooKeeper session timeout (a GC-pause zombie), expires ZooKeeper
sessions, kills the controller's broker and kills single replica actors, restarting whatever it
killed. Afterwards every acknowledged record must sit at its acknowledged offset below the HW,
offsets below the HW must have no gaps, each producer's records must keep their order within a
partition, every in-sync replica must hold the same batches below the HW in its segment files, and
no partition may go more than 30 s without an acknowledgement while at least min ISR of its brokers
were up and running. The report prints the seed, the faults, each partition's longest gap, the
divergence check and, for every gap above 10 s, the chain of state changes (from the brokers'
state-change logs) and producer retries between the fault and the next acknowledgement.
RAFKA_CHAOS_SEED and RAFKA_CHAOS_SECONDS choose the schedule and the fault phase for long soaks.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import ray

from rafka.actors import names
from rafka.actors.state_change import StateChange, read_state_changes
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.clients.records import RecordMetadata
from rafka.cluster import faults
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.log.files import LOG_SUFFIX, base_offset_of, partition_dir_name
from rafka.protocol.records.batch import iter_batches
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

NS = "rafka-chaos"
TOPIC = "chaos"
PARTITIONS = 3
SESSION_TIMEOUT_MS = 4000
MIN_ISR = 2
SEED = int(os.environ.get("RAFKA_CHAOS_SEED", "20261122"))
FAULT_PHASE_S = float(os.environ.get("RAFKA_CHAOS_SECONDS", "50"))
# Set-up, the settling and the checks take up to ten minutes on top of the fault phase.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(int(FAULT_PHASE_S * 1.5) + 600)]
MAX_UNAVAILABLE_S = 30.0
"""The longest a partition may go without an acknowledgement while min ISR of its brokers are up."""
EXPLAIN_GAPS_ABOVE_S = 10.0
STATE_CHANGE_LINES = 60
"""State-change lines printed from each end of a gap's window."""
PRODUCER_LOGGER = "rafka.clients.producer"
PRODUCER_ERRORS = 8
"""Distinct producer errors printed per gap, earliest first."""


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
    """Producers sending unique ids with acks=all, recording every acknowledgement (wall-clock
    time) and every error the producer retried, per partition."""

    def __init__(self, workers: int, rate_per_worker: float) -> None:
        self.acked: list[tuple[str, RecordMetadata, float]] = []
        self.failed = 0
        self.retries: list[tuple[float, int, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(w, rate_per_worker), daemon=True)
            for w in range(workers)
        ]
        self._log_handler = _RetryRecorder(self.retries)

    def start(self) -> None:
        producer_log = logging.getLogger(PRODUCER_LOGGER)
        producer_log.addHandler(self._log_handler)
        producer_log.setLevel(logging.DEBUG)
        producer_log.propagate = False
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=180)
        producer_log = logging.getLogger(PRODUCER_LOGGER)
        producer_log.removeHandler(self._log_handler)
        producer_log.setLevel(logging.NOTSET)
        producer_log.propagate = True

    def _ack(self, record_id: str, metadata: RecordMetadata) -> None:
        with self._lock:
            self.acked.append((record_id, metadata, time.time()))

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
                # Each partition in turn, so every partition's availability is measured; a keyless
                # send would go only to partitions the producer last saw with a leader.
                producer.send(TOPIC, record_id.encode(), partition=seq % PARTITIONS).add_callback(
                    self._ack, record_id
                ).add_errback(self._fail)
                seq += 1
                ahead = seq / rate - (time.monotonic() - started)
                if ahead > 0:
                    self._stop.wait(ahead)
            producer.flush()


class _RetryRecorder(logging.Handler):
    """Keeps the producer's "retrying batch for <topic>-<partition> after <error>" lines."""

    def __init__(self, into: list[tuple[float, int, str]]) -> None:
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        if record.msg.startswith("retrying batch") and isinstance(args, tuple) and len(args) == 3:
            _, partition, error = args
            detail = f"{type(error).__name__}: {error}"
            self.into.append((record.created, int(str(partition)), detail[:160]))


@dataclass
class Fault:
    """One injected fault: when, what, on which broker, and when the broker was whole again
    (``impaired_until``: restarted or resumed; equal to ``at`` for faults that leave it up)."""

    at: float
    kind: str
    victim: int
    impaired_until: float
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.victim}{f' ({self.detail})' if self.detail else ''}"


class Faults:
    """The seeded fault schedule; at most one broker is down or paused at a time."""

    def __init__(
        self, cluster: LocalCluster, admin: Admin, zookeeper: ZooKeeperServer, rng: random.Random
    ) -> None:
        self.cluster = cluster
        self.admin = admin
        self.zookeeper = zookeeper
        self.rng = rng
        self.injected: list[Fault] = []

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
                self.injected[-1].impaired_until = time.time()
        self.admin.wait_for_cluster(3, 120_000)

    def _victim(self) -> int:
        return self.rng.randrange(3)

    def kill_broker(self) -> Fault:
        victim = self._victim()
        at = faults.kill_broker(self.cluster, victim)
        time.sleep(self.rng.uniform(0.5, 2.0))
        return Fault(at, "kill -9 broker", victim, time.time())

    def kill_controller(self) -> Fault:
        victim, at = faults.kill_controller(self.cluster)
        time.sleep(self.rng.uniform(0.5, 2.0))
        return Fault(at, "kill -9 controller broker", victim, time.time())

    def pause_broker(self) -> Fault:
        victim = self._victim()
        # A pause longer than the session: the broker comes back a zombie.
        at = faults.pause_broker(self.cluster, victim, SESSION_TIMEOUT_MS / 1000 + 2)
        return Fault(at, "SIGSTOP broker", victim, time.time(), f"{time.time() - at:.0f}s")

    def expire_session(self) -> Fault:
        victim = self._victim()
        at = faults.expire_session(self.cluster, victim)
        return Fault(at, "expire ZooKeeper session of broker", victim, at)

    def kill_replica(self) -> Fault:
        victim = self._victim()
        partition = self.rng.randrange(PARTITIONS)
        at = faults.kill_replica(self.cluster, TOPIC, partition, victim)
        if at is None:
            at = time.time()
            return Fault(at, "replica already down on broker", victim, at, f"{TOPIC}-{partition}")
        return Fault(at, "kill replica on broker", victim, at, f"{TOPIC}-{partition}")


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


def batches_on_disk(log_dir: Path, below: int) -> list[tuple[int, int, int]]:
    """(base offset, last offset, CRC) of every batch below ``below`` in a replica's segment files,
    read from disk."""
    batches: list[tuple[int, int, int]] = []
    segments = sorted(log_dir.glob(f"*{LOG_SUFFIX}"), key=lambda p: base_offset_of(p) or 0)
    for segment in segments:
        data = segment.read_bytes()
        batches += [
            (h.base_offset, h.last_offset, h.crc)
            for _, h in iter_batches(data)
            if h.base_offset < below
        ]
    return batches


def longest_gaps(
    ack_times: list[float], start: float, end: float, impaired: Callable[[float, float], float]
) -> tuple[tuple[float, float], float]:
    """The longest stretch without an acknowledgement in [start, end], and the longest such stretch
    counting only time while enough brokers were up (``impaired(a, b)``: seconds of [a, b] they
    were not)."""
    points = [start, *sorted(t for t in ack_times if start <= t <= end), end]
    pairs = list(itertools.pairwise(points))
    longest = max(pairs, key=lambda ab: ab[1] - ab[0])
    available = max((b - a - impaired(a, b) for a, b in pairs), default=0.0)
    return longest, available


def impaired_seconds(faults: list[Fault], min_up: int) -> Callable[[float, float], float]:
    """Seconds of [a, b] during which fewer than ``min_up`` of the 3 brokers were up and running."""
    spans = [(f.at, f.impaired_until) for f in faults if f.impaired_until > f.at]

    def within(a: float, b: float) -> float:
        edges = sorted({a, b, *(t for span in spans for t in span if a < t < b)})
        total = 0.0
        for lo, hi in itertools.pairwise(edges):
            middle = (lo + hi) / 2
            down = sum(1 for s, e in spans if s <= middle < e)
            if 3 - down < min_up:
                total += hi - lo
        return total

    return within


def explain_gap(
    partition: int,
    gap: tuple[float, float],
    faults: list[Fault],
    changes: list[StateChange],
    retries: list[tuple[float, int, str]],
    origin: float,
) -> list[str]:
    """The chain of events from the fault before a gap to the acknowledgement ending it."""
    start, end = gap
    name = f"{TOPIC}-{partition}"
    lines = [
        f"partition {partition}: no acknowledgement from {start - origin:.1f}s to "
        f"{end - origin:.1f}s ({end - start:.1f}s)"
    ]
    lines += [f"  {f.at - origin:8.2f}s FAULT {f}" for f in faults if start - 10 <= f.at <= end]
    relevant = [
        c
        for c in changes
        if start - 2 <= c.time <= end + 0.5 and (c.mentions(name) or f"{TOPIC}-" not in c.message)
    ]
    if len(relevant) > 2 * STATE_CHANGE_LINES:
        skipped = len(relevant) - 2 * STATE_CHANGE_LINES
        relevant = relevant[:STATE_CHANGE_LINES] + relevant[-STATE_CHANGE_LINES:]
        lines.append(
            f"  (state-change lines {STATE_CHANGE_LINES}..{STATE_CHANGE_LINES + skipped} "
            "of the window left out)"
        )
    lines += [f"  {c.time - origin:8.2f}s [{c.broker_id}] {c.message[:300]}" for c in relevant]
    errors: dict[str, list[float]] = {}
    for at, p, detail in retries:
        if p == partition and start - 2 <= at <= end:
            errors.setdefault(detail, []).append(at)
    for detail, times in sorted(errors.items(), key=lambda e: e[1][0])[:PRODUCER_ERRORS]:
        first, last = times[0] - origin, times[-1] - origin
        lines.append(f"  producer retried {len(times)}x ({first:.2f}s..{last:.2f}s) after {detail}")
    return lines


def test_no_acknowledged_record_is_lost_under_injected_faults(
    chaos_cluster: LocalCluster, zookeeper: ZooKeeperServer
) -> None:
    admin = chaos_cluster.admin()
    admin.create_topic(
        TOPIC,
        PARTITIONS,
        3,
        config={"min.insync.replicas": str(MIN_ISR), "unclean.leader.election.enable": "false"},
    )
    workload = Workload(workers=2, rate_per_worker=150)
    schedule = Faults(chaos_cluster, admin, zookeeper, random.Random(SEED))
    workload.start()
    origin = time.time()
    schedule.run(FAULT_PHASE_S)
    workload.stop()
    finished = time.time()

    def fully_replicated() -> bool:
        return all(len(p.isr) == 3 for p in admin.describe_topic(TOPIC).partitions)

    wait_until(fully_replicated, 120, "the ISRs to be whole again after the faults")
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

    # Divergence: every in-sync replica holds the same batches below the HW, read from its segment
    # files, and every acknowledged record lies below that HW.
    divergent = []
    divergence_report = []
    for p in range(PARTITIONS):
        state = next(x for x in admin.describe_topic(TOPIC).partitions if x.partition == p)
        leader = ray.get_actor(names.replica_actor_name(TOPIC, p, state.leader), namespace=NS)
        high_watermark = ray.get(leader.describe.remote(), timeout=60)["high_watermark"]
        on_disk = {
            b: batches_on_disk(
                Path(chaos_cluster.broker_config(b).log_dirs) / partition_dir_name(TOPIC, p),
                high_watermark,
            )
            for b in state.isr
        }
        reference = on_disk[state.leader]
        for broker, batches in on_disk.items():
            if batches != reference:
                first = next(
                    (i for i, (a, b) in enumerate(zip(batches, reference, strict=False)) if a != b),
                    min(len(batches), len(reference)),
                )
                divergent.append((p, broker))
                divergence_report.append(
                    f"partition {p} broker {broker} differs from leader {state.leader} at batch "
                    f"{first}: {batches[first : first + 2]} vs {reference[first : first + 2]}"
                )
        beyond = [
            m.offset
            for _, m, _ in workload.acked
            if m.partition == p and m.offset >= high_watermark
        ]
        if beyond:
            divergent.append((p, -1))
            divergence_report.append(
                f"partition {p}: {len(beyond)} acknowledged records at or "
                f"beyond the HW {high_watermark}"
            )
        divergence_report.append(
            f"partition {p}: ISR {list(state.isr)} HW {high_watermark}, "
            f"{len(reference)} batches, replicas identical: "
            f"{all(b == reference for b in on_disk.values())}"
        )

    impaired = impaired_seconds(schedule.injected, MIN_ISR)
    longest: dict[int, tuple[float, float]] = {}
    available_gap: dict[int, float] = {}
    for p in range(PARTITIONS):
        times = [t for _, m, t in workload.acked if m.partition == p]
        longest[p], available_gap[p] = longest_gaps(times, origin, finished, impaired)

    print(f"\nfault injection (seed {SEED}, {FAULT_PHASE_S:.0f}s): {len(schedule.injected)} faults")
    for fault in schedule.injected:
        print(f"  {fault.at - origin:8.2f}s {fault}")
    print(
        f"acknowledged {len(workload.acked)}, failed sends {workload.failed}, lost {len(lost)}, "
        f"duplicates {duplicates}, order violations {order_violations}"
    )
    for p in range(PARTITIONS):
        a, b = longest[p]
        print(
            f"partition {p}: longest gap between acknowledgements {b - a:.2f}s "
            f"({a - origin:.1f}s..{b - origin:.1f}s), {available_gap[p]:.2f}s of it with at least "
            f"{MIN_ISR} brokers up"
        )
    print("divergence check:")
    for line in divergence_report:
        print(f"  {line}")
    changes = read_state_changes(
        (b, Path(chaos_cluster.broker_config(b).log_dirs)) for b in range(3)
    )
    for p in range(PARTITIONS):
        times = sorted(t for _, m, t in workload.acked if m.partition == p)
        points = [origin, *(t for t in times if origin <= t <= finished), finished]
        for gap in itertools.pairwise(points):
            if gap[1] - gap[0] > EXPLAIN_GAPS_ABOVE_S:
                print(
                    "\n".join(
                        explain_gap(p, gap, schedule.injected, changes, workload.retries, origin)
                    )
                )

    assert len(workload.acked) > 1000
    assert lost == []
    assert all(not g for g in gaps.values()), f"offset gaps: {gaps}"
    assert order_violations == 0
    assert divergent == [], divergence_report
    assert max(available_gap.values()) <= MAX_UNAVAILABLE_S, available_gap
