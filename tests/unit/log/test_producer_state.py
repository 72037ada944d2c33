"""Idempotent appends: the leader's producer id, epoch and sequence checks (KIP-98)."""

from __future__ import annotations

import dataclasses

import pytest

from rafka.log.producer_state import (
    INT32_MAX,
    AppendBatch,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
    in_sequence,
    last_sequence,
)
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.produce import AppendOrigin
from rafka.protocol.records.batch import read_header
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.control import ControlRecordType, EndTransactionMarker, build_marker

PID = 7


def refused(log, data: bytes, error: Errors, **kwargs) -> RafkaError:
    """Append ``data`` expecting ``error``; check nothing was written and return the exception."""
    end = log.log_end_offset
    with pytest.raises(RafkaError) as caught:
        log.append_as_leader(data, 0, **kwargs)
    assert caught.value.error is error, caught.value.message
    assert log.log_end_offset == end
    return caught.value


def test_a_new_producer_starts_at_sequence_zero_and_continues_in_order(harness, pbatch):
    log = harness.open()
    first = log.append_as_leader(pbatch(PID, 0, 0, count=3), 0)
    second = log.append_as_leader(pbatch(PID, 0, 3, count=2), 0)
    assert (first.first_offset, second.first_offset, log.log_end_offset) == (0, 3, 5)
    assert not first.duplicate and not second.duplicate
    assert log.producer_state.producers[PID].last_seq == 4


def test_unknown_producer_not_starting_at_zero_is_refused(harness, pbatch):
    log = harness.open()
    error = refused(log, pbatch(PID, 0, 5), Errors.UNKNOWN_PRODUCER_ID)
    assert "topic-0" in error.message and str(PID) in error.message and "5" in error.message


def test_a_sequence_gap_is_out_of_order_and_writes_nothing(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, 0, count=2), 0)
    error = refused(log, pbatch(PID, 0, 3), Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert "sent sequence 3, expected 2" in error.message
    assert log.append_as_leader(pbatch(PID, 0, 2), 0).first_offset == 2


@pytest.mark.parametrize("age", range(5))
def test_each_of_the_last_five_batches_is_a_duplicate(harness, pbatch, age):
    log = harness.open()
    infos = [log.append_as_leader(pbatch(PID, 0, 2 * i, count=2), 0) for i in range(6)]
    original = infos[-1 - age]
    end = log.log_end_offset
    again = log.append_as_leader(pbatch(PID, 0, 2 * (5 - age), count=2), 0)
    assert again.duplicate
    assert (again.first_offset, again.last_offset) == (original.first_offset, original.last_offset)
    assert log.log_end_offset == end and again.record_count == 0


def test_a_batch_older_than_the_last_five_is_out_of_order(harness, pbatch):
    log = harness.open()
    for i in range(6):
        log.append_as_leader(pbatch(PID, 0, i), 0)
    refused(log, pbatch(PID, 0, 0), Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)


def test_an_older_epoch_is_fenced(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 3, 0), 0)
    error = refused(log, pbatch(PID, 2, 1), Errors.INVALID_PRODUCER_EPOCH)
    assert "epoch 2" in error.message and "current epoch 3" in error.message


def test_a_new_epoch_must_start_at_sequence_zero(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 0, 0, count=4), 0)
    refused(log, pbatch(PID, 1, 4), Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert log.append_as_leader(pbatch(PID, 1, 0), 0).first_offset == 4
    # The new epoch forgot the old one's batches: their retry is fenced, not a duplicate.
    refused(log, pbatch(PID, 0, 0, count=4), Errors.INVALID_PRODUCER_EPOCH)


def test_batches_without_a_producer_id_skip_every_check(harness):
    log = harness.open()
    for _ in range(3):
        log.append_as_leader(build_batch([(None, b"x", 1)]), 0)
    assert log.log_end_offset == 3 and log.producer_state.is_empty


def test_one_bad_batch_refuses_the_whole_append(harness, pbatch):
    log = harness.open()
    refused(log, pbatch(PID, 0, 0) + pbatch(PID, 0, 2), Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert log.producer_state.is_empty
    info = log.append_as_leader(pbatch(PID, 0, 0) + pbatch(PID, 0, 1, count=2), 0)
    assert (info.first_offset, info.last_offset) == (0, 2)


def test_coordinator_appends_skip_sequences_but_not_epochs(harness, pbatch):
    log = harness.open()
    log.append_as_leader(pbatch(PID, 1, 0), 0)
    coordinator = AppendOrigin.COORDINATOR
    assert log.append_as_leader(pbatch(PID, 1, 40), 0, origin=coordinator).first_offset == 1
    refused(log, pbatch(PID, 0, 41), Errors.INVALID_PRODUCER_EPOCH, origin=coordinator)


def test_a_client_may_not_append_a_control_batch(harness):
    log = harness.open()
    marker = build_marker(PID, 0, ControlRecordType.COMMIT, 0, 1)
    refused(log, marker, Errors.INVALID_RECORD)


def test_follower_appends_update_the_state_a_new_leader_dedupes_with(harness, pbatch):
    leader = harness.open()
    for i in range(3):
        leader.append_as_leader(pbatch(PID, 0, i), 4)
    follower_harness = type(harness)(harness.directory.parent / "topic-1", harness.clock)
    try:
        follower = follower_harness.open()
        follower.append_as_follower(leader.read(0))
        again = follower.append_as_leader(pbatch(PID, 0, 2), 5)
        assert again.duplicate and again.first_offset == 2
        assert follower.append_as_leader(pbatch(PID, 0, 3), 5).first_offset == 3
    finally:
        follower_harness.release_all()


def test_sequences_wrap_from_int32_max_to_zero():
    assert last_sequence(INT32_MAX - 1, 3) == 1
    assert in_sequence(INT32_MAX, 0) and in_sequence(4, 5)
    assert not in_sequence(INT32_MAX, INT32_MAX + 1) and not in_sequence(4, 6)


def test_a_batch_after_int32_max_continues_at_zero(pbatch):
    state = ProducerStateManager("topic-0")
    state.load([ProducerStateEntry(PID, 0, [BatchMetadata(INT32_MAX - 2, INT32_MAX, 0, 2, 1)])])
    header = read_header(pbatch(PID, 0, 0, count=2))
    append = state.prepare([AppendBatch(header)], check_sequence=True)
    state.commit(append)
    assert state.producers[PID].last_seq == 1
    wrapped = read_header(pbatch(PID, 0, INT32_MAX, count=3))
    assert last_sequence(wrapped.base_sequence, wrapped.last_offset_delta) == 1


def test_the_lso_waits_for_every_ended_transaction_not_yet_replicated(pbatch):
    state = ProducerStateManager("topic-0")

    def at(data: bytes, offset: int):
        return dataclasses.replace(read_header(data), base_offset=offset)

    for pid, offset in ((1, 5), (2, 10)):
        state.replay(AppendBatch(at(pbatch(pid, 0, 0, transactional=True), offset)))
    assert state.last_stable_offset(high_watermark=20) == 5
    commit = EndTransactionMarker(ControlRecordType.COMMIT, 0)
    for pid, offset in ((2, 50), (1, 60)):
        marker = build_marker(pid, 0, ControlRecordType.COMMIT, 0, 1)
        state.replay(AppendBatch(at(marker, offset), commit))
    assert state.ongoing == {}
    assert state.last_stable_offset(high_watermark=40) == 5
    assert state.last_stable_offset(high_watermark=55) == 5
    assert state.last_stable_offset(high_watermark=61) == 61
