"""Tests for rafka.transactions.transaction_state_manager: ownership, loading, the log, timeouts."""

from __future__ import annotations

import asyncio

from rafka.protocol.errors import Errors
from rafka.protocol.records.builder import build_batch
from rafka.protocol.types import TopicPartition
from rafka.transactions.transaction_log import encode_key, encode_value
from rafka.transactions.transaction_metadata import TransactionMetadata, TxnTransitMetadata
from rafka.transactions.transaction_state import TransactionState
from rafka.transactions.transaction_state_manager import TransactionStateManager

from .conftest import FakeClock, FakeTxnLog, run, settle

TP = TopicPartition("orders", 0)


def manager(log: FakeTxnLog, clock: FakeClock | None = None) -> TransactionStateManager:
    return TransactionStateManager(2, 4, log, clock or FakeClock())


async def owned(
    m: TransactionStateManager, partition: int, epoch: int = 3
) -> list[TransactionMetadata]:
    m.start_loading(partition, epoch)
    loaded = await m.load(partition, epoch)
    assert loaded is not None
    return loaded


def stored(state: TransactionState, epoch: int = 1) -> TxnTransitMetadata:
    return TxnTransitMetadata(7, -1, epoch, -1, 1000, state, frozenset({TP}), 10, 20)


def test_ids_of_partitions_not_led_answer_not_coordinator_and_loading_ones_load_in_progress() -> (
    None
):
    async def scenario() -> None:
        log = FakeTxnLog()
        m = manager(log)
        tid = "app"
        partition = m.partition_for(tid)
        assert m.ownership_error(tid)[0] is Errors.NOT_COORDINATOR  # type: ignore[index]
        m.start_loading(partition, 3)
        assert m.ownership_error(tid)[0] is Errors.COORDINATOR_LOAD_IN_PROGRESS  # type: ignore[index]
        assert await m.load(partition, 3) == []
        assert m.ownership_error(tid) is None
        assert m.coordinator_epoch(partition) == 3
        m.unload(partition)
        assert m.ownership_error(tid)[0] is Errors.NOT_COORDINATOR  # type: ignore[index]

    run(scenario)


def test_loading_replays_the_latest_value_of_each_id_and_drops_tombstoned_ones() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        m = manager(log)
        partition = m.partition_for("app")
        other = next(f"id-{i}" for i in range(100) if m.partition_for(f"id-{i}") == partition)
        for tid, value in [
            ("app", encode_value(stored(TransactionState.ONGOING))),
            (other, encode_value(stored(TransactionState.EMPTY))),
            ("app", encode_value(stored(TransactionState.PREPARE_COMMIT, epoch=2))),
            (other, None),
        ]:
            await log.append(partition, build_batch([(encode_key(tid), value, 0)]))
        loaded = await owned(m, partition)
        assert [(t.transactional_id, t.state, t.producer_epoch) for t in loaded] == [
            ("app", TransactionState.PREPARE_COMMIT, 2)
        ]
        assert m.get("app") is loaded[0] and m.get(other) is None

    run(scenario)


def test_a_failed_load_leaves_the_partition_unowned_for_the_next_leader_and_isr() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        log.unreachable = True
        m = manager(log)
        m.start_loading(1, 3)
        assert await m.load(1, 3) is None
        assert 1 not in m.loading and 1 not in m.owned

    run(scenario)


def test_a_load_overtaken_by_an_unload_installs_nothing() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        m = manager(log)
        m.start_loading(1, 3)
        load = asyncio.get_running_loop().create_task(m.load(1, 3))
        m.unload(1)
        assert await load is None
        assert 1 not in m.owned

    run(scenario)


def test_a_transition_is_applied_only_once_written() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        log.append_gate = asyncio.Event()
        m = manager(log)
        await owned(m, m.partition_for("app"))
        meta = m.put_if_absent(TransactionMetadata.new("app", 7, 1000, 0))
        transit = meta.prepare_increment_epoch(1000, None, 5)
        assert isinstance(transit, TxnTransitMetadata)
        append = asyncio.get_running_loop().create_task(m.append(meta, transit, 3))
        await settle()
        assert meta.producer_epoch == -1 and meta.pending_state is TransactionState.EMPTY
        log.append_gate.set()
        assert await append is Errors.NONE
        assert meta.producer_epoch == 0 and meta.pending_state is None
        assert [t for t, _ in log.records(m.partition_for("app"))] == ["app"]

    run(scenario)


def test_append_errors_map_to_what_a_client_retries_and_abandon_the_transition() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        m = manager(log)
        await owned(m, m.partition_for("app"))
        meta = m.put_if_absent(TransactionMetadata.new("app", 7, 1000, 0))
        for refused, seen in [
            (Errors.NOT_ENOUGH_REPLICAS, Errors.COORDINATOR_NOT_AVAILABLE),
            (Errors.REQUEST_TIMED_OUT, Errors.COORDINATOR_NOT_AVAILABLE),
            (Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_COORDINATOR),
            (Errors.CORRUPT_MESSAGE, Errors.UNKNOWN_SERVER_ERROR),
        ]:
            log.errors = [refused]
            transit = meta.prepare_increment_epoch(1000, None, 5)
            assert isinstance(transit, TxnTransitMetadata)
            assert await m.append(meta, transit, 3) is seen
            assert meta.pending_state is None and meta.producer_epoch == -1
        log.unreachable = True
        transit = meta.prepare_increment_epoch(1000, None, 5)
        assert isinstance(transit, TxnTransitMetadata)
        assert await m.append(meta, transit, 3) is Errors.NOT_COORDINATOR

    run(scenario)


def test_a_write_that_lands_after_the_partition_moved_is_not_applied() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        log.append_gate = asyncio.Event()
        m = manager(log)
        partition = m.partition_for("app")
        await owned(m, partition)
        meta = m.put_if_absent(TransactionMetadata.new("app", 7, 1000, 0))
        transit = meta.prepare_increment_epoch(1000, None, 5)
        assert isinstance(transit, TxnTransitMetadata)
        append = asyncio.get_running_loop().create_task(m.append(meta, transit, 3))
        await settle()
        m.unload(partition)
        await owned(m, partition, epoch=4)
        log.append_gate.set()
        assert await append is Errors.NOT_COORDINATOR
        assert meta.producer_epoch == -1

    run(scenario)


def test_a_dead_id_is_tombstoned_and_forgotten() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        m = manager(log)
        partition = m.partition_for("app")
        await owned(m, partition)
        meta = m.put_if_absent(TransactionMetadata.new("app", 7, 1000, 0))
        assert await m.append(meta, meta.prepare_dead(), 3) is Errors.NONE
        assert m.get("app") is None
        assert log.records(partition) == [("app", None)]

    run(scenario)


def test_timed_out_and_expired_ids_are_found_by_their_timestamps() -> None:
    async def scenario() -> None:
        clock = FakeClock()
        m = manager(FakeTxnLog(), clock)
        for partition in range(4):
            await owned(m, partition)
        ongoing = m.put_if_absent(TransactionMetadata.new("ongoing", 1, 1000, 0))
        ongoing.state, ongoing.start_timestamp, ongoing.producer_epoch = (
            TransactionState.ONGOING,
            clock.now,
            4,
        )
        idle = m.put_if_absent(TransactionMetadata.new("idle", 2, 1000, clock.now - 50))
        assert m.timed_out_transactions(clock.now + 1000) == []
        found = m.timed_out_transactions(clock.now + 1001)
        assert [(t.transactional_id, t.producer_id, t.producer_epoch) for t in found] == [
            ("ongoing", 1, 4)
        ]
        ongoing.pending_state = TransactionState.PREPARE_ABORT
        assert m.timed_out_transactions(clock.now + 5000) == []
        assert m.expired_transactional_ids(clock.now, 100) == []
        assert m.expired_transactional_ids(clock.now + 50, 100) == [idle]

    run(scenario)
