"""Tests for segment rolling (size, time, full index, explicit) and the on-disk segment layout."""

from __future__ import annotations

import itertools
import random
import re

from rafka.log.files import CLEAN_SHUTDOWN_FILE
from rafka.protocol.records.builder import build_batch


def _assert_segments_chain(log) -> None:
    """Each segment starts where the previous one ends and the last one ends at the LEO."""
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(set(bases))
    for earlier, later in itertools.pairwise(log.segments):
        assert earlier.next_offset == later.base_offset
    assert log.active_segment.next_offset == log.log_end_offset


def test_rolls_before_a_batch_would_push_the_segment_over_segment_bytes(harness, make_batches):
    log = harness.open(segment_bytes=3000)
    harness.append(make_batches(random.Random(1), 80))
    assert len(log.segments) > 5
    assert all(s.size <= 3000 for s in log.segments)
    # Every rolled segment was full: the batch that opened the next one did not fit.
    for segment, following in itertools.pairwise(log.segments):
        first_size = next(h.size_in_bytes for _, h in following.batches())
        assert segment.size + first_size > 3000
    _assert_segments_chain(log)
    assert harness.read_all() == harness.records


def test_batch_exactly_filling_segment_bytes_stays_in_the_segment(harness):
    size = len(build_batch([(b"a", b"1", 1)]))
    log = harness.open(segment_bytes=2 * size)
    harness.append([[(b"a", b"1", 1)], [(b"b", b"2", 1)]])
    assert len(log.segments) == 1 and log.active_segment.size == 2 * size
    harness.append([[(b"c", b"3", 1)]])
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_rolls_on_segment_ms_measured_by_record_timestamps(harness):
    log = harness.open(segment_ms=1000)
    harness.append([[(b"a", b"1", 5000)], [(b"b", b"2", 5600)], [(b"c", b"3", 6000)]])
    assert len(log.segments) == 1, "exactly segment_ms apart does not roll"
    harness.append([[(b"d", b"4", 6001)]])
    assert [s.base_offset for s in log.segments] == [0, 3]
    harness.append([[(b"e", b"5", 7001)]])
    assert [s.base_offset for s in log.segments] == [0, 3]
    harness.append([[(b"f", b"6", 7002)]])
    assert [s.base_offset for s in log.segments] == [0, 3, 5]


def test_segment_ms_ignores_the_wall_clock(harness, clock):
    log = harness.open(segment_ms=1000)
    harness.append([[(b"a", b"1", 5000)]])
    clock.advance(10 * 24 * 3600 * 1000)
    harness.append([[(b"b", b"2", 5001)]])
    assert len(log.segments) == 1


def test_segment_ms_roll_survives_reopen(harness):
    log = harness.open(segment_ms=1000)
    harness.append([[(b"a", b"1", 5000)], [(b"b", b"2", 5500)]])
    log.close()
    log = harness.open()
    harness.append([[(b"c", b"3", 6001)]])
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_rolls_when_an_index_is_full(harness):
    # 48 bytes: the offset index holds 6 entries (8 bytes each), the time index 4 (12 bytes each).
    log = harness.open(segment_index_bytes=48, index_interval_bytes=0)
    harness.append([[(b"k", b"v%d" % i, 1000 + i)] for i in range(40)])
    assert len(log.segments) > 3
    for segment in log.segments:
        assert len(segment.offset_index) <= segment.offset_index.max_entries == 6
        assert len(segment.time_index) <= segment.time_index.max_entries == 4
    for segment in log.segments[:-1]:
        assert segment.is_full_index
    _assert_segments_chain(log)
    assert harness.read_all() == harness.records


def test_explicit_roll_starts_a_segment_at_the_log_end_offset_and_flushes(harness):
    log = harness.open()
    harness.append([[(b"a", b"1", 1)] * 3])
    assert log.recovery_point == 0
    rolled = log.roll()
    assert rolled.base_offset == 3 and log.active_segment is rolled
    assert log.recovery_point == 3
    assert log.roll() is rolled, "rolling an empty active segment is a no-op"
    assert len(log.segments) == 2
    harness.append([[(b"b", b"2", 2)]])
    assert [s.base_offset for s in log.segments] == [0, 3]
    assert harness.read_all() == harness.records


def test_rolled_segment_has_its_indexes_on_disk(harness, make_batches):
    log = harness.open(segment_bytes=3000, index_interval_bytes=200)
    harness.append(make_batches(random.Random(2), 30))
    for segment in log.segments[:-1]:
        _, index, timeindex = harness.paths(segment.base_offset)
        assert index.stat().st_size == 8 * len(segment.offset_index)
        assert timeindex.stat().st_size == 12 * len(segment.time_index)


def test_segment_files_are_named_by_twenty_digit_base_offset(harness, make_batches):
    log = harness.open(segment_bytes=2500)
    harness.append(make_batches(random.Random(3), 40))
    bases = [s.base_offset for s in log.segments]
    log.close()
    names = sorted(p.name for p in harness.directory.iterdir() if re.match(r"^\d", p.name))
    expected = sorted(
        f"{base:020d}{suffix}" for base in bases for suffix in (".log", ".index", ".timeindex")
    )
    assert names == expected
    assert all(len(name.split(".")[0]) == 20 for name in names)


def test_reopen_after_close_keeps_segments_records_and_indexes(harness, make_batches):
    log = harness.open(segment_bytes=3000, index_interval_bytes=150)
    harness.append(make_batches(random.Random(4), 60, jitter_ms=200), epoch=2)
    shape = [
        (
            s.base_offset,
            s.next_offset,
            s.size,
            s.max_timestamp,
            s.offset_index.entries(),
            s.time_index.entries(),
        )
        for s in log.segments
    ]
    leo, epochs = log.log_end_offset, log.epoch_cache.entries
    log.close()
    assert (harness.directory / CLEAN_SHUTDOWN_FILE).exists()
    log = harness.open()
    assert [
        (
            s.base_offset,
            s.next_offset,
            s.size,
            s.max_timestamp,
            s.offset_index.entries(),
            s.time_index.entries(),
        )
        for s in log.segments
    ] == shape
    assert (log.log_end_offset, log.epoch_cache.entries, log.recovered_bytes_cut) == (
        leo,
        epochs,
        0,
    )
    assert not (harness.directory / CLEAN_SHUTDOWN_FILE).exists(), "the marker is consumed on open"
    assert harness.read_all() == harness.records
    harness.append([[(b"x", b"after-reopen", 99)]], epoch=3)
    assert harness.batches[-1].base_offset == leo
    assert harness.read_all() == harness.records


def test_reopened_active_segment_keeps_rolling_by_size(harness, make_batches):
    log = harness.open(segment_bytes=3000)
    harness.append(make_batches(random.Random(5), 20))
    log.close()
    log = harness.open()
    harness.append(make_batches(random.Random(6), 20))
    assert all(s.size <= 3000 for s in log.segments)
    _assert_segments_chain(log)
    assert harness.read_all() == harness.records
