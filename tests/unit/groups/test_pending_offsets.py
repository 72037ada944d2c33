"""Tests for rafka.groups.pending_offsets and rafka.groups.offsets_replay: pending transactional
offsets by producer, the later-in-the-log rule, and replaying hand-built batches with markers."""

from __future__ import annotations

from rafka.groups.offsets_codec import OffsetKey, OffsetValue, encode_key, encode_offset
from rafka.groups.offsets_replay import OffsetsReplay
from rafka.groups.pending_offsets import LoggedOffset, PendingOffsets, apply_later
from rafka.protocol.records.batch import iter_batches, read_header, stamp
from rafka.protocol.records.builder import RecordBatchBuilder
from rafka.protocol.records.control import ControlRecordType, build_marker

KEY = OffsetKey("g", "orders", 0)
OTHER_GROUP_KEY = OffsetKey("h", "orders", 0)
A, B = 10, 20


def logged(offset: int, at: int) -> LoggedOffset:
    return LoggedOffset(OffsetValue(offset, "", 1), at)


def test_complete_takes_only_the_chosen_offsets_of_the_producer() -> None:
    pending = PendingOffsets()
    pending.add(A, KEY, logged(1, 0))
    pending.add(A, OTHER_GROUP_KEY, logged(2, 0))
    pending.add(B, KEY, logged(3, 1))
    assert pending.complete(A, lambda key: key.group == "g") == {KEY: logged(1, 0)}
    assert pending.producers() == [A, B]
    assert pending.complete(A, lambda key: True) == {OTHER_GROUP_KEY: logged(2, 0)}
    assert pending.producers() == [B]
    assert pending.has_pending(KEY) and not pending.has_pending(OTHER_GROUP_KEY)


def test_a_transactional_tombstone_and_discard_forget_pending_offsets() -> None:
    pending = PendingOffsets()
    pending.add(A, KEY, logged(1, 0))
    pending.add(A, KEY, None)
    assert pending.complete(A, lambda key: True) == {}
    pending.add(B, KEY, logged(1, 0))
    pending.discard(lambda key: key.topic == "orders")
    assert pending.producers() == []


def test_apply_later_keeps_a_commit_written_later_and_replaces_an_earlier_one() -> None:
    committed = {KEY: logged(50, 5)}
    assert apply_later(committed, {KEY: logged(42, 3)}) == []
    assert committed[KEY] == logged(50, 5)
    assert apply_later(committed, {KEY: logged(42, 7), OTHER_GROUP_KEY: logged(1, 7)}) == [
        KEY,
        OTHER_GROUP_KEY,
    ]
    assert committed[KEY] == logged(42, 7)


class Log:
    """Batches stamped with consecutive offsets."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.next = 0

    def add(self, batch: bytes) -> None:
        stamped = bytearray(batch)
        stamp(stamped, 0, self.next, 0)
        self.data += stamped
        self.next = read_header(stamped).next_offset

    def offsets(self, offset: int, producer_id: int = -1, key: OffsetKey = KEY) -> None:
        builder = RecordBatchBuilder(
            producer_id=producer_id, producer_epoch=0, is_transactional=producer_id >= 0
        )
        builder.append(1, encode_key(key), encode_offset(OffsetValue(offset, "", 1)))
        self.add(builder.build())

    def marker(self, producer_id: int, committed: bool) -> None:
        kind = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
        self.add(build_marker(producer_id, 0, kind, 0, 1))

    def replay(self) -> OffsetsReplay:
        replayed = OffsetsReplay()
        data = bytes(self.data)
        for position, header in iter_batches(data):
            replayed.replay_batch(data, position, header)
        return replayed


def test_replay_commits_aborts_and_leaves_open_transactions_pending() -> None:
    log = Log()
    log.offsets(1, producer_id=A)
    log.offsets(2, producer_id=B, key=OTHER_GROUP_KEY)
    log.marker(A, committed=True)
    log.offsets(3, producer_id=A)
    log.marker(A, committed=False)
    replayed = log.replay()
    assert {k: v.value.offset for k, v in replayed.offsets.items()} == {KEY: 1}
    assert replayed.pending.producers() == [B]
    assert replayed.pending.offsets_of(B)[OTHER_GROUP_KEY].value.offset == 2


def test_replay_applies_the_commit_later_in_the_log_when_a_transaction_commits() -> None:
    log = Log()
    log.offsets(1, producer_id=A)
    log.offsets(2)
    log.marker(A, committed=True)
    log.offsets(3)
    log.offsets(4, producer_id=B)
    log.marker(B, committed=True)
    first = Log()
    first.offsets(1, producer_id=A)
    first.offsets(2)
    first.marker(A, committed=True)
    assert first.replay().offsets[KEY].value.offset == 2
    assert log.replay().offsets[KEY].value.offset == 4
