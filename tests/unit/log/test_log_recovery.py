"""Crash tests: torn tails, flipped bytes, damaged indexes are cut or rebuilt; flushes survive."""

from __future__ import annotations

import random
import struct

import pytest

from rafka.log import segment as segment_module
from rafka.log.checkpoint import RECOVERY_POINT_FILE, OffsetCheckpoint
from rafka.log.segment import LogSegment
from rafka.protocol.errors import OffsetOutOfRangeError
from rafka.protocol.records.batch import LEADER_EPOCH_OFFSET

# The base offset and leader epoch lie outside the CRC (the leader stamps
# them in place, as in Kafka), so a flip there cannot be detected; the
# flip tests damage the rest of each batch, which the CRC covers.
UNPROTECTED_PREFIX = LEADER_EPOCH_OFFSET + 4
CRASH_ROUNDS = 30


@pytest.fixture(params=["never-checkpointed", "stale-checkpoint"])
def crashed(request, harness, make_batches, scan_segment_files):
    """A log of segments with batches of many sizes, crashed (no flush, no clean-shutdown marker).

    "never-checkpointed" leaves the recovery point at 0, so every segment is verified on open; with
    "stale-checkpoint" the recovery point on disk is from halfway, so only later segments are.
    Returns the files to restore before each crash round and every batch found in them.
    """
    log = harness.open(segment_bytes=5000, index_interval_bytes=300)
    rng = random.Random(1)
    batches = make_batches(rng, 30, max_records=2, max_value=40) + make_batches(
        rng, 30, max_records=8, max_value=600, jitter_ms=50
    )
    rng.shuffle(batches)
    harness.append(batches[:30], epoch=1)
    if request.param == "stale-checkpoint":
        log.checkpoint()
    harness.append(batches[30:], epoch=2)
    assert len(log.segments) > 4
    harness.crash()
    files = harness.snapshot()
    return files, scan_segment_files(harness.directory)


@pytest.fixture(params=["default-chunks", "tiny-chunks"])
def read_chunks(request, monkeypatch):
    """With "tiny-chunks", recovery and header scans read a few hundred bytes at a time, so batches
    straddle chunk boundaries and many are larger than a whole chunk."""
    if request.param == "tiny-chunks":
        monkeypatch.setattr(segment_module, "RECOVERY_CHUNK", 700)
        monkeypatch.setattr(segment_module, "SCAN_CHUNK", 300)


def _expect_kept_until(harness, full_model, leo: int) -> None:
    """Reset the model to the batches below ``leo`` (what recovery must keep)."""
    harness.batches = [b for b in full_model if b.next_offset <= leo]
    assert not harness.batches or harness.batches[-1].next_offset == leo


def _check_recovered(harness, log, leo: int) -> None:
    """Everything kept reads back CRC-clean and equal to the model; appends continue at the LEO."""
    assert log.log_end_offset == leo
    assert harness.read_all() == harness.records
    assert log.read(leo) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(leo + 1)
    infos = harness.append([[(b"after", b"crash", 1)], [(b"after", b"again", 2)] * 3], epoch=9)
    assert [i.first_offset for i in infos] == [leo, leo + 1]
    assert harness.read_all() == harness.records
    assert log.end_offset_for_epoch(9) == (9, leo + 4)


# ---------------------------------------------------------------------- (a) torn tail


def test_cut_last_segment_keeps_every_whole_batch_before_the_cut(harness, crashed, read_chunks):
    files, on_disk = crashed
    full_model = list(harness.batches)
    last_base = on_disk[-1].segment_base
    last_name = f"{last_base:020d}.log"
    last = [b for b in on_disk if b.segment_base == last_base]
    size = len(files[last_name])
    rng = random.Random(2)
    ends = [b.position + b.header.size_in_bytes for b in last]
    cuts = sorted({*rng.sample(range(size), CRASH_ROUNDS - 4), 0, ends[0], ends[-2], ends[-2] + 1})
    for cut in cuts:
        harness.restore({**files, last_name: files[last_name][:cut]})
        log = harness.open()
        whole = [b for b in last if b.position + b.header.size_in_bytes <= cut]
        leo = whole[-1].header.next_offset if whole else last_base
        kept_bytes = whole[-1].position + whole[-1].header.size_in_bytes if whole else 0
        assert log.recovered_bytes_cut == cut - kept_bytes, cut
        assert (harness.directory / last_name).stat().st_size == kept_bytes
        _expect_kept_until(harness, full_model, leo)
        _check_recovered(harness, log, leo)
        harness.crash()


def test_zero_filled_tail_after_a_crash_is_cut(harness, crashed):
    files, on_disk = crashed
    last_name = f"{on_disk[-1].segment_base:020d}.log"
    harness.restore({**files, last_name: files[last_name] + bytes(4096)})
    log = harness.open()
    assert log.recovered_bytes_cut == 4096
    _check_recovered(harness, log, on_disk[-1].header.next_offset)


# ---------------------------------------------------------------------- (b) flipped bytes


def test_flipped_bytes_cut_the_log_at_the_first_damaged_batch(harness, crashed, read_chunks):
    files, on_disk = crashed
    full_model = list(harness.batches)
    recovery_point = OffsetCheckpoint(harness.directory / RECOVERY_POINT_FILE).read()
    bases = sorted({b.segment_base for b in on_disk})
    # Only segments from the one holding the recovery point are verified; earlier ones were fsynced.
    checked = [
        base for i, base in enumerate(bases) if i + 1 == len(bases) or bases[i + 1] > recovery_point
    ]
    assert (recovery_point == 0) == (checked == bases)
    eligible = [b for b in on_disk if b.segment_base in checked]
    rng = random.Random(3)
    for _ in range(CRASH_ROUNDS):
        damaged = dict(files)
        victims = rng.sample(eligible, rng.randint(1, 3))
        for victim in victims:
            name = f"{victim.segment_base:020d}.log"
            data = bytearray(damaged[name])
            where = victim.position + rng.randrange(UNPROTECTED_PREFIX, victim.header.size_in_bytes)
            data[where] ^= rng.randint(1, 255)
            damaged[name] = bytes(data)
        first = min(victims, key=lambda b: b.header.base_offset)
        harness.restore(damaged)
        log = harness.open()
        leo = first.header.base_offset
        assert log.recovered_bytes_cut == sum(
            b.header.size_in_bytes for b in on_disk if b.header.base_offset >= leo
        )
        assert harness.segment_files() == [
            f"{base:020d}.log" for base in bases if base <= first.segment_base
        ]
        _expect_kept_until(harness, full_model, leo)
        _check_recovered(harness, log, leo)
        harness.crash()


def test_batch_with_an_offset_below_its_predecessor_is_cut(harness, crashed):
    files, on_disk = crashed
    victim = on_disk[-1]
    name = f"{victim.segment_base:020d}.log"
    data = bytearray(files[name])
    struct.pack_into(">q", data, victim.position, victim.header.base_offset - 1)
    harness.restore({**files, name: bytes(data)})
    log = harness.open()
    _expect_kept_until(harness, list(harness.batches), victim.header.base_offset)
    _check_recovered(harness, log, victim.header.base_offset)


# ---------------------------------------------------------------------- (c) damaged indexes


def _damage_indexes(harness, kind: str, rng: random.Random) -> None:
    for path in list(harness.directory.glob("*.index")) + list(
        harness.directory.glob("*.timeindex")
    ):
        is_time = path.suffix == ".timeindex"
        if kind == "deleted-both" or kind == ("deleted-timeindex" if is_time else "deleted-index"):
            path.unlink()
        elif kind == "partial-entry":
            path.write_bytes(path.read_bytes() + b"\x00\x01\x02")
        elif kind == "garbage":
            path.write_bytes(rng.randbytes(max(path.stat().st_size, 24)))
        elif kind == "unsorted" and path.stat().st_size >= 24:
            data = path.read_bytes()
            width = 12 if is_time else 8
            path.write_bytes(data[width : 2 * width] + data[:width] + data[2 * width :])
        elif kind == "last-position-flipped" and not is_time and path.stat().st_size:
            # The open scans the tail from the last entry's position: a low bit
            # makes it point inside a batch, the top bit makes it negative.
            data = bytearray(path.read_bytes())
            data[-4 if rng.random() < 0.3 else -1] ^= (
                0x80 if rng.random() < 0.3 else 1 << rng.randrange(8)
            )
            path.write_bytes(bytes(data))
        elif kind == "pointing-past-the-end" and not is_time:
            path.write_bytes(path.read_bytes() + struct.pack(">ii", 1 << 30, 1 << 30))


INDEX_DAMAGE = [
    "deleted-index",
    "deleted-timeindex",
    "deleted-both",
    "partial-entry",
    "garbage",
    "unsorted",
    "last-position-flipped",
    "pointing-past-the-end",
]


@pytest.mark.parametrize("shutdown", ["clean", "crash"])
@pytest.mark.parametrize("kind", INDEX_DAMAGE)
def test_damaged_indexes_are_rebuilt_and_reads_stay_correct(
    harness, make_batches, decode_batches, kind, shutdown
):
    log = harness.open(segment_bytes=5000, index_interval_bytes=200)
    harness.append(make_batches(random.Random(4), 60, jitter_ms=400))
    harness.crash() if shutdown == "crash" else log.close()
    _damage_indexes(harness, kind, random.Random(5))
    log = harness.open()
    assert log.recovered_bytes_cut == 0
    assert harness.read_all() == harness.records
    rng = random.Random(6)
    for offset in rng.sample(range(log.log_end_offset), 40):
        _header, records = decode_batches(log.read(offset, max_bytes=1))[0]
        assert list(records) == list(harness.batches[harness.batch_index(offset)].records)
    for ts in rng.sample(sorted({r.timestamp for r in harness.records}), 40):
        assert log.offset_for_timestamp(ts) == harness.offset_for_timestamp(ts), ts
    for segment in log.segments:
        positions = {position for position, _ in segment.batches()}
        assert all(position in positions for _, position in segment.offset_index.entries())


# ---------------------------------------------------------------------- (d) flushed data survives


@pytest.mark.parametrize("checkpointed", [False, True], ids=["flush-only", "flush-and-checkpoint"])
def test_flushed_data_survives_losing_everything_written_after_the_flush(
    harness, make_batches, checkpointed
):
    log = harness.open(segment_bytes=1 << 20)
    rng = random.Random(7)
    harness.append(make_batches(rng, 25))
    log.flush()
    if checkpointed:
        log.checkpoint()
    flushed_leo, flushed_size = log.log_end_offset, log.active_segment.size
    assert log.recovery_point == flushed_leo
    harness.append(make_batches(rng, 15))
    assert len(log.segments) == 1
    harness.crash()
    files = harness.snapshot()
    full_model = list(harness.batches)
    name = f"{0:020d}.log"
    for cut in [flushed_size, *sorted(rng.sample(range(flushed_size + 1, len(files[name])), 9))]:
        # The OS lost some of the page cache after the flush point: the file ends anywhere after it.
        harness.restore({**files, name: files[name][:cut]})
        log = harness.open()
        assert log.log_end_offset >= flushed_leo
        harness.batches = [b for b in full_model if b.next_offset <= log.log_end_offset]
        assert harness.records[:flushed_leo] == [
            r for b in full_model if b.next_offset <= flushed_leo for r in b.records
        ]
        assert harness.read_all() == harness.records
        harness.crash()


def test_segments_rolled_before_a_crash_are_durable(harness, make_batches):
    log = harness.open(segment_bytes=3000)
    harness.append(make_batches(random.Random(8), 40))
    rolled_end = log.active_segment.base_offset
    assert log.recovery_point == rolled_end > 0, "rolling flushes the segment it closes"
    log.checkpoint()
    harness.crash()
    active = harness.paths(rolled_end)[0]
    active.write_bytes(b"")  # everything unflushed is lost
    log = harness.open()
    _expect_kept_until(harness, list(harness.batches), rolled_end)
    _check_recovered(harness, log, rolled_end)


# ---------------------------------------------------------------------- (e) clean shutdown


@pytest.fixture
def recover_calls(monkeypatch):
    """Base offsets of the segments LogSegment.recover ran on."""
    calls: list[int] = []
    original = LogSegment.recover

    def spy(self):
        calls.append(self.base_offset)
        return original(self)

    monkeypatch.setattr(LogSegment, "recover", spy)
    return calls


def test_clean_close_then_reopen_does_no_recovery_work(harness, make_batches, recover_calls):
    log = harness.open(segment_bytes=3000)
    harness.append(make_batches(random.Random(9), 40))
    log.close()
    recover_calls.clear()
    log = harness.open()
    assert log.recovered_bytes_cut == 0 and recover_calls == []
    assert harness.read_all() == harness.records


@pytest.mark.parametrize("checkpointed", [False, True])
def test_unclean_open_verifies_segments_from_the_recovery_point(
    harness, make_batches, recover_calls, checkpointed
):
    log = harness.open(segment_bytes=3000)
    harness.append(make_batches(random.Random(10), 40))
    bases = [s.base_offset for s in log.segments]
    if checkpointed:
        # The recovery point is the active segment's base: the rolls flushed the rest.
        log.checkpoint()
    harness.crash()
    recover_calls.clear()
    log = harness.open()
    assert recover_calls == (bases[-1:] if checkpointed else bases)
    assert log.recovered_bytes_cut == 0
    assert harness.read_all() == harness.records


def test_reopened_log_that_crashes_again_is_recovered_again(harness, make_batches, recover_calls):
    log = harness.open(segment_bytes=3000)
    harness.append(make_batches(random.Random(11), 20))
    log.close()
    harness.open()
    harness.append(make_batches(random.Random(12), 5))
    harness.crash()
    recover_calls.clear()
    harness.open()
    assert recover_calls, "the clean-shutdown marker must not outlive the open that consumed it"
    assert harness.read_all() == harness.records


def test_log_start_offset_above_what_survived_the_crash_restarts_the_log_there(
    harness, make_batches
):
    # DeleteRecords moved the start (checkpointed at once)
    # past data the crash then lost (never fsynced).
    log = harness.open()
    harness.append(make_batches(random.Random(13), 10))
    start = log.log_end_offset
    log.advance_log_start_offset(start)
    harness.crash()
    harness.paths(0)[0].write_bytes(b"")
    log = harness.open()
    harness.batches = []
    assert (log.log_start_offset, log.log_end_offset) == (start, start)
    assert log.read(start) == b""
    _check_recovered(harness, log, start)
