"""Tests for rafka.transactions.transaction_handler: every request's answers and errors, markers,
timeouts and expiry, over the fakes of conftest.py."""

from __future__ import annotations

import asyncio

from rafka.groups.offsets_codec import OFFSETS_TOPIC
from rafka.groups.offsets_codec import partition_for as group_partition_for
from rafka.protocol.errors import CoordinatorNotAvailableError, Errors
from rafka.protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from rafka.protocol.types import TopicPartition
from rafka.transactions.transaction_log import decode_value
from rafka.transactions.transaction_metadata import MAX_PRODUCER_EPOCH
from rafka.transactions.transaction_state import TransactionState

from .conftest import (
    EXPIRATION_MS,
    MAX_TIMEOUT_MS,
    OFFSETS_PARTITIONS,
    FakeChannel,
    FakeTxnLog,
    Harness,
    make_harness,
    run,
    settle,
)

S = TransactionState
TID = "app"
TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


async def init(h: Harness, timeout_ms: int = 30_000, tid: str = TID) -> InitProducerIdResponse:
    return await h.handler.init_producer_id(InitProducerIdRequest(tid, timeout_ms))


async def add(h: Harness, r: InitProducerIdResponse, *tps: TopicPartition) -> Errors:
    answer = await h.handler.add_partitions_to_txn(
        AddPartitionsToTxnRequest(TID, r.producer_id, r.producer_epoch, tps or (TP0,))
    )
    return answer.error


async def end(h: Harness, r: InitProducerIdResponse, committed: bool) -> Errors:
    answer = await h.handler.end_txn(EndTxnRequest(TID, r.producer_id, r.producer_epoch, committed))
    return answer.error


def state(h: Harness, tid: str = TID) -> TransactionState:
    meta = h.manager.get(tid)
    assert meta is not None
    return meta.state


def logged_states(h: Harness, tid: str = TID) -> list[str]:
    return [
        decode_value(v).state.value if v else "tombstone"
        for t, v in h.log.records(h.manager.partition_for(tid))
        if t == tid
    ]


# ------------------------------------------------------------------ InitProducerId


def test_init_producer_id_gives_a_new_id_epoch_zero_then_bumps_the_epoch(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        first = await init(harness)
        assert (first.error, first.producer_id, first.producer_epoch) == (Errors.NONE, 1000, 0)
        second = await init(harness)
        assert (second.error, second.producer_id, second.producer_epoch) == (Errors.NONE, 1000, 1)
        assert logged_states(harness) == ["Empty", "Empty"]

    run(scenario)


def test_init_producer_id_refuses_a_timeout_above_the_maximum(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        assert (await init(harness, MAX_TIMEOUT_MS + 1)).error is Errors.INVALID_TRANSACTION_TIMEOUT
        assert (await init(harness, 0)).error is Errors.INVALID_TRANSACTION_TIMEOUT
        assert (await init(harness, MAX_TIMEOUT_MS)).error is Errors.NONE

    run(scenario)


def test_init_producer_id_needs_a_transactional_id_and_ownership(harness: Harness) -> None:
    async def scenario() -> None:
        assert (await init(harness)).error is Errors.NOT_COORDINATOR
        await harness.own_all()
        assert (await init(harness, tid="")).error is Errors.INVALID_REQUEST

    run(scenario)


def test_init_producer_id_aborts_an_open_transaction_first(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        old = await init(harness)
        assert await add(harness, old, TP0, TP1) is Errors.NONE
        harness.channel.gate = asyncio.Event()
        fenced = await init(harness)
        assert fenced.error is Errors.CONCURRENT_TRANSACTIONS
        assert state(harness) is S.PREPARE_ABORT
        assert (await init(harness)).error is Errors.CONCURRENT_TRANSACTIONS
        assert await end(harness, old, True) is Errors.PRODUCER_FENCED
        harness.channel.gate.set()
        await harness.markers_done()
        assert state(harness) is S.COMPLETE_ABORT
        markers = {
            (tp, r.producer_epoch, r.committed, r.coordinator_epoch)
            for _, tp, r in harness.channel.written
        }
        assert markers == {(TP0, 1, False, 7), (TP1, 1, False, 7)}
        new = await init(harness)
        assert (new.error, new.producer_id, new.producer_epoch) == (Errors.NONE, 1000, 2)
        assert logged_states(harness) == [
            "Empty",
            "Ongoing",
            "PrepareAbort",
            "CompleteAbort",
            "Empty",
        ]

    run(scenario)


def test_an_exhausted_epoch_moves_the_id_to_a_new_producer_id(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        first = await init(harness)
        meta = harness.manager.get(TID)
        assert meta is not None
        meta.producer_epoch = MAX_PRODUCER_EPOCH - 1
        rotated = await init(harness)
        assert (rotated.error, rotated.producer_id, rotated.producer_epoch) == (
            Errors.NONE,
            first.producer_id + 1,
            0,
        )
        assert meta.last_producer_id == first.producer_id

    run(scenario)


def test_a_bump_asked_for_by_a_fenced_producer_id_is_refused(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        current = await init(harness)
        stranger = await harness.handler.init_producer_id(
            InitProducerIdRequest(TID, 30_000, current.producer_id + 7, 0)
        )
        assert stranger.error is Errors.PRODUCER_FENCED
        bumped = await harness.handler.init_producer_id(
            InitProducerIdRequest(TID, 30_000, current.producer_id, current.producer_epoch)
        )
        assert (bumped.error, bumped.producer_epoch) == (Errors.NONE, 1)

    run(scenario)


def test_a_failed_write_answers_its_error_and_leaves_the_id_usable(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        harness.log.errors = [Errors.NOT_ENOUGH_REPLICAS]
        assert (await init(harness)).error is Errors.COORDINATOR_NOT_AVAILABLE
        assert (await init(harness)).producer_epoch == 0

    run(scenario)


# ------------------------------------------------------------------ AddPartitions/AddOffsets


def test_add_partitions_starts_a_transaction_and_refuses_strangers(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        r = await init(harness)
        assert await add(harness, r) is Errors.NONE
        assert state(harness) is S.ONGOING
        assert await add(harness, r) is Errors.NONE  # already in: nothing written
        assert logged_states(harness) == ["Empty", "Ongoing"]
        stale = InitProducerIdResponse(Errors.NONE, r.producer_id, r.producer_epoch - 1)
        assert await add(harness, stale) is Errors.PRODUCER_FENCED
        other = InitProducerIdResponse(Errors.NONE, r.producer_id + 1, r.producer_epoch)
        assert await add(harness, other) is Errors.INVALID_PRODUCER_ID_MAPPING
        unknown = await harness.handler.add_partitions_to_txn(
            AddPartitionsToTxnRequest("nobody", 1, 0, (TP0,))
        )
        assert unknown.error is Errors.INVALID_PRODUCER_ID_MAPPING

    run(scenario)


def test_add_partitions_of_an_unknown_topic_fails_per_partition(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        r = await init(harness)
        missing = TopicPartition("nope", 0)
        answer = await harness.handler.add_partitions_to_txn(
            AddPartitionsToTxnRequest(TID, r.producer_id, r.producer_epoch, (TP0, missing))
        )
        assert dict(answer.results) == {
            TP0: Errors.OPERATION_NOT_ATTEMPTED,
            missing: Errors.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert state(harness) is S.EMPTY

    run(scenario)


def test_add_partitions_while_completing_answers_concurrent_transactions(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        r = await init(harness)
        await add(harness, r)
        harness.channel.gate = asyncio.Event()
        assert await end(harness, r, True) is Errors.NONE
        assert await add(harness, r, TP1) is Errors.CONCURRENT_TRANSACTIONS
        harness.channel.gate.set()
        await harness.markers_done()
        assert await add(harness, r, TP1) is Errors.NONE
        meta = harness.manager.get(TID)
        assert meta is not None and meta.partitions == {TP1}

    run(scenario)


def test_add_offsets_adds_the_groups_offsets_partition(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        r = await init(harness)
        answer = await harness.handler.add_offsets_to_txn(
            AddOffsetsToTxnRequest(TID, r.producer_id, r.producer_epoch, "billing")
        )
        assert answer.error is Errors.NONE
        meta = harness.manager.get(TID)
        expected = TopicPartition(OFFSETS_TOPIC, group_partition_for("billing", OFFSETS_PARTITIONS))
        assert meta is not None and meta.partitions == {expected}
        stale = await harness.handler.add_offsets_to_txn(
            AddOffsetsToTxnRequest(TID, r.producer_id, r.producer_epoch + 1, "billing")
        )
        assert stale.error is Errors.PRODUCER_FENCED

    run(scenario)


# ------------------------------------------------------------------ EndTxn


def test_commit_prepares_then_writes_markers_then_completes(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        r = await init(harness)
        await add(harness, r, TP0, TP1)
        harness.channel.gate = asyncio.Event()
        assert await end(harness, r, True) is Errors.NONE
        assert state(harness) is S.PREPARE_COMMIT
        assert await end(harness, r, True) is Errors.CONCURRENT_TRANSACTIONS
        harness.channel.gate.set()
        await harness.markers_done()
        assert state(harness) is S.COMPLETE_COMMIT
        assert {(tp, req.committed) for _, tp, req in harness.channel.written} == {
            (TP0, True),
            (TP1, True),
        }
        assert logged_states(harness)[-2:] == ["PrepareCommit", "CompleteCommit"]
        assert await end(harness, r, True) is Errors.NONE
        assert await end(harness, r, False) is Errors.INVALID_TXN_STATE

    run(scenario)


def test_end_txn_refuses_wrong_decisions_states_and_producers(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        r = await init(harness)
        assert await end(harness, r, True) is Errors.INVALID_TXN_STATE  # nothing to end
        await add(harness, r)
        stale = InitProducerIdResponse(Errors.NONE, r.producer_id, r.producer_epoch - 1)
        assert await end(harness, stale, False) is Errors.PRODUCER_FENCED
        other = InitProducerIdResponse(Errors.NONE, r.producer_id + 1, r.producer_epoch)
        assert await end(harness, other, False) is Errors.INVALID_PRODUCER_ID_MAPPING
        harness.channel.gate = asyncio.Event()
        assert await end(harness, r, False) is Errors.NONE
        # Markers in flight: any EndTxn waits, as in Kafka (the completion is pending).
        assert await end(harness, r, True) is Errors.CONCURRENT_TRANSACTIONS
        harness.channel.gate.set()
        await harness.markers_done()
        assert await end(harness, r, False) is Errors.NONE
        assert await end(harness, r, True) is Errors.INVALID_TXN_STATE
        assert state(harness) is S.COMPLETE_ABORT

    run(scenario)


def test_markers_of_a_deleted_topic_count_as_written(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        r = await init(harness)
        audit = TopicPartition("audit", 0)
        await add(harness, r, TP0, audit)
        harness.channel.deleted.add("audit")
        assert await end(harness, r, True) is Errors.NONE
        await harness.markers_done()
        assert state(harness) is S.COMPLETE_COMMIT
        assert [tp for _, tp, _ in harness.channel.written] == [TP0]

    run(scenario)


def test_a_failed_complete_write_is_retried_until_it_lands(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        r = await init(harness)
        await add(harness, r)
        harness.channel.gate = asyncio.Event()
        assert await end(harness, r, True) is Errors.NONE
        harness.log.errors = [Errors.NOT_ENOUGH_REPLICAS, Errors.REQUEST_TIMED_OUT]
        harness.channel.gate.set()
        await harness.markers_done()
        assert state(harness) is S.COMPLETE_COMMIT

    run(scenario)


def test_a_loaded_prepared_transaction_is_completed_by_the_new_coordinator() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        old = make_harness(log, FakeChannel(gate=asyncio.Event()))
        await old.own_all(epoch=7)
        r = await init(old)
        await add(old, r, TP0, TP1)
        assert await end(old, r, True) is Errors.NONE
        await settle()
        for partition in range(4):
            old.manager.unload(partition)
        old.channel.gate.set()  # type: ignore[union-attr]
        await old.markers_done()
        assert logged_states(old)[-1] == "PrepareCommit"  # the moved coordinator wrote no more

        new = make_harness(log)
        await new.own_all(epoch=8)
        await new.markers_done()
        assert state(new) is S.COMPLETE_COMMIT
        assert {(tp, req.coordinator_epoch) for _, tp, req in new.channel.written} == {
            (TP0, 8),
            (TP1, 8),
        }

    run(scenario)


# ------------------------------------------------------------------ timeouts and expiry


def test_a_transaction_past_its_timeout_is_aborted_with_a_bumped_epoch(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        r = await init(harness, timeout_ms=1000)
        await add(harness, r)
        harness.clock.now += 1000
        assert await harness.handler.abort_timed_out_transactions() == []
        harness.clock.now += 1
        assert await harness.handler.abort_timed_out_transactions() == [TID]
        await harness.markers_done()
        assert state(harness) is S.COMPLETE_ABORT
        assert [(req.producer_epoch, req.committed) for _, _, req in harness.channel.written] == [
            (r.producer_epoch + 1, False)
        ]
        assert await end(harness, r, True) is Errors.PRODUCER_FENCED
        assert await add(harness, r) is Errors.PRODUCER_FENCED

    run(scenario)


def test_idle_ids_expire_with_a_tombstone_and_open_ones_do_not(harness: Harness) -> None:
    async def scenario() -> None:
        await harness.own_all()
        await init(harness, tid="idle")
        r = await init(harness)
        await add(harness, r)
        harness.clock.now += EXPIRATION_MS
        assert await harness.handler.expire_transactional_ids() == ["idle"]
        assert harness.manager.get("idle") is None
        assert logged_states(harness, "idle")[-1] == "tombstone"
        assert harness.manager.get(TID) is not None
        again = await init(harness, tid="idle")
        assert (again.error, again.producer_epoch) == (Errors.NONE, 0)

    run(scenario)


def test_no_producer_id_from_the_broker_answers_its_error(harness: Harness) -> None:
    async def refuse() -> int:
        raise CoordinatorNotAvailableError("the broker is down")

    async def scenario() -> None:
        await harness.own_all()
        harness.handler.allocate_producer_id = refuse
        assert (await init(harness)).error is Errors.COORDINATOR_NOT_AVAILABLE
        assert harness.manager.get(TID) is None

    run(scenario)
