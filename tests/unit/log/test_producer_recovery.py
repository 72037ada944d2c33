"""Producer state across restarts, truncation, retention and expiry: snapshots plus replay."""

from __future__ import annotations

import pytest

from rafka.log import producer_snapshot
from rafka.log.log import Log
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.records.builder import build_batch

PID = 11
OTHER = 12


def snapshots(log: Log) -> list[int]:
    return producer_snapshot.offsets(log.directory)


def fill(log: Log, pbatch, count: int, pid: int = PID, start_seq: int = 0) -> None:
    """``count`` one-record batches of ``pid`` from ``start_seq`` on."""
    for seq in range(start_seq, start_seq + count):
        log.append_as_leader(pbatch(pid, 0, seq, ts=1_000 + seq), 0)


def is_duplicate(log: Log, pbatch, seq: int, pid: int = PID) -> bool:
    return log.append_as_leader(pbatch(pid, 0, seq, ts=1_000 + seq), 0).duplicate


def test_clean_close_writes_a_snapshot_at_the_log_end_and_reopen_replays_nothing(
    harness, pbatch, monkeypatch
):
    log = harness.open()
    fill(log, pbatch, 4)
    log.close()
    assert snapshots(log) == [4]
    replayed: list[int] = []
    monkeypatch.setattr(Log, "_replay_producer_state", lambda self, start: replayed.append(start))
    log = harness.open()
    assert replayed == []
    assert is_duplicate(log, pbatch, 3)


def test_segment_rolls_write_snapshots_of_the_state_below_their_base(harness, pbatch):
    log = harness.open(segment_bytes=250)
    fill(log, pbatch, 12)
    bases = [segment.base_offset for segment in log.segments]
    assert len(bases) > 2 and snapshots(log) == bases[1:]
    entries = producer_snapshot.load_latest(log.directory, bases[1])
    assert entries is not None and entries[1][0].last_seq == bases[1] - 1


def test_logs_without_producers_write_no_snapshots(harness):
    log = harness.open(segment_bytes=250)
    for _ in range(12):
        log.append_as_leader(build_batch([(None, b"plain", 1)]), 0)
    log.close()
    assert len(log.segments) > 2 and snapshots(log) == []


@pytest.mark.parametrize("segment_bytes", [250, 1 << 20])
def test_unclean_shutdown_replays_the_log_after_the_latest_snapshot(harness, pbatch, segment_bytes):
    log = harness.open(segment_bytes=segment_bytes)
    fill(log, pbatch, 12)
    fill(log, pbatch, 3, pid=OTHER)
    harness.crash()
    log = harness.open()
    assert is_duplicate(log, pbatch, 11) and is_duplicate(log, pbatch, 2, pid=OTHER)
    assert log.append_as_leader(pbatch(PID, 0, 12), 0).first_offset == 15


def test_a_damaged_snapshot_is_ignored_and_an_older_one_used(harness, pbatch):
    log = harness.open(segment_bytes=250)
    fill(log, pbatch, 12)
    harness.crash()
    newest = harness.directory / f"{snapshots(log)[-1]:020d}.snapshot"
    newest.write_bytes(b"\x00" + newest.read_bytes()[1:])
    log = harness.open()
    assert is_duplicate(log, pbatch, 11)
    assert newest.name not in {p.name for p in harness.directory.iterdir()}


def test_a_crash_cut_drops_snapshots_above_the_new_log_end(harness, pbatch):
    log = harness.open(segment_bytes=250)
    fill(log, pbatch, 12)
    last = log.segments[-1]
    harness.crash()
    # Lose the whole last segment's tail and the state the snapshot says is below it.
    last.log_path.write_bytes(b"")
    producer_snapshot.write(harness.directory, 99, [])
    log = harness.open()
    assert 99 not in snapshots(log)
    assert not is_duplicate(log, pbatch, last.base_offset)


def test_truncation_drops_later_snapshots_and_rebuilds_the_state(harness, pbatch):
    log = harness.open(segment_bytes=250)
    fill(log, pbatch, 12)
    log.truncate_to(5)
    assert all(offset <= 5 for offset in snapshots(log))
    assert is_duplicate(log, pbatch, 4)
    with pytest.raises(RafkaError) as caught:
        log.append_as_leader(pbatch(PID, 0, 7), 0)
    assert caught.value.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append_as_leader(pbatch(PID, 0, 5), 0).first_offset == 5


def test_truncating_the_whole_log_forgets_every_producer(harness, pbatch):
    log = harness.open(segment_bytes=250)
    fill(log, pbatch, 12)
    log.truncate_fully_and_start_at(40)
    assert snapshots(log) == [] and log.producer_state.is_empty


def test_retention_deletes_old_snapshots_and_producers_whose_batches_are_gone(
    harness, pbatch, clock
):
    log = harness.open(segment_bytes=250, retention_ms=10_000)
    for seq in range(6):
        log.append_as_leader(pbatch(OTHER, 0, seq, ts=clock.now - 60_000), 0)
    fill_now = [log.append_as_leader(pbatch(PID, 0, s, ts=clock.now), 0) for s in range(6)]
    assert fill_now[-1].last_offset == 11
    log.delete_old_segments()
    assert log.log_start_offset > 5
    assert all(offset >= log.segments[0].base_offset for offset in snapshots(log))
    assert OTHER not in log.producer_state.producers and PID in log.producer_state.producers


def test_idle_producers_expire_unless_a_transaction_is_open(harness, pbatch, clock):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, 0, ts=clock.now), 0)
    log.append_as_leader(pbatch(OTHER, 0, 0, transactional=True, ts=clock.now), 0)
    assert log.remove_expired_producers(60_000) == []
    clock.advance(60_000)
    assert log.remove_expired_producers(60_000) == [PID]
    assert set(log.producer_state.producers) == {OTHER}
    with pytest.raises(RafkaError) as caught:
        log.append_as_leader(pbatch(PID, 0, 1), 0)
    assert caught.value.error is Errors.UNKNOWN_PRODUCER_ID


def test_a_state_emptied_by_expiry_leaves_no_snapshot_to_revive_it(harness, pbatch, clock):
    log = harness.open()
    fill(log, pbatch, 3)
    log.roll()
    assert snapshots(log) == [3]
    clock.advance(10 * 60_000)
    log.remove_expired_producers(60_000)
    log.close()
    assert snapshots(log) == []
    assert harness.open().producer_state.is_empty


def test_retention_keeps_a_producer_whose_transaction_is_still_open(harness, pbatch, clock):
    log = harness.open(segment_bytes=250, retention_ms=10_000)
    log.append_as_leader(pbatch(OTHER, 0, 0, transactional=True, ts=clock.now - 60_000), 0)
    for seq in range(6):
        log.append_as_leader(pbatch(PID, 0, seq, ts=clock.now - 60_000), 0)
    log.append_as_leader(pbatch(PID, 0, 6, ts=clock.now), 0)
    log.delete_old_segments()
    assert log.log_start_offset > 1
    assert set(log.producer_state.producers) == {OTHER, PID}
