"""Recovery timelines: when, after a fault, each stage of a partition's recovery happened.

A fault's timeline is read from what the cluster records anyway: the actors' log lines (the
controller's state-change log, the brokers' own lines), the versions of the partition state znodes
(their mtimes) and the producer's acknowledgements. This module only parses and reduces those
records; the benchmark that injects the faults gathers them. Times are wall-clock milliseconds
since the epoch, as ``time.time()`` and ZooKeeper's mtimes count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

_LOG_LINE = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] "
    r"(TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (.*) \((\S+)\)$"
)

PHASES = (
    "detected",
    "leader in ZooKeeper",
    "leader acting",
    "first ack, led",
    "first ack, followed",
    "ISR whole",
)
"""A timeline's stages, in order; each is measured from the fault except "ISR whole", measured
from the moment the broken replica was back. The first acknowledgement is told apart for the
partitions the victim led (waiting for a new leader) and those it only followed (waiting for the
ISR to drop it)."""


@dataclass(frozen=True)
class LogLine:
    """One line of a broker's ``server.log`` (Kafka's layout, ``protocol/log_layout.py``), or of its
    state-change log."""

    at_ms: int
    logger: str
    level: str
    message: str


def parse_log_line(line: str) -> LogLine | None:
    """The parts of a ``server.log`` line, or None for a line not in its layout (a traceback)."""
    match = _LOG_LINE.match(line.rstrip("\n"))
    if match is None:
        return None
    stamp, level, message, logger = match.groups()
    # asctime is local time with a comma before the milliseconds.
    at = datetime.strptime(stamp.replace(",", "."), "%Y-%m-%d %H:%M:%S.%f").timestamp()
    return LogLine(round(at * 1000), logger, level, message)


def first_line(lines: Iterable[LogLine], since_ms: int, pattern: re.Pattern[str]) -> int | None:
    """Time of the earliest line at or after ``since_ms`` whose message matches ``pattern``."""
    times = [
        line.at_ms for line in lines if line.at_ms >= since_ms and pattern.search(line.message)
    ]
    return min(times, default=None)


@dataclass(frozen=True)
class StateVersion:
    """One observed version of a partition state znode: when it was written and what it says."""

    mtime_ms: int
    leader: int
    isr: tuple[int, ...]


def first_new_leader(
    versions: Sequence[StateVersion], since_ms: int, old_leader: int
) -> StateVersion | None:
    """The earliest version written at or after ``since_ms`` naming a live leader other than
    ``old_leader``."""
    found = [
        v for v in versions if v.mtime_ms >= since_ms and v.leader >= 0 and v.leader != old_leader
    ]
    return min(found, key=lambda v: v.mtime_ms, default=None)


def first_whole_isr(
    versions: Sequence[StateVersion], since_ms: int, replicas: int
) -> StateVersion | None:
    """The earliest version at or after ``since_ms`` whose ISR holds all ``replicas``; when the ISR
    never shrank after ``since_ms``, the latest earlier version if that one is whole."""
    later = [v for v in versions if v.mtime_ms >= since_ms]
    whole = [v for v in later if len(v.isr) == replicas]
    if whole:
        return min(whole, key=lambda v: v.mtime_ms)
    earlier = [v for v in versions if v.mtime_ms < since_ms]
    if not later and earlier:
        last = max(earlier, key=lambda v: v.mtime_ms)
        return last if len(last.isr) == replicas else None
    return None


def first_ack_after(acks: Iterable[tuple[float, float]], since_s: float) -> float | None:
    """Time of the earliest acknowledgement of a record sent at or after ``since_s``, from
    ``(sent, acknowledged)`` pairs in seconds."""
    return min((acked for sent, acked in acks if sent >= since_s), default=None)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value at ``fraction`` (0.5 = p50, 1.0 = max) by nearest rank; NaN when empty."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass
class FaultTimeline:
    """What one injected fault cost, in seconds per stage; a stage that does not apply to the
    fault is left out, one that never happened is None."""

    kind: str
    victim: str
    stages: dict[str, list[float | None]]

    def add(self, phase: str, seconds: float | None) -> None:
        """Record one sample of a stage (a fault may give one per affected partition)."""
        self.stages.setdefault(phase, []).append(seconds)


def summarise(timelines: Sequence[FaultTimeline], kind: str) -> dict[str, str]:
    """Per stage, "p50 / max" seconds over every sample of faults of ``kind``; "-" where the stage
    does not apply, and "n missed" appended when n samples never reached the stage."""
    cells: dict[str, str] = {}
    for phase in PHASES:
        samples = [s for t in timelines if t.kind == kind for s in t.stages.get(phase, [])]
        if not samples:
            cells[phase] = "-"
            continue
        seen = [s for s in samples if s is not None]
        missed = len(samples) - len(seen)
        cell = f"{percentile(seen, 0.5):.2f} / {max(seen):.2f}" if seen else "never"
        cells[phase] = cell + (f" ({missed} missed)" if missed and seen else "")
    return cells
