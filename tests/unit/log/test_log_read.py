"""Tests for Log.read and Log.offset_for_timestamp against a brute-force model of the records."""

from __future__ import annotations

import bisect
import random

import pytest

from rafka.protocol.errors import Errors, OffsetOutOfRangeError
from rafka.protocol.records.builder import build_batch

# (index_interval_bytes, segment_bytes): a dense index over many segments, a moderate one, the
# defaults (one segment, sparse index) and an index so sparse it stays empty.
LAYOUTS = {
    "dense-index-many-segments": dict(index_interval_bytes=0, segment_bytes=4096),
    "index-every-100-bytes": dict(index_interval_bytes=100, segment_bytes=20_000),
    "defaults-one-segment": dict(),
    "no-index-entries": dict(index_interval_bytes=1 << 20, segment_bytes=10_000),
}


@pytest.fixture(params=list(LAYOUTS), ids=list(LAYOUTS))
def filled(request, harness, make_batches):
    """A log of 250 batches with non-monotonic timestamps in the given layout."""
    log = harness.open(**LAYOUTS[request.param])
    harness.append(make_batches(random.Random(7), 250, jitter_ms=500))
    return log


def _expected_batches(harness, log, offset, max_bytes, max_offset, min_one_batch):
    """The model's read(): whole batches from the one holding ``offset``, within its segment."""
    bases = [s.base_offset for s in log.segments]
    first = harness.batch_index(offset)
    segment = bisect.bisect_right(bases, harness.batches[first].base_offset) - 1
    segment_end = bases[segment + 1] if segment + 1 < len(bases) else float("inf")
    chosen, total = [], 0
    for batch in harness.batches[first:]:
        if batch.base_offset >= segment_end or (
            max_offset is not None and batch.next_offset > max_offset
        ):
            break
        if total + batch.size > max_bytes:
            break
        chosen.append(batch)
        total += batch.size
    if not chosen and min_one_batch:
        chosen = [harness.batches[first]]
    return chosen


def test_random_reads_return_whole_batches_from_the_one_holding_the_offset(
    filled, harness, decode_batches
):
    rng = random.Random(11)
    log = filled
    boundaries = [b.base_offset for b in harness.batches] + [log.log_end_offset]
    for _ in range(300):
        offset = rng.randrange(log.log_end_offset)
        max_bytes = rng.choice([1, 100, 700, 2_000, 10_000, 1 << 20])
        later = [b for b in boundaries if b > offset]
        max_offset = rng.choice(
            [None, rng.choice(later)]
        )  # a high watermark sits on a batch boundary
        min_one_batch = rng.random() < 0.7
        got = decode_batches(log.read(offset, max_bytes, max_offset, min_one_batch))
        expected = _expected_batches(harness, log, offset, max_bytes, max_offset, min_one_batch)
        assert [h.base_offset for h, _ in got] == [b.base_offset for b in expected], (
            offset,
            max_bytes,
            max_offset,
        )
        assert [r for _, records in got for r in records] == [
            r for b in expected for r in b.records
        ]
        if got:
            assert got[0][0].base_offset <= offset <= got[0][0].last_offset
            assert sum(h.size_in_bytes for h, _ in got) <= max_bytes or (
                len(got) == 1 and min_one_batch
            )
        if max_offset is not None:
            assert all(h.next_offset <= max_offset for h, _ in got)


def test_reading_forward_batch_by_batch_returns_every_record_once(filled, harness):
    assert harness.read_all(max_bytes=1) == harness.records
    assert harness.read_all(max_bytes=1 << 30) == harness.records


def test_read_at_log_end_offset_returns_no_bytes(filled):
    assert filled.read(filled.log_end_offset) == b""
    assert filled.read(filled.log_end_offset, min_one_batch=True, max_offset=None) == b""


@pytest.mark.parametrize("where", ["below-zero", "above-leo"])
def test_read_outside_the_log_is_offset_out_of_range(filled, where):
    offset = -1 if where == "below-zero" else filled.log_end_offset + 1
    with pytest.raises(OffsetOutOfRangeError) as raised:
        filled.read(offset)
    assert raised.value.error is Errors.OFFSET_OUT_OF_RANGE


def test_read_below_an_advanced_log_start_offset_is_out_of_range(
    harness, make_batches, decode_batches
):
    log = harness.open(segment_bytes=2000)
    harness.append(make_batches(random.Random(3), 40))
    log.advance_log_start_offset(30)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(29)
    first = decode_batches(log.read(30))[0][0]
    assert first.base_offset <= 30 <= first.last_offset


def test_read_with_max_offset_at_or_below_the_offset_returns_nothing(filled):
    assert filled.read(10, max_offset=10) == b""
    assert filled.read(10, max_offset=3) == b""


def test_read_with_max_offset_inside_a_batch_returns_no_batch_starting_at_or_after_it(
    harness, decode_batches
):
    log = harness.open()
    harness.append([[(b"a", b"1", 1)] * 3, [(b"b", b"2", 2)] * 3, [(b"c", b"3", 3)] * 3])
    for offset, max_offset in [(0, 4), (0, 5), (3, 7), (1, 8)]:
        for min_one_batch in (True, False):
            got = decode_batches(
                log.read(offset, max_offset=max_offset, min_one_batch=min_one_batch)
            )
            assert all(h.base_offset < max_offset for h, _ in got)


def test_read_without_min_one_batch_returns_nothing_when_first_batch_exceeds_max_bytes(harness):
    log = harness.open()
    harness.append([[(b"a", b"x" * 500, 1)], [(b"b", b"y", 2)]])
    assert log.read(0, max_bytes=100, min_one_batch=False) == b""
    assert len(log.read(0, max_bytes=100, min_one_batch=True)) == harness.batches[0].size


def test_read_without_min_one_batch_does_not_skip_to_the_next_segment(harness, decode_batches):
    log = harness.open()
    harness.append([[(b"a", b"x" * 500, 1)]])
    log.roll()
    harness.append([[(b"b", b"y", 2)]])
    # The batch holding offset 0 does not fit; the small one
    # in the next segment must not stand in for it.
    assert log.read(0, max_bytes=200, min_one_batch=False) == b""
    assert [h.base_offset for h, _ in decode_batches(log.read(0, max_bytes=200))] == [0]


def test_reads_stay_correct_after_reopen(filled, harness):
    rng = random.Random(5)
    offsets = [rng.randrange(filled.log_end_offset) for _ in range(50)]
    before = [filled.read(o, 3000) for o in offsets]
    filled.close()
    log = harness.open()
    assert [log.read(o, 3000) for o in offsets] == before
    assert harness.read_all() == harness.records


# ---------------------------------------------------------------------- timestamps


def test_offset_for_timestamp_matches_first_record_at_or_after_it(filled, harness):
    rng = random.Random(13)
    stamps = sorted({r.timestamp for r in harness.records})
    queries = [stamps[0] - 1, stamps[0], stamps[-1], stamps[-1] + 1]
    for ts in rng.sample(stamps, 150):
        queries += [ts - 1, ts, ts + 1]
    for ts in queries:
        assert filled.offset_for_timestamp(ts) == harness.offset_for_timestamp(
            ts, filled.log_start_offset
        ), ts


def test_offset_for_timestamp_is_none_above_every_timestamp(filled, harness):
    assert filled.offset_for_timestamp(max(r.timestamp for r in harness.records) + 1) is None


def test_offset_for_timestamp_finds_an_early_record_whose_timestamp_is_late(harness):
    log = harness.open(index_interval_bytes=0)
    harness.append(
        [[(b"a", b"1", 100)], [(b"b", b"2", 5000)], [(b"c", b"3", 200)], [(b"d", b"4", 300)]]
    )
    assert log.offset_for_timestamp(250) == (1, 5000)
    assert log.offset_for_timestamp(5000) == (1, 5000)
    assert log.offset_for_timestamp(150) == (1, 5000)
    assert log.offset_for_timestamp(100) == (0, 100)


def test_offset_for_timestamp_skips_records_below_the_log_start_offset(harness, make_batches):
    log = harness.open(segment_bytes=3000)
    harness.append([[(b"k", b"v", 1000)] * 3, [(b"k", b"v", 1000)] * 3])
    log.advance_log_start_offset(4)
    # Offsets 0-3 are deleted (logically); the answer is the first record at or above the start.
    assert log.offset_for_timestamp(1000) == (4, 1000)
    assert (
        log.offset_for_timestamp(0)
        == harness.offset_for_timestamp(0, log.log_start_offset)
        == (4, 1000)
    )


def test_offset_for_timestamp_after_retention_matches_the_model(harness, make_batches, clock):
    log = harness.open(segment_bytes=3000)
    harness.append(make_batches(random.Random(17), 120, jitter_ms=300))
    log.advance_log_start_offset(harness.batches[40].base_offset + 1)
    log.delete_old_segments()
    stamps = sorted({r.timestamp for r in harness.records})
    for ts in stamps[::7]:
        assert log.offset_for_timestamp(ts) == harness.offset_for_timestamp(
            ts, log.log_start_offset
        ), ts


# ---------------------------------------------------------------------- sparse indexes


@pytest.mark.parametrize("interval", [0, 256, 1024, 8192])
def test_offset_index_has_about_one_entry_per_index_interval_bytes(harness, make_batches, interval):
    log = harness.open(index_interval_bytes=interval, segment_bytes=64 * 1024)
    harness.append(make_batches(random.Random(19), 300))
    largest = max(b.size for b in harness.batches)
    for segment in log.segments:
        entries = len(segment.offset_index)
        batches = sum(1 for _ in segment.batches())
        if interval == 0:
            assert (
                entries == batches - 1
            )  # every batch but the first, which position 0 already finds
        else:
            assert segment.size // (interval + largest) - 1 <= entries <= segment.size // interval
    assert sum(len(s.offset_index) for s in log.segments) < len(harness.batches) or interval == 0


def test_index_entries_point_at_batches_and_time_index_tracks_max_timestamp(filled, harness):
    by_base = {b.base_offset: b for b in harness.batches}
    for segment in filled.segments:
        positions = {position: header.base_offset for position, header in segment.batches()}
        for offset, position in segment.offset_index.entries():
            assert positions.get(position) == offset
        keys = [ts for ts, _ in segment.time_index.entries()]
        assert keys == sorted(keys)
        for ts, offset in segment.time_index.entries():
            upto = [
                r.timestamp
                for b in harness.batches
                if segment.base_offset <= b.base_offset <= offset
                for r in b.records
            ]
            assert offset in by_base and ts == max(upto)


def test_many_small_batches_in_one_append_are_each_indexed(harness, decode_batches):
    log = harness.open(index_interval_bytes=0)
    data = b"".join(build_batch([(b"k", b"v%d" % i, i)]) for i in range(20))
    log.append_as_leader(data, leader_epoch=0)
    assert [o for o, _ in log.active_segment.offset_index.entries()] == list(range(1, 20))
    assert [h.base_offset for h, _ in decode_batches(log.read(13, max_bytes=1))] == [13]
