"""A fake cluster whose group coordinator runs the real membership protocol, for consumer tests;
a partition log with transactions, for read_committed tests.

``GroupCoordinatorFake`` drives ``rafka.groups.membership.GroupMembership`` (Ray-free) on an event
loop in a thread of its own, as the coordinator actor does: a JoinGroup that must wait for the other
members is a future that completes when the rebalance does, so a consumer sees it in flight across
polls exactly as over Ray. Offsets are kept in memory, fenced by the membership's generation checks.

``TxnLog`` is a partition log built by hand from real batches: plain and transactional data batches
and COMMIT/ABORT markers, stamped with offsets as a leader stamps them, and ``TxnReplica`` answers
fetches and ListOffsets from it as a leader does for each isolation level (the last stable offset,
the aborted transactions overlapping a read).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

import pytest

from rafka.actors import names
from rafka.groups.group_metadata import GroupMetadata
from rafka.groups.membership import GroupMembership, MembershipConfig
from rafka.protocol.errors import Errors
from rafka.protocol.messages.fetch import (
    READ_COMMITTED,
    AbortedTransaction,
    FetchRequest,
    FetchResponse,
)
from rafka.protocol.messages.groups import (
    CommittedOffset,
    GroupResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
    SyncGroupRequest,
    SyncGroupResponse,
)
from rafka.protocol.messages.offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from rafka.protocol.records.batch import iter_batches, read_header, stamp
from rafka.protocol.records.builder import RecordBatchBuilder
from rafka.protocol.records.control import ControlRecordType, build_marker

T = TypeVar("T")
TICK_S = 0.02


class GroupCoordinatorFake:
    """Broker 0's group coordinator: the real membership protocol, offsets in a dict."""

    def __init__(self, initial_rebalance_delay_ms: int = 0) -> None:
        config = MembershipConfig(
            group_min_session_timeout_ms=10,
            group_initial_rebalance_delay_ms=initial_rebalance_delay_ms,
        )
        self.loop = asyncio.new_event_loop()
        self.membership = GroupMembership(
            config, lambda: int(time.monotonic() * 1000), self._persist
        )
        self.offsets: dict[tuple[str, int], int] = {}
        self.commits: list[OffsetCommitRequest] = []
        # While set, these requests are never answered (a coordinator that hangs).
        self.silent: set[str] = set()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    async def _persist(self, group: GroupMetadata) -> Errors:
        return Errors.NONE

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._tick_loop())

    async def _tick_loop(self) -> None:
        while not self._stopped:
            self.membership.tick()
            await asyncio.sleep(TICK_S)

    def stop(self) -> None:
        """End the loop thread."""
        self._stopped = True
        self._thread.join(timeout=5)

    def _on_loop(self, method: str, make: Callable[[], Awaitable[T]]) -> Future[T]:
        if method in self.silent:
            return Future()
        return asyncio.run_coroutine_threadsafe(_awaited(make), self.loop)

    def _now(self, call: Callable[[], T]) -> T:
        """Run ``call`` on the loop and wait for it (the membership is only touched there)."""

        async def run() -> T:
            return call()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=5)

    # ------------------------------------------------------------------ the coordinator's API

    def join_group(self, request: JoinGroupRequest) -> Future[JoinGroupResponse]:
        return self._on_loop("join_group", lambda: self.membership.join(request))

    def sync_group(self, request: SyncGroupRequest) -> Future[SyncGroupResponse]:
        return self._on_loop("sync_group", lambda: self.membership.sync(request))

    def heartbeat(self, request: HeartbeatRequest) -> Future[GroupResponse]:
        return self._on_loop("heartbeat", lambda: _ready(self.membership.heartbeat(request)))

    def leave_group(self, request: LeaveGroupRequest) -> Future[GroupResponse]:
        return self._on_loop("leave_group", lambda: _ready(self.membership.leave(request)))

    def offset_commit(self, request: OffsetCommitRequest) -> Future[OffsetCommitResponse]:
        async def commit() -> OffsetCommitResponse:
            error = self.membership.commit_error(
                request.group_id, request.generation_id, request.member_id
            )
            if error is not None:
                return OffsetCommitResponse(error[0], error_message=error[1])
            self.commits.append(request)
            for entry in request.offsets:
                self.offsets[(entry.topic, entry.partition)] = entry.offset
            return OffsetCommitResponse(
                Errors.NONE,
                tuple(PartitionResult(e.topic, e.partition, Errors.NONE) for e in request.offsets),
            )

        return self._on_loop("offset_commit", commit)

    def offset_fetch(self, request: OffsetFetchRequest) -> Future[OffsetFetchResponse]:
        async def fetch() -> OffsetFetchResponse:
            wanted = request.partitions or tuple(sorted(self.offsets))
            return OffsetFetchResponse(
                Errors.NONE,
                tuple(CommittedOffset(t, p, self.offsets.get((t, p), -1)) for t, p in wanted),
            )

        return self._on_loop("offset_fetch", fetch)

    # ------------------------------------------------------------------ what tests do to it

    def remove(self, group_id: str, member_id: str) -> None:
        """Remove a member as its session timing out would, and rebalance the rest."""
        self._now(lambda: self.membership.leave(LeaveGroupRequest(group_id, member_id)))

    def generation(self, group_id: str) -> int:
        """The group's current generation."""
        return self._now(lambda: self.membership.groups[group_id].generation_id)


async def _awaited(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


async def _ready(value: T) -> T:
    return value


@pytest.fixture
def group_cluster(fake_cluster: Any) -> Iterator[Any]:
    """One broker; topic 'events' with three partitions; broker 0's coordinator runs the real
    membership protocol (no initial rebalance delay), reachable as ``fake_cluster.groups``."""
    fake_cluster.add_brokers(1)
    fake_cluster.add_topic("events", [(0, 0), (0, 0), (0, 0)])
    coordinator = GroupCoordinatorFake()
    fake_cluster.actors[names.coordinator_actor_name(0)] = coordinator
    fake_cluster.groups = coordinator
    yield fake_cluster
    coordinator.stop()


class TxnLog:
    """A partition's log of stamped batches, with the transactions it holds.

    ``aborted`` lists every aborted transaction (producer id, first offset) with the offset of its
    marker, as a leader's transaction index does; ``last_stable_offset`` is the first offset of the
    oldest open one.
    """

    def __init__(self) -> None:
        self.data = bytearray()
        self.next_offset = 0
        self.aborted: list[tuple[AbortedTransaction, int]] = []
        self.open: dict[int, int] = {}

    def append(self, batch: bytes) -> int:
        """Append ``batch`` at the log end; its base offset."""
        stamped = bytearray(batch)
        base = self.next_offset
        stamp(stamped, 0, base, 0)
        self.data += stamped
        self.next_offset = read_header(stamped).next_offset
        return base

    def records(self, *values: bytes, producer_id: int = -1, transactional: bool = False) -> int:
        """One data batch of ``values`` (transactional ones open their producer's transaction)."""
        builder = RecordBatchBuilder(
            producer_id=producer_id,
            producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=0 if producer_id >= 0 else -1,
            is_transactional=transactional,
        )
        builder.extend(list(values), timestamp_ms=1_000)
        base = self.append(builder.build())
        if transactional:
            self.open.setdefault(producer_id, base)
        return base

    def marker(self, producer_id: int, committed: bool) -> int:
        """End ``producer_id``'s transaction with a COMMIT or ABORT marker; its offset."""
        kind = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
        offset = self.append(build_marker(producer_id, 0, kind, 0, 1_000))
        first = self.open.pop(producer_id, offset)
        if not committed:
            self.aborted.append((AbortedTransaction(producer_id, first), offset))
        return offset

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, else the log end."""
        return min(self.open.values(), default=self.next_offset)


class TxnReplica:
    """A leader serving a TxnLog: whole batches from the fetch offset up to the high watermark (the
    log end), or up to the last stable offset with the overlapping aborted transactions for
    READ_COMMITTED; ListOffsets latest is the high watermark or the last stable offset."""

    def __init__(self, log: TxnLog) -> None:
        self.log = log
        self.fetches: list[FetchRequest] = []
        self.list_offsets_requests: list[ListOffsetsRequest] = []

    def fetch(self, request: FetchRequest) -> FetchResponse:
        self.fetches.append(request)
        log = self.log
        committed = request.isolation_level == READ_COMMITTED
        limit = log.last_stable_offset if committed else log.next_offset
        out = bytearray()
        for position, header in iter_batches(log.data):
            if header.last_offset >= request.fetch_offset and header.next_offset <= limit:
                out += log.data[position : position + header.size_in_bytes]
        aborted = (
            tuple(
                t
                for t, end in log.aborted
                if end >= request.fetch_offset and t.first_offset < limit
            )
            if committed
            else ()
        )
        return FetchResponse(
            Errors.NONE,
            log.next_offset,
            0,
            log.next_offset,
            bytes(out),
            last_stable_offset=log.last_stable_offset,
            aborted_transactions=aborted,
        )

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        self.list_offsets_requests.append(request)
        if request.timestamp == EARLIEST_TIMESTAMP:
            return ListOffsetsResponse(Errors.NONE, 0)
        assert request.timestamp == LATEST_TIMESTAMP
        committed = request.isolation_level == READ_COMMITTED
        return ListOffsetsResponse(
            Errors.NONE, self.log.last_stable_offset if committed else self.log.next_offset
        )


@pytest.fixture
def txn_log(fake_cluster: Any) -> TxnLog:
    """An empty partition log of topic 'txn' (one partition), served by a TxnReplica on broker 0
    (``fake_cluster.txn_replica``)."""
    fake_cluster.add_brokers(1)
    fake_cluster.add_topic("txn", [(0, 0)])
    log = TxnLog()
    replica = TxnReplica(log)
    fake_cluster.actors[names.replica_actor_name("txn", 0, 0)] = replica
    fake_cluster.txn_replica = replica
    return log
