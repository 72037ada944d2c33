"""Offset ranges: where a read starts and ends in each partition, and how it becomes Spark tasks.

Pure planning, mirroring Spark's Kafka source (``KafkaMicroBatchStream`` and
``KafkaOffsetRangeCalculator``): resolve ``startingOffsets``/``endingOffsets``/timestamps
to concrete offsets, cap a micro-batch by ``maxOffsetsPerTrigger`` in proportion to each
partition's backlog, hold it back by ``minOffsetsPerTrigger``, and split large ranges for
``minPartitions``. The cluster is reached only through an ``OffsetLookup`` the caller
passes in, so all of it is unit-testable.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from rafka.protocol.errors import OffsetOutOfRangeError
from rafka.protocol.types import TopicPartition
from rafka.spark_bridge.options import EARLIEST, LATEST, OffsetSpec, option_error

logger = logging.getLogger(__name__)
PartitionOffsets = dict[TopicPartition, int]


class OffsetLookup(Protocol):
    """What planning needs from the cluster (the driver implements it with a Consumer)."""

    def earliest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        """Log start offset of each partition."""

    def latest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        """High watermark of each partition."""

    def for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        """First offset with a timestamp >= the given one, or None if no record is that new."""


@dataclass(frozen=True)
class OffsetRange:
    """Offsets [start, end) of one partition: one Spark task reads exactly these."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """Number of offsets in the range."""
        return self.end - self.start


# ---------------------------------------------------------------------- JSON form of offsets


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Spark's checkpointed form, ``{"topic": {"0": 23}}`` (JSON keys are strings)."""
    result: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(partition)] = int(offset)
    return result


def from_json(value: Mapping[str, Any]) -> PartitionOffsets:
    """Read offsets back from Spark's checkpoint form."""
    return {
        TopicPartition(topic, int(partition)): int(offset)
        for topic, partitions in value.items()
        for partition, offset in partitions.items()
    }


# ------------------------------------------------------------- resolving a starting or ending point


def resolve(
    spec: OffsetSpec,
    partitions: Iterable[TopicPartition],
    lookup: OffsetLookup,
    strategy: str = "error",
) -> PartitionOffsets:
    """Concrete offsets for ``partitions`` from an OffsetSpec; errors name the spec's option.

    As in Spark, per-partition JSON must list exactly the partitions read,
    -2/-1 mean earliest and latest, and a timestamp with no record that new
    follows ``startingOffsetsByTimestampStrategy`` for starting points ('error'
    fails, 'latest' uses the high watermark) and means latest for ending ones.
    """
    wanted = sorted(set(partitions))
    if spec.kind == "earliest":
        return lookup.earliest(wanted)
    if spec.kind == "latest":
        return lookup.latest(wanted)
    if spec.kind in ("offsets", "timestamps"):
        given = set(spec.offsets)
        if given != set(wanted):
            missing = ", ".join(f"{t}-{p}" for t, p in sorted(set(wanted) - given)) or "none"
            extra = ", ".join(f"{t}-{p}" for t, p in sorted(given - set(wanted))) or "none"
            raise option_error(
                spec.option,
                "must name every partition read and no other "
                f"(missing: {missing}; not read: {extra})",
            )
    if spec.kind == "offsets":
        sentinel = {
            EARLIEST: [tp for tp in wanted if spec.offsets[tp] == EARLIEST],
            LATEST: [tp for tp in wanted if spec.offsets[tp] == LATEST],
        }
        resolved = {tp: spec.offsets[tp] for tp in wanted}
        if sentinel[EARLIEST]:
            resolved.update(lookup.earliest(sentinel[EARLIEST]))
        if sentinel[LATEST]:
            resolved.update(lookup.latest(sentinel[LATEST]))
        return resolved
    timestamps = (
        {tp: spec.offsets[tp] for tp in wanted}
        if spec.kind == "timestamps"
        else {tp: int(spec.timestamp or 0) for tp in wanted}
    )
    found = lookup.for_times(timestamps)
    unmatched = [tp for tp in wanted if found.get(tp) is None]
    if unmatched and spec.option.startswith("starting") and strategy == "error":
        names = ", ".join(
            f"{t}-{p} (timestamp {timestamps[TopicPartition(t, p)]})" for t, p in unmatched
        )
        raise option_error(
            spec.option,
            f"no record at or after the timestamp in {names}; set "
            "startingOffsetsByTimestampStrategy to 'latest' to start at the end instead",
        )
    resolved = {tp: offset for tp, offset in found.items() if offset is not None}
    if unmatched:
        resolved.update(lookup.latest(unmatched))
    return resolved


# ---------------------------------------------------------------------- micro-batch limits


def rate_limit(
    limit: int, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]
) -> PartitionOffsets:
    """Cap a micro-batch at about ``limit`` offsets, shared in proportion to each backlog.

    Spark's ``rateLimit``: a partition's share is floored, but a share
    below one offset is rounded up so that small partitions are never
    starved. ``start`` must cover every partition of ``latest``.
    """
    sizes = {tp: end - start[tp] for tp, end in latest.items() if end - start[tp] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(latest)
    capped: PartitionOffsets = {}
    for tp, end in latest.items():
        if tp not in sizes:
            capped[tp] = end
            continue
        share = limit * (sizes[tp] / total)
        capped[tp] = min(end, start[tp] + int(math.ceil(share) if share < 1 else math.floor(share)))
    return capped


def backlog(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]) -> int:
    """Offsets available past ``start`` (a partition not in ``start`` counts from 0)."""
    return sum(max(0, end - start.get(tp, 0)) for tp, end in latest.items())


def should_delay(
    min_rows: int, available: int, since_last_batch_ms: float, max_trigger_delay_ms: int
) -> bool:
    """``minOffsetsPerTrigger``: skip triggers while fewer wait, until ``maxTriggerDelay``."""
    return since_last_batch_ms < max_trigger_delay_ms and available < min_rows


# ---------------------------------------------------------------------- ranges and Spark tasks


def plan_ranges(
    start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
) -> tuple[list[OffsetRange], list[str]]:
    """Ranges to read between two offset maps, and what looks like data loss.

    A partition in ``end`` but not ``start`` was added since; it is read from offset 0, so if
    retention already removed its first records the read reports it. A partition in ``start`` that
    is gone from ``end``, or whose end lies before its start (the log was truncated or recreated),
    yields a data-loss message and no range.
    """
    ranges: list[OffsetRange] = []
    losses: list[str] = []
    for (topic, partition), until in sorted(end.items()):
        begin = start.get(TopicPartition(topic, partition), 0)
        if until < begin:
            losses.append(
                f"{topic}-{partition}: the end offset {until} is before the start offset {begin}; "
                "the partition's log was truncated or recreated, so records may have been missed"
            )
        elif until > begin:
            ranges.append(OffsetRange(topic, partition, begin, until))
    for topic, partition in sorted(set(start) - set(end)):
        losses.append(
            f"{topic}-{partition}: the partition is gone (its topic was deleted?), so records may "
            "have been missed"
        )
    return ranges, losses


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """``minPartitions``: split large ranges so there are at least about that many Spark tasks.

    Spark's ``KafkaOffsetRangeCalculator``: ranges whose proportional share rounds to one task stay
    whole; the others share the remaining task count in proportion to their size, in even pieces.
    """
    ranges = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)

    def parts_of(size: int, out_of: int, tasks: int) -> int:
        return max(math.floor(size / out_of * tasks + 0.5), 1)

    whole = {
        (r.topic, r.partition, r.start)
        for r in ranges
        if parts_of(r.size, total, min_partitions) == 1
    }
    whole_size = sum(r.size for r in ranges if (r.topic, r.partition, r.start) in whole)
    split_total = total - whole_size
    split_tasks = max(min_partitions - len(whole), 1)
    result: list[OffsetRange] = []
    for r in ranges:
        parts = (
            1
            if (r.topic, r.partition, r.start) in whole
            else parts_of(r.size, split_total, split_tasks)
        )
        remaining, begin = r.size, r.start
        for part in range(parts):
            # Integer division; the last piece takes the rounding remainder.
            piece = remaining // (parts - part)
            remaining -= piece
            until = min(begin + piece, r.end)
            if until > begin:
                result.append(OffsetRange(r.topic, r.partition, begin, until))
            begin = until
    return result


# ---------------------------------------------------------------------- data loss

DATA_LOSS_ADVICE = (
    "Some data may have been lost because it is not available in the cluster any more: either "
    "retention "
    "removed it or the topic was deleted before all of it was processed. If you don't want the "
    "query to fail "
    "in such cases, set the source option 'failOnDataLoss' to 'false'."
)


def report_data_loss(detail: str, fail_on_data_loss: bool) -> None:
    """``failOnDataLoss``: raise OFFSET_OUT_OF_RANGE naming the option, or warn and go on."""
    if fail_on_data_loss:
        raise OffsetOutOfRangeError(f"{detail}. {DATA_LOSS_ADVICE}")
    logger.warning("%s. Skipping it because failOnDataLoss is false.", detail)
