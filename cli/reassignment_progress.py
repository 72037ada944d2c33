"""Where a reassignment stands: each partition complete, in progress or failed, and how many bytes
the new replicas have copied so far.

A partition the controller is still reassigning is in progress. One it is not reassigning is
complete when its replicas are the target list, in order; any other replica list (or a partition
that no longer exists) means the reassignment failed. The lines are Kafka's.

Progress compares sizes on disk: each replica being added against the partition's leader (or, if
the leader's log is not found, the largest existing replica). A replica counts as copied up to the
leader's size, so the bar reaches 100% when every new replica holds as much as its leader.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import LogDirDescription, PartitionReassignment
from rafka.protocol.types import TopicPartition, partition_name

BAR_WIDTH = 30
"""Characters between the progress bar's brackets."""


class ReassignmentState(enum.Enum):
    """Where the reassignment of one partition stands."""

    COMPLETE = "complete"
    IN_PROGRESS = "in progress"
    FAILED = "failed"


@dataclass(frozen=True)
class PartitionStatus:
    """One partition of a reassignment file: its target replicas, the replicas it has now (None if
    it no longer exists) and what that means."""

    partition: TopicPartition
    target: tuple[int, ...]
    current: tuple[int, ...] | None
    state: ReassignmentState

    def describe(self) -> str:
        """Kafka's line for this partition."""
        name = partition_name(self.partition)
        if self.state is ReassignmentState.COMPLETE:
            return f"Reassignment of partition {name} is complete."
        if self.state is ReassignmentState.IN_PROGRESS:
            return f"Reassignment of partition {name} is still in progress."
        if self.current is None:
            return f"Reassignment of partition {name} failed: the partition no longer exists."
        return (
            f"Reassignment of partition {name} failed: there is no active reassignment, but its "
            f"replica set is {_ids(self.current)} rather than {_ids(self.target)}."
        )


def _ids(brokers: Sequence[int]) -> str:
    return ",".join(map(str, brokers))


def partition_status(
    tp: TopicPartition,
    target: Sequence[int],
    current: Sequence[int] | None,
    reassigning: bool,
) -> PartitionStatus:
    """Classify one partition: ``reassigning`` says whether the controller lists it as being
    reassigned, ``current`` is its replica list in the metadata (None if it is gone)."""
    wanted = tuple(target)
    found = None if current is None else tuple(current)
    if reassigning:
        state = ReassignmentState.IN_PROGRESS
    elif found == wanted:
        state = ReassignmentState.COMPLETE
    else:
        state = ReassignmentState.FAILED
    return PartitionStatus(tp, wanted, found, state)


def status_report(statuses: Sequence[PartitionStatus]) -> str:
    """Kafka's status block: a heading, then one line per partition in topic-partition order."""
    lines = ["Status of partition reassignment:"]
    lines.extend(s.describe() for s in sorted(statuses, key=lambda s: s.partition))
    return "\n".join(lines)


@dataclass(frozen=True)
class CopyProgress:
    """Bytes the ``replicas`` replicas being added hold, out of what they must hold."""

    copied: int
    total: int
    replicas: int

    @property
    def fraction(self) -> float:
        """How much is copied, from 0 to 1 (1 when there is nothing to copy)."""
        return self.copied / self.total if self.total else 1.0


def replica_sizes(
    log_dirs: Mapping[int, Sequence[LogDirDescription]],
) -> dict[tuple[TopicPartition, int], int]:
    """(partition, broker) -> bytes of that replica's log, over the broker's readable log
    directories (a replica being moved between directories counts once, not its future copy)."""
    sizes: dict[tuple[TopicPartition, int], int] = {}
    for broker, directories in log_dirs.items():
        for directory in directories:
            if directory.error is not Errors.NONE:
                continue
            for tp, info in directory.replicas.items():
                if not info.is_future:
                    sizes[tp, broker] = sizes.get((tp, broker), 0) + info.size
    return sizes


def copy_progress(
    reassignments: Mapping[TopicPartition, PartitionReassignment],
    leaders: Mapping[TopicPartition, int],
    log_dirs: Mapping[int, Sequence[LogDirDescription]],
) -> CopyProgress:
    """How far the replicas being added have copied their partitions' data."""
    sizes = replica_sizes(log_dirs)
    copied = total = replicas = 0
    for tp, reassignment in sorted(reassignments.items()):
        existing = [b for b in reassignment.replicas if b not in reassignment.adding_replicas]
        leader = leaders.get(tp)
        if leader is not None and (tp, leader) in sizes:
            size = sizes[tp, leader]
        else:
            size = max((sizes.get((tp, b), 0) for b in existing), default=0)
        for broker in reassignment.adding_replicas:
            copied += min(sizes.get((tp, broker), 0), size)
            total += size
            replicas += 1
    return CopyProgress(copied, total, replicas)


def format_bytes(count: int) -> str:
    """A byte count for people: ``512 B``, ``1.5 KiB``, ``20.0 MiB``."""
    if count < 1024:
        return f"{count} B"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"


def progress_bar(progress: CopyProgress, width: int = BAR_WIDTH) -> str:
    """``[#####-----]  50% 1.0 MiB of 2.0 MiB copied to 2 new replicas``; the percentage and the
    bar round down, so they show 100% only when everything is copied."""
    filled = int(progress.fraction * width)
    percent = int(progress.fraction * 100)
    plural = "" if progress.replicas == 1 else "s"
    return (
        f"[{'#' * filled}{'-' * (width - filled)}] {percent:3d}% {format_bytes(progress.copied)} "
        f"of {format_bytes(progress.total)} copied to {progress.replicas} new replica{plural}"
    )


class ProgressLine:
    """A status line redrawn in place on a terminal; elsewhere (a file, a pipe) each drawing is a
    line of its own."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.in_place = out.isatty()
        self.drawn = 0

    def draw(self, text: str) -> None:
        """Show ``text`` instead of what was drawn before."""
        if self.in_place:
            # Padding wipes the end of a longer previous text.
            self.out.write("\r" + text.ljust(self.drawn))
            self.drawn = len(text)
        else:
            self.out.write(text + "\n")
        self.out.flush()

    def end(self) -> None:
        """Move past a line drawn in place, so what is printed next starts on a line of its own."""
        if self.in_place and self.drawn:
            self.out.write("\n")
            self.out.flush()
            self.drawn = 0
