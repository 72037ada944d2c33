"""The group metadata manager: what a coordinator keeps in ``__consumer_offsets``, and its cache.

Kafka's ``GroupMetadataManager``. A group belongs to partition ``partition_for(group_id)`` of
``__consumer_offsets``, and the coordinator on the broker leading that partition answers for it. On
gaining leadership the manager replays the partition's log to rebuild its groups and committed
offsets (answering COORDINATOR_LOAD_IN_PROGRESS meanwhile); on losing it, it drops them and answers
NOT_COORDINATOR, so clients look the coordinator up again.

Writes (committed offsets, group metadata after a rebalance, tombstones) are appended to the local
leader replica with acks=all, so an acknowledged commit survives the coordinator's broker dying.
Transactional offset commits (TxnOffsetCommit) are appended as transactional batches of the
producer and stay pending, invisible to OffsetFetch, until the transaction coordinator's marker
(WriteTxnMarkers) commits or drops them (``pending_offsets``); loading replays them the same way
(``offsets_replay``).
The replicas and the broker's metadata are reached through two small interfaces, ``OffsetsLog``
and ``TopicMetadata``: Ray in production (``replica_log``), in-memory fakes in unit tests.
Everything runs on the coordinator's single event loop, one handler at a time up to its first
``await``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, Protocol

from rafka.groups.group_metadata import GroupMetadata, validate_group_id
from rafka.groups.membership import stored_members
from rafka.groups.offsets_codec import (
    OFFSETS_TOPIC,
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    encode_group,
    encode_key,
    encode_offset,
    partition_for,
)
from rafka.groups.offsets_replay import OffsetsReplay
from rafka.groups.pending_offsets import LoggedOffset, PendingOffsets
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.groups import (
    CommittedOffset,
    OffsetCommitEntry,
    OffsetCommitResponse,
    OffsetFetchResponse,
    PartitionResult,
)
from rafka.protocol.messages.transactions import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from rafka.protocol.records.batch import NO_SEQUENCE, iter_batches
from rafka.protocol.records.builder import RecordBatchBuilder, build_batch
from rafka.protocol.records.control import marker_for
from rafka.protocol.types import TopicPartition, now_ms, partition_name

logger = logging.getLogger(__name__)

LOAD_CHUNK_BYTES = 4 << 20
PARTITION_COUNTS_TTL_S = 5.0

# What a failed append to the offsets log means to a client of the coordinator (Kafka's mapping).
APPEND_ERRORS = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.FENCED_LEADER_EPOCH: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.MESSAGE_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    Errors.RECORD_LIST_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    Errors.INVALID_FETCH_SIZE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    # A transactional write refused for its producer: the producer must hear why (it is fenced).
    **{
        error: error
        for error in (
            Errors.INVALID_PRODUCER_EPOCH,
            Errors.PRODUCER_FENCED,
            Errors.INVALID_TXN_STATE,
            Errors.INVALID_PRODUCER_ID_MAPPING,
            Errors.UNKNOWN_PRODUCER_ID,
            Errors.TRANSACTION_COORDINATOR_FENCED,
        )
    },
}

OffsetsRecord = tuple[bytes, bytes | None]
"""A ``__consumer_offsets`` record as appended: encoded key and value (None for a tombstone)."""

GroupOffsets = dict[TopicPartition, OffsetValue]
"""One group's committed offsets."""


class Appended(NamedTuple):
    """The replica's answer to an append: its error code and the batch's base offset."""

    error: Errors
    base_offset: int = -1


class OffsetsLogUnavailableError(Exception):
    """This broker's replica of an offsets partition cannot be reached (not hosted, or dead)."""


class OffsetsLog(Protocol):
    """This broker's replicas of ``__consumer_offsets``, as the manager reads and writes them."""

    async def bounds(self, partition: int) -> tuple[int, int]:
        """The replica's log start offset and log end offset."""
        ...

    async def read(self, partition: int, offset: int, max_bytes: int) -> bytes:
        """Whole batches of the replica's log from ``offset``, at most about ``max_bytes``."""
        ...

    async def append(self, partition: int, batch: bytes) -> Appended:
        """Append ``batch`` as the partition's leader with acks=all, as a coordinator (origin
        COORDINATOR: no sequence checks, producer epochs still checked)."""
        ...


class TopicMetadata(Protocol):
    """The broker's metadata cache, asked which topics exist and how many partitions they have."""

    async def partition_counts(self, topics: tuple[str, ...]) -> dict[str, int]:
        """Topic -> partition count, for the existing topics among ``topics``."""
        ...


class PartitionCountCache:
    """Partition counts of committed topics, so a commit is one append and not also a metadata call.

    Counts are reused for ``ttl_s``; a partition the cache does not know, or an old cache, refreshes
    it first (with every topic it already knows, so they stay fresh too).
    """

    def __init__(
        self,
        metadata: TopicMetadata,
        ttl_s: float = PARTITION_COUNTS_TTL_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metadata = metadata
        self.ttl_s = ttl_s
        self.monotonic = monotonic
        self._counts: dict[str, int] = {}
        self._fetched_at: float | None = None

    async def get(self, partitions: Iterable[TopicPartition]) -> dict[str, int]:
        """Partition counts covering ``partitions`` (a topic that does not exist is absent)."""
        wanted = set(partitions)
        fresh = self._fetched_at is not None and self.monotonic() - self._fetched_at < self.ttl_s
        if not fresh or any(p >= self._counts.get(t, 0) for t, p in wanted):
            topics = tuple(sorted({t for t, _ in wanted} | set(self._counts)))
            self._counts = await self.metadata.partition_counts(topics)
            self._fetched_at = self.monotonic()
        return self._counts

    def forget(self, topics: Iterable[str]) -> None:
        """Drop the counts of deleted topics: one created again under the same name is new."""
        for topic in topics:
            self._counts.pop(topic, None)


class GroupMetadataManager:
    """The offsets partitions one coordinator leads: their loading, their cached offsets, their log.

    Groups themselves live in ``GroupMembership``; the manager hands loaded ones over through the
    ``on_group_loaded`` callback and tells which to forget when a partition is unloaded.
    """

    def __init__(
        self,
        broker_id: int,
        num_partitions: int,
        offset_metadata_max_bytes: int,
        log: OffsetsLog,
        metadata: TopicMetadata,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.broker_id = broker_id
        self.num_partitions = num_partitions
        self.offset_metadata_max_bytes = offset_metadata_max_bytes
        self.log = log
        self.clock = clock
        self.partition_counts = PartitionCountCache(metadata)
        self.owned: dict[int, int] = {}
        """Offsets partition -> the leader epoch it was loaded in."""
        self.loading: dict[int, int] = {}
        """Offsets partition -> the leader epoch it is being loaded in."""
        self.offsets: dict[str, GroupOffsets] = {}
        self.pending = PendingOffsets()
        """Transactional offsets waiting for their producer's marker."""
        # The base offset of the batch that wrote each committed offset: of two commits of one
        # partition, the later in the log wins when a transaction ends.
        self._written_at: dict[str, dict[TopicPartition, int]] = {}
        # One append at a time per offsets partition: a replica actor may run concurrent produce
        # requests in either order, and a group's later commit must land after its earlier one.
        self._append_locks: defaultdict[int, asyncio.Lock] = defaultdict(asyncio.Lock)

    # ------------------------------------------------------------------ ownership

    def partition_for(self, group_id: str) -> int:
        """The offsets partition that owns ``group_id``."""
        return partition_for(group_id, self.num_partitions)

    def ownership_error(self, group_id: str) -> tuple[Errors, str] | None:
        """Why this coordinator cannot answer for ``group_id`` now, or None."""
        try:
            validate_group_id(group_id)
        except RafkaError as exc:
            return exc.error, exc.message or exc.error.message
        partition = self.partition_for(group_id)
        if partition in self.loading:
            return (
                Errors.COORDINATOR_LOAD_IN_PROGRESS,
                f"broker {self.broker_id} is loading {OFFSETS_TOPIC}-{partition}",
            )
        if partition not in self.owned:
            return (
                Errors.NOT_COORDINATOR,
                f"broker {self.broker_id} does not lead {OFFSETS_TOPIC}-{partition}, "
                f"which owns group {group_id}",
            )
        return None

    def is_current(self, partition: int, leader_epoch: int) -> bool:
        """Whether ``partition`` is already loaded, or being loaded, in ``leader_epoch``."""
        return leader_epoch in (self.owned.get(partition), self.loading.get(partition))

    def start_loading(self, partition: int, leader_epoch: int) -> None:
        """Mark ``partition`` as loading in ``leader_epoch``: its groups wait for ``load``."""
        self.loading[partition] = leader_epoch

    async def load(
        self,
        partition: int,
        leader_epoch: int,
        on_group_loaded: Callable[[str, GroupValue], None],
    ) -> bool:
        """Replay ``partition``'s log, hand each group to ``on_group_loaded``, then own it.

        False if the load failed (the next LeaderAndIsr retries it) or was overtaken by an unload
        or a newer epoch, in which case nothing is installed.
        """
        started = time.monotonic()
        replayed = OffsetsReplay()
        try:
            position, end = await self.log.bounds(partition)
            while position < end and self.loading.get(partition) == leader_epoch:
                data = await self.log.read(partition, position, LOAD_CHUNK_BYTES)
                if not data:
                    break
                for header_position, header in iter_batches(data):
                    replayed.replay_batch(data, header_position, header)
                    position = header.last_offset + 1
        except (OffsetsLogUnavailableError, ValueError, RafkaError) as exc:
            logger.warning(
                "coordinator %d: loading %s-%d failed, will retry on the next LeaderAndIsr: %s",
                self.broker_id,
                OFFSETS_TOPIC,
                partition,
                exc,
            )
            if self.loading.get(partition) == leader_epoch:
                del self.loading[partition]
            return False
        if self.loading.get(partition) != leader_epoch:
            return False
        for key, logged in replayed.offsets.items():
            self._install(key, logged)
        for producer_id in replayed.pending.producers():
            for key, logged in replayed.pending.offsets_of(producer_id).items():
                self.pending.add(producer_id, key, logged)
        for group_id, group_value in replayed.groups.items():
            on_group_loaded(group_id, group_value)
        del self.loading[partition]
        self.owned[partition] = leader_epoch
        logger.info(
            "coordinator %d: loaded %d groups, %d offsets and %d open transactions of %s-%d "
            "in %.3f s",
            self.broker_id,
            len(replayed.groups),
            len(replayed.offsets),
            len(replayed.pending.producers()),
            OFFSETS_TOPIC,
            partition,
            time.monotonic() - started,
        )
        return True

    def unload(self, partition: int, groups: Iterable[str]) -> set[str]:
        """Stop answering for ``partition``; the ids among ``groups`` (and cached ones) it owned.

        The caller forgets the returned groups. A partition that was only loading is just
        abandoned (its load notices and installs nothing).
        """
        self.loading.pop(partition, None)
        if self.owned.pop(partition, None) is None:
            return set()
        moved = {g for g in [*groups, *self.offsets] if self.partition_for(g) == partition}
        for group_id in moved:
            self._forget(group_id)
        self.pending.discard(lambda key: self.partition_for(key.group) == partition)
        logger.info(
            "coordinator %d: unloaded %d groups of %s-%d",
            self.broker_id,
            len(moved),
            OFFSETS_TOPIC,
            partition,
        )
        return moved

    # ------------------------------------------------------------------ groups

    async def store_group(self, group: GroupMetadata) -> Errors:
        """Persist ``group``'s generation, assignor, leader and members; the error a client sees."""
        value = GroupValue(
            group.protocol_type,
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            self.clock(),
            stored_members(group),
        )
        return await self._append(
            self.partition_for(group.group_id),
            [(encode_key(GroupKey(group.group_id)), encode_group(value))],
        )

    async def delete_group(self, group_id: str) -> Errors:
        """Tombstone the group's metadata and offsets; on success its cached offsets go too."""
        tombstones: list[OffsetsRecord] = [(encode_key(GroupKey(group_id)), None)]
        tombstones += [
            (encode_key(OffsetKey(group_id, t, p)), None) for t, p in self.offsets.get(group_id, {})
        ]
        appended = await self._append(self.partition_for(group_id), tombstones)
        if appended is Errors.NONE:
            self._forget(group_id)
            self.pending.discard(lambda key: key.group == group_id)
        return appended

    async def remove_topics(self, topics: Iterable[str]) -> int:
        """The topics were deleted: tombstone every group's committed offsets for them and forget
        them (Kafka's cleanup of deleted partitions); the number of offsets removed."""
        gone = set(topics)
        self.partition_counts.forget(gone)
        self.pending.discard(lambda key: key.topic in gone)
        removed = 0
        for group_id in sorted(self.offsets):
            doomed = [tp for tp in self.offsets[group_id] if tp[0] in gone]
            if not doomed:
                continue
            self._forget(group_id, doomed)
            removed += len(doomed)
            appended = await self._append(
                self.partition_for(group_id),
                [(encode_key(OffsetKey(group_id, t, p)), None) for t, p in doomed],
            )
            if appended is not Errors.NONE:
                logger.warning(
                    "coordinator %d: tombstones of deleted topics' offsets for group %s: %s",
                    self.broker_id,
                    group_id,
                    appended.name,
                )
        return removed

    # ------------------------------------------------------------------ offsets

    def has_offsets(self, group_id: str) -> bool:
        """Whether ``group_id`` has committed offsets in a partition this coordinator owns."""
        return group_id in self.offsets

    def groups_with_offsets(self) -> list[str]:
        """The ids of every group holding committed offsets here, sorted."""
        return sorted(self.offsets)

    async def commit_offsets(
        self, group_id: str, entries: Sequence[OffsetCommitEntry]
    ) -> OffsetCommitResponse:
        """Check each partition's entry, persist the valid ones, then cache them.

        The caller has fenced the member already; refusals here are per partition.
        """
        results, values = await self._checked(entries)
        if values:
            partition = self.partition_for(group_id)
            appended = await self._write(partition, self._offsets_batch(group_id, values))
            if appended.error is Errors.NONE and partition in self.owned:
                for tp, value in values.items():
                    key = OffsetKey(group_id, tp.topic, tp.partition)
                    self._install(key, LoggedOffset(value, appended.base_offset))
            for tp in values:
                results[tp] = PartitionResult(tp.topic, tp.partition, appended.error)
        return OffsetCommitResponse(Errors.NONE, tuple(results.values()))

    async def commit_transactional_offsets(
        self, request: TxnOffsetCommitRequest
    ) -> TxnOffsetCommitResponse:
        """TxnOffsetCommit: check each entry as OffsetCommit does, append the valid ones as one
        transactional batch of the request's producer, and hold them pending until its marker.

        The caller has checked ownership and fenced the member already.
        """
        checked, values = await self._checked(request.offsets)
        results = {tp: result.error for tp, result in checked.items()}
        messages = [r.error_message for r in checked.values() if r.error_message]
        if values:
            group_id, producer_id = request.group_id, request.producer_id
            partition = self.partition_for(group_id)
            batch = self._offsets_batch(group_id, values, producer_id, request.producer_epoch)
            appended = await self._write(partition, batch)
            if appended.error is Errors.NONE and partition in self.owned:
                for tp, value in values.items():
                    key = OffsetKey(group_id, tp.topic, tp.partition)
                    self.pending.add(producer_id, key, LoggedOffset(value, appended.base_offset))
            elif appended.error is not Errors.NONE:
                messages.append(f"appending to {OFFSETS_TOPIC}-{partition}: {appended.error.name}")
            results.update(dict.fromkeys(values, appended.error))
        return TxnOffsetCommitResponse(
            Errors.NONE, tuple(results.items()), "; ".join(messages) or None
        )

    async def complete_transaction(
        self, partition: int, request: WriteTxnMarkersRequest
    ) -> WriteTxnMarkersResponse:
        """WriteTxnMarkers for offsets ``partition``: append the producer's COMMIT or ABORT marker,
        then install (COMMIT) or drop (ABORT) its pending offsets of that partition's groups.

        A partition this coordinator does not own, or is still loading, is refused with a
        retriable error and nothing is written: the transaction coordinator tries again (the new
        owner, loading the log, finds the pending offsets).
        """
        epoch = self.owned.get(partition)
        if epoch is None:
            loading = partition in self.loading
            error = Errors.COORDINATOR_LOAD_IN_PROGRESS if loading else Errors.NOT_COORDINATOR
            return WriteTxnMarkersResponse(
                error, f"broker {self.broker_id} does not own {OFFSETS_TOPIC}-{partition} now"
            )
        marker = marker_for(request, self.clock())
        appended = await self._write(partition, marker)
        if appended.error is not Errors.NONE:
            return WriteTxnMarkersResponse(
                appended.error,
                f"appending the {'COMMIT' if request.committed else 'ABORT'} marker to "
                f"{OFFSETS_TOPIC}-{partition}: {appended.error.name}",
            )
        if self.owned.get(partition) == epoch:
            ended = self.pending.complete(
                request.producer_id, lambda key: self.partition_for(key.group) == partition
            )
            if request.committed:
                for key, logged in ended.items():
                    self._install_if_later(key, logged)
        return WriteTxnMarkersResponse(Errors.NONE)

    async def _checked(
        self, entries: Sequence[OffsetCommitEntry]
    ) -> tuple[dict[TopicPartition, PartitionResult], dict[TopicPartition, OffsetValue]]:
        """The refused entries' results, and the values to write for the valid ones."""
        results: dict[TopicPartition, PartitionResult] = {}
        known = await self.partition_counts.get(
            TopicPartition(e.topic, e.partition) for e in entries
        )
        timestamp = self.clock()
        values: dict[TopicPartition, OffsetValue] = {}
        for entry in entries:
            tp = TopicPartition(entry.topic, entry.partition)
            problem = self._entry_error(entry, known)
            if problem is not None:
                results[tp] = PartitionResult(entry.topic, entry.partition, *problem)
            else:
                values[tp] = OffsetValue(entry.offset, entry.metadata, timestamp)
        return results, values

    def _offsets_batch(
        self,
        group_id: str,
        values: dict[TopicPartition, OffsetValue],
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> bytes:
        """One batch of offset records; transactional, of ``producer_id``, when one is given."""
        builder = RecordBatchBuilder(
            batch_size=1 << 62,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=NO_SEQUENCE,
            is_transactional=producer_id >= 0,
        )
        timestamp = self.clock()
        for (topic, partition), value in values.items():
            key = encode_key(OffsetKey(group_id, topic, partition))
            builder.append(timestamp, key, encode_offset(value))
        return builder.build()

    def _install(self, key: OffsetKey, logged: LoggedOffset) -> None:
        tp = TopicPartition(key.topic, key.partition)
        self.offsets.setdefault(key.group, {})[tp] = logged.value
        self._written_at.setdefault(key.group, {})[tp] = logged.batch_offset

    def _install_if_later(self, key: OffsetKey, logged: LoggedOffset) -> None:
        """Install a committed transaction's offset unless a commit later in the log is cached
        (``pending_offsets.apply_later``'s rule)."""
        written = self._written_at.get(key.group, {}).get(TopicPartition(key.topic, key.partition))
        if written is None or written < logged.batch_offset:
            self._install(key, logged)

    def _forget(self, group_id: str, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Drop the group's committed offsets of ``partitions`` (all of them if None)."""
        if partitions is None:
            self.offsets.pop(group_id, None)
            self._written_at.pop(group_id, None)
            return
        for tp in partitions:
            self.offsets.get(group_id, {}).pop(tp, None)
            self._written_at.get(group_id, {}).pop(tp, None)

    def _entry_error(
        self, entry: OffsetCommitEntry, known: dict[str, int]
    ) -> tuple[Errors, str] | None:
        topic, partition = entry.topic, entry.partition
        if partition < 0 or partition >= known.get(topic, 0):
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist"
        if entry.offset < 0:
            return (
                Errors.INVALID_COMMIT_OFFSET_SIZE,
                f"offset {entry.offset} for {topic}-{partition} is negative",
            )
        size = len(entry.metadata.encode())
        if size > self.offset_metadata_max_bytes:
            return Errors.OFFSET_METADATA_TOO_LARGE, (
                f"metadata of {size} bytes for {topic}-{partition} exceeds "
                f"offset_metadata_max_bytes={self.offset_metadata_max_bytes}"
            )
        return None

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None,
        require_stable: bool = False,
    ) -> OffsetFetchResponse:
        """The committed offsets of ``partitions`` (-1 where none); of every partition if None.
        ``require_stable``: UNSTABLE_OFFSET_COMMIT while an open transaction commits one of
        them."""
        committed = self.offsets.get(group_id, {})
        wanted = (
            sorted(committed)
            if partitions is None
            else [TopicPartition(t, p) for t, p in partitions]
        )
        if require_stable:
            unstable = [
                tp
                for tp in wanted
                if self.pending.has_pending(OffsetKey(group_id, tp.topic, tp.partition))
            ]
            if unstable:
                return OffsetFetchResponse(
                    Errors.UNSTABLE_OFFSET_COMMIT,
                    error_message=f"group {group_id!r} has transactional offsets pending for "
                    + ", ".join(partition_name(tp) for tp in unstable),
                )
        result = []
        for tp in wanted:
            value = committed.get(tp)
            result.append(
                CommittedOffset(tp.topic, tp.partition, -1)
                if value is None
                else CommittedOffset(
                    tp.topic, tp.partition, value.offset, value.metadata, value.commit_timestamp
                )
            )
        return OffsetFetchResponse(Errors.NONE, tuple(result))

    # ------------------------------------------------------------------ the log

    async def _append(self, partition: int, records: Sequence[OffsetsRecord]) -> Errors:
        """Append ``records`` as one plain batch to the partition's log; the client's error."""
        timestamp = self.clock()
        batch = build_batch([(key, value, timestamp) for key, value in records])
        return (await self._write(partition, batch)).error

    async def _write(self, partition: int, batch: bytes) -> Appended:
        """Append ``batch`` to the partition's log; the error a client should see, and where it
        landed."""
        try:
            async with self._append_locks[partition]:
                appended = await self.log.append(partition, batch)
        except OffsetsLogUnavailableError as exc:
            logger.warning(
                "coordinator %d: offsets replica %d unreachable: %s", self.broker_id, partition, exc
            )
            return Appended(Errors.NOT_COORDINATOR)
        if appended.error is Errors.NONE:
            return appended
        return Appended(APPEND_ERRORS.get(appended.error, Errors.UNKNOWN_SERVER_ERROR))
