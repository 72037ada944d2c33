"""Tests for Log.truncate_to and truncate_fully_and_start_at: LEO, reads, appends, epochs after."""

from __future__ import annotations

import random

import pytest

from rafka.protocol.errors import OffsetOutOfRangeError


@pytest.fixture
def multi(harness, make_batches):
    """A log of 60 batches over several segments, written under epochs 1..4 (15 batches each)."""
    log = harness.open(segment_bytes=3000, index_interval_bytes=200)
    batches = make_batches(random.Random(1), 60, jitter_ms=100)
    for epoch in range(1, 5):
        harness.append(batches[(epoch - 1) * 15 : epoch * 15], epoch=epoch)
    assert len(log.segments) > 4
    return log


def _check_after_truncation(harness, log, leo: int) -> None:
    assert log.log_end_offset == leo
    assert harness.read_all() == harness.records
    assert log.read(leo) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(leo + 1)
    assert log.recovery_point <= leo
    for segment in log.segments:
        assert all(position < segment.size for _, position in segment.offset_index.entries())
        assert all(offset < segment.next_offset for _, offset in segment.time_index.entries())


@pytest.mark.parametrize("seed", range(8))
def test_truncate_to_a_batch_boundary_then_append_continues_there(harness, multi, seed):
    rng = random.Random(seed)
    target = rng.choice(harness.batches[1:]).base_offset
    removed_bytes = sum(b.size for b in harness.batches if b.base_offset >= target)
    assert multi.truncate_to(target) == removed_bytes
    harness.forget_from(target)
    _check_after_truncation(harness, multi, target)
    assert all(s.base_offset < target for s in multi.segments)
    assert len(harness.segment_files()) == len(multi.segments)
    infos = harness.append(
        [[(b"new", b"after-truncation", 5)], [(b"new", b"again", 6)] * 2], epoch=9
    )
    assert [i.first_offset for i in infos] == [target, target + 1]
    _check_after_truncation(harness, multi, target + 3)


def test_truncate_inside_a_batch_removes_the_whole_batch(harness, multi):
    batch = next(b for b in harness.batches[5:] if b.last_offset > b.base_offset)
    multi.truncate_to(batch.base_offset + 1)
    harness.forget_from(batch.base_offset + 1)
    _check_after_truncation(harness, multi, batch.base_offset)


def test_truncate_to_a_segment_base_offset_deletes_that_segment_and_later_ones(harness, multi):
    bases = [s.base_offset for s in multi.segments]
    third = bases[2]
    multi.truncate_to(third)
    harness.forget_from(third)
    assert [s.base_offset for s in multi.segments] == bases[:2]
    assert not any(harness.paths(base)[0].exists() for base in bases[2:])
    _check_after_truncation(harness, multi, third)
    harness.append([[(b"k", b"v", 1)]])
    assert multi.segments[-1].base_offset < third and harness.batches[-1].base_offset == third


def test_truncate_at_or_above_log_end_offset_does_nothing(harness, multi):
    leo = multi.log_end_offset
    assert multi.truncate_to(leo) == 0
    assert multi.truncate_to(leo + 100) == 0
    _check_after_truncation(harness, multi, leo)


def test_truncate_below_log_start_offset_truncates_fully_and_starts_there(harness, multi):
    multi.advance_log_start_offset(50)
    multi.delete_old_segments()
    multi.truncate_to(40)
    harness.batches = []
    assert (multi.log_start_offset, multi.log_end_offset, multi.recovery_point) == (40, 40, 40)
    assert [s.base_offset for s in multi.segments] == [40]
    assert harness.segment_files() == [f"{40:020d}.log"]
    assert multi.epoch_cache.entries == []
    with pytest.raises(OffsetOutOfRangeError):
        multi.read(39)
    harness.append([[(b"k", b"v", 1)] * 2], epoch=7)
    assert harness.batches[-1].base_offset == 40
    assert harness.read_all() == harness.records


def test_truncate_fully_and_start_at_a_later_offset(harness, multi):
    size = multi.size_in_bytes
    assert multi.truncate_fully_and_start_at(10_000) == size
    harness.batches = []
    assert (multi.log_start_offset, multi.log_end_offset, multi.size_in_bytes) == (
        10_000,
        10_000,
        0,
    )
    assert multi.epoch_cache.entries == []
    harness.append([[(b"k", b"v", 1)]], epoch=5)
    multi.close()
    log = harness.open()
    assert (log.log_start_offset, log.log_end_offset) == (10_000, 10_001)
    assert harness.read_all() == harness.records
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(5, 10_000)]


def test_truncation_truncates_the_epoch_cache_from_the_end(harness, multi):
    starts = {e.epoch: e.start_offset for e in multi.epoch_cache.entries}
    assert list(starts) == [1, 2, 3, 4]
    multi.truncate_to(starts[3] + 1)  # inside epoch 3's first batch, so epoch 3 goes too
    harness.forget_from(starts[3] + 1)
    assert [(e.epoch, e.start_offset) for e in multi.epoch_cache.entries] == [
        (1, starts[1]),
        (2, starts[2]),
    ]
    assert multi.end_offset_for_epoch(2) == (2, starts[3])
    assert multi.end_offset_for_epoch(4) == (2, starts[3])
    harness.append([[(b"k", b"v", 1)]], epoch=5)
    assert [e.epoch for e in multi.epoch_cache.entries] == [1, 2, 5]
    assert multi.end_offset_for_epoch(2) == (2, starts[3])


@pytest.mark.parametrize("shutdown", ["clean", "crash"])
def test_truncated_log_reopens_truncated(harness, multi, shutdown):
    target = harness.batches[33].base_offset
    multi.truncate_to(target)
    harness.forget_from(target)
    epochs = multi.epoch_cache.entries
    multi.checkpoint()
    harness.crash() if shutdown == "crash" else multi.close()
    log = harness.open()
    assert log.recovered_bytes_cut == 0
    assert log.epoch_cache.entries == epochs
    _check_after_truncation(harness, log, target)


def test_truncation_then_reopen_after_crash_without_checkpoint(harness, multi):
    multi.checkpoint()  # recovery point on disk is above where the log is about to be cut
    target = harness.batches[20].base_offset
    multi.truncate_to(target)
    harness.forget_from(target)
    harness.crash()
    log = harness.open()
    _check_after_truncation(harness, log, target)
