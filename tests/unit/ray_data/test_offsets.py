"""Planning a Ray Data read: ``read_kafka``'s offset forms become one range per partition, clamped
to the log, with errors that name the argument."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone

import pytest

from rafka.protocol.errors import InvalidConfigError
from rafka.protocol.types import TopicPartition
from rafka.ray_data.offsets import plan_reads
from rafka.spark_bridge.offset_ranges import OffsetRange

P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)
PARTITIONS = [P0, P1]
T0 = 1_700_000_000_000
BOUNDS = {P0: (10, 50), P1: (0, 20)}


class Log:
    """Partition 0 holds offsets [10, 50) with record i at T0 + i ms; partition 1 holds [0, 20)."""

    def earliest(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: BOUNDS[tp][0] for tp in partitions}

    def latest(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: BOUNDS[tp][1] for tp in partitions}

    def for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        found: dict[TopicPartition, int | None] = {}
        for tp, ts in timestamps.items():
            start, end = BOUNDS[tp]
            offset = max(start, ts - T0)
            found[tp] = offset if offset < end else None
        return found


def ranges(start: object, end: object) -> list[tuple[int, int, int]]:
    planned = plan_reads(PARTITIONS, start, end, Log())  # type: ignore[arg-type]
    assert all(isinstance(r, OffsetRange) for r in planned)
    return [(r.partition, r.start, r.end) for r in planned]


def test_earliest_to_latest_reads_each_whole_log() -> None:
    assert ranges("earliest", "latest") == [(0, 10, 50), (1, 0, 20)]


def test_one_offset_applies_to_every_partition_and_is_clamped_to_the_log() -> None:
    assert ranges(5, "latest") == [(0, 10, 50), (1, 5, 20)]
    assert ranges("earliest", 30) == [(0, 10, 30), (1, 0, 20)]


def test_per_partition_offsets_leave_unlisted_partitions_at_the_default() -> None:
    assert ranges({"t": {1: 15}}, {"t": {0: 12}}) == [(0, 10, 12), (1, 15, 20)]
    assert ranges({"t": {0: "latest"}}, "latest") == [(1, 0, 20)]


def test_datetimes_select_by_record_time_and_naive_ones_are_utc() -> None:
    start = datetime.fromtimestamp((T0 + 20) / 1000, timezone.utc)
    naive_end = datetime.fromtimestamp((T0 + 40) / 1000, timezone.utc).replace(tzinfo=None)
    assert ranges(start, naive_end) == [(0, 20, 40)]


def test_a_start_after_the_end_reads_nothing() -> None:
    assert ranges(60, "latest") == []


@pytest.mark.parametrize(
    ("start", "message"),
    [
        ("newest", "start_offset.*'newest'"),
        (-3, "start_offset.*negative"),
        ({"t": {5: 1}}, "start_offset.*t-5 is not a partition being read"),
        ({"t": {0: "soon"}}, "start_offset.*t-0: 'soon' is not an offset"),
        (1.5, "start_offset.*cannot be a float"),
    ],
)
def test_bad_offsets_are_refused_naming_the_argument(start: object, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        ranges(start, "latest")
