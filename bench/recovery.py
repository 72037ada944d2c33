"""Recovery per fault: where the time goes between a fault and the next acknowledgement.

One 3-broker cluster (ZooKeeper session timeout 2 s by default, ``--session-timeout-ms``), one
topic of 3 partitions with replication factor 3 and min.insync.replicas 2, and a steady acks=all
load from one producer with default retry and timeout settings. Faults are injected one at a time
(each kind ``RAFKA_RECOVERY_REPEATS`` times, default 5), and the cluster is healed and whole again
before the next. Each fault's timeline, in seconds from the fault:

- detected: the first controller state-change log line about it (for a killed replica actor, the
  broker's own line: the controller is never told), read from the brokers' log files;
- leader in ZooKeeper: the mtime of the first version of a partition state znode naming a new
  leader (one sample per partition the victim led), seen through a ZooKeeper watch;
- leader acting: the wall clock at which the new leader's replica actor became leader, as the
  actor reports it (``describe()["leader_since_ms"]``);
- first ack: the acknowledgement of the first record sent at or after the fault, one sample per
  partition with a replica on the victim, told apart for the partitions it led and those it only
  followed;
- ISR whole: from the moment the broken part was back (a restarted broker's new registration znode,
  a paused broker's resumption, a restarted replica's leadership) to the partition state znode
  version whose ISR holds all three replicas again, one sample per partition.

A paused broker is noticed only when its session expires, so the SIGSTOP row moves with the session
timeout; Kafka's own default is 6 s (18 s since 2.5).

Run it alone with ``.venv/bin/python bench/recovery.py`` (``--repeats N``, ``--session-timeout-ms
MS``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import ray
from kazoo.client import KazooClient
from kazoo.protocol.states import ZnodeStat

from rafka.actors import names
from rafka.actors.server_log import SERVER_LOG_FILE, LogPosition, read_new
from rafka.actors.state_change import STATE_CHANGE_FILE, STATE_CHANGE_LOGGER, parse_state_change
from rafka.actors.zk import data as zk_data
from rafka.actors.zk.client import split_connect
from rafka.clients.producer import Producer
from rafka.cluster import faults
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.timeline import (
    PHASES,
    FaultTimeline,
    LogLine,
    StateVersion,
    first_ack_after,
    first_line,
    first_new_leader,
    first_whole_isr,
    parse_log_line,
    summarise,
)
from rafka.testing import wait_until

NAMESPACE = "rafka-bench-recovery"
CLUSTER_NAME = "recovery"
TOPIC = "recovery"
PARTITIONS = 3
BROKERS = 3
SESSION_TIMEOUT_MS = 2000
PAUSE_S = 6.0
RATE_PER_S = 300
REPEATS = int(os.environ.get("RAFKA_RECOVERY_REPEATS", "5"))
BROKER_CONFIG = {
    "replica_lag_time_max_ms": 3000,
    "replica_fetch_backoff_ms": 100,
    "replica_fetch_wait_max_ms": 200,
}
# Longest wait for a stage before the fault counts it as missed; well past every target.
STAGE_TIMEOUT_S = 30.0
KILL_REPLICA = "kill of a leader replica actor"


class Load:
    """One acks=all producer sending to every partition in turn at a steady rate; it records
    (sent, acknowledged) wall-clock pairs per partition."""

    def __init__(self) -> None:
        self.acks: dict[int, list[tuple[float, float]]] = {p: [] for p in range(PARTITIONS)}
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="recovery-load", daemon=True)

    def start(self) -> None:
        """Start sending."""
        self._thread.start()

    def stop(self) -> None:
        """Stop sending and wait for what was sent."""
        self._stop.set()
        self._thread.join(timeout=180)

    def _ack(self, partition: int, sent: float, _metadata: Any) -> None:
        self.acks[partition].append((sent, time.time()))

    def _fail(self, _error: BaseException) -> None:
        self.failed += 1

    def _run(self) -> None:
        with Producer(namespace=NAMESPACE, acks="all", linger_ms=2) as producer:
            seq = 0
            started = time.monotonic()
            while not self._stop.is_set():
                partition = seq % PARTITIONS
                producer.send(TOPIC, b"x" * 100, partition=partition).add_callback(
                    self._ack, partition, time.time()
                ).add_errback(self._fail)
                seq += 1
                ahead = seq / RATE_PER_S - (time.monotonic() - started)
                if ahead > 0:
                    self._stop.wait(ahead)
            producer.flush()


class ZkWatch:
    """Every version of the topic's partition state znodes, as a ZooKeeper watch sees them, and
    the brokers' registration times."""

    def __init__(self, connect: str) -> None:
        hosts, chroot = split_connect(connect, CLUSTER_NAME)
        self.zk = KazooClient(hosts=hosts + chroot)
        self.zk.start(timeout=15)
        self.versions: dict[int, list[StateVersion]] = {p: [] for p in range(PARTITIONS)}
        for partition in range(PARTITIONS):
            self.zk.DataWatch(
                zk_data.partition_state_path(TOPIC, partition), self._recorder(partition)
            )

    def _recorder(self, partition: int) -> Callable[[bytes | None, ZnodeStat | None], None]:
        def record(data: bytes | None, stat: ZnodeStat | None) -> None:
            if data and stat is not None:
                state = zk_data.LeaderIsrAndEpoch.decode(data, stat.version)
                self.versions[partition].append(StateVersion(stat.mtime, state.leader, state.isr))

        return record

    def latest(self, partition: int) -> StateVersion:
        """The partition's newest known state."""
        return max(self.versions[partition], key=lambda v: v.mtime_ms)

    def leaders(self) -> dict[int, int]:
        """Partition -> current leader."""
        return {p: self.latest(p).leader for p in range(PARTITIONS)}

    def registered_since(self, broker_id: int, since_ms: int) -> int | None:
        """When the broker's registration znode was created, if at or after ``since_ms``."""
        stat = self.zk.exists(zk_data.broker_path(broker_id))
        return stat.ctime if stat is not None and stat.ctime >= since_ms else None

    def close(self) -> None:
        """End the session."""
        self.zk.stop()
        self.zk.close()


class LogTail:
    """The brokers' log lines, read incrementally from each broker's ``server.log`` and
    ``state-change.log`` (across rolls) in the cluster's data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.lines: list[LogLine] = []
        self._positions: dict[Path, LogPosition] = {}

    def read(self) -> list[LogLine]:
        """Every line so far (new ones appended)."""
        for log_dir in sorted(self.data_dir.glob("broker-*")):
            for file_name in (SERVER_LOG_FILE, STATE_CHANGE_FILE):
                key = log_dir / file_name
                chunk = read_new(log_dir, self._positions.get(key, LogPosition()), file_name)
                self._positions[key] = chunk.position
                for raw in chunk.text.splitlines():
                    line = _log_line(raw)
                    if line is not None:
                        self.lines.append(line)
        return self.lines


def _log_line(raw: str) -> LogLine | None:
    """A line of either log as a ``LogLine``."""
    change = parse_state_change(raw)
    if change is None:
        return parse_log_line(raw)
    return LogLine(round(change.time * 1000), STATE_CHANGE_LOGGER, "INFO", change.message)


class Bench:
    """The cluster, its load and the observers, and one method per fault kind."""

    def __init__(self, cluster: LocalCluster, load: Load, zk: ZkWatch, logs: LogTail) -> None:
        self.cluster = cluster
        self.admin = cluster.admin()
        self.load = load
        self.zk = zk
        self.logs = logs
        self.timelines: list[FaultTimeline] = []
        self._started = time.monotonic()

    # ------------------------------------------------------------------ choosing victims

    def _controller(self) -> int:
        return int(self.admin.describe_cluster().controller_id)

    def _leading_broker(self) -> int:
        """The broker leading the most partitions, preferring one that is not the controller."""
        leaders = list(self.zk.leaders().values())
        controller = self._controller()
        return max(
            range(BROKERS), key=lambda b: (leaders.count(b) > 0, b != controller, leaders.count(b))
        )

    # ------------------------------------------------------------------ measuring

    def _detected(self, timeline: FaultTimeline, t0_ms: int, pattern: str) -> None:
        found = wait_until(
            lambda: first_line(self.logs.read(), t0_ms, re.compile(pattern)) or None,
            STAGE_TIMEOUT_S,
            f"a log line matching {pattern!r}",
        )
        timeline.add("detected", (found - t0_ms) / 1000)

    def _first_acks(
        self, timeline: FaultTimeline, t0: float, partitions: list[int], led: list[int]
    ) -> None:
        deadline = time.monotonic() + STAGE_TIMEOUT_S
        firsts: dict[int, float | None] = {}
        for partition in partitions:
            while (found := first_ack_after(self.load.acks[partition], t0)) is None:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            firsts[partition] = found
        for partition in partitions:
            acked = firsts[partition]
            phase = "first ack, led" if partition in led else "first ack, followed"
            timeline.add(phase, None if acked is None else acked - t0)

    def _new_leaders(self, timeline: FaultTimeline, t0_ms: int, led: list[int], old: int) -> None:
        for partition in led:
            try:
                version = wait_until(
                    partial(first_new_leader, self.zk.versions[partition], t0_ms, old),
                    STAGE_TIMEOUT_S,
                    f"a new leader of partition {partition}",
                )
            except AssertionError:
                timeline.add("leader in ZooKeeper", None)
                timeline.add("leader acting", None)
                continue
            timeline.add("leader in ZooKeeper", (version.mtime_ms - t0_ms) / 1000)
            self._leader_acting(timeline, t0_ms, partition, version.leader)

    def _leader_acting(
        self, timeline: FaultTimeline, t0_ms: int, partition: int, leader: int
    ) -> None:
        def since() -> int | None:
            replica = ray.get_actor(
                names.replica_actor_name(TOPIC, partition, leader), namespace=NAMESPACE
            )
            at = int(ray.get(replica.describe.remote(), timeout=5)["leader_since_ms"])
            return at if at >= t0_ms else None

        try:
            at = wait_until(since, STAGE_TIMEOUT_S, f"replica {partition}@{leader} to lead")
        except AssertionError:
            timeline.add("leader acting", None)
            return
        timeline.add("leader acting", (at - t0_ms) / 1000)

    def _isr_whole(self, timeline: FaultTimeline, back_ms: int) -> None:
        for partition in range(PARTITIONS):
            try:
                version = wait_until(
                    partial(first_whole_isr, self.zk.versions[partition], back_ms, BROKERS),
                    2 * STAGE_TIMEOUT_S,
                    f"the ISR of partition {partition} to be whole",
                )
            except AssertionError:
                timeline.add("ISR whole", None)
                continue
            timeline.add("ISR whole", max(0, version.mtime_ms - back_ms) / 1000)

    def _restart(self, broker_id: int, since_ms: int) -> int:
        """Start a stopped broker again; when its registration znode was created."""
        self.cluster.start_broker(broker_id)
        return int(
            wait_until(
                lambda: self.zk.registered_since(broker_id, since_ms),
                STAGE_TIMEOUT_S,
                f"broker {broker_id} to register",
            )
        )

    def _settle(self) -> None:
        """Wait until every broker is live and every ISR whole before the next fault."""
        self.admin.wait_for_cluster(BROKERS, 120_000)
        wait_until(
            lambda: all(len(self.zk.latest(p).isr) == BROKERS for p in range(PARTITIONS)),
            120,
            "every ISR to be whole",
        )

    def _record(self, timeline: FaultTimeline) -> None:
        self.timelines.append(timeline)
        took = time.monotonic() - self._started
        self._started = time.monotonic()
        stages = {
            k: [None if s is None else round(s, 2) for s in v] for k, v in timeline.stages.items()
        }
        print(
            f"  {timeline.kind} ({timeline.victim}, {took:.0f} s): {stages}",
            file=sys.stderr,
            flush=True,
        )

    # ------------------------------------------------------------------ the faults

    def _broker_fault(
        self, kind: str, victim: int, inject: Callable[[], float], detection: str
    ) -> None:
        """A fault that takes a whole broker away until it is restarted (or resumes)."""
        self._settle()
        timeline = FaultTimeline(kind, f"broker {victim}", {})
        led = [p for p, leader in self.zk.leaders().items() if leader == victim]
        t0 = inject()
        t0_ms = int(t0 * 1000)
        self._detected(timeline, t0_ms, detection)
        self._new_leaders(timeline, t0_ms, led, victim)
        self._first_acks(timeline, t0, list(range(PARTITIONS)), led)
        back_ms = (
            self._restart(victim, t0_ms)
            if victim not in self.cluster.brokers
            else int(
                wait_until(
                    lambda: self.zk.registered_since(victim, t0_ms),
                    2 * STAGE_TIMEOUT_S,
                    f"broker {victim} to register again",
                )
            )
        )
        self._isr_whole(timeline, back_ms)
        self._record(timeline)

    def kill_broker(self) -> None:
        """kill -9 of a broker that leads partitions (not the controller's, when possible)."""
        victim = self._leading_broker()
        self._broker_fault(
            "kill -9 of a leader's broker",
            victim,
            lambda: faults.kill_broker(self.cluster, victim),
            rf"Ray reports broker {victim}'s|brokers \[[^\]]*\b{victim}\b[^\]]*\] failed",
        )

    def kill_controller(self) -> None:
        """kill -9 of the controller's broker: detected once another broker is controller."""
        victim = self._controller()
        self._broker_fault(
            "kill -9 of the controller's broker",
            victim,
            lambda: faults.kill_broker(self.cluster, victim),
            r"broker \d+ is controller",
        )

    def pause_broker(self) -> None:
        """SIGSTOP of a leader's broker for PAUSE_S, past its session timeout."""
        victim = self._leading_broker()
        self._broker_fault(
            f"SIGSTOP of a leader's broker for {PAUSE_S:.0f} s",
            victim,
            lambda: self._pause(victim),
            rf"brokers \[[^\]]*\b{victim}\b[^\]]*\] failed",
        )

    def expire_session(self) -> None:
        """Expiry of a leader's broker's ZooKeeper session."""
        victim = self._leading_broker()
        self._broker_fault(
            "ZooKeeper session expiry of a leader's broker",
            victim,
            lambda: faults.expire_session(self.cluster, victim),
            rf"brokers \[[^\]]*\b{victim}\b[^\]]*\] failed",
        )

    def controlled_shutdown(self) -> None:
        """A controlled shutdown of a leader's broker."""
        victim = self._leading_broker()
        self._broker_fault(
            "controlled shutdown of a leader's broker",
            victim,
            lambda: self._stop(victim),
            rf"shutting-down broker {victim}\b",
        )

    def _pause(self, victim: int) -> float:
        """Start a pause in the background; return when the broker was stopped."""
        paused: list[float] = []
        stopped = threading.Event()

        def on_paused(at: float) -> None:
            paused.append(at)
            stopped.set()

        threading.Thread(
            target=faults.pause_broker,
            args=(self.cluster, victim, PAUSE_S, on_paused),
            daemon=True,
        ).start()
        stopped.wait(STAGE_TIMEOUT_S)
        return paused[0]

    def _stop(self, victim: int) -> float:
        at = time.time()
        self.cluster.stop_broker(victim)
        return at

    def kill_replica(self) -> None:
        """Kill of one partition's leader replica actor; its broker restarts it from disk."""
        self._settle()
        leaders = self.zk.leaders()
        partition = sum(t.kind == KILL_REPLICA for t in self.timelines) % PARTITIONS
        victim = leaders[partition]
        timeline = FaultTimeline(KILL_REPLICA, f"replica {partition}@{victim}", {})
        t0 = faults.kill_replica(self.cluster, TOPIC, partition, victim)
        assert t0 is not None, f"replica {partition}@{victim} was not running"
        t0_ms = int(t0 * 1000)
        self._detected(timeline, t0_ms, rf"\[Broker id={victim}\] replica {TOPIC}-{partition} died")
        self._leader_acting(timeline, t0_ms, partition, victim)
        self._first_acks(timeline, t0, [partition], [partition])
        back = timeline.stages["leader acting"][-1]
        self._isr_whole(timeline, t0_ms + int((back or 0) * 1000))
        self._record(timeline)


def run(
    repeats: int = REPEATS, session_timeout_ms: int = SESSION_TIMEOUT_MS
) -> list[tuple[str, ...]]:
    """Inject every fault kind ``repeats`` times; one table row per kind."""
    with tempfile.TemporaryDirectory(prefix="rafka-recovery-") as data_dir:
        with LocalCluster(
            brokers=BROKERS,
            data_dir=data_dir,
            namespace=NAMESPACE,
            cluster_name=CLUSTER_NAME,
            broker_config={**BROKER_CONFIG, "zookeeper_session_timeout_ms": session_timeout_ms},
        ) as cluster:
            cluster.admin().create_topic(
                TOPIC,
                PARTITIONS,
                BROKERS,
                config={"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
            )
            zk = ZkWatch(cluster.zookeeper_connect)
            load = Load()
            load.start()
            bench = Bench(cluster, load, zk, LogTail(Path(data_dir)))
            kinds = [
                bench.kill_broker,
                bench.kill_controller,
                bench.pause_broker,
                bench.expire_session,
                bench.kill_replica,
                bench.controlled_shutdown,
            ]
            try:
                for _ in range(repeats):
                    for inject in kinds:
                        inject()
            finally:
                load.stop()
                zk.close()
            timelines = bench.timelines
            print(f"  failed sends: {load.failed}", file=sys.stderr)
    rows = []
    for kind in dict.fromkeys(t.kind for t in timelines):
        cells = summarise(timelines, kind)
        rows.append((kind, *(cells[phase] for phase in PHASES)))
    return rows


HEADER = ("fault (p50 / max, seconds)", *PHASES)


def main() -> None:
    """Run the recovery benchmark alone and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="faults of each kind")
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=SESSION_TIMEOUT_MS,
        help="the brokers' zookeeper_session_timeout_ms",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    print_table(
        title(args.repeats, args.session_timeout_ms),
        HEADER,
        run(args.repeats, args.session_timeout_ms),
    )


def title(repeats: int, session_timeout_ms: int = SESSION_TIMEOUT_MS) -> str:
    """The table's title."""
    return (
        f"Recovery per fault ({repeats} of each kind; 3 brokers, RF 3, min.insync.replicas 2, "
        f"acks=all at {RATE_PER_S} records/s, {session_timeout_ms / 1000:g} s session timeout)"
    )


if __name__ == "__main__":
    main()
