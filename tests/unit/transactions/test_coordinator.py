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
