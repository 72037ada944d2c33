"""The ACL checks of Produce, Fetch, ListOffsets, Metadata, FindCoordinator and InitProducerId, with
the broker's authorizer on (``acl_broker``): a refused partition or request gets Kafka's error code
and nothing is asked of its replica or coordinator; an allowed one is served as without ACLs."""

from __future__ import annotations

from typing import Any

import pytest

from rafka.protocol.records.builder import RecordBatchBuilder, build_batch
from rafka.protocol.records.kafka_records import native_to_kafka
from rafka.security.acl import (
    CLUSTER_NAME,
    VALID_OPERATIONS,
    ACLOperation,
    ACLResourcePatternType,
    ResourceType,
)

pytestmark = pytest.mark.timeout(30)

PRODUCE, FETCH, LIST_OFFSETS, METADATA, FIND_COORDINATOR, INIT_PRODUCER_ID = 0, 1, 2, 3, 10, 22
ALICE = "User:alice"
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
READ, WRITE, DESCRIBE = ACLOperation.READ, ACLOperation.WRITE, ACLOperation.DESCRIBE
# Kafka's table of a topic's operations, each a bit of an authorized-operations field.
ALL_OPERATIONS_ON_A_TOPIC = sum(1 << op for op in VALID_OPERATIONS[ResourceType.TOPIC])
PLAIN = native_to_kafka(build_batch([(b"k", b"v", 1_000)]))


def transactional_batch() -> bytes:
    """One record in a transactional producer's batch, in Kafka's layout."""
    builder = RecordBatchBuilder(
        producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    builder.append(1_000, None, b"in-a-transaction")
    return native_to_kafka(builder.build())


def produce_body(*topics: str, records: bytes = PLAIN, transactional_id: str | None = None) -> Any:
    return {
        "transactional_id": transactional_id,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {"name": t, "partition_data": [{"index": 0, "records": records}]} for t in topics
        ],
    }


def errors_by_topic(answer: Any, topics_field: str, name_field: str, partitions_field: str) -> Any:
    """``{topic: [error_code per partition]}`` of a per-partition response."""
    return {
        t[name_field]: [p["error_code"] for p in t[partitions_field]] for t in answer[topics_field]
    }


def appended_topics(broker: Any) -> list[str]:
    return [topic for topic, _, _ in broker.asked("append")]


# ------------------------------------------------------------------ Produce


def test_produce_appends_to_the_topics_it_may_write_and_refuses_the_others(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, WRITE, TOPIC, "orders")
    answer = acl_broker.handle(PRODUCE, 9, produce_body("orders", "payments"))
    assert errors_by_topic(answer, "responses", "name", "partition_responses") == {
        "orders": [0],
        "payments": [29],  # TOPIC_AUTHORIZATION_FAILED
    }
    assert appended_topics(acl_broker) == ["orders"]


def test_produce_without_any_acl_appends_nothing(acl_broker: Any) -> None:
    answer = acl_broker.handle(PRODUCE, 9, produce_body("orders"))
    assert errors_by_topic(answer, "responses", "name", "partition_responses") == {"orders": [29]}
    assert appended_topics(acl_broker) == []


def test_an_acks_0_produce_to_a_refused_topic_appends_nothing(acl_broker: Any) -> None:
    assert acl_broker.handle(PRODUCE, 9, {**produce_body("orders"), "acks": 0}) is None
    assert appended_topics(acl_broker) == []


def test_a_deny_acl_wins_over_an_allow_on_every_topic(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, WRITE, TOPIC, "*")
    acl_broker.deny(ALICE, WRITE, TOPIC, "payments")
    answer = acl_broker.handle(PRODUCE, 9, produce_body("orders", "payments"))
    assert errors_by_topic(answer, "responses", "name", "partition_responses") == {
        "orders": [0],
        "payments": [29],
    }


def test_a_prefixed_acl_lets_a_principal_write_every_topic_it_covers(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, WRITE, TOPIC, "ord", ACLResourcePatternType.PREFIXED)
    answer = acl_broker.handle(PRODUCE, 9, produce_body("orders", "payments"))
    assert errors_by_topic(answer, "responses", "name", "partition_responses") == {
        "orders": [0],
        "payments": [29],
    }


def test_a_transactional_produce_needs_write_on_its_transactional_id(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, WRITE, TOPIC, "orders")
    body = produce_body("orders", records=transactional_batch(), transactional_id="tx")
    answer = acl_broker.handle(PRODUCE, 9, body)
    assert errors_by_topic(answer, "responses", "name", "partition_responses") == {
        "orders": [53]  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    }
    assert appended_topics(acl_broker) == []
    acl_broker.allow(ALICE, WRITE, TRANSACTIONAL_ID, "tx")
    answer = acl_broker.handle(PRODUCE, 9, body)
    assert errors_by_topic(answer, "responses", "name", "partition_responses") == {"orders": [0]}
    assert appended_topics(acl_broker) == ["orders"]


def test_transactional_batches_without_a_transactional_id_are_refused(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, WRITE, TOPIC, "orders")
    answer = acl_broker.handle(PRODUCE, 9, produce_body("orders", records=transactional_batch()))
    assert errors_by_topic(answer, "responses", "name", "partition_responses") == {"orders": [53]}
    assert appended_topics(acl_broker) == []


def test_a_super_user_produces_without_any_acl(acl_broker: Any) -> None:
    answer = acl_broker.handle(PRODUCE, 9, produce_body("orders", "__consumer_offsets"), "admin")
    assert errors_by_topic(answer, "responses", "name", "partition_responses") == {
        "orders": [0],
        "__consumer_offsets": [0],
    }


# ------------------------------------------------------------------ Fetch


def fetch_body(*topics: str, replica_id: int = -1) -> Any:
    return {
        "replica_id": replica_id,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "topics": [
            {
                "topic": t,
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000}],
            }
            for t in topics
        ],
    }


def fetched_topics(broker: Any) -> list[str]:
    return [topic for topic, _, _ in broker.asked("fetch")]


def test_a_consumer_fetches_the_topics_it_may_read_and_is_refused_the_others(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, READ, TOPIC, "orders")
    answer = acl_broker.handle(FETCH, 12, fetch_body("orders", "payments"))
    assert errors_by_topic(answer, "responses", "topic", "partitions") == {
        "orders": [0],
        "payments": [29],
    }
    assert fetched_topics(acl_broker) == ["orders"]


@pytest.mark.parametrize("internal", ["__consumer_offsets", "__transaction_state"])
def test_the_internal_topics_are_guarded_like_any_topic(acl_broker: Any, internal: str) -> None:
    acl_broker.allow(ALICE, READ, TOPIC, "orders")
    answer = acl_broker.handle(FETCH, 12, fetch_body(internal))
    assert errors_by_topic(answer, "responses", "topic", "partitions") == {internal: [29]}
    assert fetched_topics(acl_broker) == []


def test_describe_alone_does_not_let_a_consumer_fetch(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, DESCRIBE, TOPIC, "orders")
    answer = acl_broker.handle(FETCH, 12, fetch_body("orders"))
    assert errors_by_topic(answer, "responses", "topic", "partitions") == {"orders": [29]}


def test_a_follower_fetch_needs_cluster_action_on_the_cluster(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, READ, TOPIC, "orders")
    answer = acl_broker.handle(FETCH, 12, fetch_body("orders", replica_id=1))
    assert errors_by_topic(answer, "responses", "topic", "partitions") == {"orders": [29]}
    acl_broker.allow(ALICE, ACLOperation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME)
    answer = acl_broker.handle(FETCH, 12, fetch_body("orders", "payments", replica_id=1))
    assert errors_by_topic(answer, "responses", "topic", "partitions") == {
        "orders": [0],
        "payments": [0],
    }


# ------------------------------------------------------------------ ListOffsets


def test_list_offsets_needs_describe_on_each_topic(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, READ, TOPIC, "orders")  # READ implies DESCRIBE
    body = {
        "replica_id": -1,
        "topics": [
            {"name": t, "partitions": [{"partition_index": 0, "timestamp": -1}]}
            for t in ("orders", "payments")
        ],
    }
    answer = acl_broker.handle(LIST_OFFSETS, 7, body)
    assert errors_by_topic(answer, "topics", "name", "partitions") == {
        "orders": [0],
        "payments": [29],
    }
    assert [topic for topic, _, _ in acl_broker.asked("list_offsets")] == ["orders"]


# ------------------------------------------------------------------ Metadata


def metadata(broker: Any, names: list[str] | None, version: int = 12, **more: Any) -> Any:
    topics = None if names is None else [{"name": n} for n in names]
    answer = broker.handle(METADATA, version, {"topics": topics, **more})
    return {t["name"]: t for t in answer["topics"]}, answer


def test_a_listing_of_every_topic_leaves_out_those_it_may_not_describe(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, DESCRIBE, TOPIC, "orders")
    acl_broker.allow(ALICE, WRITE, TOPIC, "payments")
    topics, answer = metadata(acl_broker, None)
    assert sorted(topics) == ["orders", "payments"]
    assert answer["brokers"][0]["node_id"] == 0


def test_a_topic_asked_for_by_name_without_describe_is_refused_whether_or_not_it_exists(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, DESCRIBE, TOPIC, "orders")
    topics, _ = metadata(acl_broker, ["orders", "payments", "nowhere"])
    assert {n: t["error_code"] for n, t in topics.items()} == {
        "orders": 0,
        "payments": 29,
        "nowhere": 29,
    }
    assert topics["payments"]["partitions"] == []
    assert acl_broker.asked("auto_create") == []


def test_auto_creation_needs_create_on_the_cluster_or_the_topic(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, DESCRIBE, TOPIC, "*")
    acl_broker.allow(ALICE, ACLOperation.CREATE, TOPIC, "new-")
    topics, _ = metadata(acl_broker, ["new-", "other", "orders"])
    assert {n: t["error_code"] for n, t in topics.items()} == {
        "new-": 5,  # LEADER_NOT_AVAILABLE: being created
        "other": 29,
        "orders": 0,  # exists: no CREATE needed
    }
    assert acl_broker.asked("auto_create") == [("new-",)]
    acl_broker.allow(ALICE, ACLOperation.CREATE, CLUSTER, CLUSTER_NAME)
    topics, _ = metadata(acl_broker, ["other"])
    assert topics["other"]["error_code"] == 5


def test_topic_and_cluster_authorized_operations_are_reported_when_asked_for(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, ACLOperation.ALL, TOPIC, "orders")
    acl_broker.allow(ALICE, READ, TOPIC, "payments")
    topics, answer = metadata(
        acl_broker,
        ["orders", "payments"],
        version=10,
        include_topic_authorized_operations=True,
        include_cluster_authorized_operations=True,
    )
    assert topics["orders"]["topic_authorized_operations"] == ALL_OPERATIONS_ON_A_TOPIC
    assert topics["payments"]["topic_authorized_operations"] == (1 << READ) | (1 << DESCRIBE)
    assert answer["cluster_authorized_operations"] == 0  # no DESCRIBE on the cluster
    acl_broker.allow(ALICE, DESCRIBE, CLUSTER, CLUSTER_NAME)
    _, answer = metadata(acl_broker, [], version=10, include_cluster_authorized_operations=True)
    assert answer["cluster_authorized_operations"] == 1 << DESCRIBE


# ------------------------------------------------------------------ FindCoordinator


@pytest.mark.parametrize(
    ("key_type", "resource_type", "refused"),
    [(0, GROUP, 30), (1, TRANSACTIONAL_ID, 53)],  # GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED
)
def test_find_coordinator_needs_describe_on_the_group_or_transactional_id(
    acl_broker: Any, key_type: int, resource_type: ResourceType, refused: int
) -> None:
    acl_broker.allow(ALICE, DESCRIBE, resource_type, "mine")
    body = {"key_type": key_type, "coordinator_keys": ["mine", "theirs"]}
    answer = acl_broker.handle(FIND_COORDINATOR, 4, body)
    assert [(c["key"], c["error_code"]) for c in answer["coordinators"]] == [
        ("mine", 0),
        ("theirs", refused),
    ]
    assert [key for key, _ in acl_broker.asked("find_coordinator")] == ["mine"]
    answer = acl_broker.handle(FIND_COORDINATOR, 3, {"key_type": key_type, "key": "theirs"})
    assert (answer["error_code"], answer["node_id"]) == (refused, -1)


# ------------------------------------------------------------------ InitProducerId


def init_producer_id(broker: Any, transactional_id: str | None) -> int:
    body = {"transactional_id": transactional_id, "transaction_timeout_ms": 60_000}
    answer: int = broker.handle(INIT_PRODUCER_ID, 4, body)["error_code"]
    return answer


def test_a_transactional_init_producer_id_needs_write_on_the_transactional_id(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, DESCRIBE, TRANSACTIONAL_ID, "tx")
    assert init_producer_id(acl_broker, "tx") == 53
    assert acl_broker.asked("init_producer_id") == []
    acl_broker.allow(ALICE, WRITE, TRANSACTIONAL_ID, "tx")
    assert init_producer_id(acl_broker, "tx") == 0
    assert len(acl_broker.asked("init_producer_id")) == 1


def test_an_idempotent_init_producer_id_needs_idempotent_write_or_write_on_some_topic(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, READ, TOPIC, "orders")
    assert init_producer_id(acl_broker, None) == 31  # CLUSTER_AUTHORIZATION_FAILED
    acl_broker.allow(ALICE, WRITE, TOPIC, "ord", ACLResourcePatternType.PREFIXED)
    assert init_producer_id(acl_broker, None) == 0
    assert len(acl_broker.asked("init_producer_id")) == 1


def test_idempotent_write_on_the_cluster_lets_a_producer_init(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, ACLOperation.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME)
    assert init_producer_id(acl_broker, None) == 0
    assert len(acl_broker.asked("init_producer_id")) == 1
