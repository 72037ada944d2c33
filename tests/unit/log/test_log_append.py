"""Tests for Log.append_as_leader and append_as_follower: offsets, epochs, validation, flush."""

from __future__ import annotations

import random

import pytest

from rafka.log.log import Log, UnexpectedAppendOffsetError
from rafka.protocol.errors import (
    CorruptMessageError,
    Errors,
    InvalidRecordError,
    MessageTooLargeError,
    RecordListTooLargeError,
)
from rafka.protocol.records.batch import HEADER_SIZE, LEADER_EPOCH_OFFSET, encode_batch, stamp
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.columns import RecordColumns
from rafka.protocol.records.kafka_records import native_to_kafka


def _state(log: Log) -> tuple[int, int, list, list[tuple[str, int]]]:
    """Everything an append may change: LEO, bytes, epoch entries and file sizes."""
    files = sorted((p.name, p.stat().st_size) for p in log.directory.glob("*.log"))
    return log.log_end_offset, log.size_in_bytes, log.epoch_cache.entries, files


# ---------------------------------------------------------------------- leader appends


def test_leader_append_assigns_contiguous_offsets_from_log_end_offset(harness):
    log = harness.open()
    infos = harness.append(
        [
            [(b"a", b"1", 10)],
            [(b"b", b"2", 11), (b"c", b"3", 12), (b"d", b"4", 13)],
            [(b"e", b"5", 14)] * 2,
        ]
    )
    assert [(i.first_offset, i.last_offset, i.record_count) for i in infos] == [
        (0, 0, 1),
        (1, 3, 3),
        (4, 5, 2),
    ]
    assert log.log_end_offset == 6
    assert harness.read_all() == harness.records


def test_leader_append_stamps_offset_and_epoch_into_stored_batch_headers(harness, decode_batches):
    log = harness.open()
    harness.append([[(b"a", b"x", 1)] * 2], epoch=3)
    harness.append([[(b"b", b"y", 2)] * 3, [(b"c", b"z", 3)]], epoch=7)
    stored = decode_batches(harness.directory.joinpath(harness.segment_files()[0]).read_bytes())
    assert [(h.base_offset, h.last_offset, h.partition_leader_epoch) for h, _ in stored] == [
        (0, 1, 3),
        (2, 4, 7),
        (5, 5, 7),
    ]
    assert [h.partition_leader_epoch for h in harness.read_headers()] == [3, 7, 7]
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(3, 0), (7, 2)]


def test_leader_append_of_several_batches_at_once_assigns_offsets_across_them(
    harness, decode_batches
):
    log = harness.open()
    harness.append([[(b"a", b"0", 5)]])
    parts = [build_batch([(b"k", b"v%d" % i, 100 + i)] * n) for i, n in enumerate((2, 1, 4))]
    info = log.append_as_leader(b"".join(parts), leader_epoch=1)
    assert (info.first_offset, info.last_offset, info.record_count) == (1, 7, 7)
    assert info.size_in_bytes == sum(map(len, parts))
    assert info.max_timestamp == 102
    headers = [h for h, _ in decode_batches(log.read(1))]
    assert [(h.base_offset, h.record_count) for h in headers] == [(1, 2), (3, 1), (4, 4)]
    assert log.log_end_offset == 8


def test_leader_append_does_not_change_the_callers_buffer(harness):
    log = harness.open()
    harness.append([[(b"a", b"0", 5)]] * 3)
    data = bytearray(build_batch([(b"k", b"v", 1)]))
    log.append_as_leader(data, leader_epoch=2)
    assert data == build_batch([(b"k", b"v", 1)]), "offsets and epoch are stamped into a copy"


def test_compacted_topic_rejects_batch_whose_records_disagree_with_header(harness):
    # Compacted topics decode every record on append (they
    # must see keys), so they catch bad content.
    log = harness.open(cleanup_policy="compact")
    # Two records with the same offset delta: the header's CRC is right, the content is not.
    bad = encode_batch(
        RecordColumns.from_rows([[0, 0, b"k", b"v", []], [0, 0, b"k", b"w", []]]),
        first_timestamp=1,
        max_timestamp=1,
        last_offset_delta=1,
    )
    before = _state(log)
    with pytest.raises(CorruptMessageError):
        log.append_as_leader(bad, leader_epoch=0)
    assert _state(log) == before


def test_batch_without_records_is_rejected(harness):
    log = harness.open()
    empty = encode_batch(
        RecordColumns.from_rows([]), first_timestamp=1, max_timestamp=1, last_offset_delta=-1
    )
    with pytest.raises(CorruptMessageError, match="no records"):
        log.append_as_leader(empty, leader_epoch=0)
    assert log.log_end_offset == 0


def test_append_of_no_bytes_is_rejected_without_touching_the_epoch_cache(harness):
    log = harness.open()
    with pytest.raises(CorruptMessageError):
        log.append_as_leader(b"", leader_epoch=4)
    assert log.epoch_cache.entries == []
    assert log.log_end_offset == 0


# ---------------------------------------------------------------------- follower appends


def _leader_bytes(tmp_path, clock, batches, epochs) -> bytes:
    """Bytes a leader log holds after appending ``batches`` with the given epochs."""
    leader = Log(tmp_path / "leader-0", clock=clock)
    for records, epoch in zip(batches, epochs, strict=True):
        leader.append_as_leader(build_batch(records), epoch)
    data = leader.read(0, max_bytes=1 << 30)
    leader.abandon()
    return data


def test_follower_append_keeps_leader_offsets_and_epochs(harness, tmp_path, clock):
    data = _leader_bytes(
        tmp_path,
        clock,
        [[(b"a", b"1", 1)] * 2, [(b"b", b"2", 2)], [(b"c", b"3", 3)] * 3],
        [1, 1, 4],
    )
    log = harness.open()
    info = log.append_as_follower(data)
    assert (info.first_offset, info.last_offset) == (0, 5)
    assert log.read(0, max_bytes=1 << 30) == data
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(1, 0), (4, 3)]


def test_follower_append_rejects_overlapping_batch(harness, tmp_path, clock):
    data = _leader_bytes(tmp_path, clock, [[(b"a", b"1", 1)] * 2, [(b"b", b"2", 2)]], [0, 0])
    log = harness.open()
    log.append_as_follower(data)
    before = _state(log)
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(data)
    assert _state(log) == before


def test_follower_append_rejects_gap_after_log_end_offset(harness):
    log = harness.open()
    batch = bytearray(build_batch([(b"a", b"1", 1)]))
    stamp(batch, 0, 5, 0)
    with pytest.raises(UnexpectedAppendOffsetError) as raised:
        log.append_as_follower(batch)
    assert raised.value.error is Errors.CORRUPT_MESSAGE
    assert log.log_end_offset == 0 and log.size_in_bytes == 0


def test_follower_append_rejects_gap_between_batches_of_one_fetch(harness):
    log = harness.open()
    first, second = (
        bytearray(build_batch([(b"a", b"1", 1)] * 2)),
        bytearray(build_batch([(b"b", b"2", 2)])),
    )
    stamp(first, 0, 0, 0)
    stamp(second, 0, 3, 0)
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(bytes(first + second))
    assert log.log_end_offset == 0


def test_follower_append_allows_gaps_on_compacted_log(harness, decode_batches):
    log = harness.open(cleanup_policy="compact")
    first, second = (
        bytearray(build_batch([(b"a", b"1", 1)])),
        bytearray(build_batch([(b"b", b"2", 2)] * 2)),
    )
    stamp(first, 0, 4, 2)
    stamp(second, 0, 9, 2)
    info = log.append_as_follower(bytes(first + second))
    assert (info.first_offset, info.last_offset) == (4, 10)
    assert log.log_end_offset == 11
    # An offset in the gap reads from the next batch that exists.
    assert [h.base_offset for h, _ in decode_batches(log.read(6))] == [9]


# -------------------------------------------------------------- validation leaves the log unchanged


def test_batch_over_max_message_bytes_is_rejected_and_log_unchanged(harness):
    log = harness.open(max_message_bytes=400)
    harness.append([[(b"a", b"x" * 100, 1)]], epoch=1)
    small, big = build_batch([(b"b", b"y", 2)]), build_batch([(b"c", b"z" * 500, 3)])
    before = _state(log)
    with pytest.raises(MessageTooLargeError) as raised:
        log.append_as_leader(small + big, leader_epoch=2)
    assert raised.value.error is Errors.MESSAGE_TOO_LARGE
    assert _state(log) == before
    assert harness.read_all() == harness.records


def test_batch_exactly_max_message_bytes_is_accepted(harness):
    batch = build_batch([(b"c", b"z" * 200, 3)])
    log = harness.open(max_message_bytes=len(batch))
    assert log.append_as_leader(batch, leader_epoch=0).size_in_bytes == len(batch)


def test_batch_over_segment_bytes_is_record_list_too_large(harness):
    log = harness.open(segment_bytes=300)
    with pytest.raises(RecordListTooLargeError):
        log.append_as_leader(build_batch([(b"c", b"z" * 400, 3)]), leader_epoch=0)
    assert log.size_in_bytes == 0


@pytest.mark.parametrize("victim", [0, 1, 2])
def test_crc_corrupted_batch_is_rejected_and_nothing_written(harness, victim):
    log = harness.open()
    harness.append([[(b"a", b"0", 1)]])
    parts = [bytearray(build_batch([(b"k%d" % i, b"v" * 40, 10 + i)])) for i in range(3)]
    parts[victim][HEADER_SIZE + 5] ^= 0x40  # inside the records section, which the CRC covers
    before = _state(log)
    with pytest.raises(CorruptMessageError) as raised:
        log.append_as_leader(b"".join(parts), leader_epoch=0)
    assert raised.value.error is Errors.CORRUPT_MESSAGE
    assert _state(log) == before


@pytest.mark.parametrize(
    "garbage", [b"\x00", b"\x01" * (HEADER_SIZE - 1), b"\x00" * HEADER_SIZE, b"\xff" * 100]
)
def test_trailing_garbage_is_rejected_as_corrupt_message(harness, garbage):
    log = harness.open()
    before = _state(log)
    with pytest.raises(CorruptMessageError):
        log.append_as_leader(build_batch([(b"a", b"1", 1)]) + garbage, leader_epoch=0)
    assert _state(log) == before


def test_truncated_batch_is_rejected_as_corrupt_message(harness):
    log = harness.open()
    batch = build_batch([(b"a", b"1" * 50, 1)])
    with pytest.raises(CorruptMessageError):
        log.append_as_leader(batch[:-1], leader_epoch=0)
    with pytest.raises(CorruptMessageError):
        log.append_as_follower(batch[:-1])
    assert log.log_end_offset == 0


def test_compacted_topic_rejects_record_without_key(harness):
    log = harness.open(cleanup_policy="compact")
    harness.append([[(b"a", b"1", 1)]])
    before = _state(log)
    with pytest.raises(InvalidRecordError) as raised:
        log.append_as_leader(build_batch([(b"b", b"2", 2), (None, b"3", 3)]), leader_epoch=0)
    assert raised.value.error is Errors.INVALID_RECORD
    assert _state(log) == before


def test_a_kafka_layout_batch_is_stored_as_it_came_but_for_offset_and_epoch(
    harness, decode_batches
):
    harness.open()
    harness.append([[(b"a", b"1", 10)]])
    client = native_to_kafka(build_batch([(b"k", b"v", 20, [("h", b"x")]), (None, b"w", 21)]))
    info = harness.log.append_as_leader(client, leader_epoch=4)
    harness.remember(info.first_offset, [(b"k", b"v", 20, [("h", b"x")]), (None, b"w", 21)], 0, 4)
    stored = harness.directory.joinpath(harness.segment_files()[0]).read_bytes()
    assert stored.endswith(client[LEADER_EPOCH_OFFSET + 4 :])
    (first, _), (second, _) = decode_batches(stored)
    assert first.is_columnar and not second.is_columnar
    assert (second.base_offset, second.partition_leader_epoch) == (1, 4)
    assert harness.read_all() == harness.records


def test_compacted_topic_rejects_a_kafka_layout_record_without_key(harness):
    log = harness.open(cleanup_policy="compact")
    before = _state(log)
    client = native_to_kafka(build_batch([(b"b", b"2", 2), (None, b"3", 3)]))
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(client, leader_epoch=0)
    assert _state(log) == before


def test_compacted_topic_accepts_keyed_tombstone_and_delete_topic_accepts_null_key(
    harness, tmp_path, clock
):
    log = harness.open(cleanup_policy="compact")
    assert log.append_as_leader(build_batch([(b"a", None, 1)]), leader_epoch=0).record_count == 1
    plain = Log(tmp_path / "plain-0", clock=clock)
    assert plain.append_as_leader(build_batch([(None, b"v", 1)]), leader_epoch=0).record_count == 1
    plain.abandon()


# ---------------------------------------------------------------------- flush policy


def test_flush_messages_one_fsyncs_every_append(harness, make_batches):
    log = harness.open(flush_messages=1)
    for records in make_batches(random.Random(1), 12):
        harness.append([records])
        assert log.recovery_point == log.log_end_offset


def test_default_flush_policy_leaves_recovery_point_behind(harness, make_batches):
    log = harness.open()
    harness.append(make_batches(random.Random(2), 5))
    assert log.recovery_point == 0 < log.log_end_offset


def test_flush_messages_counts_records_not_appends(harness):
    log = harness.open(flush_messages=5)
    harness.append([[(b"a", b"1", 1)] * 2, [(b"b", b"2", 2)] * 2])
    assert log.recovery_point == 0
    harness.append([[(b"c", b"3", 3)]])
    assert log.recovery_point == 5


def test_maybe_flush_waits_for_flush_ms_on_the_clock(harness, clock):
    log = harness.open(flush_ms=1000)
    harness.append([[(b"a", b"1", 1)]])
    clock.advance(999)
    assert not log.maybe_flush() and log.recovery_point == 0
    clock.advance(1)
    assert log.maybe_flush() and log.recovery_point == 1
    clock.advance(5000)
    assert not log.maybe_flush(), "nothing new to flush"
