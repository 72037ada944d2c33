"""Tests for rafka.spark_bridge.offset_ranges: offset resolution, read limits and task splitting."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rafka.protocol.errors import InvalidConfigError, OffsetOutOfRangeError
from rafka.protocol.types import TopicPartition
from rafka.spark_bridge import offset_ranges as plan
from rafka.spark_bridge.offset_ranges import OffsetRange
from rafka.spark_bridge.options import OffsetSpec


class FakeLookup:
    """Log start offsets, high watermarks and record timestamps of an imaginary cluster."""

    def __init__(
        self,
        earliest: dict[TopicPartition, int],
        latest: dict[TopicPartition, int],
        stamps: dict[TopicPartition, list[int]],
    ) -> None:
        self._earliest, self._latest, self._stamps = earliest, latest, stamps
        self.calls: list[str] = []

    def earliest(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        self.calls.append("earliest")
        return {tp: self._earliest[tp] for tp in partitions}

    def latest(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        self.calls.append("latest")
        return {tp: self._latest[tp] for tp in partitions}

    def for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        self.calls.append("for_times")
        return {
            tp: next((offset for offset, ts in enumerate(self._stamps[tp]) if ts >= wanted), None)
            for tp, wanted in timestamps.items()
        }


A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
LOOKUP = FakeLookup(
    {A0: 3, A1: 0}, {A0: 10, A1: 4}, {A0: [100, 200, 300, 400], A1: [150, 250, 350, 450]}
)


def test_earliest_and_latest() -> None:
    assert plan.resolve(OffsetSpec("earliest", "startingOffsets"), [A1, A0], LOOKUP) == {
        A0: 3,
        A1: 0,
    }
    assert plan.resolve(OffsetSpec("latest", "endingOffsets"), [A0, A1], LOOKUP) == {A0: 10, A1: 4}


def test_json_offsets_resolve_sentinels_and_keep_the_rest() -> None:
    spec = OffsetSpec("offsets", "startingOffsets", {A0: -2, A1: 2})
    assert plan.resolve(spec, [A0, A1], LOOKUP) == {A0: 3, A1: 2}
    spec = OffsetSpec("offsets", "endingOffsets", {A0: 7, A1: -1})
    assert plan.resolve(spec, [A0, A1], LOOKUP) == {A0: 7, A1: 4}


def test_json_offsets_must_name_exactly_the_partitions_read() -> None:
    with pytest.raises(InvalidConfigError, match=r"'startingOffsets'.*missing: a-1; not read: b-0"):
        plan.resolve(
            OffsetSpec("offsets", "startingOffsets", {A0: 1, TopicPartition("b", 0): 2}),
            [A0, A1],
            LOOKUP,
        )


def test_timestamps_find_the_first_record_at_or_after() -> None:
    spec = OffsetSpec("timestamp", "startingTimestamp", timestamp=250)
    assert plan.resolve(spec, [A0, A1], LOOKUP) == {A0: 2, A1: 1}
    spec = OffsetSpec("timestamps", "startingOffsetsByTimestamp", {A0: 0, A1: 451})
    assert plan.resolve(spec, [A0, A1], LOOKUP, strategy="latest") == {A0: 0, A1: 4}


def test_unmatched_starting_timestamp_fails_by_default_and_naming_the_option() -> None:
    with pytest.raises(InvalidConfigError, match=r"'startingTimestamp'.*a-0 .timestamp 999"):
        plan.resolve(OffsetSpec("timestamp", "startingTimestamp", timestamp=999), [A0], LOOKUP)


def test_unmatched_ending_timestamp_means_latest() -> None:
    assert plan.resolve(
        OffsetSpec("timestamp", "endingTimestamp", timestamp=999), [A0, A1], LOOKUP
    ) == {A0: 10, A1: 4}


def test_json_round_trip_uses_string_partition_keys() -> None:
    offsets = {A1: 5, A0: 7, TopicPartition("b", 10): 1}
    encoded = plan.to_json(offsets)
    assert encoded == {"a": {"0": 7, "1": 5}, "b": {"10": 1}}
    assert plan.from_json(encoded) == offsets


def test_rate_limit_is_proportional_to_backlog() -> None:
    start = {A0: 0, A1: 100, TopicPartition("b", 0): 50}
    latest = {A0: 300, A1: 200, TopicPartition("b", 0): 50}  # backlogs 300, 100, 0
    assert plan.rate_limit(100, start, latest) == {A0: 75, A1: 125, ("b", 0): 50}


def test_rate_limit_never_starves_a_small_partition() -> None:
    capped = plan.rate_limit(10, {A0: 0, A1: 0}, {A0: 10_000, A1: 1})
    assert capped == {A0: 9, A1: 1}


def test_rate_limit_with_nothing_new_returns_latest() -> None:
    assert plan.rate_limit(10, {A0: 5}, {A0: 5}) == {A0: 5}


@given(
    st.integers(1, 10_000),
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 5000)), min_size=1, max_size=8),
)
def test_rate_limit_stays_within_the_backlog_and_near_the_limit(
    limit: int, spans: list[tuple[int, int]]
) -> None:
    start = {TopicPartition("t", i): s for i, (s, _) in enumerate(spans)}
    latest = {TopicPartition("t", i): s + n for i, (s, n) in enumerate(spans)}
    capped = plan.rate_limit(limit, start, latest)
    assert all(start[tp] <= capped[tp] <= latest[tp] for tp in latest)
    taken = sum(capped[tp] - start[tp] for tp in latest)
    assert taken == sum(n for _, n in spans) or limit - len(spans) <= taken <= limit + len(spans)


def test_min_offsets_waits_until_enough_or_max_trigger_delay() -> None:
    assert plan.backlog({A0: 5}, {A0: 8, A1: 4}) == 7
    assert plan.should_delay(10, 7, since_last_batch_ms=1_000, max_trigger_delay_ms=60_000)
    assert not plan.should_delay(10, 12, since_last_batch_ms=1_000, max_trigger_delay_ms=60_000)
    assert not plan.should_delay(10, 7, since_last_batch_ms=60_000, max_trigger_delay_ms=60_000)


def test_plan_ranges_drops_empty_ones_and_reads_new_partitions_from_zero() -> None:
    ranges, losses = plan.plan_ranges({A0: 5, A1: 4}, {A0: 9, A1: 4, TopicPartition("b", 0): 3})
    assert ranges == [OffsetRange("a", 0, 5, 9), OffsetRange("b", 0, 0, 3)]
    assert losses == []


def test_plan_ranges_reports_vanished_and_truncated_partitions() -> None:
    ranges, losses = plan.plan_ranges({A0: 5, A1: 4}, {A0: 2})
    assert ranges == []
    assert [loss.split(":")[0] for loss in losses] == ["a-0", "a-1"]
    assert "before the start offset" in losses[0] and "gone" in losses[1]


def test_split_ranges_keeps_ranges_when_there_are_enough() -> None:
    ranges = [OffsetRange("a", 0, 0, 10), OffsetRange("a", 1, 0, 1000)]
    assert plan.split_ranges(ranges, None) == ranges
    assert plan.split_ranges(ranges, 2) == ranges


def test_split_ranges_splits_large_ranges_in_proportion() -> None:
    # Spark's KafkaOffsetRangeCalculatorSuite, "N skewed TopicPartitions to M offset ranges".
    ranges = [OffsetRange("t", 1, 1, 501), OffsetRange("t", 2, 1, 10001), OffsetRange("t", 3, 1, 1)]
    assert plan.split_ranges(ranges, 4) == [
        OffsetRange("t", 1, 1, 501),
        OffsetRange("t", 2, 1, 3334),
        OffsetRange("t", 2, 3334, 6667),
        OffsetRange("t", 2, 6667, 10001),
    ]


@given(st.lists(st.integers(1, 100_000), min_size=1, max_size=6), st.integers(1, 40))
def test_split_ranges_covers_every_offset_exactly_once(
    sizes: list[int], min_partitions: int
) -> None:
    ranges = [OffsetRange("t", i, 7, 7 + size) for i, size in enumerate(sizes)]
    pieces = plan.split_ranges(ranges, min_partitions)
    for r in ranges:
        mine = [p for p in pieces if p.partition == r.partition]
        assert mine[0].start == r.start and mine[-1].end == r.end
        assert all(a.end == b.start for a, b in itertools.pairwise(mine))
    assert len(pieces) >= min(min_partitions, sum(sizes)) - len(sizes)


def test_report_data_loss_fails_naming_the_option_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(OffsetOutOfRangeError, match="failOnDataLoss"):
        plan.report_data_loss("a-0 lost [0, 5)", True)
    plan.report_data_loss("a-0 lost [0, 5)", False)
    assert "a-0 lost [0, 5)" in caplog.text
