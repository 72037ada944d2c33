"""The ACL checks of the transaction requests, with the broker's authorizer on (``acl_broker``):
each needs WRITE on its transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); AddPartitionsToTxn
WRITE on each topic, internal topics refused to everyone; AddOffsetsToTxn and TxnOffsetCommit READ
on the group; TxnOffsetCommit READ on each topic. A refused request reaches no coordinator."""

from __future__ import annotations

from typing import Any

import pytest

from rafka.protocol.types import TopicPartition
from rafka.security.acl import ACLOperation, ResourceType

pytestmark = pytest.mark.timeout(30)

ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 24, 25, 26, 28
ALICE = "User:alice"
TOPIC, GROUP, TRANSACTIONAL_ID = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.TRANSACTIONAL_ID,
)
READ, WRITE, DESCRIBE = ACLOperation.READ, ACLOperation.WRITE, ACLOperation.DESCRIBE
PRODUCER = {"producer_id": 12, "producer_epoch": 3}


def add_partitions(broker: Any, *topics: str, user: str = "alice") -> dict[str, list[int]]:
    body = {
        "v3_and_below_transactional_id": "tx",
        "v3_and_below_producer_id": 12,
        "v3_and_below_producer_epoch": 3,
        "v3_and_below_topics": [{"name": t, "partitions": [0]} for t in topics],
    }
    answer = broker.handle(ADD_PARTITIONS, 3, body, user)
    return {
        t["name"]: [p["partition_error_code"] for p in t["results_by_partition"]]
        for t in answer["results_by_topic_v3_and_below"]
    }


def test_add_partitions_to_txn_needs_write_on_the_transactional_id(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, WRITE, TOPIC, "orders")
    assert add_partitions(acl_broker, "orders") == {"orders": [53]}
    assert acl_broker.asked("add_partitions_to_txn") == []


def test_add_partitions_to_txn_is_refused_whole_when_one_topic_may_not_be_written(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, WRITE, TRANSACTIONAL_ID, "tx")
    acl_broker.allow(ALICE, WRITE, TOPIC, "orders")
    assert add_partitions(acl_broker, "orders", "payments") == {
        "orders": [55],  # OPERATION_NOT_ATTEMPTED
        "payments": [29],
    }
    assert acl_broker.asked("add_partitions_to_txn") == []
    assert add_partitions(acl_broker, "orders") == {"orders": [0]}
    ((request,),) = acl_broker.asked("add_partitions_to_txn")
    assert request.partitions == (TopicPartition("orders", 0),)


@pytest.mark.parametrize("internal", ["__consumer_offsets", "__transaction_state"])
def test_no_one_may_add_an_internal_topic_to_a_transaction(acl_broker: Any, internal: str) -> None:
    assert add_partitions(acl_broker, internal, user="admin") == {internal: [29]}
    assert acl_broker.asked("add_partitions_to_txn") == []


def test_add_offsets_to_txn_needs_write_on_the_transactional_id_then_read_on_the_group(
    acl_broker: Any,
) -> None:
    body = {"transactional_id": "tx", "group_id": "g", **PRODUCER}
    acl_broker.allow(ALICE, READ, GROUP, "g")
    assert acl_broker.handle(ADD_OFFSETS, 3, body)["error_code"] == 53
    acl_broker.allow(ALICE, WRITE, TRANSACTIONAL_ID, "tx")
    acl_broker.deny(ALICE, READ, GROUP, "g")
    assert acl_broker.handle(ADD_OFFSETS, 3, body)["error_code"] == 30
    assert acl_broker.asked("add_offsets_to_txn") == []


def test_end_txn_needs_write_on_the_transactional_id(acl_broker: Any) -> None:
    body = {"transactional_id": "tx", "committed": True, **PRODUCER}
    acl_broker.allow(ALICE, DESCRIBE, TRANSACTIONAL_ID, "tx")
    assert acl_broker.handle(END_TXN, 3, body)["error_code"] == 53
    assert acl_broker.asked("end_txn") == []
    acl_broker.allow(ALICE, WRITE, TRANSACTIONAL_ID, "tx")
    assert acl_broker.handle(END_TXN, 3, body)["error_code"] == 0
    assert len(acl_broker.asked("end_txn")) == 1


def txn_offset_commit(broker: Any, *topics: str) -> dict[str, list[int]]:
    body = {
        "transactional_id": "tx",
        "group_id": "g",
        "generation_id": 1,
        "member_id": "m-1",
        "topics": [
            {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 5}]}
            for t in topics
        ],
        **PRODUCER,
    }
    answer = broker.handle(TXN_OFFSET_COMMIT, 3, body)
    return {t["name"]: [p["error_code"] for p in t["partitions"]] for t in answer["topics"]}


def test_txn_offset_commit_is_refused_whole_without_the_transactional_id_or_the_group(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, READ, TOPIC, "orders")
    acl_broker.allow(ALICE, READ, GROUP, "g")
    assert txn_offset_commit(acl_broker, "orders") == {"orders": [53]}
    acl_broker.allow(ALICE, WRITE, TRANSACTIONAL_ID, "tx")
    acl_broker.deny(ALICE, READ, GROUP, "g")
    assert txn_offset_commit(acl_broker, "orders") == {"orders": [30]}
    assert acl_broker.asked("txn_offset_commit") == []


def test_txn_offset_commit_writes_only_the_topics_it_may_read(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, WRITE, TRANSACTIONAL_ID, "tx")
    acl_broker.allow(ALICE, READ, GROUP, "g")
    acl_broker.allow(ALICE, READ, TOPIC, "orders")
    assert txn_offset_commit(acl_broker, "orders", "payments") == {
        "orders": [0],
        "payments": [29],
    }
    ((request,),) = acl_broker.asked("txn_offset_commit")
    assert [e.topic for e in request.offsets] == ["orders"]
