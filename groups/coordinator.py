"""The group coordinator: one Ray actor per broker, owning the groups of the offsets partitions it leads.

A group belongs to partition ``partition_for(group_id)`` of ``__consumer_offsets``; the coordinator on
the broker leading that partition answers for it. The broker tells its coordinator when it gains or
loses leadership of an offsets partition: on gaining it, the coordinator reads the partition's log
(from the local replica) to rebuild groups and committed offsets, answering
COORDINATOR_LOAD_IN_PROGRESS meanwhile; on losing it, it drops them, and clients asking it get
NOT_COORDINATOR and look the coordinator up again.

Writes (committed offsets, group metadata after a rebalance, tombstones) are appended to the local
leader replica with acks=all, so an acknowledged commit survives the coordinator's broker dying.
Requests run on the actor's single event loop, one handler at a time up to its first ``await``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import defaultdict
from typing import Any

import ray

from rafka.actors import names
from rafka.actors.broker.config import BrokerConfig
from rafka.groups.group_metadata import GroupMetadata, GroupState, validate_group_id
from rafka.groups.membership import GroupMembership, MembershipConfig, stored_members
from rafka.groups.offsets_codec import (
    OFFSETS_TOPIC,
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    decode_group,
    decode_key,
    decode_offset,
    encode_group,
    encode_key,
    encode_offset,
    partition_for,
)
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.groups import (
    CommittedOffset,
    GroupDescription,
    GroupListing,
    GroupResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberDescription,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
    SyncGroupRequest,
    SyncGroupResponse,
)
from rafka.protocol.messages.metadata import MetadataRequest
from rafka.protocol.messages.produce import ACKS_ALL, ProduceRequest
from rafka.protocol.records.batch import decode_records, iter_batches
from rafka.protocol.records.builder import build_batch
from rafka.protocol.types import now_ms

logger = logging.getLogger(__name__)

TICK_S = 0.1
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
}


class GroupCoordinator:
    """Ray actor: the coordinator of the groups whose offsets partitions this broker leads."""

    def __init__(self, config: BrokerConfig, namespace: str) -> None:
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s"
        )
        self.config = config
        self.broker_id = config.broker_id
        self.namespace = namespace
        self.membership = GroupMembership(
            MembershipConfig(
                config.group_min_session_timeout_ms,
                config.group_max_session_timeout_ms,
                config.group_initial_rebalance_delay_ms,
            ),
            now_ms,
            self._store_group,
        )
        self.offsets: dict[str, dict[tuple[str, int], OffsetValue]] = {}
        self.owned: dict[int, int] = {}
        self.loading: dict[int, int] = {}
        self.num_partitions = config.offsets_topic_num_partitions
        self._partition_count_cache: dict[str, int] = {}
        self._partition_counts_at = 0.0
        # One append at a time per offsets partition: a replica actor may run concurrent produce
        # requests in either order, and a group's later commit must land after its earlier one.
        self._append_locks: defaultdict[int, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._ticker = asyncio.get_event_loop().create_task(self._tick_loop())

    # ------------------------------------------------------------------ ownership

    async def on_leadership(
        self, partition: int, is_leader: bool, leader_epoch: int, num_partitions: int
    ) -> None:
        """The broker became leader (load) or stopped leading (unload) an offsets partition."""
        self.num_partitions = num_partitions
        if not is_leader:
            self._unload(partition)
            return
        if self.owned.get(partition) == leader_epoch or self.loading.get(partition) == leader_epoch:
            return
        self._unload(partition)
        self.loading[partition] = leader_epoch
        asyncio.get_running_loop().create_task(self._load(partition, leader_epoch))

    async def _load(self, partition: int, epoch: int) -> None:
        """Rebuild the partition's groups and offsets from its log, then start answering for them."""
        started = time.monotonic()
        offsets: dict[OffsetKey, OffsetValue] = {}
        groups: dict[str, GroupValue] = {}
        try:
            replica = ray.get_actor(
                names.replica_actor_name(OFFSETS_TOPIC, partition, self.broker_id),
                namespace=self.namespace,
            )
            info = await replica.describe.remote()
            position, end = info["log_start_offset"], info["log_end_offset"]
            while position < end and self.loading.get(partition) == epoch:
                data = await replica.read_log.remote(position, LOAD_CHUNK_BYTES)
                if not data:
                    break
                for header_position, header in iter_batches(data):
                    for record in decode_records(data, header_position, header):
                        self._replay(record.key, record.value, offsets, groups)
                    position = header.last_offset + 1
        except (ray.exceptions.RayActorError, ValueError, RafkaError) as exc:
            logger.warning(
                "coordinator %d: loading %s-%d failed, will retry on the next LeaderAndIsr: %s",
                self.broker_id,
                OFFSETS_TOPIC,
                partition,
                exc,
            )
            if self.loading.get(partition) == epoch:
                del self.loading[partition]
            return
        if self.loading.get(partition) != epoch:
            return
        for key, value in offsets.items():
            self.offsets.setdefault(key.group, {})[(key.topic, key.partition)] = value
        for group_id, value in groups.items():
            self.membership.restore(group_id, value)
        del self.loading[partition]
        self.owned[partition] = epoch
        logger.info(
            "coordinator %d: loaded %d groups and %d offsets of %s-%d in %.3f s",
            self.broker_id,
            len(groups),
            len(offsets),
            OFFSETS_TOPIC,
            partition,
            time.monotonic() - started,
        )

    @staticmethod
    def _replay(
        key_bytes: bytes | None,
        value: bytes | None,
        offsets: dict[OffsetKey, OffsetValue],
        groups: dict[str, GroupValue],
    ) -> None:
        if key_bytes is None:
            return
        key = decode_key(key_bytes)
        if isinstance(key, OffsetKey):
            if value is None:
                offsets.pop(key, None)
            else:
                offsets[key] = decode_offset(value)
        elif value is None:
            groups.pop(key.group, None)
            for stale in [k for k in offsets if k.group == key.group]:
                del offsets[stale]
        else:
            groups[key.group] = decode_group(value)

    def _unload(self, partition: int) -> None:
        self.loading.pop(partition, None)
        if self.owned.pop(partition, None) is None:
            return
        moved = [
            g
            for g in list(self.membership.groups) + list(self.offsets)
            if self._partition(g) == partition
        ]
        for group_id in set(moved):
            self.membership.unload(group_id)
            self.offsets.pop(group_id, None)
        logger.info(
            "coordinator %d: unloaded %d groups of %s-%d",
            self.broker_id,
            len(set(moved)),
            OFFSETS_TOPIC,
            partition,
        )

    def _partition(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def _ownership_error(self, group_id: str) -> tuple[Errors, str] | None:
        """Why this coordinator cannot answer for ``group_id`` now, or None."""
        try:
            validate_group_id(group_id)
        except RafkaError as exc:
            return exc.error, exc.message or exc.error.message
        partition = self._partition(group_id)
        if partition in self.loading:
            return (
                Errors.COORDINATOR_LOAD_IN_PROGRESS,
                f"broker {self.broker_id} is loading {OFFSETS_TOPIC}-{partition}",
            )
        if partition not in self.owned:
            return (
                Errors.NOT_COORDINATOR,
                f"broker {self.broker_id} does not lead {OFFSETS_TOPIC}-{partition}, which owns group {group_id}",
            )
        return None

    # ------------------------------------------------------------------ membership

    async def join_group(self, request: JoinGroupRequest) -> JoinGroupResponse:
        """JoinGroup: resolves when the rebalance's join phase completes."""
        error = self._ownership_error(request.group_id)
        if error is not None:
            return JoinGroupResponse(error[0], error_message=error[1])
        return await self.membership.join(request)

    async def sync_group(self, request: SyncGroupRequest) -> SyncGroupResponse:
        """SyncGroup: the member's assignment once the leader's has been persisted."""
        error = self._ownership_error(request.group_id)
        if error is not None:
            return SyncGroupResponse(error[0], error_message=error[1])
        return await self.membership.sync(request)

    async def heartbeat(self, request: HeartbeatRequest) -> GroupResponse:
        """Heartbeat: keeps the member's session; REBALANCE_IN_PROGRESS tells it to rejoin."""
        error = self._ownership_error(request.group_id)
        return GroupResponse(*error) if error is not None else self.membership.heartbeat(request)

    async def leave_group(self, request: LeaveGroupRequest) -> GroupResponse:
        """LeaveGroup: the member goes now and the rest rebalance."""
        error = self._ownership_error(request.group_id)
        return GroupResponse(*error) if error is not None else self.membership.leave(request)

    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.membership.tick()
            except Exception:  # a bug in one group must not stop expiry for every other group
                logger.exception("coordinator %d: group expiry failed", self.broker_id)

    async def _store_group(self, group: GroupMetadata) -> Errors:
        value = GroupValue(
            group.protocol_type,
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            now_ms(),
            stored_members(group),
        )
        return await self._append(
            self._partition(group.group_id),
            [(encode_key(GroupKey(group.group_id)), encode_group(value))],
        )

    async def _append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> Errors:
        """Append to the local offsets replica with acks=all; the error a coordinator client should see."""
        timestamp = now_ms()
        batch = build_batch([(key, value, timestamp) for key, value in records])
        try:
            replica = ray.get_actor(
                names.replica_actor_name(OFFSETS_TOPIC, partition, self.broker_id),
                namespace=self.namespace,
            )
            async with self._append_locks[partition]:
                response = await replica.produce.remote(
                    ProduceRequest(batch, ACKS_ALL, self.config.offsets_commit_timeout_ms)
                )
        except (ValueError, ray.exceptions.RayActorError) as exc:
            logger.warning(
                "coordinator %d: offsets replica %d unreachable: %s", self.broker_id, partition, exc
            )
            return Errors.NOT_COORDINATOR
        if response.error is Errors.NONE:
            return Errors.NONE
        return APPEND_ERRORS.get(response.error, Errors.UNKNOWN_SERVER_ERROR)

    # ------------------------------------------------------------------ offsets

    async def offset_commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """OffsetCommit: fence stale generations, check each partition, persist, then cache."""
        error = self._ownership_error(request.group_id) or self.membership.commit_error(
            request.group_id, request.generation_id, request.member_id
        )
        if error is not None:
            return OffsetCommitResponse(error[0], error_message=error[1])
        results: dict[tuple[str, int], PartitionResult] = {}
        known = await self._partition_counts({(e.topic, e.partition) for e in request.offsets})
        valid = []
        for entry in request.offsets:
            problem = self._commit_entry_error(
                entry.topic, entry.partition, entry.offset, entry.metadata, known
            )
            if problem is not None:
                results[(entry.topic, entry.partition)] = PartitionResult(
                    entry.topic, entry.partition, *problem
                )
            else:
                valid.append(entry)
        if valid:
            timestamp = now_ms()
            values = {
                (e.topic, e.partition): OffsetValue(e.offset, e.metadata, timestamp) for e in valid
            }
            records = [
                (encode_key(OffsetKey(request.group_id, t, p)), encode_offset(v))
                for (t, p), v in values.items()
            ]
            appended = await self._append(self._partition(request.group_id), records)
            if appended is Errors.NONE and self._partition(request.group_id) in self.owned:
                self.offsets.setdefault(request.group_id, {}).update(values)
            for topic, partition in values:
                results[(topic, partition)] = PartitionResult(topic, partition, appended)
        return OffsetCommitResponse(Errors.NONE, tuple(results.values()))

    def _commit_entry_error(
        self, topic: str, partition: int, offset: int, metadata: str, known: dict[str, int]
    ) -> tuple[Errors, str] | None:
        if partition < 0 or partition >= known.get(topic, 0):
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist"
        if offset < 0:
            return (
                Errors.INVALID_COMMIT_OFFSET_SIZE,
                f"offset {offset} for {topic}-{partition} is negative",
            )
        if len(metadata.encode()) > self.config.offset_metadata_max_bytes:
            return Errors.OFFSET_METADATA_TOO_LARGE, (
                f"metadata of {len(metadata.encode())} bytes for {topic}-{partition} exceeds "
                f"offset_metadata_max_bytes={self.config.offset_metadata_max_bytes}"
            )
        return None

    async def _partition_counts(self, partitions: set[tuple[str, int]]) -> dict[str, int]:
        """Partition counts of the committed topics, from this broker's metadata cache.

        Counts are cached for PARTITION_COUNTS_TTL_S (a commit is one append, not also a metadata
        call); a partition the cache does not know, or an old cache, refreshes it first.
        """
        cache = self._partition_count_cache
        fresh = time.monotonic() - self._partition_counts_at < PARTITION_COUNTS_TTL_S
        if not fresh or any(p >= cache.get(t, 0) for t, p in partitions):
            broker = ray.get_actor(
                names.broker_actor_name(self.broker_id), namespace=self.namespace
            )
            topics = tuple(sorted({t for t, _ in partitions} | set(cache)))
            response = await broker.metadata.remote(
                MetadataRequest(topics, allow_auto_topic_creation=False)
            )
            self._partition_count_cache = {
                t.name: len(t.partitions) for t in response.topics if t.error is Errors.NONE
            }
            self._partition_counts_at = time.monotonic()
        return self._partition_count_cache

    async def offset_fetch(self, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """OffsetFetch: the committed offsets (-1 where none), from memory."""
        error = self._ownership_error(request.group_id)
        if error is not None:
            return OffsetFetchResponse(error[0], error_message=error[1])
        committed = self.offsets.get(request.group_id, {})
        wanted = (
            sorted(committed)
            if request.partitions is None
            else [tuple(tp) for tp in request.partitions]
        )
        result = []
        for topic, partition in wanted:
            value = committed.get((topic, partition))
            result.append(
                CommittedOffset(topic, partition, -1)
                if value is None
                else CommittedOffset(
                    topic, partition, value.offset, value.metadata, value.commit_timestamp
                )
            )
        return OffsetFetchResponse(Errors.NONE, tuple(result))

    # ------------------------------------------------------------------ admin

    async def list_groups(self) -> tuple[GroupListing, ...]:
        """ListGroups: every group this coordinator owns, including ones that only hold offsets."""
        listings = {
            g: GroupListing(g, meta.protocol_type, meta.state.value)
            for g, meta in self.membership.groups.items()
            if meta.state is not GroupState.DEAD
        }
        for group_id in self.offsets:
            listings.setdefault(
                group_id, GroupListing(group_id, "consumer", GroupState.EMPTY.value)
            )
        return tuple(listings[g] for g in sorted(listings))

    async def describe_group(self, group_id: str) -> GroupDescription:
        """DescribeGroups for one group; an unknown group is reported Dead, as Kafka does."""
        error = self._ownership_error(group_id)
        if error is not None:
            return GroupDescription(error[0], group_id, error_message=error[1])
        group = self.membership.groups.get(group_id)
        if group is None:
            state = GroupState.EMPTY.value if group_id in self.offsets else GroupState.DEAD.value
            return GroupDescription(Errors.NONE, group_id, state)
        members = tuple(
            MemberDescription(m.member_id, m.client_id, m.client_host, m.assignment)
            for m in group.members.values()
        )
        return GroupDescription(
            Errors.NONE,
            group_id,
            group.state.value,
            group.protocol_type,
            group.protocol_name or "",
            group.generation_id,
            members,
        )

    async def delete_group(self, group_id: str) -> GroupResponse:
        """DeleteGroups: tombstone an inactive group's metadata and offsets."""
        error = self._ownership_error(group_id)
        if error is not None:
            return GroupResponse(*error)
        group = self.membership.groups.get(group_id)
        if group is not None and not group.is_empty():
            return GroupResponse(
                Errors.NON_EMPTY_GROUP,
                f"group {group_id} has {len(group.members)} members; stop them first",
            )
        if group is None and group_id not in self.offsets:
            return GroupResponse(Errors.GROUP_ID_NOT_FOUND, f"group {group_id} does not exist")
        tombstones: list[tuple[bytes, bytes | None]] = [(encode_key(GroupKey(group_id)), None)]
        tombstones += [
            (encode_key(OffsetKey(group_id, t, p)), None) for t, p in self.offsets.get(group_id, {})
        ]
        appended = await self._append(self._partition(group_id), tombstones)
        if appended is not Errors.NONE:
            return GroupResponse(appended, f"deleting group {group_id}: {appended.message}")
        self.membership.unload(group_id)
        self.offsets.pop(group_id, None)
        return GroupResponse(Errors.NONE)

    async def describe(self) -> dict[str, Any]:
        """What this coordinator owns, for tools and tests."""
        return {
            "broker_id": self.broker_id,
            "pid": os.getpid(),
            "owned": sorted(self.owned),
            "loading": sorted(self.loading),
            "groups": sorted(self.membership.groups),
            "offsets_groups": sorted(self.offsets),
        }

    async def ping(self) -> int:
        """Liveness check."""
        return self.broker_id
