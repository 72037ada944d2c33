"""KafkaGroupApis: Kafka's consumer group requests answered by the broker's group coordinator.

JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups,
ListGroups and DeleteGroups arrive as decoded bodies (Kafka's field names); each becomes the
request rafka's own consumer sends its coordinator (``rafka.protocol.messages.groups``) and the
answer is mapped back. Subscription and assignment metadata pass through as opaque bytes: a Kafka
client encodes its own ConsumerProtocol and its group leader assigns, so the coordinator only
stores and hands them out. ``KafkaApis`` serves these handlers beside its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.groups import (
    GroupDescription,
    GroupListing,
    GroupResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitEntry,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from rafka.protocol.wire.group_apis import (
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC_GROUP,
)
from rafka.protocol.wire.headers import RequestHeader

Body = Mapping[str, Any]
Handler = Callable[[RequestHeader, Body], Awaitable[Body]]
T = TypeVar("T")

# Errors about the coordinator itself, not one member: LeaveGroup v3+ reports them for the
# whole request, as Kafka's broker does.
_GROUP_WIDE_ERRORS = frozenset(
    {
        Errors.NOT_COORDINATOR,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.INVALID_GROUP_ID,
    }
)


class CoordinatorSide(Protocol):
    """What the group APIs need of their broker (the broker actor, or a fake in unit tests)."""

    async def coordinator_call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on this broker's group coordinator actor; raises
        COORDINATOR_NOT_AVAILABLE when the coordinator cannot be reached."""


class KafkaGroupApis:
    """Handles the consumer group requests of the Kafka listener for one broker."""

    def __init__(self, broker: CoordinatorSide) -> None:
        self._broker = broker

    def handlers(self) -> dict[int, Handler]:
        """The handler of each group API, by api key."""
        return {
            OFFSET_COMMIT.key: self._offset_commit,
            OFFSET_FETCH.key: self._offset_fetch,
            JOIN_GROUP.key: self._join_group,
            HEARTBEAT.key: self._heartbeat,
            LEAVE_GROUP.key: self._leave_group,
            SYNC_GROUP.key: self._sync_group,
            DESCRIBE_GROUPS.key: self._describe_groups,
            LIST_GROUPS.key: self._list_groups,
            DELETE_GROUPS.key: self._delete_groups,
        }

    async def _ask(self, failed: Callable[..., T], method: str, *args: Any) -> T:
        """The coordinator's answer, or ``failed(error, error_message=...)`` when it could not
        be asked."""
        try:
            answer: T = await self._broker.coordinator_call(method, *args)
        except RafkaError as exc:
            return failed(exc.error, error_message=exc.message)
        return answer

    # ------------------------------------------------------------------ membership

    async def _join_group(self, header: RequestHeader, body: Body) -> Body:
        session_timeout_ms = body["session_timeout_ms"]
        rebalance_timeout_ms = body["rebalance_timeout_ms"]
        request = JoinGroupRequest(
            body["group_id"],
            session_timeout_ms,
            # v0 has no rebalance timeout: the session timeout stands in, as in Kafka.
            rebalance_timeout_ms if rebalance_timeout_ms >= 0 else session_timeout_ms,
            body["member_id"],
            body["protocol_type"],
            tuple((p["name"], bytes(p["metadata"])) for p in body["protocols"]),
            header.client_id or "",
        )
        answer = await self._ask(JoinGroupResponse, "join_group", request)
        joined = answer.error is Errors.NONE
        return {
            "error_code": int(answer.error),
            "generation_id": answer.generation_id,
            # KIP-559 (v7+): the group's protocol type, which the join just matched.
            "protocol_type": body["protocol_type"] if joined else None,
            "protocol_name": answer.protocol_name if joined or header.api_version < 7 else None,
            "leader": answer.leader_id,
            "member_id": answer.member_id,
            "members": [
                {"member_id": member_id, "metadata": metadata}
                for member_id, metadata in answer.members
            ],
        }

    async def _sync_group(self, _header: RequestHeader, body: Body) -> Body:
        request = SyncGroupRequest(
            body["group_id"],
            body["generation_id"],
            body["member_id"],
            tuple((a["member_id"], bytes(a["assignment"])) for a in body["assignments"]),
        )
        answer = await self._ask(SyncGroupResponse, "sync_group", request)
        synced = answer.error is Errors.NONE
        return {
            "error_code": int(answer.error),
            # KIP-559 (v5+): the type and assignor of the generation the member synced.
            "protocol_type": body["protocol_type"] if synced else None,
            "protocol_name": body["protocol_name"] if synced else None,
            "assignment": answer.assignment,
        }

    async def _heartbeat(self, _header: RequestHeader, body: Body) -> Body:
        request = HeartbeatRequest(body["group_id"], body["generation_id"], body["member_id"])
        answer = await self._ask(GroupResponse, "heartbeat", request)
        return {"error_code": int(answer.error)}

    async def _leave_group(self, header: RequestHeader, body: Body) -> Body:
        group_id = body["group_id"]
        if header.api_version < 3:
            answer = await self._ask(
                GroupResponse, "leave_group", LeaveGroupRequest(group_id, body["member_id"])
            )
            return {"error_code": int(answer.error)}
        members = body["members"]
        answers = [
            await self._ask(
                GroupResponse, "leave_group", LeaveGroupRequest(group_id, m["member_id"])
            )
            for m in members
        ]
        group_wide = next((a.error for a in answers if a.error in _GROUP_WIDE_ERRORS), None)
        return {
            "error_code": int(group_wide or Errors.NONE),
            "members": [
                {
                    "member_id": m["member_id"],
                    "group_instance_id": m["group_instance_id"],
                    "error_code": int(a.error),
                }
                for m, a in zip(members, answers, strict=True)
            ],
        }

    # ------------------------------------------------------------------ offsets

    async def _offset_commit(self, _header: RequestHeader, body: Body) -> Body:
        entries = tuple(
            OffsetCommitEntry(
                topic["name"],
                p["partition_index"],
                p["committed_offset"],
                p["committed_metadata"] or "",
            )
            for topic in body["topics"]
            for p in topic["partitions"]
        )
        request = OffsetCommitRequest(
            body["group_id"], body["generation_id_or_member_epoch"], body["member_id"], entries
        )
        answer = await self._ask(OffsetCommitResponse, "offset_commit", request)
        # A fenced or refused request has no per-partition results: its error stands for each.
        results = {(r.topic, r.partition): r.error for r in answer.partitions}
        by_topic = partitions_by_topic(
            (
                e.topic,
                {
                    "partition_index": e.partition,
                    "error_code": int(results.get((e.topic, e.partition), answer.error)),
                },
            )
            for e in entries
        )
        return {"topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}

    async def _offset_fetch(self, header: RequestHeader, body: Body) -> Body:
        require_stable = body["require_stable"]
        if header.api_version < 8:
            topics, error = await self._fetch_offsets(
                body["group_id"], body["topics"], require_stable
            )
            return {"topics": topics, "error_code": int(error)}
        groups = body["groups"]
        answers = await asyncio.gather(
            *(self._fetch_offsets(g["group_id"], g["topics"], require_stable) for g in groups)
        )
        return {
            "groups": [
                {"group_id": g["group_id"], "topics": topics, "error_code": int(error)}
                for g, (topics, error) in zip(groups, answers, strict=True)
            ]
        }

    async def _fetch_offsets(
        self, group_id: str, topics: list[Body] | None, require_stable: bool
    ) -> tuple[list[dict[str, Any]], Errors]:
        """One group's committed offsets of ``topics`` (every partition when None), as response
        topics, and the group's error."""
        partitions = (
            None
            if topics is None
            else tuple((t["name"], p) for t in topics for p in t["partition_indexes"])
        )
        request = OffsetFetchRequest(group_id, partitions, require_stable)
        answer = await self._ask(OffsetFetchResponse, "offset_fetch", request)
        if answer.error is Errors.NONE:
            rows = [(o.topic, o.partition, o.offset, o.metadata) for o in answer.offsets]
        else:
            # v0-1 have no group-level error code: each partition asked for carries it.
            rows = [(t, p, -1, "") for t, p in partitions or ()]
        by_topic = partitions_by_topic(
            (
                topic,
                {
                    "partition_index": partition,
                    "committed_offset": offset,
                    "metadata": metadata,
                    "error_code": int(answer.error),
                },
            )
            for topic, partition, offset, metadata in rows
        )
        return [{"name": t, "partitions": ps} for t, ps in by_topic.items()], answer.error

    # ------------------------------------------------------------------ admin

    async def _describe_groups(self, _header: RequestHeader, body: Body) -> Body:
        answers = await asyncio.gather(*(self._describe(g) for g in body["groups"]))
        return {
            "groups": [
                {
                    "error_code": int(d.error),
                    "group_id": d.group_id,
                    "group_state": d.state,
                    "protocol_type": d.protocol_type,
                    "protocol_data": d.protocol,
                    "members": [
                        {
                            "member_id": m.member_id,
                            "client_id": m.client_id,
                            "client_host": m.client_host,
                            # The coordinator keeps no member's subscription for describing.
                            "member_metadata": b"",
                            "member_assignment": m.assignment,
                        }
                        for m in d.members
                    ],
                }
                for d in answers
            ]
        }

    async def _describe(self, group_id: str) -> GroupDescription:
        def failed(error: Errors, error_message: str | None) -> GroupDescription:
            return GroupDescription(error, group_id, error_message=error_message)

        return await self._ask(failed, "describe_group", group_id)

    async def _list_groups(self, _header: RequestHeader, body: Body) -> Body:
        try:
            listings: tuple[GroupListing, ...] = await self._broker.coordinator_call("list_groups")
        except RafkaError as exc:
            return {"error_code": int(exc.error), "groups": []}
        # KIP-518 (v4+): only groups in one of the states asked for; none asked means all.
        states = {s.lower() for s in body["states_filter"]}
        return {
            "error_code": 0,
            "groups": [
                {
                    "group_id": g.group_id,
                    "protocol_type": g.protocol_type,
                    "group_state": g.state,
                }
                for g in listings
                if not states or g.state.lower() in states
            ],
        }

    async def _delete_groups(self, _header: RequestHeader, body: Body) -> Body:
        names = body["groups_names"]
        answers = [await self._ask(GroupResponse, "delete_group", g) for g in names]
        return {
            "results": [
                {"group_id": g, "error_code": int(a.error)}
                for g, a in zip(names, answers, strict=True)
            ]
        }


def partitions_by_topic(
    rows: Iterable[tuple[str, dict[str, Any]]],
) -> dict[str, list[dict[str, Any]]]:
    """Partition entries grouped under their topic, topics in first-seen order."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for topic, entry in rows:
        grouped.setdefault(topic, []).append(entry)
    return grouped
