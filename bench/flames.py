"""Flame graphs of the data path: where a producer, a leader, a follower and a consumer spend time.

One `LocalCluster` of 3 brokers and a topic of 6 partitions. While the producer (this process) sends
100-byte records unthrottled, py-spy samples it, the leader replica of partition 0 and (RF 3) one of
its followers; then, on the RF 1 topic, this process consumes everything with ``Consumer.poll``
while py-spy samples it and the same leader. Each recording is a flame graph SVG in
``bench/results/`` (``flame-<role>-<setup>.svg``), and the functions taking the most samples of
their own are printed as a Markdown table per recording.

py-spy attaches with ptrace, so this runs as root or with ``kernel.yama.ptrace_scope`` 0; it is
not part of ``make bench``. ``--records`` sets the records per run (long enough to cover the
sampling window: 12 s by default).
"""

from __future__ import annotations

import argparse
import html
import itertools
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ray
from process_memory import cpu_seconds

from rafka.actors import names
from rafka.cli.perf import consumer_perf, producer_perf
from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster

NAMESPACE = "rafka-bench-flames"
RESULTS = Path(__file__).resolve().parent / "results"
PY_SPY = Path(sys.executable).with_name("py-spy")
RATE_HZ = 97
SECONDS = 12
WARM_UP_RECORDS = 200_000
# The cluster benchmark's batching (bench/cluster.py), so the profiles explain its figures.
BATCHING = {"batch_size": 1_048_576, "linger_ms": 5}
# A frame of py-spy's SVG: its title ("function (file:line) (N samples, P%)"), depth and samples.
FRAME = re.compile(r'<title>(.*?)</title><rect [^>]*?y="([\d.]+)"[^>]*?fg:x="(\d+)" fg:w="(\d+)"')
LINE_NUMBER = re.compile(r":\d+\)$")
COUNTS = re.compile(r" \([\d,]+ samples?, [\d.]+%\)$")


@dataclass(frozen=True)
class Frame:
    """One rectangle of a flame graph: a function at a depth, over ``width`` samples from ``x``."""

    function: str
    depth: float
    x: int
    width: int


def frames_of(svg: str) -> list[Frame]:
    """The frames of a py-spy flame graph, with each function named without its line number."""
    found = []
    for title, y, x, width in FRAME.findall(svg):
        name = LINE_NUMBER.sub(")", COUNTS.sub("", html.unescape(title)))
        found.append(Frame(name, float(y), int(x), int(width)))
    return found


def self_samples(frames: list[Frame]) -> tuple[int, Counter[str]]:
    """(all samples, samples per function spent in the function itself, not in its callees).

    py-spy draws callers above callees (an icicle): a frame's callees are the frames one row
    below it that lie inside its span.
    """
    rows: dict[float, list[Frame]] = {}
    for frame in frames:
        rows.setdefault(frame.depth, []).append(frame)
    depths = sorted(rows)
    if not depths:
        return 0, Counter()
    below = dict(itertools.pairwise(depths))
    own: Counter[str] = Counter()
    for frame in frames:
        callees = rows.get(below.get(frame.depth, -1.0), [])
        inside = sum(
            c.width for c in callees if frame.x <= c.x and c.x + c.width <= frame.x + frame.width
        )
        own[frame.function] += frame.width - inside
    total = sum(frame.width for frame in rows[depths[0]])
    return total, own


def top_table(svg: str, rows: int = 12) -> list[tuple[str, ...]]:
    """The functions with the most samples of their own: (function, samples, share)."""
    total, own = self_samples(frames_of(svg))
    return [
        (function, f"{samples:,}", f"{100 * samples / total:.1f}%")
        for function, samples in own.most_common(rows)
        if samples
    ]


def record(pid: int, name: str) -> subprocess.Popen[bytes]:
    """Start py-spy sampling ``pid`` for ``SECONDS`` into ``RESULTS/flame-<name>.svg``, without
    stopping the process for each sample."""
    return subprocess.Popen(
        [
            str(PY_SPY),
            "record",
            "--pid",
            str(pid),
            "--duration",
            str(SECONDS),
            "--rate",
            str(RATE_HZ),
            "--nonblocking",
            "--format",
            "flamegraph",
            "--output",
            str(RESULTS / f"flame-{name}.svg"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _replica_pid(admin: Admin, topic: str, leader: bool) -> int:
    """Process id of partition 0's leader replica, or of one of its followers."""
    (state,) = [p for p in admin.describe_topic(topic).partitions if p.partition == 0]
    broker = state.leader if leader else next(r for r in state.replicas if r != state.leader)
    actor = ray.get_actor(names.replica_actor_name(topic, 0, broker), namespace=NAMESPACE)
    return int(ray.get(actor.describe.remote(), timeout=30)["pid"])


@dataclass(frozen=True)
class Recording:
    """A flame graph's name and the CPU its process used while the measured work ran."""

    name: str
    cores: float
    machine_cores: float
    """What the whole machine used meanwhile (py-spy, Ray and anything else running included)."""


def machine_busy_seconds() -> float:
    """CPU seconds the machine has spent busy (not idle or waiting for I/O), from ``/proc/stat``."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _observe(targets: dict[str, int], work: Callable[[], tuple[str, float]]) -> list[Recording]:
    """Run ``work`` while py-spy records each target; CPU is read from ``/proc`` around it, since
    py-spy's samples also count threads parked in native code (Ray's main loop)."""
    spies = [record(pid, name) for name, pid in targets.items()]
    before = {name: cpu_seconds(pid) for name, pid in targets.items()}
    machine = machine_busy_seconds()
    started = time.perf_counter()
    label, rate = work()
    seconds = time.perf_counter() - started
    used = {name: cpu_seconds(pid) - before[name] for name, pid in targets.items()}
    machine_cores = (machine_busy_seconds() - machine) / seconds
    for spy in spies:
        spy.wait()
    print(f"{label}: {rate:,.0f} records/s", file=sys.stderr)
    return [Recording(name, used[name] / seconds, machine_cores) for name in targets]


def _produce(admin: Admin, topic: str, acks: str, records: int, setup: str) -> list[Recording]:
    """Record the producer, the leader and (replicated) a follower while ``records`` are sent."""
    config = {**BATCHING, "acks": acks}
    producer_perf(NAMESPACE, topic, WARM_UP_RECORDS, 100, -1, config, progress=False)
    targets = {
        f"producer-{setup}": os.getpid(),
        f"leader-{setup}": _replica_pid(admin, topic, True),
    }
    if len(admin.describe_topic(topic).partitions[0].replicas) > 1:
        targets[f"follower-{setup}"] = _replica_pid(admin, topic, False)

    def work() -> tuple[str, float]:
        result = producer_perf(NAMESPACE, topic, records, 100, -1, config, progress=False)
        return setup, result.records_per_s

    return _observe(targets, work)


def _consume(admin: Admin, topic: str, records: int) -> list[Recording]:
    """Record this process consuming ``records`` with ``poll``, and the leader serving it."""
    targets = {"consumer": os.getpid(), "leader-serving-consumer": _replica_pid(admin, topic, True)}

    def work() -> tuple[str, float]:
        read = consumer_perf(NAMESPACE, topic, records, progress=False)
        return "consume", read.records / read.seconds

    return _observe(targets, work)


def run(records: int) -> list[Recording]:
    """Record every flame graph."""
    RESULTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rafka-bench-flames-") as data_dir:
        with LocalCluster(brokers=3, data_dir=data_dir, namespace=NAMESPACE) as cluster:
            admin = cluster.admin()
            admin.create_topic("rf3", 6, 3)
            admin.create_topic("rf1", 6, 1)
            recorded = _produce(admin, "rf3", "all", records, "rf3-acksall")
            recorded += _produce(admin, "rf1", "1", records, "rf1-acks1")
            recorded += _consume(admin, "rf1", records + WARM_UP_RECORDS)
    return recorded


def main() -> None:
    """Record the flame graphs and print each one's top functions."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000, help="records per produce run")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    for recording in run(args.records):
        svg = (RESULTS / f"flame-{recording.name}.svg").read_text()
        title = (
            f"flame-{recording.name}.svg: the process used {recording.cores:.2f} cores, "
            f"the machine {recording.machine_cores:.2f}"
        )
        print_table(title, ("function (own samples)", "samples", "share"), top_table(svg))


if __name__ == "__main__":
    main()
