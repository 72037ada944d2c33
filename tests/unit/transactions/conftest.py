"""Fakes for the transaction coordinator's boundaries: its log, the cluster metadata, the markers'
channel, producer ids and the clock.

``FakeTxnLog`` keeps each ``__transaction_state`` partition as real stamped record batches, so the
manager's replay reads what it would read from a replica; it can refuse appends with scripted
errors or be unreachable. ``FakeChannel`` answers leaders from a dict and writes with scripted
answers per partition, recording every marker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from rafka.protocol.errors import Errors
from rafka.protocol.messages.transactions import WriteTxnMarkersRequest
from rafka.protocol.records.batch import decode_records, iter_batches, read_header, stamp
from rafka.protocol.types import TopicPartition
from rafka.transactions.marker_sender import MarkerSender
from rafka.transactions.transaction_handler import TransactionHandler, TransactionLimits
from rafka.transactions.transaction_log import decode_key
from rafka.transactions.transaction_state_manager import (
    TransactionLogUnavailableError,
    TransactionStateManager,
)

NUM_PARTITIONS = 4
MAX_TIMEOUT_MS = 60_000
EXPIRATION_MS = 600_000
OFFSETS_PARTITIONS = 3


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    """Run an async test body with a deadline."""
    return asyncio.run(asyncio.wait_for(scenario(), timeout=10))


async def settle() -> None:
    """Let every ready task run until the loop has nothing left to do right now."""
    for _ in range(20):
        await asyncio.sleep(0)


class FakeClock:
    """Milliseconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


class FakeTxnLog:
    """``TransactionLog`` over per-partition byte buffers of stamped batches."""

    def __init__(self) -> None:
        self.data: dict[int, bytearray] = {}
        self.next_offset: dict[int, int] = {}
        self.errors: list[Errors] = []
        self.unreachable = False
        self.append_gate: asyncio.Event | None = None

    async def bounds(self, partition: int) -> tuple[int, int]:
        self._check_reachable()
        return 0, self.next_offset.get(partition, 0)

    async def read(self, partition: int, offset: int, max_bytes: int) -> bytes:
        self._check_reachable()
        data = bytes(self.data.get(partition, b""))
        return b"".join(
            data[p : p + h.size_in_bytes] for p, h in iter_batches(data) if h.last_offset >= offset
        )

    async def append(self, partition: int, batch: bytes) -> Errors:
        self._check_reachable()
        if self.append_gate is not None:
            await self.append_gate.wait()
        if self.errors:
            return self.errors.pop(0)
        stamped = bytearray(batch)
        stamp(stamped, 0, self.next_offset.get(partition, 0), 0)
        self.data.setdefault(partition, bytearray()).extend(stamped)
        self.next_offset[partition] = read_header(stamped).next_offset
        return Errors.NONE

    def records(self, partition: int) -> list[tuple[str, bytes | None]]:
        """Every record of ``partition``: transactional id and value (None: tombstone)."""
        data = bytes(self.data.get(partition, b""))
        return [
            (decode_key(r.key), r.value)
            for p, h in iter_batches(data)
            for r in decode_records(data, p, h)
            if r.key is not None
        ]

    def _check_reachable(self) -> None:
        if self.unreachable:
            raise TransactionLogUnavailableError("the fake replica is down")


class FakeTopicMetadata:
    """``TopicMetadata`` answering from ``counts``."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    async def partition_counts(self, topics: tuple[str, ...]) -> dict[str, int]:
        return {t: self.counts[t] for t in topics if t in self.counts}


@dataclass
class FakeChannel:
    """``MarkerChannel``: leaders from ``leader_of`` (absent: deleted), scripted answers."""

    leader_of: dict[TopicPartition, int] = field(default_factory=dict)
    default_leader: int = 1
    answers: dict[TopicPartition, list[Errors]] = field(default_factory=dict)
    written: list[tuple[int, TopicPartition, WriteTxnMarkersRequest]] = field(default_factory=list)
    attempts: list[TopicPartition] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)
    metadata_down: int = 0
    gate: asyncio.Event | None = None

    async def leaders(
        self, partitions: frozenset[TopicPartition]
    ) -> dict[TopicPartition, int] | None:
        if self.metadata_down:
            self.metadata_down -= 1
            return None
        return {
            tp: self.leader_of.get(tp, self.default_leader)
            for tp in partitions
            if tp.topic not in self.deleted
        }

    async def write(
        self, leader: int, partition: TopicPartition, request: WriteTxnMarkersRequest
    ) -> Errors:
        self.attempts.append(partition)
        if self.gate is not None:
            await self.gate.wait()
        scripted = self.answers.get(partition)
        answer = scripted.pop(0) if scripted else Errors.NONE
        if answer is Errors.NONE:
            self.written.append((leader, partition, request))
        return answer


class FakeProducerIds:
    """Producer ids 1000, 1001, ... as the broker's ``allocate_producer_id`` hands them out."""

    def __init__(self) -> None:
        self.next = 1000

    async def __call__(self) -> int:
        self.next += 1
        return self.next - 1


@dataclass
class Harness:
    """A handler over fakes, owning every ``__transaction_state`` partition in epoch 7."""

    log: FakeTxnLog
    clock: FakeClock
    channel: FakeChannel
    metadata: FakeTopicMetadata
    manager: TransactionStateManager
    handler: TransactionHandler

    async def own_all(self, epoch: int = 7) -> None:
        for partition in range(NUM_PARTITIONS):
            self.manager.start_loading(partition, epoch)
            loaded = await self.manager.load(partition, epoch)
            assert loaded is not None
            self.handler.on_loaded(loaded, epoch)

    async def markers_done(self) -> None:
        """Wait for every transaction completing in the background."""
        while self.handler.completions:
            await asyncio.gather(*self.handler.completions)


def make_harness(log: FakeTxnLog | None = None, channel: FakeChannel | None = None) -> Harness:
    """A fresh harness (call ``own_all`` inside the event loop)."""
    log = log or FakeTxnLog()
    clock = FakeClock()
    channel = channel or FakeChannel()
    metadata = FakeTopicMetadata(
        {"orders": 3, "audit": 1, "__consumer_offsets": OFFSETS_PARTITIONS}
    )
    manager = TransactionStateManager(0, NUM_PARTITIONS, log, clock)
    handler = TransactionHandler(
        manager,
        FakeProducerIds(),
        metadata,
        MarkerSender(channel, backoff_s=0.001, max_backoff_s=0.001),
        TransactionLimits(MAX_TIMEOUT_MS, EXPIRATION_MS, OFFSETS_PARTITIONS),
        clock,
    )
    return Harness(log, clock, channel, metadata, manager, handler)


@pytest.fixture
def harness() -> Harness:
    """A handler over fresh fakes."""
    return make_harness()
