"""The ACL checks of the admin requests, with the broker's authorizer on (``acl_broker``): topic
changes need CREATE (on the cluster or the topic), DELETE or ALTER (TOPIC_AUTHORIZATION_FAILED);
configs DESCRIBE_CONFIGS or ALTER_CONFIGS on the topic, or on the cluster for a broker's; SCRAM
users DESCRIBE or ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED). What is refused is neither
read nor written; DescribeCluster is answered to anyone, as in Kafka."""

from __future__ import annotations

from typing import Any

import pytest

from rafka.security.acl import CLUSTER_NAME, ACLOperation, ResourceType

pytestmark = pytest.mark.timeout(30)

CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH = 19, 20, 21, 23
DESCRIBE_CONFIGS, ALTER_CONFIGS, CREATE_PARTITIONS = 32, 33, 37
INCREMENTAL_ALTER_CONFIGS, DESCRIBE_USERS, ALTER_USERS, DESCRIBE_CLUSTER = 44, 50, 51, 60
ALICE = "User:alice"
TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # config resource types


def controller_asked(broker: Any, method: str) -> list[Any]:
    """What each call of a controller ``method`` was about (topics or names)."""
    return [args[0] for args in broker.asked(method)]


def create_topics(broker: Any, *names: str, version: int = 7) -> Any:
    body = {
        "topics": [{"name": n, "num_partitions": 1, "replication_factor": 1} for n in names],
        "timeout_ms": 0,
    }
    return {t["name"]: t for t in broker.handle(CREATE_TOPICS, version, body)["topics"]}


def test_create_topics_needs_create_on_the_topic_or_the_cluster(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, ACLOperation.CREATE, TOPIC, "new")
    answer = create_topics(acl_broker, "new", "other")
    assert {n: t["error_code"] for n, t in answer.items()} == {"new": 0, "other": 29}
    assert [[t.name for t in asked] for asked in controller_asked(acl_broker, "create_topics")] == [
        ["new"]
    ]
    acl_broker.allow(ALICE, ACLOperation.CREATE, CLUSTER, CLUSTER_NAME)
    assert create_topics(acl_broker, "other")["other"]["error_code"] == 0


def test_a_created_topics_configs_are_shown_only_with_describe_configs(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, ACLOperation.CREATE, CLUSTER, CLUSTER_NAME)
    acl_broker.allow(ALICE, ACLOperation.DESCRIBE_CONFIGS, TOPIC, "shown")
    acl_broker.topics.append("shown")  # the fake's metadata shows it at once
    answer = create_topics(acl_broker, "hidden", "shown")
    assert answer["hidden"]["error_code"] == 0
    assert answer["hidden"]["topic_config_error_code"] == 29
    assert answer["shown"]["topic_config_error_code"] == 0
    ((request,),) = acl_broker.asked("describe_configs")
    assert [r.name for r in request.resources] == ["shown"]


def test_delete_topics_needs_delete_on_each_topic(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, ACLOperation.DELETE, TOPIC, "orders")
    body = {"topics": [{"name": "orders"}, {"name": "payments"}], "timeout_ms": 0}
    answer = acl_broker.handle(DELETE_TOPICS, 6, body)
    assert [(r["name"], r["error_code"]) for r in answer["responses"]] == [
        ("orders", 0),
        ("payments", 29),
    ]
    assert controller_asked(acl_broker, "delete_topics") == [["orders"]]


def test_create_partitions_needs_alter_on_each_topic(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, ACLOperation.ALTER, TOPIC, "orders")
    body = {
        "topics": [{"name": n, "count": 2, "assignments": None} for n in ("orders", "payments")],
        "timeout_ms": 0,
    }
    answer = acl_broker.handle(CREATE_PARTITIONS, 2, body)
    assert [(r["name"], r["error_code"]) for r in answer["results"]] == [
        ("orders", 0),
        ("payments", 29),
    ]
    assert [list(asked) for asked in controller_asked(acl_broker, "create_partitions")] == [
        ["orders"]
    ]


def test_a_duplicated_topic_is_invalid_before_it_is_authorized(acl_broker: Any) -> None:
    answer = create_topics(acl_broker, "twice", "twice")
    assert answer["twice"]["error_code"] == 42  # INVALID_REQUEST
    assert acl_broker.asked("create_topics") == []


def test_delete_records_needs_delete_on_each_topic(acl_broker: Any) -> None:
    acl_broker.allow(ALICE, ACLOperation.DELETE, TOPIC, "orders")
    body = {
        "topics": [
            {"name": n, "partitions": [{"partition_index": 0, "offset": 3}]}
            for n in ("orders", "payments")
        ],
        "timeout_ms": 1000,
    }
    answer = acl_broker.handle(DELETE_RECORDS, 2, body)
    assert [
        (t["name"], [(p["error_code"], p["low_watermark"]) for p in t["partitions"]])
        for t in answer["topics"]
    ] == [("orders", [(0, 3)]), ("payments", [(29, -1)])]
    assert [topic for topic, _, _ in acl_broker.asked("delete_records")] == ["orders"]


def epochs_body(*topics: str, replica_id: int = -1) -> dict[str, Any]:
    return {
        "replica_id": replica_id,
        "topics": [
            {"topic": t, "partitions": [{"partition": 0, "leader_epoch": 1}]} for t in topics
        ],
    }


def test_offset_for_leader_epoch_needs_describe_on_the_topic_or_cluster_action(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, ACLOperation.READ, TOPIC, "orders")
    answer = acl_broker.handle(OFFSET_FOR_LEADER_EPOCH, 4, epochs_body("orders", "payments"))
    assert [(t["topic"], t["partitions"][0]["error_code"]) for t in answer["topics"]] == [
        ("orders", 0),
        ("payments", 29),
    ]
    acl_broker.allow(ALICE, ACLOperation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME)
    answer = acl_broker.handle(OFFSET_FOR_LEADER_EPOCH, 4, epochs_body("payments", replica_id=1))
    assert answer["topics"][0]["partitions"][0]["error_code"] == 0
    assert [topic for topic, _, _ in acl_broker.asked("offsets_for_leader_epoch")] == [
        "orders",
        "payments",
    ]


def config_resources(*named: tuple[int, str], **fields: Any) -> list[Any]:
    """The resources of a config request, each with ``fields`` (by default: every key)."""
    fields = fields or {"configuration_keys": None}
    return [{"resource_type": t, "resource_name": n, **fields} for t, n in named]


def test_describe_configs_needs_describe_configs_on_the_topic_or_the_cluster(
    acl_broker: Any,
) -> None:
    acl_broker.allow(ALICE, ACLOperation.ALTER_CONFIGS, TOPIC, "orders")  # implies describing
    named = [(TOPIC_RESOURCE, "orders"), (TOPIC_RESOURCE, "payments"), (BROKER_RESOURCE, "0")]
    answer = acl_broker.handle(DESCRIBE_CONFIGS, 4, {"resources": config_resources(*named)})
    assert [(r["resource_name"], r["error_code"]) for r in answer["results"]] == [
        ("orders", 0),
        ("payments", 29),
        ("0", 31),  # CLUSTER_AUTHORIZATION_FAILED
    ]
    ((request,),) = acl_broker.asked("describe_configs")
    assert [r.name for r in request.resources] == ["orders"]


@pytest.mark.parametrize("api_key", [ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS])
def test_altering_configs_needs_alter_configs_on_the_topic_or_the_cluster(
    acl_broker: Any, api_key: int
) -> None:
    acl_broker.allow(ALICE, ACLOperation.ALTER_CONFIGS, CLUSTER, CLUSTER_NAME)
    acl_broker.allow(ALICE, ACLOperation.DESCRIBE_CONFIGS, TOPIC, "orders")
    config: dict[str, Any] = {"name": "retention.ms", "value": "7"}
    if api_key == INCREMENTAL_ALTER_CONFIGS:
        config["config_operation"] = 0  # SET
    named = [(TOPIC_RESOURCE, "orders"), (BROKER_RESOURCE, "0")]
    resources = config_resources(*named, configs=[config])
    answer = acl_broker.handle(api_key, 1, {"resources": resources, "validate_only": False})
    assert [(r["resource_name"], r["error_code"]) for r in answer["responses"]] == [
        ("orders", 29),
        ("0", 0),
    ]
    ((request,),) = acl_broker.asked("alter_configs")
    assert [r.name for r in request.resources] == ["0"]


def test_describe_cluster_is_answered_to_anyone_with_its_authorized_operations(
    acl_broker: Any,
) -> None:
    body = {"include_cluster_authorized_operations": True}
    answer = acl_broker.handle(DESCRIBE_CLUSTER, 1, body)
    assert (answer["error_code"], answer["cluster_authorized_operations"]) == (0, 0)
    assert [b["broker_id"] for b in answer["brokers"]] == [0]
    acl_broker.allow(ALICE, ACLOperation.ALTER, CLUSTER, CLUSTER_NAME)
    answer = acl_broker.handle(DESCRIBE_CLUSTER, 1, body)
    assert answer["cluster_authorized_operations"] == (1 << ACLOperation.ALTER) | (
        1 << ACLOperation.DESCRIBE
    )


def test_scram_users_need_describe_or_alter_on_the_cluster(acl_broker: Any) -> None:
    answer = acl_broker.handle(DESCRIBE_USERS, 0, {"users": [{"name": "bob"}]})
    assert answer["error_code"] == 31
    assert [(r["user"], r["error_code"]) for r in answer["results"]] == [("bob", 31)]
    deletion = {"name": "bob", "mechanism": 1}
    answer = acl_broker.handle(ALTER_USERS, 0, {"deletions": [deletion], "upsertions": []})
    assert [(r["user"], r["error_code"]) for r in answer["results"]] == [("bob", 31)]
    assert acl_broker.calls == []
    acl_broker.allow(ALICE, ACLOperation.ALTER, CLUSTER, CLUSTER_NAME)
    assert acl_broker.handle(DESCRIBE_USERS, 0, {"users": None})["error_code"] == 0
    acl_broker.handle(ALTER_USERS, 0, {"deletions": [deletion], "upsertions": []})
    assert [method for method, _ in acl_broker.calls] == [
        "describe_user_scram_credentials",
        "alter_user_scram_credentials",
    ]


def test_a_super_user_administers_without_any_acl(acl_broker: Any) -> None:
    body = {
        "topics": [{"name": "new", "num_partitions": 1, "replication_factor": 1}],
        "timeout_ms": 0,
    }
    answer = acl_broker.handle(CREATE_TOPICS, 7, body, "admin")
    assert answer["topics"][0]["error_code"] == 0
    resources = config_resources((BROKER_RESOURCE, "0"))
    answer = acl_broker.handle(DESCRIBE_CONFIGS, 4, {"resources": resources}, "admin")
    assert answer["results"][0]["error_code"] == 0
