"""Transactions in the log: open transactions, markers, the LSO and the aborted index."""

from __future__ import annotations

import os

import pytest

from rafka.log.cleaner import compact
from rafka.log.transaction_index import ENTRY, AbortedTxn, TransactionIndex
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.fetch import AbortedTransaction
from rafka.protocol.messages.produce import AppendOrigin
from rafka.protocol.records.builder import RecordBatchBuilder, build_batch
from rafka.protocol.records.control import ControlRecordType, build_marker

PID = 21
OTHER = 22
COORDINATOR = AppendOrigin.COORDINATOR


def marker(log, pid: int, kind: ControlRecordType, coordinator_epoch: int = 0, epoch: int = 0):
    """Append a COMMIT or ABORT marker as the coordinator does; return its offset."""
    data = build_marker(pid, epoch, kind, coordinator_epoch, 5)
    return log.append_as_leader(data, 0, origin=COORDINATOR).first_offset


def refused(log, data: bytes, error: Errors, **kwargs) -> None:
    with pytest.raises(RafkaError) as caught:
        log.append_as_leader(data, 0, **kwargs)
    assert caught.value.error is error, caught.value.message


def test_a_transactional_batch_holds_the_lso_at_its_first_offset(harness, pbatch):
    log = harness.open()
    log.append_as_leader(build_batch([(None, b"plain", 1)]), 0)
    log.append_as_leader(pbatch(PID, 0, 0, count=3, transactional=True), 0)
    log.append_as_leader(pbatch(PID, 0, 3, transactional=True), 0)
    assert log.last_stable_offset(high_watermark=4) == 1
    assert log.last_stable_offset(high_watermark=1) == 1


def test_a_commit_releases_the_lso_once_the_marker_is_below_the_high_watermark(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, 0, count=2, transactional=True), 0)
    at = marker(log, PID, ControlRecordType.COMMIT)
    assert at == 2
    assert log.last_stable_offset(high_watermark=2) == 0
    assert log.last_stable_offset(high_watermark=3) == 3
    assert log.collect_aborted_transactions(0, 3) == []


def test_the_lso_is_the_earliest_open_transaction(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, 0, transactional=True), 0)
    log.append_as_leader(pbatch(OTHER, 0, 0, transactional=True), 0)
    marker(log, PID, ControlRecordType.ABORT)
    assert log.last_stable_offset(high_watermark=3) == 1
    marker(log, OTHER, ControlRecordType.COMMIT)
    assert log.last_stable_offset(high_watermark=4) == 4


def test_an_abort_is_indexed_and_collected_for_overlapping_fetches(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, 0, count=3, transactional=True), 0)
    at = marker(log, PID, ControlRecordType.ABORT)
    assert log.active_segment.txn_index.entries == [AbortedTxn(PID, 0, at, at + 1)]
    assert log.active_segment.txn_index.path.stat().st_size == ENTRY.size
    assert log.collect_aborted_transactions(1, 10) == [AbortedTransaction(PID, 0)]
    assert log.collect_aborted_transactions(at + 1, 10) == []


def test_aborts_in_later_segments_are_found_from_an_earlier_fetch_offset(harness, pbatch):
    log = harness.open(segment_bytes=250)
    log.append_as_leader(pbatch(PID, 0, 0, transactional=True), 0)
    for seq in range(6):
        log.append_as_leader(pbatch(OTHER, 0, seq), 0)
    at = marker(log, PID, ControlRecordType.ABORT)
    assert len(log.segments) > 2 and log.segments[0].txn_index.entries == []
    assert log.collect_aborted_transactions(0, at) == [AbortedTransaction(PID, 0)]


def test_the_index_survives_a_clean_reopen_and_is_rebuilt_after_a_crash(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, 0, transactional=True), 0)
    marker(log, PID, ControlRecordType.ABORT)
    log.close()
    log = harness.open()
    assert log.collect_aborted_transactions(0, 5) == [AbortedTransaction(PID, 0)]
    log.append_as_leader(pbatch(PID, 0, 1, transactional=True), 0)
    second = marker(log, PID, ControlRecordType.ABORT)
    harness.crash()
    # The crash lost the unflushed index: replay after the close's snapshot writes it again.
    os.truncate(log.active_segment.txn_index.path, ENTRY.size)
    log = harness.open()
    assert log.collect_aborted_transactions(0, 5) == [
        AbortedTransaction(PID, 0),
        AbortedTransaction(PID, second - 1),
    ]


def test_truncation_removes_index_entries_and_reopens_the_transaction(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, 0, transactional=True), 0)
    at = marker(log, PID, ControlRecordType.ABORT)
    log.truncate_to(at)
    assert log.collect_aborted_transactions(0, 5) == []
    assert not log.active_segment.txn_index.path.exists()
    assert log.last_stable_offset(high_watermark=1) == 0


def test_an_open_transaction_survives_a_crash(harness, pbatch):
    log = harness.open()
    log.append_as_leader(build_batch([(None, b"plain", 1)]), 0)
    log.append_as_leader(pbatch(PID, 0, 0, transactional=True), 0)
    harness.crash()
    log = harness.open()
    assert log.last_stable_offset(high_watermark=2) == 1


def test_a_marker_from_an_older_coordinator_epoch_is_fenced(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, 0, transactional=True), 0)
    marker(log, PID, ControlRecordType.COMMIT, coordinator_epoch=3)
    log.append_as_leader(pbatch(PID, 0, 1, transactional=True), 0)
    stale = build_marker(PID, 0, ControlRecordType.ABORT, 2, 5)
    refused(log, stale, Errors.TRANSACTION_COORDINATOR_FENCED, origin=COORDINATOR)
    assert log.last_stable_offset(high_watermark=3) == 2


def test_a_marker_from_an_older_producer_epoch_is_fenced(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 2, 0, transactional=True), 0)
    stale = build_marker(PID, 1, ControlRecordType.COMMIT, 0, 5)
    refused(log, stale, Errors.INVALID_PRODUCER_EPOCH, origin=COORDINATOR)


def test_a_plain_batch_inside_an_open_transaction_is_refused(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, 0, transactional=True), 0)
    refused(log, pbatch(PID, 0, 1), Errors.INVALID_TXN_STATE)


def test_coordinator_batches_open_a_transaction_too(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, -1, transactional=True), 0, origin=COORDINATOR)
    assert log.last_stable_offset(high_watermark=1) == 0
    marker(log, PID, ControlRecordType.COMMIT)
    assert log.last_stable_offset(high_watermark=2) == 2


def test_index_search_stops_at_an_entry_whose_lso_passes_the_bound(tmp_path):
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    index.append(AbortedTxn(1, 0, 5, 6))
    index.append(AbortedTxn(2, 8, 9, 20))
    index.append(AbortedTxn(3, 10, 30, 31))
    assert index.collect(0, 5) == ([AbortedTxn(1, 0, 5, 6)], True)
    assert index.collect(6, 30) == ([AbortedTxn(2, 8, 9, 20), AbortedTxn(3, 10, 30, 31)], True)
    assert index.collect(31, 40) == ([], False)
    assert index.collect(6, 12) == ([AbortedTxn(2, 8, 9, 20)], True)
    assert not index.append(AbortedTxn(4, 1, 30, 31))
    reopened = TransactionIndex(index.path)
    assert reopened.entries == index.entries


def test_a_torn_index_entry_is_cut_on_load(tmp_path):
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    index.append(AbortedTxn(1, 0, 5, 6))
    with open(index.path, "ab") as handle:
        handle.write(b"\x00\x01\x02")
    assert TransactionIndex(index.path).entries == [AbortedTxn(1, 0, 5, 6)]
    assert index.path.stat().st_size == ENTRY.size


def test_compaction_keeps_every_marker_and_its_aborted_index(harness, clock):
    log = harness.open(cleanup_policy="compact", segment_bytes=250)
    for round_ in range(3):
        builder = RecordBatchBuilder(
            producer_id=PID, producer_epoch=0, base_sequence=round_, is_transactional=True
        )
        builder.append(clock.now, b"key", b"v%d" % round_)
        log.append_as_leader(builder.build(), 0)
        marker(log, PID, ControlRecordType.ABORT if round_ == 1 else ControlRecordType.COMMIT)
    log.roll()
    log.append_as_leader(build_batch([(b"other", b"x", clock.now)]), 0)
    compact(log)
    markers = [
        header.base_offset
        for segment in log.segments
        for _, header in segment.batches()
        if header.is_control
    ]
    assert markers == [1, 3, 5]
    assert log.collect_aborted_transactions(0, 6) == [AbortedTransaction(PID, 2)]
    harness.crash()
    log = harness.open()
    assert log.last_stable_offset(high_watermark=7) == 7
