"""Fakes for the group coordinator's boundaries: an in-memory ``__consumer_offsets``, metadata.

``FakeOffsetsLog`` keeps each offsets partition as real record batches, stamped with offsets the way
a leader replica stamps them, so the manager's replay reads exactly what it would read from disk.
It can refuse appends with a scripted error, be unreachable, or hold appends and reads at a gate
so a test can act while one is in flight. ``FakeTopicMetadata`` answers partition counts from a
dict and counts how often it was asked.
"""

from __future__ import annotations

import asyncio

import pytest

from rafka.groups.group_metadata_manager import Appended, OffsetsLogUnavailableError
from rafka.protocol.errors import Errors
from rafka.protocol.records.batch import iter_batches, read_header, stamp


class FakeOffsetsLog:
    """``OffsetsLog`` over per-partition byte buffers of stamped batches."""

    def __init__(self) -> None:
        self.data: dict[int, bytearray] = {}
        self.next_offset: dict[int, int] = {}
        self.log_start: dict[int, int] = {}
        self.errors: list[Errors] = []
        self.unreachable = False
        self.append_gate: asyncio.Event | None = None
        self.read_gate: asyncio.Event | None = None
        self.reads: list[tuple[int, int, int]] = []
        self.appends_in_flight = 0
        self.most_appends_in_flight = 0

    async def bounds(self, partition: int) -> tuple[int, int]:
        self._check_reachable()
        return self.log_start.get(partition, 0), self.next_offset.get(partition, 0)

    async def read(self, partition: int, offset: int, max_bytes: int) -> bytes:
        self._check_reachable()
        self.reads.append((partition, offset, max_bytes))
        if self.read_gate is not None:
            await self.read_gate.wait()
        data = bytes(self.data.get(partition, b""))
        out = bytearray()
        for position, header in iter_batches(data):
            if header.last_offset < offset:
                continue
            if out and len(out) + header.size_in_bytes > max_bytes:
                break  # like a replica, return at least one whole batch
            out += data[position : position + header.size_in_bytes]
        return bytes(out)

    async def append(self, partition: int, batch: bytes) -> Appended:
        self._check_reachable()
        self.appends_in_flight += 1
        self.most_appends_in_flight = max(self.most_appends_in_flight, self.appends_in_flight)
        try:
            if self.append_gate is not None:
                await self.append_gate.wait()
            if self.errors:
                return Appended(self.errors.pop(0))
            return Appended(Errors.NONE, self.append_batch(partition, batch))
        finally:
            self.appends_in_flight -= 1

    def append_batch(self, partition: int, batch: bytes) -> int:
        """Append ``batch`` as the leader would: stamped with the next offset; that offset."""
        stamped = bytearray(batch)
        base = self.next_offset.get(partition, 0)
        stamp(stamped, 0, base, 0)
        self.data.setdefault(partition, bytearray()).extend(stamped)
        self.next_offset[partition] = read_header(stamped).next_offset
        return base

    def _check_reachable(self) -> None:
        if self.unreachable:
            raise OffsetsLogUnavailableError("the fake replica is down")


class FakeTopicMetadata:
    """``TopicMetadata`` answering from ``counts``."""

    def __init__(self, counts: dict[str, int] | None = None) -> None:
        self.counts = dict(counts or {})
        self.asked: list[tuple[str, ...]] = []

    async def partition_counts(self, topics: tuple[str, ...]) -> dict[str, int]:
        self.asked.append(topics)
        return {t: self.counts[t] for t in topics if t in self.counts}


@pytest.fixture
def offsets_log() -> FakeOffsetsLog:
    """An empty in-memory ``__consumer_offsets`` log."""
    return FakeOffsetsLog()


@pytest.fixture
def topic_metadata() -> FakeTopicMetadata:
    """Metadata knowing topic ``orders`` with 3 partitions and ``audit`` with 1."""
    return FakeTopicMetadata({"orders": 3, "audit": 1})
