"""The ACL checks of the consumer group requests, with the broker's authorizer on (``acl_broker``):
membership and OffsetCommit need READ on the group, describing it DESCRIBE and deleting it DELETE
(GROUP_AUTHORIZATION_FAILED, and the coordinator is not asked); OffsetCommit needs READ on each
topic and OffsetFetch DESCRIBE, per partition (TOPIC_AUTHORIZATION_FAILED, nothing written);
ListGroups shows only the groups the principal may describe, or all with DESCRIBE on the cluster."""

from __future__ import annotations

from typing import Any

import pytest

from rafka.security.acl import CLUSTER_NAME, ACLOperation, ResourceType

pytestmark = pytest.mark.timeout(30)

COMMIT, OFFSET_FETCH, JOIN, HEARTBEAT, LEAVE, SYNC = 8, 9, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
ALICE = "User:alice"
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
READ, DESCRIBE, DELETE = ACLOperation.READ, ACLOperation.DESCRIBE, ACLOperation.DELETE
COORDINATOR_METHODS = ("join_group", "sync_group", "heartbeat", "leave_group", "offset_commit")
MEMBERSHIP = [
    (
        JOIN,
        7,
        {
            "group_id": "g",
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 30_000,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
        },
    ),
    (SYNC, 5, {"group_id": "g", "generation_id": 1, "member_id": "m-1", "assignments": []}),
    (HEARTBEAT, 4, {"group_id": "g", "generation_id": 1, "member_id": "m-1"}),
    (LEAVE, 1, {"group_id": "g", "member_id": "m-1"}),
    (LEAVE, 4, {"group_id": "g", "members": [{"member_id": "m-1"}]}),
]


def coordinator_calls(broker: Any) -> list[str]:
    return [method for method, _ in broker.calls]


@pytest.mark.parametrize(("api_key", "version", "body"), MEMBERSHIP)
def test_membership_needs_read_on_the_group(
    acl_broker: Any, api_key: int, version: int, body: dict[str, Any]
) -> None:
    acl_broker.allow(ALICE, DESCRIBE, GROUP, "g")
    answer = acl_broker.handle(api_key, version, body)
    assert answer["error_code"] == 30  # GROUP_AUTHORIZATION_FAILED
    assert coordinator_calls(acl_broker) == []
    acl_broker.allow(ALICE, READ, GROUP, "g")
    answer = acl_broker.handle(api_key, version, body)
    assert answer["error_code"] == 0
    assert len(acl_broker.calls) == 1


def test_a_refused_leave_group_v3_names_no_member(acl_broker: Any) -> None:
    body = {"group_id": "g", "members": [{"member_id": "m-1"}, {"member_id": "m-2"}]}
    answer = acl_broker.handle(LEAVE, 4, body)
    assert (answer["error_code"], answer["members"]) == (30, [])


def commit_body(*topics: str) -> dict[str, Any]:
    return {
        "group_id": "g",
        "generation_id_or_member_epoch": 1,
        "member_id": "m-1",
        "topics": [
            {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 5}]}
            for t in topics
        ],
    }


def partition_errors(answer: Any) -> dict[str, list[int]]:
    return {t["name"]: [p["error_code"] for p in t["partitions"]] for t in answer["topics"]}


def test_offset_commit_writes_only_the_topics_it_may_read(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, READ, GROUP, "g")
    acl_broker.allow(ALICE, READ, TOPIC, "orders")
    answer = acl_broker.handle(COMMIT, 8, commit_body("orders", "payments"))
    assert partition_errors(answer) == {"orders": [0], "payments": [29]}
    ((request,),) = acl_broker.asked("offset_commit")
    assert [(e.topic, e.partition, e.offset) for e in request.offsets] == [("orders", 0, 5)]


def test_an_offset_commit_of_only_refused_topics_writes_nothing(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, READ, GROUP, "g")
    answer = acl_broker.handle(COMMIT, 8, commit_body("payments"))
    assert partition_errors(answer) == {"payments": [29]}
    assert acl_broker.asked("offset_commit") == []


def test_an_offset_commit_without_read_on_the_group_refuses_every_partition(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, READ, TOPIC, "*")
    answer = acl_broker.handle(COMMIT, 8, commit_body("orders", "payments"))
    assert partition_errors(answer) == {"orders": [30], "payments": [30]}
    assert acl_broker.asked("offset_commit") == []


def offset_fetch_body(topics: list[str] | None) -> dict[str, Any]:
    asked = None if topics is None else [{"name": t, "partition_indexes": [0]} for t in topics]
    return {"group_id": "g", "topics": asked}


def test_offset_fetch_refuses_the_partitions_of_topics_it_may_not_describe(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, DESCRIBE, GROUP, "g")
    acl_broker.allow(ALICE, DESCRIBE, TOPIC, "orders")
    answer = acl_broker.handle(OFFSET_FETCH, 7, offset_fetch_body(["orders", "payments"]))
    assert {
        t["name"]: [(p["committed_offset"], p["error_code"]) for p in t["partitions"]]
        for t in answer["topics"]
    } == {"orders": [(5, 0)], "payments": [(-1, 29)]}
    ((request,),) = acl_broker.asked("offset_fetch")
    assert request.partitions == (("orders", 0),)


def test_offset_fetch_of_every_partition_leaves_out_topics_it_may_not_describe(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, DESCRIBE, GROUP, "g")
    acl_broker.allow(ALICE, READ, TOPIC, "payments")
    answer = acl_broker.handle(OFFSET_FETCH, 7, offset_fetch_body(None))
    assert [t["name"] for t in answer["topics"]] == ["payments"]


@pytest.mark.parametrize("version", [1, 7, 8])
def test_offset_fetch_needs_describe_on_the_group(acl_broker: Any, version: int) -> None:
    acl_broker.allow(ALICE, DESCRIBE, TOPIC, "orders")
    body = offset_fetch_body(["orders"])
    if version >= 8:
        body = {"groups": [{"group_id": "g", "topics": body["topics"]}]}
    answer = acl_broker.handle(OFFSET_FETCH, version, body)
    errors = answer["groups"][0] if version >= 8 else answer
    if version >= 2:
        assert errors["error_code"] == 30
    else:  # v0-1 have no group-level error code: each partition carries it
        assert partition_errors(errors) == {"orders": [30]}
    assert acl_broker.asked("offset_fetch") == []


def test_describe_groups_answers_only_the_groups_it_may_describe(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, DESCRIBE, GROUP, "g1")
    body = {"groups": ["g1", "g2"], "include_authorized_operations": True}
    answer = acl_broker.handle(DESCRIBE_GROUPS, 5, body)
    assert [(g["group_id"], g["error_code"], g["group_state"]) for g in answer["groups"]] == [
        ("g1", 0, "Stable"),
        ("g2", 30, "Dead"),
    ]
    assert answer["groups"][0]["authorized_operations"] == 1 << DESCRIBE
    assert acl_broker.asked("describe_group") == [("g1",)]


def test_list_groups_shows_only_the_groups_it_may_describe(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, READ, GROUP, "g2")
    answer = acl_broker.handle(LIST_GROUPS, 4, {})
    assert [g["group_id"] for g in answer["groups"]] == ["g2"]
    acl_broker.allow(ALICE, DESCRIBE, CLUSTER, CLUSTER_NAME)
    answer = acl_broker.handle(LIST_GROUPS, 4, {})
    assert [g["group_id"] for g in answer["groups"]] == ["g1", "g2"]


def test_delete_groups_needs_delete_on_each_group(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, DELETE, GROUP, "g1")
    acl_broker.allow(ALICE, READ, GROUP, "g2")
    answer = acl_broker.handle(DELETE_GROUPS, 2, {"groups_names": ["g1", "g2"]})
    assert [(r["group_id"], r["error_code"]) for r in answer["results"]] == [
        ("g1", 0),
        ("g2", 30),
    ]
    assert acl_broker.asked("delete_group") == [("g1",)]


def test_a_super_user_may_do_everything_with_groups(acl_broker: Any) -> None:
    for api_key, version, body in MEMBERSHIP:
        assert acl_broker.handle(api_key, version, body, "admin")["error_code"] == 0
    answer = acl_broker.handle(COMMIT, 8, commit_body("orders", "__consumer_offsets"), "admin")
    assert partition_errors(answer) == {"orders": [0], "__consumer_offsets": [0]}
    assert [m for m in coordinator_calls(acl_broker) if m in COORDINATOR_METHODS] == [
        "join_group",
        "sync_group",
        "heartbeat",
        "leave_group",
        "leave_group",
        "offset_commit",
    ]
