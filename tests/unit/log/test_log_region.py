"""Log.region: what Log.read would return, as where it lies in a segment file, for sendfile."""

from __future__ import annotations

import os
import random

from rafka.protocol.messages.fetch import FileRegion


def _bytes_at(region: FileRegion) -> bytes:
    with open(region.path, "rb") as file:
        assert os.fstat(file.fileno()).st_ino == region.inode
        return os.pread(file.fileno(), region.size, region.position)


def test_a_region_holds_exactly_the_bytes_a_read_returns(harness, make_batches, decode_batches):
    log = harness.open(segment_bytes=20_000, index_interval_bytes=100)
    for _ in range(6):
        harness.append(make_batches(random.Random(5), 20), kafka=True)
    boundaries = [b.base_offset for b in harness.batches] + [log.log_end_offset]
    rng = random.Random(13)
    compared = 0
    for _ in range(300):
        offset = rng.randrange(log.log_end_offset)
        max_bytes = rng.choice([1, 100, 700, 2_000, 10_000, 1 << 20])
        later = [b for b in boundaries if b > offset]
        max_offset = rng.choice([None, rng.choice(later)])
        min_one_batch = rng.random() < 0.7
        read = log.read(offset, max_bytes, max_offset, min_one_batch)
        found = log.region(offset, max_bytes, max_offset, min_one_batch)
        if not read:
            assert found is None
            continue
        # A read that ends at a segment's end may continue in the next one only through a gap,
        # which this log has none of: the region is the read, in one file.
        assert found is not None, (offset, max_bytes, max_offset, min_one_batch)
        region, next_offset = found
        assert _bytes_at(region) == read
        assert next_offset == decode_batches(read)[-1][0].next_offset
        compared += 1
    assert compared > 100


def test_the_offset_after_a_region_is_the_one_after_its_last_batch(harness, make_batches):
    log = harness.open()
    harness.append(make_batches(random.Random(2), 10), kafka=True)
    region, next_offset = log.region(0, 1 << 20)
    assert next_offset == log.log_end_offset
    assert region.size == os.path.getsize(region.path)


def test_batches_in_rafkas_columnar_layout_are_read_not_sent_as_a_region(harness, make_batches):
    log = harness.open()
    harness.append(make_batches(random.Random(4), 3), kafka=True)
    harness.append(make_batches(random.Random(4), 3))
    assert log.region(0, 1 << 20) is None
    kafka_only = log.region(0, 1 << 20, max_offset=harness.batches[3].base_offset)
    assert kafka_only is not None and kafka_only[1] == harness.batches[3].base_offset


def test_no_region_at_the_log_end_outside_the_log_or_at_the_high_watermark(harness, make_batches):
    log = harness.open()
    harness.append(make_batches(random.Random(6), 5), kafka=True)
    assert log.region(log.log_end_offset) is None
    assert log.region(log.log_end_offset + 3) is None
    assert log.region(-1) is None
    assert log.region(2, max_offset=2) is None
