"""Tests for log compaction: latest record per key, tombstones, dirty ratio, crash-safe swaps."""

from __future__ import annotations

import random

import pytest

from rafka.log.cleaner import (
    CLEANER_CHECKPOINT_FILE,
    compact,
    dirty_ratio,
    maybe_compact,
)
from rafka.log.files import CLEAN_SHUTDOWN_FILE

HOUR = 3600 * 1000
KEYS = [b"key-%d" % i for i in range(12)]


def _keyed_batches(rng: random.Random, count: int, now: int, tombstone_share: float = 0.1):
    """Batches of 1-4 records over a few keys, some of them tombstones, timestamped ``now``."""
    return [
        [
            (
                rng.choice(KEYS),
                None if rng.random() < tombstone_share else rng.randbytes(rng.randint(1, 120)),
                now,
            )
            for _ in range(rng.randint(1, 4))
        ]
        for _ in range(count)
    ]


@pytest.fixture
def compacted_log(harness, clock):
    """A compacted log of many segments (the last one active), filled with keyed records."""
    log = harness.open(cleanup_policy="compact", segment_bytes=2500, delete_retention_ms=HOUR)
    harness.append(_keyed_batches(random.Random(1), 120, clock.now))
    assert len(log.segments) > 5
    return log


def _view(records) -> dict:
    """The key -> value table a consumer builds by reading ``records`` in order."""
    table: dict[bytes | None, bytes] = {}
    for record in records:
        if record.value is None:
            table.pop(record.key, None)
        else:
            table[record.key] = record.value
    return table


def _expected_after_compaction(records, log, horizon: int, first_dirty: int = 0):
    """The model of one pass over ``records``: inactive records that are latest for their key among
    the dirty ones (and not expired tombstones), then the active segment's records unchanged."""
    active_base = log.active_segment.base_offset
    inactive = [r for r in records if r.offset < active_base]
    latest = {r.key: r.offset for r in inactive if r.offset >= first_dirty}
    kept = [
        r
        for r in inactive
        if latest.get(r.key, r.offset) == r.offset
        and not (r.value is None and r.timestamp <= horizon)
    ]
    return kept + [r for r in records if r.offset >= active_base]


def test_compaction_keeps_the_latest_record_per_key_with_offsets_unchanged(
    harness, compacted_log, clock
):
    expected = _expected_after_compaction(harness.records, compacted_log, clock.now - HOUR)
    result = compact(compacted_log)
    got = harness.read_all()
    assert got == expected
    assert result.records_removed == len(harness.records) - len(expected) > 0
    assert result.segments_rewritten > 0 and result.bytes_after < result.bytes_before
    assert _view(got) == _view(harness.records)


def test_compaction_of_kafka_and_columnar_batches_keeps_the_latest_record_per_key(harness, clock):
    log = harness.open(cleanup_policy="compact", segment_bytes=2500, delete_retention_ms=HOUR)
    rng = random.Random(2)
    for records in _keyed_batches(rng, 120, clock.now):
        harness.append([records], kafka=rng.random() < 0.5)
    expected = _expected_after_compaction(harness.records, log, clock.now - HOUR)
    assert compact(log).records_removed > 0
    assert harness.read_all() == expected


def test_compaction_leaves_the_active_segment_untouched(harness, compacted_log):
    log_path, index_path, _ = harness.paths(compacted_log.active_segment.base_offset)
    before = log_path.read_bytes()
    active = compacted_log.active_segment
    compact(compacted_log)
    assert compacted_log.active_segment is active
    assert log_path.read_bytes() == before
    assert not index_path.exists() or index_path.stat().st_size == 8 * len(active.offset_index)


def test_compaction_keeps_log_end_offset_and_segment_bases(harness, compacted_log):
    shape = ([s.base_offset for s in compacted_log.segments], compacted_log.log_end_offset)
    compact(compacted_log)
    assert ([s.base_offset for s in compacted_log.segments], compacted_log.log_end_offset) == shape
    harness.append([[(b"key-0", b"after", 1)]])
    assert harness.batches[-1].base_offset == shape[1]


def test_segment_whose_records_are_all_superseded_is_emptied_and_reads_skip_it(
    harness, clock, decode_batches
):
    log = harness.open(cleanup_policy="compact")
    harness.append([[(b"a", b"old", 1), (b"b", b"old", 1)]])
    log.roll()
    harness.append([[(b"a", b"new", 2)], [(b"b", b"new", 2)]])
    log.roll()
    harness.append([[(b"c", b"active", 3)]])
    compact(log)
    assert log.segments[0].size == 0
    assert [h.base_offset for h, _ in decode_batches(log.read(0))] == [2, 3]
    assert [r.offset for r in harness.read_all()] == [2, 3, 4]
    log.close()
    log = harness.open()
    assert [r.offset for r in harness.read_all()] == [2, 3, 4] and log.log_end_offset == 5


def test_tombstones_are_kept_before_delete_retention_ms_and_dropped_after(harness, clock):
    log = harness.open(cleanup_policy="compact", delete_retention_ms=HOUR)
    harness.append([[(b"a", b"1", clock.now), (b"b", b"2", clock.now)], [(b"a", None, clock.now)]])
    log.roll()
    harness.append([[(b"c", b"3", clock.now)]])
    first = compact(log)
    assert first.tombstones_removed == 0
    assert [(r.key, r.value) for r in harness.read_all()] == [
        (b"b", b"2"),
        (b"a", None),
        (b"c", b"3"),
    ]
    clock.advance(HOUR - 1)
    assert compact(log).tombstones_removed == 0
    clock.advance(1)
    second = compact(log)
    assert second.tombstones_removed == 1
    assert [(r.key, r.value) for r in harness.read_all()] == [(b"b", b"2"), (b"c", b"3")]


def test_tombstone_in_the_active_segment_is_never_dropped(harness, clock):
    log = harness.open(cleanup_policy="compact", delete_retention_ms=0)
    harness.append([[(b"a", b"1", 0)]])
    log.roll()
    harness.append([[(b"a", None, 0)]])
    clock.advance(10 * HOUR)
    compact(log)
    assert [(r.offset, r.value) for r in harness.read_all()] == [(0, b"1"), (1, None)]


def test_second_compaction_removes_clean_records_superseded_by_dirty_ones(
    harness, compacted_log, clock
):
    compact(compacted_log)
    checkpoint = compacted_log.active_segment.base_offset
    state, leo = harness.read_all(), compacted_log.log_end_offset
    harness.append([[(key, b"fresh-" + key, clock.now)] for key in KEYS[:6]])
    compacted_log.roll()
    harness.append([[(b"key-0", b"active", clock.now)]])
    state += harness.expected_from(leo)
    compact(compacted_log)
    got = harness.read_all()
    assert got == _expected_after_compaction(
        state, compacted_log, clock.now - HOUR, first_dirty=checkpoint
    )
    assert _view(got) == _view(harness.records)
    for key in KEYS[:6]:
        assert [
            r.value
            for r in got
            if r.key == key and r.offset < compacted_log.active_segment.base_offset
        ] == [b"fresh-" + key]


def test_dirty_ratio_and_maybe_compact_threshold(harness, compacted_log, clock):
    assert dirty_ratio(compacted_log) == 1.0
    assert maybe_compact(compacted_log) is not None
    assert dirty_ratio(compacted_log) == 0.0
    assert maybe_compact(compacted_log) is None
    checkpoint = int((harness.directory / CLEANER_CHECKPOINT_FILE).read_text().split()[2])
    assert checkpoint == compacted_log.active_segment.base_offset
    harness.append(_keyed_batches(random.Random(2), 30, clock.now))
    inactive = compacted_log.segments[:-1]
    dirty = sum(s.size for s in inactive if s.base_offset >= checkpoint)
    ratio = dirty_ratio(compacted_log)
    assert ratio == dirty / sum(s.size for s in inactive) and 0 < ratio < 1
    harness.reconfigure(min_cleanable_dirty_ratio=ratio + 0.01)
    assert maybe_compact(compacted_log) is None
    harness.reconfigure(min_cleanable_dirty_ratio=ratio)
    assert maybe_compact(compacted_log) is not None
    assert dirty_ratio(compacted_log) == 0.0


def test_maybe_compact_ignores_delete_policy_and_single_segment_logs(harness, clock):
    log = harness.open(cleanup_policy="delete", segment_bytes=2500)
    harness.append(_keyed_batches(random.Random(3), 60, clock.now))
    assert len(log.segments) > 1 and maybe_compact(log) is None
    harness.reconfigure(cleanup_policy="compact", segment_bytes=1 << 30)
    log.truncate_fully_and_start_at(0)
    harness.append(_keyed_batches(random.Random(3), 5, clock.now))
    assert len(log.segments) == 1 and dirty_ratio(log) == 0.0 and maybe_compact(log) is None


@pytest.mark.parametrize("shutdown", ["clean", "crash"])
def test_compacted_log_reopens_with_the_same_records(harness, compacted_log, shutdown):
    compact(compacted_log)
    expected = harness.read_all()
    harness.crash() if shutdown == "crash" else compacted_log.close()
    log = harness.open()
    assert harness.read_all() == expected
    assert log.recovered_bytes_cut == 0


# -------------------------------------------------------------------- crash in the middle of a swap


@pytest.fixture
def swap_scene(harness, compacted_log):
    """Files before compaction, one segment's rewritten bytes and its base offset; log closed."""
    compacted_log.close()
    before = harness.snapshot()
    log = harness.open()
    compact(log)
    log.close()
    after = harness.snapshot()
    base = next(
        s.base_offset
        for s in log.segments
        if before[f"{s.base_offset:020d}.log"] != after[f"{s.base_offset:020d}.log"]
    )
    before.pop(CLEAN_SHUTDOWN_FILE)  # a crash during compaction leaves no clean-shutdown marker
    return before, after[f"{base:020d}.log"], base


def _records_of_files(files, decode_batches):
    return [
        r
        for name in sorted(n for n in files if n.endswith(".log"))
        for _, records in decode_batches(files[name])
        for r in records
    ]


@pytest.mark.parametrize(
    "old_segment_left", [True, False], ids=["before-old-deleted", "after-old-deleted"]
)
def test_interrupted_swap_is_completed_on_open(
    harness, swap_scene, decode_batches, old_segment_left
):
    before, rewritten, base = swap_scene
    name = f"{base:020d}.log"
    files = dict(before)
    if not old_segment_left:
        for suffix in (".log", ".index", ".timeindex"):
            files.pop(f"{base:020d}{suffix}", None)
    files[name + ".swap"] = rewritten
    harness.restore(files)
    harness.open()
    assert not list(harness.directory.glob("*.swap"))
    assert (harness.directory / name).read_bytes() == rewritten
    assert harness.read_all() == _records_of_files({**before, name: rewritten}, decode_batches)


def test_leftover_cleaned_file_is_discarded_on_open(harness, swap_scene, decode_batches):
    before, rewritten, base = swap_scene
    harness.restore(
        {
            **before,
            f"{base:020d}.log.cleaned": rewritten,
            "recovery-point-offset-checkpoint.tmp": b"0\n",
        }
    )
    harness.open()
    assert not list(harness.directory.glob("*.cleaned")) and not list(
        harness.directory.glob("*.tmp")
    )
    assert harness.read_all() == _records_of_files(before, decode_batches) == harness.records
