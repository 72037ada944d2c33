"""Tests for retention: retention.ms, retention.bytes, the log start offset, the epoch cache."""

from __future__ import annotations

import random

import pytest

from rafka.protocol.errors import OffsetOutOfRangeError

HOUR = 3600 * 1000


@pytest.fixture
def aged(harness, make_batches, clock):
    """A log of many segments, record timestamps one minute apart, ending at the clock's now."""
    batches = make_batches(random.Random(1), 60, start_ms=0, step_ms=60_000)
    start = clock.now - 60_000 * (sum(map(len, batches)) - 1)
    batches = [[(key, value, start + ts) for key, value, ts in records] for records in batches]
    log = harness.open(segment_bytes=3000, retention_ms=-1)
    harness.append(batches)
    assert len(log.segments) > 6
    return log


def _check_start(harness, log) -> None:
    """Reads start at the log start offset and return the model from there on."""
    assert log.log_start_offset == log.segments[0].base_offset
    with pytest.raises(OffsetOutOfRangeError):
        log.read(log.log_start_offset - 1)
    assert harness.read_all() == harness.expected_from(log.log_start_offset)


def test_retention_ms_deletes_whole_expired_segments_and_advances_log_start_offset(
    harness, aged, clock
):
    retention = 2 * HOUR
    expected_left = [
        s.base_offset for s in aged.segments if clock.now - s.max_timestamp <= retention
    ]
    log = harness.reconfigure(retention_ms=retention)
    deleted = log.delete_old_segments()
    assert [s.base_offset for s in log.segments] == expected_left
    assert deleted > 0 and log.log_start_offset == expected_left[0]
    assert len(harness.segment_files()) == len(expected_left)
    _check_start(harness, log)


def test_retention_ms_follows_the_clock(harness, aged, clock):
    log = harness.reconfigure(retention_ms=HOUR)
    kept = len(log.segments)
    log.delete_old_segments()
    assert len(log.segments) < kept
    kept = len(log.segments)
    clock.advance(HOUR)
    assert log.delete_old_segments() > 0 and len(log.segments) < kept


def test_retention_ms_deletes_only_a_prefix(harness):
    log = harness.open(retention_ms=HOUR)
    now = harness.clock.now
    for ts in (
        now - 3 * HOUR,
        now,
        now - 5 * HOUR,
        now,
    ):  # the third segment is old but follows a young one
        harness.append([[(b"k", b"v", ts)]])
        log.roll()
    assert log.delete_old_segments() == 1
    assert [s.base_offset for s in log.segments] == [1, 2, 3, 4]


def test_retention_ms_minus_one_keeps_everything(harness, aged, clock):
    log = harness.reconfigure(retention_ms=-1)
    clock.advance(1000 * 24 * HOUR)
    assert log.delete_old_segments() == 0
    assert harness.read_all() == harness.records


def test_retention_bytes_deletes_oldest_segments_while_the_log_is_too_big(harness, aged):
    limit = aged.size_in_bytes // 2
    sizes = [s.size for s in aged.segments]
    log = harness.reconfigure(retention_bytes=limit)
    deleted = log.delete_old_segments()
    # Kafka's rule: delete a segment only if the log is still at least retention.bytes without it.
    excess, expected = sum(sizes) - limit, 0
    while expected < len(sizes) - 1 and excess - sizes[expected] >= 0:
        excess -= sizes[expected]
        expected += 1
    assert deleted == expected > 0
    assert log.size_in_bytes >= limit
    assert log.size_in_bytes - log.segments[0].size < limit
    _check_start(harness, log)


def test_retention_never_deletes_the_active_segment(harness, aged, clock):
    leo = aged.log_end_offset
    active = aged.active_segment.base_offset
    log = harness.reconfigure(retention_ms=0, retention_bytes=0)
    clock.advance(24 * HOUR)
    log.delete_old_segments()
    assert [s.base_offset for s in log.segments] == [active]
    assert log.log_end_offset == leo and log.log_start_offset == active
    assert log.delete_old_segments() == 0
    harness.append([[(b"k", b"new", clock.now)]])
    assert harness.read_all() == harness.expected_from(active)


def test_compact_policy_does_not_delete_by_time_or_size(harness, aged, clock):
    log = harness.reconfigure(cleanup_policy="compact", retention_ms=1, retention_bytes=0)
    clock.advance(24 * HOUR)
    segments = len(log.segments)
    assert log.delete_old_segments() == 0
    assert len(log.segments) == segments and log.log_start_offset == 0
    assert harness.read_all() == harness.records


def test_compact_and_delete_policy_deletes_by_time(harness, aged, clock):
    log = harness.reconfigure(cleanup_policy="compact,delete", retention_ms=HOUR)
    assert log.delete_old_segments() > 0
    _check_start(harness, log)


def test_advance_log_start_offset_then_delete_old_segments(harness, aged):
    middle = aged.segments[3]
    target = middle.base_offset + 2
    aged.advance_log_start_offset(target)
    assert aged.log_start_offset == target
    with pytest.raises(OffsetOutOfRangeError):
        aged.read(target - 1)
    assert aged.delete_old_segments() == 3
    assert aged.segments[0] is middle
    assert aged.log_start_offset == target, "the start stays inside the first kept segment"
    assert harness.read_all() == harness.expected_from(target)


def test_compact_policy_still_deletes_segments_below_the_log_start_offset(harness, aged):
    log = harness.reconfigure(cleanup_policy="compact")
    target = log.segments[2].base_offset
    log.advance_log_start_offset(target)
    assert log.delete_old_segments() == 2
    assert log.segments[0].base_offset == target


def test_advance_log_start_offset_beyond_log_end_is_out_of_range(harness, aged):
    with pytest.raises(OffsetOutOfRangeError):
        aged.advance_log_start_offset(aged.log_end_offset + 1)
    aged.advance_log_start_offset(aged.log_end_offset)
    assert aged.read(aged.log_end_offset) == b""


def test_log_start_offset_never_moves_backwards(harness, aged):
    aged.advance_log_start_offset(20)
    aged.advance_log_start_offset(10)
    assert aged.log_start_offset == 20


@pytest.mark.parametrize("shutdown", ["clean", "crash"])
def test_log_start_offset_survives_reopen(harness, aged, shutdown):
    aged.advance_log_start_offset(25)
    aged.delete_old_segments()
    harness.crash() if shutdown == "crash" else aged.close()
    log = harness.open()
    assert log.log_start_offset == 25
    assert harness.read_all() == harness.expected_from(25)


def test_retention_truncates_the_epoch_cache_from_the_start(harness, make_batches, clock):
    log = harness.open(segment_bytes=2000, retention_ms=HOUR)
    old = clock.now - 2 * HOUR
    for epoch in (1, 2, 3):
        harness.append(make_batches(random.Random(epoch), 8, start_ms=old), epoch=epoch)
    harness.append([[(b"k", b"young", clock.now)]], epoch=4)
    assert [e.epoch for e in log.epoch_cache.entries] == [1, 2, 3, 4]
    starts = [(e.epoch, e.start_offset) for e in log.epoch_cache.entries]
    log.delete_old_segments()
    start = log.log_start_offset
    # The last epoch starting at or below the new start now starts there; older epochs are gone.
    expected = [
        (e, max(s, start))
        for i, (e, s) in enumerate(starts)
        if i + 1 == len(starts) or starts[i + 1][1] > start
    ]
    assert start > starts[1][1] and len(expected) < len(starts)
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == expected
    harness.crash()
    reopened = harness.open()
    assert [(e.epoch, e.start_offset) for e in reopened.epoch_cache.entries] == expected
