"""The group coordinator: a Ray actor per broker, answering for the offsets partitions it leads.

A thin shell over two Ray-free parts: ``GroupMembership`` runs the group protocol (JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, expiry, commit fencing) and ``GroupMetadataManager`` keeps
``__consumer_offsets`` (loading a partition on leadership, committed offsets, group records,
transactional offsets pending until the transaction coordinator's marker). The
broker tells its coordinator when it gains or loses leadership of an offsets partition; clients of a
group whose partition this broker does not lead, or is still loading, get NOT_COORDINATOR or
COORDINATOR_LOAD_IN_PROGRESS and look the coordinator up again.

Requests run on the actor's single event loop, one handler at a time up to its first ``await``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from typing import Any

from rafka.actors.broker.config import BrokerConfig
from rafka.actors.process import configure_actor_logging
from rafka.groups.group_metadata import GroupState
from rafka.groups.group_metadata_manager import GroupMetadataManager, OffsetsLog, TopicMetadata
from rafka.groups.membership import GroupMembership, MembershipConfig
from rafka.groups.replica_log import BrokerTopicMetadata, ReplicaOffsetsLog
from rafka.metrics import catalog
from rafka.metrics.broker_view import CommittedOffset, CoordinatorReport
from rafka.metrics.registry import MetricsRegistry, family
from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import (
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
    SyncGroupRequest,
    SyncGroupResponse,
)
from rafka.protocol.messages.transactions import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from rafka.protocol.types import TopicPartition, now_ms

logger = logging.getLogger(__name__)

TICK_S = 0.1


class GroupCoordinator:
    """Ray actor: the coordinator of the groups whose offsets partitions this broker leads.

    ``log`` and ``metadata`` default to this broker's replica actors and metadata cache through Ray;
    unit tests pass in-memory ones.
    """

    def __init__(
        self,
        config: BrokerConfig,
        namespace: str,
        log: OffsetsLog | None = None,
        metadata: TopicMetadata | None = None,
    ) -> None:
        configure_actor_logging(config.log_dirs)
        self.config = config
        self.broker_id = config.broker_id
        self.namespace = namespace
        self.manager = GroupMetadataManager(
            config.broker_id,
            config.offsets_topic_num_partitions,
            config.offset_metadata_max_bytes,
            log or ReplicaOffsetsLog(config.broker_id, namespace, config.offsets_commit_timeout_ms),
            metadata or BrokerTopicMetadata(config.broker_id, namespace),
            now_ms,
        )
        self.membership = GroupMembership(
            MembershipConfig(
                config.group_min_session_timeout_ms,
                config.group_max_session_timeout_ms,
                config.group_initial_rebalance_delay_ms,
            ),
            now_ms,
            self.manager.store_group,
        )
        self._loads: set[asyncio.Task[bool]] = set()
        self.metrics = MetricsRegistry(config.metrics_enabled)
        self._offset_commits = self.metrics.counter(catalog.OFFSET_COMMITS, broker=self.broker_id)
        self.metrics.computed(
            catalog.REBALANCES, lambda: self.membership.rebalances, broker=self.broker_id
        )
        self._ticker = asyncio.get_event_loop().create_task(self._tick_loop())

    # ------------------------------------------------------------------ ownership

    async def on_leadership(
        self, partition: int, is_leader: bool, leader_epoch: int, num_partitions: int
    ) -> None:
        """The broker became leader (load) or stopped leading (unload) an offsets partition."""
        self.manager.num_partitions = num_partitions
        if is_leader and self.manager.is_current(partition, leader_epoch):
            return
        for group_id in self.manager.unload(partition, self.membership.groups):
            self.membership.unload(group_id)
        if not is_leader:
            return
        self.manager.start_loading(partition, leader_epoch)
        load = self.manager.load(partition, leader_epoch, self.membership.restore)
        # Keep a reference: the loop holds tasks weakly; unreferenced, one may vanish mid-load.
        task = asyncio.get_running_loop().create_task(load)
        self._loads.add(task)
        task.add_done_callback(self._loads.discard)

    async def on_topics_deleted(self, topics: list[str]) -> int:
        """The controller deleted these topics: their committed offsets go (tombstoned)."""
        return await self.manager.remove_topics(topics)

    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.membership.tick()
            except Exception:  # a bug in one group must not stop expiry for every other group
                logger.exception("coordinator %d: group expiry failed", self.broker_id)

    # ------------------------------------------------------------------ membership

    async def join_group(self, request: JoinGroupRequest) -> JoinGroupResponse:
        """JoinGroup: resolves when the rebalance's join phase completes."""
        error = self.manager.ownership_error(request.group_id)
        if error is not None:
            return JoinGroupResponse(error[0], error_message=error[1])
        return await self.membership.join(request)

    async def sync_group(self, request: SyncGroupRequest) -> SyncGroupResponse:
        """SyncGroup: the member's assignment once the leader's has been persisted."""
        error = self.manager.ownership_error(request.group_id)
        if error is not None:
            return SyncGroupResponse(error[0], error_message=error[1])
        return await self.membership.sync(request)

    async def heartbeat(self, request: HeartbeatRequest) -> GroupResponse:
        """Heartbeat: keeps the member's session; REBALANCE_IN_PROGRESS tells it to rejoin."""
        error = self.manager.ownership_error(request.group_id)
        return GroupResponse(*error) if error is not None else self.membership.heartbeat(request)

    async def leave_group(self, request: LeaveGroupRequest) -> GroupResponse:
        """LeaveGroup: the member goes now and the rest rebalance."""
        error = self.manager.ownership_error(request.group_id)
        return GroupResponse(*error) if error is not None else self.membership.leave(request)

    # ------------------------------------------------------------------ offsets

    async def offset_commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """OffsetCommit: fence stale generations and unknown members, then persist and cache."""
        error = self.manager.ownership_error(request.group_id) or self.membership.commit_error(
            request.group_id, request.generation_id, request.member_id
        )
        if error is not None:
            return OffsetCommitResponse(error[0], error_message=error[1])
        response = await self.manager.commit_offsets(request.group_id, request.offsets)
        self._offset_commits.inc(sum(r.error is Errors.NONE for r in response.partitions))
        return response

    async def offset_fetch(self, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """OffsetFetch: the committed offsets (-1 where none), from memory."""
        error = self.manager.ownership_error(request.group_id)
        if error is not None:
            return OffsetFetchResponse(error[0], error_message=error[1])
        return self.manager.fetch_offsets(
            request.group_id, request.partitions, request.require_stable
        )

    async def txn_offset_commit(self, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
        """TxnOffsetCommit: fence as KIP-447 says, then append the offsets as the producer's
        transactional batch; they stay invisible to OffsetFetch until its COMMIT marker."""
        error = self.manager.ownership_error(request.group_id) or self.membership.txn_commit_error(
            request.group_id, request.generation_id, request.member_id
        )
        if error is not None:
            refused = tuple(
                (TopicPartition(e.topic, e.partition), error[0]) for e in request.offsets
            )
            return TxnOffsetCommitResponse(error[0], refused, error[1])
        return await self.manager.commit_transactional_offsets(request)

    async def write_txn_markers(
        self, offsets_partition: int, request: WriteTxnMarkersRequest
    ) -> WriteTxnMarkersResponse:
        """WriteTxnMarkers from the transaction coordinator for ``__consumer_offsets`` partition
        ``offsets_partition``: the marker is appended, then the producer's pending offsets of
        that partition's groups are committed or dropped."""
        return await self.manager.complete_transaction(offsets_partition, request)

    # ------------------------------------------------------------------ admin

    async def list_groups(self) -> tuple[GroupListing, ...]:
        """ListGroups: every group this coordinator owns, including ones that only hold offsets."""
        listings = {
            g: GroupListing(g, meta.protocol_type, meta.state.value)
            for g, meta in self.membership.groups.items()
            if meta.state is not GroupState.DEAD
        }
        for group_id in self.manager.groups_with_offsets():
            listings.setdefault(
                group_id, GroupListing(group_id, "consumer", GroupState.EMPTY.value)
            )
        return tuple(listings[g] for g in sorted(listings))

    async def describe_group(self, group_id: str) -> GroupDescription:
        """DescribeGroups for one group; an unknown group is reported Dead, as Kafka does."""
        error = self.manager.ownership_error(group_id)
        if error is not None:
            return GroupDescription(error[0], group_id, error_message=error[1])
        group = self.membership.groups.get(group_id)
        if group is None:
            empty = self.manager.has_offsets(group_id)
            state = GroupState.EMPTY if empty else GroupState.DEAD
            return GroupDescription(Errors.NONE, group_id, state.value)
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
        error = self.manager.ownership_error(group_id)
        if error is not None:
            return GroupResponse(*error)
        group = self.membership.groups.get(group_id)
        if group is not None and not group.is_empty():
            return GroupResponse(
                Errors.NON_EMPTY_GROUP,
                f"group {group_id} has {len(group.members)} members; stop them first",
            )
        if group is None and not self.manager.has_offsets(group_id):
            return GroupResponse(Errors.GROUP_ID_NOT_FOUND, f"group {group_id} does not exist")
        appended = await self.manager.delete_group(group_id)
        if appended is not Errors.NONE:
            return GroupResponse(appended, f"deleting group {group_id}: {appended.message}")
        self.membership.unload(group_id)
        return GroupResponse(Errors.NONE)

    async def describe(self) -> dict[str, Any]:
        """What this coordinator owns, for tools and tests."""
        return {
            "broker_id": self.broker_id,
            "pid": os.getpid(),
            "owned": sorted(self.manager.owned),
            "loading": sorted(self.manager.loading),
            "groups": sorted(self.membership.groups),
            "offsets_groups": self.manager.groups_with_offsets(),
            "pending_transactions": self.manager.pending.producers(),
        }

    async def metrics_report(self) -> CoordinatorReport:
        """The coordinator's families (groups by state, rebalances, offset commits) and every
        committed offset it holds, for its broker's lag."""
        states = Counter(
            meta.state.value
            for meta in self.membership.groups.values()
            if meta.state is not GroupState.DEAD
        )
        for group_id in self.manager.groups_with_offsets():
            if group_id not in self.membership.groups:
                states[GroupState.EMPTY.value] += 1
        by_state = family(
            catalog.GROUPS,
            (
                ({"broker": self.broker_id, "state": state.value}, states[state.value])
                for state in GroupState
                if state is not GroupState.DEAD
            ),
        )
        committed = tuple(
            CommittedOffset(group_id, tp, value.offset)
            for group_id, offsets in self.manager.offsets.items()
            for tp, value in offsets.items()
        )
        return CoordinatorReport((*self.metrics.collect(), by_state), committed)

    async def ping(self) -> int:
        """Liveness check."""
        return self.broker_id
