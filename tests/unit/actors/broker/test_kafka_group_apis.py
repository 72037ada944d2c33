"""KafkaGroupApis against a fake coordinator: Kafka's group request bodies (round-tripped through
the wire codec at several versions) mapped onto rafka's coordinator requests, and the answers
mapped back into bodies that encode at the request's version, errors as Kafka's codes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.kafka_group_apis import KafkaGroupApis
from rafka.protocol.errors import Errors
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
    OffsetCommitEntry,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
    SyncGroupRequest,
    SyncGroupResponse,
)
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY

pytestmark = pytest.mark.timeout(30)

JOIN, SYNC, HEARTBEAT, LEAVE = 11, 14, 12, 13
COMMIT, FETCH, DESCRIBE, LIST, DELETE = 8, 9, 15, 16, 42


class FakeCoordinator:
    """Records what KafkaGroupApis asks the coordinator; answers from ``answers`` by method, or
    raises ``unavailable`` as the broker does when its coordinator actor is gone."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.unavailable = False
        # No authorizer: every request is allowed (the test_acl_checks_* modules check ACLs).
        self.authorizer = BrokerAuthorizer(False, frozenset(), False)

    async def coordinator_call(self, method: str, *args: Any) -> Any:
        self.calls.append((method, args))
        if self.unavailable:
            raise Errors.COORDINATOR_NOT_AVAILABLE.exception("coordinator restarting")
        answer = self.answers[method]
        return answer(*args) if callable(answer) else answer


def handle(broker: FakeCoordinator, api_key: int, version: int, body: dict[str, Any]) -> Any:
    """``body`` sent through the codec and KafkaGroupApis; the answer must encode at
    ``version``."""
    header = RequestHeader(api_key, version, 1, "kafka-python-3")
    frame = DEFAULT_REGISTRY.encode_request(header, body)
    request = DEFAULT_REGISTRY.decode_request(frame[4:])
    apis = KafkaGroupApis(broker)

    async def call() -> Any:
        return await apis.handlers()[api_key](request.header, request.body)

    answer = asyncio.run(call())
    response = DEFAULT_REGISTRY.encode_response(header, answer)
    return DEFAULT_REGISTRY.decode_response(response[4:], header)[1]


JOIN_BODY = {
    "group_id": "g",
    "session_timeout_ms": 10_000,
    "rebalance_timeout_ms": 300_000,
    "member_id": "",
    "protocol_type": "consumer",
    "protocols": [{"name": "range", "metadata": b"sub-r"}, {"name": "roundrobin", "metadata": b""}],
}


@pytest.mark.parametrize("version", [1, 5, 7, 9])
def test_join_group_passes_the_subscriptions_through_and_the_leader_gets_the_members(
    version: int,
) -> None:
    joined = JoinGroupResponse(
        Errors.NONE, 3, "range", "c-1", "c-1", (("c-1", b"sub-r"), ("c-2", b"sub-2"))
    )
    broker = FakeCoordinator({"join_group": joined})
    answer = handle(broker, JOIN, version, JOIN_BODY)
    ((method, (request,)),) = broker.calls
    assert method == "join_group"
    assert request == JoinGroupRequest(
        "g",
        10_000,
        300_000,
        "",
        "consumer",
        (("range", b"sub-r"), ("roundrobin", b"")),
        "kafka-python-3",
    )
    assert (answer["error_code"], answer["generation_id"], answer["leader"]) == (0, 3, "c-1")
    assert (answer["member_id"], answer["protocol_name"]) == ("c-1", "range")
    assert [(m["member_id"], m["metadata"]) for m in answer["members"]] == [
        ("c-1", b"sub-r"),
        ("c-2", b"sub-2"),
    ]
    assert answer["protocol_type"] == ("consumer" if version >= 7 else None)


def test_join_group_v0_uses_the_session_timeout_as_the_rebalance_timeout() -> None:
    broker = FakeCoordinator({"join_group": JoinGroupResponse(Errors.NONE, 1, "range", "a", "a")})
    handle(broker, JOIN, 0, {k: v for k, v in JOIN_BODY.items() if k != "rebalance_timeout_ms"})
    request = broker.calls[0][1][0]
    assert (request.session_timeout_ms, request.rebalance_timeout_ms) == (10_000, 10_000)


@pytest.mark.parametrize("version", [4, 7])
def test_a_refused_join_gives_kafkas_code_and_no_protocol(version: int) -> None:
    refused = JoinGroupResponse(Errors.INCONSISTENT_GROUP_PROTOCOL, error_message="no")
    answer = handle(FakeCoordinator({"join_group": refused}), JOIN, version, JOIN_BODY)
    assert answer["error_code"] == 23
    assert answer["generation_id"] == -1
    assert answer["protocol_name"] == ("" if version < 7 else None)


@pytest.mark.parametrize("version", [0, 3, 5])
def test_sync_group_carries_the_leaders_assignments_and_returns_this_members(
    version: int,
) -> None:
    broker = FakeCoordinator({"sync_group": SyncGroupResponse(Errors.NONE, b"asg-1")})
    body = {
        "group_id": "g",
        "generation_id": 3,
        "member_id": "c-1",
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [
            {"member_id": "c-1", "assignment": b"asg-1"},
            {"member_id": "c-2", "assignment": b"asg-2"},
        ],
    }
    answer = handle(broker, SYNC, version, body)
    assert broker.calls == [
        (
            "sync_group",
            (SyncGroupRequest("g", 3, "c-1", (("c-1", b"asg-1"), ("c-2", b"asg-2"))),),
        )
    ]
    assert (answer["error_code"], answer["assignment"]) == (0, b"asg-1")
    expected = ("consumer", "range") if version >= 5 else (None, None)
    assert (answer["protocol_type"], answer["protocol_name"]) == expected


def test_a_sync_during_a_rebalance_answers_rebalance_in_progress() -> None:
    broker = FakeCoordinator({"sync_group": SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)})
    body = {"group_id": "g", "generation_id": 3, "member_id": "c-2", "assignments": []}
    answer = handle(broker, SYNC, 5, body)
    assert (answer["error_code"], answer["assignment"], answer["protocol_name"]) == (27, b"", None)


@pytest.mark.parametrize("version", [0, 4])
def test_heartbeat_maps_onto_the_coordinators_heartbeat(version: int) -> None:
    broker = FakeCoordinator({"heartbeat": GroupResponse(Errors.ILLEGAL_GENERATION)})
    body = {"group_id": "g", "generation_id": 2, "member_id": "c-1"}
    answer = handle(broker, HEARTBEAT, version, body)
    assert broker.calls == [("heartbeat", (HeartbeatRequest("g", 2, "c-1"),))]
    assert answer["error_code"] == 22


def test_an_unreachable_coordinator_answers_coordinator_not_available() -> None:
    broker = FakeCoordinator()
    broker.unavailable = True
    body = {"group_id": "g", "generation_id": 2, "member_id": "c-1"}
    assert handle(broker, HEARTBEAT, 4, body)["error_code"] == 15
    assert handle(broker, JOIN, 7, JOIN_BODY)["error_code"] == 15
    assert handle(broker, LIST, 3, {})["error_code"] == 15


def test_leave_group_v0_to_v2_names_one_member() -> None:
    broker = FakeCoordinator({"leave_group": GroupResponse(Errors.NONE)})
    answer = handle(broker, LEAVE, 2, {"group_id": "g", "member_id": "c-1"})
    assert broker.calls == [("leave_group", (LeaveGroupRequest("g", "c-1"),))]
    assert answer == {"throttle_time_ms": 0, "error_code": 0, "members": []}


def test_leave_group_v3_answers_each_member_and_group_wide_errors_at_the_top() -> None:
    def leave(request: LeaveGroupRequest) -> GroupResponse:
        return GroupResponse(
            Errors.NONE if request.member_id == "c-1" else Errors.UNKNOWN_MEMBER_ID
        )

    body = {"group_id": "g", "members": [{"member_id": "c-1"}, {"member_id": "ghost"}]}
    answer = handle(FakeCoordinator({"leave_group": leave}), LEAVE, 5, body)
    assert answer["error_code"] == 0
    assert [(m["member_id"], m["error_code"]) for m in answer["members"]] == [
        ("c-1", 0),
        ("ghost", 25),
    ]
    moved = FakeCoordinator({"leave_group": GroupResponse(Errors.NOT_COORDINATOR)})
    answer = handle(moved, LEAVE, 3, body)
    assert answer["error_code"] == 16
    assert [m["error_code"] for m in answer["members"]] == [16, 16]


COMMIT_BODY = {
    "group_id": "g",
    "generation_id_or_member_epoch": 3,
    "member_id": "c-1",
    "topics": [
        {
            "name": "t",
            "partitions": [
                {"partition_index": 0, "committed_offset": 10, "committed_metadata": "m"},
                {"partition_index": 1, "committed_offset": 20, "committed_metadata": None},
            ],
        },
        {
            "name": "u",
            "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}],
        },
    ],
}


@pytest.mark.parametrize("version", [2, 5, 8])
def test_offset_commit_maps_every_partition_and_answers_each(version: int) -> None:
    results = (
        PartitionResult("t", 0, Errors.NONE),
        PartitionResult("t", 1, Errors.OFFSET_METADATA_TOO_LARGE),
        PartitionResult("u", 0, Errors.NONE),
    )
    broker = FakeCoordinator({"offset_commit": OffsetCommitResponse(Errors.NONE, results)})
    answer = handle(broker, COMMIT, version, COMMIT_BODY)
    entries = (
        OffsetCommitEntry("t", 0, 10, "m"),
        OffsetCommitEntry("t", 1, 20, ""),
        OffsetCommitEntry("u", 0, 5, ""),
    )
    assert broker.calls == [("offset_commit", (OffsetCommitRequest("g", 3, "c-1", entries),))]
    codes = {
        (t["name"], p["partition_index"]): p["error_code"]
        for t in answer["topics"]
        for p in t["partitions"]
    }
    assert codes == {("t", 0): 0, ("t", 1): 12, ("u", 0): 0}


def test_a_fenced_commit_answers_its_error_for_every_partition() -> None:
    fenced = OffsetCommitResponse(Errors.ILLEGAL_GENERATION, error_message="stale")
    answer = handle(FakeCoordinator({"offset_commit": fenced}), COMMIT, 8, COMMIT_BODY)
    assert [p["error_code"] for t in answer["topics"] for p in t["partitions"]] == [22, 22, 22]


def test_an_offset_commit_v0_is_an_admin_commit_without_generation_or_member() -> None:
    broker = FakeCoordinator({"offset_commit": OffsetCommitResponse(Errors.NONE)})
    handle(
        broker,
        COMMIT,
        0,
        {k: v for k, v in COMMIT_BODY.items() if k == "group_id" or k == "topics"},
    )
    request = broker.calls[0][1][0]
    assert (request.generation_id, request.member_id) == (-1, "")


@pytest.mark.parametrize("version", [1, 5, 7])
def test_offset_fetch_asks_for_the_listed_partitions(version: int) -> None:
    offsets = (CommittedOffset("t", 0, 10, "m"), CommittedOffset("t", 3, -1))
    broker = FakeCoordinator({"offset_fetch": OffsetFetchResponse(Errors.NONE, offsets)})
    body = {
        "group_id": "g",
        "topics": [{"name": "t", "partition_indexes": [0, 3]}],
        "require_stable": True,
    }
    answer = handle(broker, FETCH, version, body)
    ((_, (request,)),) = broker.calls
    assert request == OffsetFetchRequest("g", (("t", 0), ("t", 3)), version >= 7)
    ((topic,),) = [answer["topics"]]
    assert topic["name"] == "t"
    assert [
        (p["partition_index"], p["committed_offset"], p["metadata"]) for p in topic["partitions"]
    ] == [
        (0, 10, "m"),
        (3, -1, ""),
    ]
    assert answer["error_code"] == 0


def test_offset_fetch_with_null_topics_asks_for_every_partition_of_the_group() -> None:
    offsets = (CommittedOffset("t", 0, 10), CommittedOffset("u", 1, 4))
    broker = FakeCoordinator({"offset_fetch": OffsetFetchResponse(Errors.NONE, offsets)})
    answer = handle(broker, FETCH, 6, {"group_id": "g", "topics": None})
    assert broker.calls[0][1][0] == OffsetFetchRequest("g", None, False)
    assert [t["name"] for t in answer["topics"]] == ["t", "u"]


def test_offset_fetch_v8_answers_each_group_of_the_batch() -> None:
    def fetch(request: OffsetFetchRequest) -> OffsetFetchResponse:
        if request.group_id == "moved":
            return OffsetFetchResponse(Errors.NOT_COORDINATOR)
        return OffsetFetchResponse(Errors.NONE, (CommittedOffset("t", 0, 10),))

    broker = FakeCoordinator({"offset_fetch": fetch})
    body = {
        "groups": [
            {"group_id": "g", "topics": None},
            {"group_id": "moved", "topics": [{"name": "t", "partition_indexes": [0]}]},
        ],
        "require_stable": True,
    }
    answer = handle(broker, FETCH, 8, body)
    assert [args for _, args in broker.calls] == [
        (OffsetFetchRequest("g", None, True),),
        (OffsetFetchRequest("moved", (("t", 0),), True),),
    ]
    g, moved = answer["groups"]
    assert (g["group_id"], g["error_code"]) == ("g", 0)
    assert g["topics"][0]["partitions"][0]["committed_offset"] == 10
    assert (moved["group_id"], moved["error_code"]) == ("moved", 16)
    assert moved["topics"][0]["partitions"][0]["error_code"] == 16


@pytest.mark.parametrize("version", [1, 7])
def test_an_offset_fetch_error_is_top_level_and_on_each_partition(version: int) -> None:
    moved = OffsetFetchResponse(Errors.NOT_COORDINATOR, error_message="moved")
    body = {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]}
    answer = handle(FakeCoordinator({"offset_fetch": moved}), FETCH, version, body)
    assert answer["topics"][0]["partitions"][0]["error_code"] == 16
    assert answer["error_code"] == (16 if version >= 2 else 0)


@pytest.mark.parametrize("version", [0, 4, 5])
def test_describe_groups_reports_state_assignor_and_members_assignments(version: int) -> None:
    def describe(group_id: str) -> GroupDescription:
        if group_id == "gone":
            return GroupDescription(Errors.NOT_COORDINATOR, group_id)
        member = MemberDescription("c-1", "kafka-python-3", "", b"asg")
        return GroupDescription(Errors.NONE, group_id, "Stable", "consumer", "range", 3, (member,))

    broker = FakeCoordinator({"describe_group": describe})
    answer = handle(broker, DESCRIBE, version, {"groups": ["g", "gone"]})
    assert [args for _, args in broker.calls] == [("g",), ("gone",)]
    described, gone = answer["groups"]
    assert (described["group_state"], described["protocol_type"], described["protocol_data"]) == (
        "Stable",
        "consumer",
        "range",
    )
    (member,) = described["members"]
    assert (member["member_id"], member["client_id"], member["member_assignment"]) == (
        "c-1",
        "kafka-python-3",
        b"asg",
    )
    assert (gone["group_id"], gone["error_code"]) == ("gone", 16)


@pytest.mark.parametrize("version", [0, 3, 4])
def test_list_groups_lists_the_coordinators_groups_filtered_by_state_from_v4(
    version: int,
) -> None:
    listings = (GroupListing("a", "consumer", "Stable"), GroupListing("b", "consumer", "Empty"))
    broker = FakeCoordinator({"list_groups": listings})
    answer = handle(broker, LIST, version, {"states_filter": ["stable"]})
    assert broker.calls == [("list_groups", ())]
    listed = [g["group_id"] for g in answer["groups"]]
    assert listed == (["a"] if version >= 4 else ["a", "b"])


@pytest.mark.parametrize("version", [0, 2])
def test_delete_groups_answers_each_group(version: int) -> None:
    def delete(group_id: str) -> GroupResponse:
        return GroupResponse(Errors.NONE if group_id == "old" else Errors.NON_EMPTY_GROUP)

    broker = FakeCoordinator({"delete_group": delete})
    answer = handle(broker, DELETE, version, {"groups_names": ["old", "busy"]})
    assert [args for _, args in broker.calls] == [("old",), ("busy",)]
    assert [(r["group_id"], r["error_code"]) for r in answer["results"]] == [
        ("old", 0),
        ("busy", 68),
    ]
