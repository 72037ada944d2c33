"""KafkaGroupApis: Kafka's consumer group requests answered by the broker's group coordinator.

JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups,
ListGroups and DeleteGroups arrive as decoded bodies (Kafka's field names); each becomes the
request rafka's own consumer sends its coordinator (``rafka.protocol.messages.groups``) and the
answer is mapped back. Subscription and assignment metadata pass through as opaque bytes: a Kafka
client encodes its own ConsumerProtocol and its group leader assigns, so the coordinator only
stores and hands them out. ``KafkaApis`` serves these handlers beside its own.

With an authorizer each request is checked as Kafka's KafkaApis checks it: JoinGroup, SyncGroup,
Heartbeat, LeaveGroup and OffsetCommit need READ on the group, DescribeGroups and OffsetFetch
DESCRIBE, DeleteGroups DELETE (GROUP_AUTHORIZATION_FAILED, and the coordinator is not asked).
OffsetCommit also needs READ on each topic (TOPIC_AUTHORIZATION_FAILED for a refused topic's
partitions, whose offsets are not written); OffsetFetch leaves out, or refuses, the partitions of
topics the connection may not DESCRIBE; ListGroups lists every group with DESCRIBE on the cluster,
else only the groups the connection may DESCRIBE.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from rafka.actors.broker.request_authorization import (
    AuthorizingSide,
    authorized,
    authorized_operations,
    cluster_authorized,
    refused,
    request_refusal,
)
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
from rafka.protocol.wire.schema import AUTHORIZED_OPERATIONS_OMITTED
from rafka.security.acl import ACLOperation, ResourceType

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


class CoordinatorSide(AuthorizingSide, Protocol):
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

    async def _ask_group(
        self,
        operation: ACLOperation,
        group_id: str,
        failed: Callable[..., T],
        method: str,
        *args: Any,
    ) -> T:
        """``_ask`` for a request about ``group_id``; without ``operation`` on the group it is
        ``failed(GROUP_AUTHORIZATION_FAILED)`` and the coordinator is not asked."""
        if not authorized(self._broker, operation, ResourceType.GROUP, group_id):
            return failed(Errors.GROUP_AUTHORIZATION_FAILED, error_message=None)
        return await self._ask(failed, method, *args)

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
        answer = await self._ask_group(
            ACLOperation.READ, request.group_id, JoinGroupResponse, "join_group", request
        )
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
        answer = await self._ask_group(
            ACLOperation.READ, request.group_id, SyncGroupResponse, "sync_group", request
        )
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
        answer = await self._ask_group(
            ACLOperation.READ, request.group_id, GroupResponse, "heartbeat", request
        )
        return {"error_code": int(answer.error)}

    async def _leave_group(self, header: RequestHeader, body: Body) -> Body:
        group_id = body["group_id"]
        refusal = request_refusal(self._broker, group_id=group_id)
        if refusal is not None:
            return {"error_code": int(refusal), "members": []}
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
        commit = authorize_commit(self._broker, entries, body["group_id"])
        answer = OffsetCommitResponse(commit.refusal or Errors.NONE)
        if commit.asks:
            request = OffsetCommitRequest(
                body["group_id"],
                body["generation_id_or_member_epoch"],
                body["member_id"],
                commit.allowed,
            )
            answer = await self._ask(OffsetCommitResponse, "offset_commit", request)
        # A fenced or refused request has no per-partition results: its error stands for each.
        results = {(r.topic, r.partition): r.error for r in answer.partitions}
        by_topic = partitions_by_topic(
            (
                e.topic,
                {
                    "partition_index": e.partition,
                    "error_code": int(
                        Errors.TOPIC_AUTHORIZATION_FAILED
                        if e.topic in commit.unreadable
                        else results.get((e.topic, e.partition), answer.error)
                    ),
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
        topics, and the group's error. As Kafka: the offsets of topics the connection may not
        DESCRIBE are left out of a listing, and refused where asked for by name."""
        partitions = (
            None
            if topics is None
            else tuple((t["name"], p) for t in topics for p in t["partition_indexes"])
        )
        undescribable = refused(
            self._broker, ACLOperation.DESCRIBE, (t for t, _ in partitions or ())
        )
        asked = (
            None
            if partitions is None
            else tuple(tp for tp in partitions if tp[0] not in undescribable)
        )
        answer = await self._ask_group(
            ACLOperation.DESCRIBE,
            group_id,
            OffsetFetchResponse,
            "offset_fetch",
            OffsetFetchRequest(group_id, asked, require_stable),
        )
        if answer.error is Errors.NONE:
            hidden = refused(self._broker, ACLOperation.DESCRIBE, (o.topic for o in answer.offsets))
            rows = [
                (o.topic, o.partition, o.offset, o.metadata, Errors.NONE)
                for o in answer.offsets
                if o.topic not in hidden
            ]
            rows += [
                (t, p, -1, "", Errors.TOPIC_AUTHORIZATION_FAILED)
                for t, p in partitions or ()
                if t in undescribable
            ]
        else:
            # v0-1 have no group-level error code: each partition asked for carries it.
            rows = [(t, p, -1, "", answer.error) for t, p in partitions or ()]
        by_topic = partitions_by_topic(
            (
                topic,
                {
                    "partition_index": partition,
                    "committed_offset": offset,
                    "metadata": metadata,
                    "error_code": int(error),
                },
            )
            for topic, partition, offset, metadata, error in rows
        )
        return [{"name": t, "partitions": ps} for t, ps in by_topic.items()], answer.error

    # ------------------------------------------------------------------ admin

    async def _describe_groups(self, _header: RequestHeader, body: Body) -> Body:
        answers = await asyncio.gather(*(self._describe(g) for g in body["groups"]))
        with_operations = body["include_authorized_operations"]
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
                    "authorized_operations": (
                        authorized_operations(self._broker, ResourceType.GROUP, d.group_id)
                        if with_operations and d.error is Errors.NONE
                        else AUTHORIZED_OPERATIONS_OMITTED
                    ),
                }
                for d in answers
            ]
        }

    async def _describe(self, group_id: str) -> GroupDescription:
        def failed(error: Errors, error_message: str | None) -> GroupDescription:
            return GroupDescription(error, group_id, error_message=error_message)

        return await self._ask_group(
            ACLOperation.DESCRIBE, group_id, failed, "describe_group", group_id
        )

    async def _list_groups(self, _header: RequestHeader, body: Body) -> Body:
        try:
            listings: tuple[GroupListing, ...] = await self._broker.coordinator_call("list_groups")
        except RafkaError as exc:
            return {"error_code": int(exc.error), "groups": []}
        # KIP-518 (v4+): only groups in one of the states asked for; none asked means all.
        states = {s.lower() for s in body["states_filter"]}
        # As Kafka: DESCRIBE on the cluster lists every group, else only those it may describe.
        hidden: frozenset[str] = frozenset()
        if not cluster_authorized(self._broker, ACLOperation.DESCRIBE):
            names = (g.group_id for g in listings)
            hidden = refused(self._broker, ACLOperation.DESCRIBE, names, ResourceType.GROUP)
        return {
            "error_code": 0,
            "groups": [
                {
                    "group_id": g.group_id,
                    "protocol_type": g.protocol_type,
                    "group_state": g.state,
                }
                for g in listings
                if (not states or g.state.lower() in states) and g.group_id not in hidden
            ],
        }

    async def _delete_groups(self, _header: RequestHeader, body: Body) -> Body:
        names = body["groups_names"]
        answers = [
            await self._ask_group(ACLOperation.DELETE, g, GroupResponse, "delete_group", g)
            for g in names
        ]
        return {
            "results": [
                {"group_id": g, "error_code": int(a.error)}
                for g, a in zip(names, answers, strict=True)
            ]
        }


@dataclass(frozen=True)
class CommitAuthorization:
    """What of an offset commit (OffsetCommit or TxnOffsetCommit) may be written, as Kafka
    decides: the whole request's ``refusal``, else the ``allowed`` entries and the topics
    without READ (``unreadable``), whose offsets are not written."""

    refusal: Errors | None
    allowed: tuple[OffsetCommitEntry, ...]
    unreadable: frozenset[str]

    @property
    def asks(self) -> bool:
        """Whether the coordinator is asked: not when the request or every entry was refused."""
        return self.refusal is None and (bool(self.allowed) or not self.unreadable)


def authorize_commit(
    side: AuthorizingSide,
    entries: tuple[OffsetCommitEntry, ...],
    group_id: str,
    transactional_id: str | None = None,
) -> CommitAuthorization:
    """An offset commit's authorization: WRITE on its transactional id (TxnOffsetCommit), READ
    on its group, then READ on each topic."""
    refusal = request_refusal(side, transactional_id, group_id)
    if refusal is not None:
        return CommitAuthorization(refusal, (), frozenset())
    unreadable = refused(side, ACLOperation.READ, (e.topic for e in entries))
    allowed = tuple(e for e in entries if e.topic not in unreadable)
    return CommitAuthorization(None, allowed, unreadable)


def partitions_by_topic(
    rows: Iterable[tuple[str, dict[str, Any]]],
) -> dict[str, list[dict[str, Any]]]:
    """Partition entries grouped under their topic, topics in first-seen order."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for topic, entry in rows:
        grouped.setdefault(topic, []).append(entry)
    return grouped
