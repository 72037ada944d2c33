"""Tests for rafka.transactions.coordinator: the actor class driven directly, with Ray faked at its
edge (log, metadata, markers' channel and producer ids from conftest.py)."""

from __future__ import annotations

import asyncio

from rafka.actors.broker.config import BrokerConfig
from rafka.protocol.errors import Errors
from rafka.protocol.messages.transactions import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
)
from rafka.protocol.types import TopicPartition
from rafka.transactions.coordinator import TransactionCoordinator
from rafka.transactions.transaction_log import partition_for

from .conftest import FakeChannel, FakeProducerIds, FakeTopicMetadata, FakeTxnLog, run, settle

CONFIG = BrokerConfig(broker_id=2, transaction_state_log_num_partitions=4)
TID = "app"
PARTITION = partition_for(TID, 4)
TP = TopicPartition("orders", 0)


def coordinator(log: FakeTxnLog, channel: FakeChannel) -> TransactionCoordinator:
    c = TransactionCoordinator(CONFIG, "test", log, FakeTopicMetadata({"orders": 1}), channel)
    c.handler.allocate_producer_id = FakeProducerIds()
    return c


def test_leadership_loads_the_partition_and_losing_it_answers_not_coordinator() -> None:
    async def scenario() -> None:
        c = coordinator(FakeTxnLog(), FakeChannel())
        request = InitProducerIdRequest(TID, 10_000)
        assert (await c.init_producer_id(request)).error is Errors.NOT_COORDINATOR
        await c.partition_leadership(PARTITION, True, 5, 4)
        await settle()
        assert (await c.describe())["owned"] == {PARTITION: 5}
        assert (await c.init_producer_id(request)).error is Errors.NONE
        assert (await c.describe_transactions([TID]))[0]["state"] == "Empty"
        await c.partition_leadership(PARTITION, False, -1)
        assert (await c.init_producer_id(request)).error is Errors.NOT_COORDINATOR
        assert (await c.describe_transactions([TID]))[0]["error"] == "NOT_COORDINATOR"

    run(scenario)


def test_a_load_that_fails_is_tried_again_while_the_partition_is_still_led() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        log.unreachable = True  # the partition's replica is still starting
        c = coordinator(log, FakeChannel())
        await c.partition_leadership(PARTITION, True, 5, 4)
        await settle()
        assert (await c.describe())["owned"] == {}
        log.unreachable = False  # no further LeaderAndIsr comes: leadership is stable
        deadline = asyncio.get_running_loop().time() + 5
        while (await c.describe())["owned"] != {PARTITION: 5}:
            assert asyncio.get_running_loop().time() < deadline, "the load was not tried again"
            await asyncio.sleep(0.05)

    run(scenario)


def test_a_failed_load_is_not_tried_again_once_leadership_is_gone() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        log.unreachable = True
        c = coordinator(log, FakeChannel())
        await c.partition_leadership(PARTITION, True, 5, 4)
        await settle()
        await c.partition_leadership(PARTITION, False, -1)
        log.unreachable = False
        await asyncio.wait_for(asyncio.gather(*c._loads), 5)  # the retrying load gives up
        assert (await c.describe())["owned"] == {}

    run(scenario)


def test_a_new_coordinator_finishes_a_commit_its_predecessor_prepared() -> None:
    async def scenario() -> None:
        log = FakeTxnLog()
        old = coordinator(log, FakeChannel(gate=asyncio.Event()))
        await old.partition_leadership(PARTITION, True, 5, 4)
        await settle()
        r = await old.init_producer_id(InitProducerIdRequest(TID, 10_000))
        added = await old.add_partitions_to_txn(
            AddPartitionsToTxnRequest(TID, r.producer_id, r.producer_epoch, (TP,))
        )
        assert added.error is Errors.NONE
        ended = await old.end_txn(EndTxnRequest(TID, r.producer_id, r.producer_epoch, True))
        assert ended.error is Errors.NONE
        await old.partition_leadership(PARTITION, False, -1)

        channel = FakeChannel()
        new = coordinator(log, channel)
        await new.partition_leadership(PARTITION, True, 6, 4)
        while not channel.written or new.handler.completions:
            await asyncio.sleep(0.001)
        [described] = await new.describe_transactions([TID])
        assert described["state"] == "CompleteCommit"
        assert [(tp, req.committed, req.coordinator_epoch) for _, tp, req in channel.written] == [
            (TP, True, 6)
        ]

    run(scenario)
