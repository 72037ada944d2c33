"""Where a Ray Data read starts and ends in each partition, from ``read_kafka``'s offset forms.

``start_offset`` and ``end_offset`` take what ``ray.data.read_kafka`` takes: an offset for every
partition, a ``datetime``, ``"earliest"``/``"latest"``, or ``{topic: {partition: offset or
"earliest"/"latest"}}`` with unlisted partitions at ``"earliest"`` (start) or ``"latest"`` (end).
Each becomes the Spark bridge's ``OffsetSpec`` and is resolved by the same ``resolve``; the cluster
is reached only through an ``OffsetLookup``, so this is unit-tested without one.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Literal

from rafka.protocol.types import TopicPartition
from rafka.spark_bridge.offset_ranges import OffsetLookup, OffsetRange, resolve
from rafka.spark_bridge.options import EARLIEST, LATEST, OffsetSpec, option_error

PerPartition = Mapping[str, Mapping[int, int | str]]
OffsetForm = int | datetime | Literal["earliest", "latest"] | PerPartition
_NAMED = {"earliest": EARLIEST, "latest": LATEST}


def _epoch_ms(moment: datetime) -> int:
    """A datetime as epoch milliseconds; a naive one is UTC, as in ``read_kafka``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def offset_spec(
    form: OffsetForm, option: str, partitions: list[TopicPartition], default: str
) -> OffsetSpec:
    """``form`` as an OffsetSpec over ``partitions``; ``default`` ("earliest" or "latest") is what
    a partition missing from a per-partition mapping gets. Errors name ``option``."""
    if isinstance(form, str):
        if form not in _NAMED:
            raise option_error(
                option,
                f"must be 'earliest', 'latest', an offset, a datetime or "
                f"{{topic: {{partition: offset}}}}, not {form!r}",
            )
        return OffsetSpec(form, option)
    if isinstance(form, bool) or not isinstance(form, (int, datetime, Mapping)):
        raise option_error(option, f"cannot be a {type(form).__name__}")
    if isinstance(form, datetime):
        return OffsetSpec("timestamp", option, timestamp=_epoch_ms(form))
    if isinstance(form, int):
        if form < 0:
            raise option_error(option, f"an offset cannot be negative, got {form}")
        return OffsetSpec("offsets", option, {tp: form for tp in partitions})
    offsets = {tp: _NAMED[default] for tp in partitions}
    for topic, by_partition in form.items():
        for partition, offset in by_partition.items():
            tp = TopicPartition(topic, int(partition))
            if tp not in offsets:
                raise option_error(option, f"{topic}-{partition} is not a partition being read")
            if isinstance(offset, str):
                if offset not in _NAMED:
                    raise option_error(option, f"{topic}-{partition}: {offset!r} is not an offset")
                offsets[tp] = _NAMED[offset]
            elif isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0:
                offsets[tp] = offset
            else:
                raise option_error(option, f"{topic}-{partition}: {offset!r} is not an offset")
    return OffsetSpec("offsets", option, offsets)


def plan_reads(
    partitions: list[TopicPartition],
    start: OffsetForm,
    end: OffsetForm,
    lookup: OffsetLookup,
) -> list[OffsetRange]:
    """One range per partition with records to read, in partition order.

    A start past the end (an offset beyond the log, or a time after the end's) reads nothing from
    that partition; an offset below the log's start begins at the log's start."""
    starts = resolve(
        offset_spec(start, "start_offset", partitions, "earliest"),
        partitions,
        lookup,
        strategy="latest",
    )
    ends = resolve(offset_spec(end, "end_offset", partitions, "latest"), partitions, lookup)
    earliest = lookup.earliest(sorted(partitions))
    latest = lookup.latest(sorted(partitions))
    ranges = []
    for tp in sorted(partitions):
        first = max(starts[tp], earliest[tp])
        last = min(ends[tp], latest[tp])
        if first < last:
            ranges.append(OffsetRange(tp.topic, tp.partition, first, last))
    return ranges
