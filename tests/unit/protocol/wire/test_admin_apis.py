"""Tests for rafka.protocol.wire.admin_apis: the admin APIs round-trip at every version they
declare, and encode Kafka's bytes where a version changes the layout."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from rafka.protocol.wire.admin_apis import (
    ALTER_CONFIGS,
    ALTER_USER_SCRAM_CREDENTIALS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
    INCREMENTAL_ALTER_CONFIGS,
    OFFSET_FOR_LEADER_EPOCH,
)
from rafka.protocol.wire.schema import Api, Message

# A request and a response body per API, with every field any version has set to a non-default
# value; at each version the fields it lacks are dropped by the round trip.
BODIES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "CreateTopics": (
        {
            "topics": [
                {
                    "name": "t",
                    "num_partitions": 3,
                    "replication_factor": 2,
                    "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}],
                    "configs": [
                        {"name": "retention.ms", "value": "5"},
                        {"name": "x", "value": None},
                    ],
                }
            ],
            "timeout_ms": 1234,
            "validate_only": True,
        },
        {
            "throttle_time_ms": 7,
            "topics": [
                {
                    "name": "t",
                    "topic_id": uuid.UUID(int=9),
                    "error_code": 36,
                    "error_message": "exists",
                    "topic_config_error_code": 29,
                    "num_partitions": 3,
                    "replication_factor": 2,
                    "configs": [
                        {
                            "name": "retention.ms",
                            "value": "5",
                            "read_only": True,
                            "config_source": 1,
                            "is_sensitive": True,
                        }
                    ],
                }
            ],
        },
    ),
    "DeleteTopics": (
        {
            "topics": [{"name": "t", "topic_id": uuid.UUID(int=3)}],
            "topic_names": ["t", "u"],
            "timeout_ms": 500,
        },
        {
            "throttle_time_ms": 1,
            "responses": [
                {
                    "name": "t",
                    "topic_id": uuid.UUID(int=3),
                    "error_code": 3,
                    "error_message": "unknown",
                }
            ],
        },
    ),
    "DeleteRecords": (
        {
            "topics": [{"name": "t", "partitions": [{"partition_index": 1, "offset": 99}]}],
            "timeout_ms": 10,
        },
        {
            "throttle_time_ms": 2,
            "topics": [
                {
                    "name": "t",
                    "partitions": [{"partition_index": 1, "low_watermark": 99, "error_code": 1}],
                }
            ],
        },
    ),
    "OffsetForLeaderEpoch": (
        {
            "replica_id": 4,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 0, "current_leader_epoch": 5, "leader_epoch": 3}],
                }
            ],
        },
        {
            "throttle_time_ms": 3,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {"error_code": 0, "partition": 0, "leader_epoch": 3, "end_offset": 42}
                    ],
                }
            ],
        },
    ),
    "DescribeConfigs": (
        {
            "resources": [
                {"resource_type": 2, "resource_name": "t", "configuration_keys": ["a"]},
                {"resource_type": 4, "resource_name": "1", "configuration_keys": None},
            ],
            "include_synonyms": True,
            "include_documentation": True,
        },
        {
            "throttle_time_ms": 4,
            "results": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [
                        {
                            "name": "a",
                            "value": "1",
                            "read_only": True,
                            "config_source": 1,
                            "is_default": True,
                            "is_sensitive": True,
                            "synonyms": [{"name": "log.a", "value": "2", "source": 4}],
                            "config_type": 3,
                            "documentation": "docs",
                        }
                    ],
                }
            ],
        },
    ),
    "AlterConfigs": (
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [{"name": "a", "value": "1"}, {"name": "b", "value": None}],
                }
            ],
            "validate_only": True,
        },
        {
            "throttle_time_ms": 5,
            "responses": [
                {
                    "error_code": 40,
                    "error_message": "bad",
                    "resource_type": 2,
                    "resource_name": "t",
                }
            ],
        },
    ),
    "CreatePartitions": (
        {
            "topics": [
                {"name": "t", "count": 4, "assignments": [{"broker_ids": [1]}]},
                {"name": "u", "count": 2, "assignments": None},
            ],
            "timeout_ms": 100,
            "validate_only": True,
        },
        {
            "throttle_time_ms": 6,
            "results": [{"name": "t", "error_code": 37, "error_message": "no growth"}],
        },
    ),
    "IncrementalAlterConfigs": (
        {
            "resources": [
                {
                    "resource_type": 4,
                    "resource_name": "",
                    "configs": [{"name": "a", "config_operation": 1, "value": None}],
                }
            ],
            "validate_only": True,
        },
        {
            "throttle_time_ms": 8,
            "responses": [
                {"error_code": 0, "error_message": None, "resource_type": 4, "resource_name": ""}
            ],
        },
    ),
    "DescribeCluster": (
        {
            "include_cluster_authorized_operations": True,
            "endpoint_type": 2,
            "include_fenced_brokers": True,
        },
        {
            "throttle_time_ms": 9,
            "error_code": 0,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": "cid",
            "controller_id": 2,
            "brokers": [
                {"broker_id": 1, "host": "h", "port": 9092, "rack": "r1", "is_fenced": True}
            ],
            "cluster_authorized_operations": 0,
        },
    ),
    "DescribeUserScramCredentials": (
        {"users": [{"name": "alice"}, {"name": "bob"}]},
        {
            "throttle_time_ms": 10,
            "error_code": 0,
            "error_message": None,
            "results": [
                {
                    "user": "alice",
                    "error_code": 0,
                    "error_message": None,
                    "credential_infos": [
                        {"mechanism": 1, "iterations": 8192},
                        {"mechanism": 2, "iterations": 4096},
                    ],
                },
                {
                    "user": "bob",
                    "error_code": 91,
                    "error_message": "Attempt to describe a user credential that does not exist",
                    "credential_infos": [],
                },
            ],
        },
    ),
    "AlterUserScramCredentials": (
        {
            "deletions": [{"name": "bob", "mechanism": 2}],
            "upsertions": [
                {
                    "name": "alice",
                    "mechanism": 1,
                    "iterations": 8192,
                    "salt": b"salt",
                    "salted_password": b"salted",
                }
            ],
        },
        {
            "throttle_time_ms": 11,
            "results": [
                {"user": "alice", "error_code": 0, "error_message": None},
                {"user": "bob", "error_code": 91, "error_message": "does not exist"},
            ],
        },
    ),
}

APIS = (
    CREATE_TOPICS,
    DELETE_TOPICS,
    DELETE_RECORDS,
    OFFSET_FOR_LEADER_EPOCH,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
    CREATE_PARTITIONS,
    INCREMENTAL_ALTER_CONFIGS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
    ALTER_USER_SCRAM_CREDENTIALS,
    DESCRIBE_CLUSTER,
)


def _cases() -> list[Any]:
    return [
        pytest.param(message, body, version, id=f"{message.name}-v{version}")
        for api in APIS
        for message, body in zip((api.request, api.response), BODIES[api.name], strict=True)
        for version in range(api.min_version, api.max_version + 1)
    ]


def _present(message: Message, body: dict[str, Any], version: int) -> dict[str, Any]:
    """``body`` as a decode at ``version`` gives it back: absent fields take their defaults."""
    return message.decode(message.encode(body, version), version)


@pytest.mark.parametrize(("message", "body", "version"), _cases())
def test_every_version_round_trips_the_fields_it_has(
    message: Message, body: dict[str, Any], version: int
) -> None:
    decoded = _present(message, body, version)
    assert message.decode(message.encode(decoded, version), version) == decoded
    for field in message.fields:
        if field.present_in(version):
            assert decoded[field.name] is not None or body[field.name] is None
        else:
            assert decoded[field.name] == field.default_value()


@pytest.mark.parametrize("api", APIS, ids=lambda api: api.name)
def test_every_api_keeps_its_top_level_fields_where_it_declares_them(api: Api) -> None:
    request, response = BODIES[api.name]
    top = api.max_version
    assert _present(api.request, request, top).keys() == request.keys()
    assert _present(api.response, response, top).keys() == response.keys()


def test_create_topics_v0_has_no_validate_only_and_no_error_message() -> None:
    request = _present(CREATE_TOPICS.request, BODIES["CreateTopics"][0], 0)
    assert request["validate_only"] is False
    response = _present(CREATE_TOPICS.response, BODIES["CreateTopics"][1], 0)
    assert response["topics"][0]["error_message"] is None
    assert response["topics"][0]["error_code"] == 36


def test_create_topics_v5_carries_the_topic_config_error_as_tag_zero() -> None:
    body = {"topics": [{"name": "t", "error_code": 0, "topic_config_error_code": 29}]}
    plain = CREATE_TOPICS.response.encode({"topics": [{"name": "t"}]}, 5)
    tagged = CREATE_TOPICS.response.encode(body, 5)
    # The topic's tagged fields: one, tag 0, size 2, the int16 (an empty section is one 00).
    assert len(tagged) == len(plain) + 4
    assert tagged.endswith(bytes.fromhex("01 00 02 001d00"))


def test_create_topics_v7_answers_a_topic_id() -> None:
    body = {"topics": [{"name": "t", "topic_id": uuid.UUID(int=5)}]}
    assert _present(CREATE_TOPICS.response, body, 7)["topics"][0]["topic_id"] == uuid.UUID(int=5)
    assert _present(CREATE_TOPICS.response, body, 6)["topics"][0]["topic_id"] == uuid.UUID(int=0)


def test_delete_topics_names_topics_until_v6_which_names_them_by_name_or_id() -> None:
    request = BODIES["DeleteTopics"][0]
    assert _present(DELETE_TOPICS.request, request, 5)["topic_names"] == ["t", "u"]
    assert _present(DELETE_TOPICS.request, request, 5)["topics"] == []
    v6 = _present(DELETE_TOPICS.request, request, 6)
    assert v6["topic_names"] == []
    assert v6["topics"] == [{"name": "t", "topic_id": uuid.UUID(int=3)}]
    assert DELETE_TOPICS.request.encode({"topic_names": ["t"], "timeout_ms": 5}, 0) == (
        bytes.fromhex("00000001 0001 74 00000005")
    )


def test_describe_configs_v0_reports_is_default_and_v1_a_source_instead() -> None:
    response = BODIES["DescribeConfigs"][1]
    v0 = _present(DESCRIBE_CONFIGS.response, response, 0)["results"][0]["configs"][0]
    assert (v0["is_default"], v0["config_source"], v0["synonyms"]) == (True, -1, [])
    v1 = _present(DESCRIBE_CONFIGS.response, response, 1)["results"][0]["configs"][0]
    assert (v1["is_default"], v1["config_source"]) == (False, 1)
    assert v1["synonyms"] == [{"name": "log.a", "value": "2", "source": 4}]


def test_a_null_describe_configs_key_list_asks_for_every_config() -> None:
    request = _present(DESCRIBE_CONFIGS.request, BODIES["DescribeConfigs"][0], 4)
    assert [r["configuration_keys"] for r in request["resources"]] == [["a"], None]


def test_create_partitions_keeps_a_null_assignment_apart_from_an_empty_one() -> None:
    request = _present(CREATE_PARTITIONS.request, BODIES["CreatePartitions"][0], 2)
    assert [t["assignments"] for t in request["topics"]] == [[{"broker_ids": [1]}], None]


def test_incremental_alter_configs_v1_is_flexible() -> None:
    body = {
        "resources": [
            {
                "resource_type": 2,
                "resource_name": "t",
                "configs": [{"name": "a", "config_operation": 0, "value": "1"}],
            }
        ]
    }
    assert INCREMENTAL_ALTER_CONFIGS.request.encode(body, 1) == bytes.fromhex(
        "02"  # compact array of one resource
        "02 02 74"  # topic "t"
        "02 02 61 00 02 31 00"  # config "a", SET, "1", no tags
        "00"  # resource tags
        "00"  # validate_only false
        "00"  # request tags
    )


def test_describe_cluster_is_flexible_from_v0_and_reads_the_endpoint_type_from_v1() -> None:
    assert DESCRIBE_CLUSTER.request.encode({}, 0) == bytes.fromhex("00 00")
    request = BODIES["DescribeCluster"][0]
    assert _present(DESCRIBE_CLUSTER.request, request, 0)["endpoint_type"] == 1
    assert _present(DESCRIBE_CLUSTER.request, request, 1)["endpoint_type"] == 2


def test_offset_for_leader_epoch_reads_a_consumer_replica_id_before_v3() -> None:
    request = BODIES["OffsetForLeaderEpoch"][0]
    assert _present(OFFSET_FOR_LEADER_EPOCH.request, request, 2)["replica_id"] == -2
    assert _present(OFFSET_FOR_LEADER_EPOCH.request, request, 3)["replica_id"] == 4
    partition = _present(OFFSET_FOR_LEADER_EPOCH.request, request, 1)["topics"][0]["partitions"]
    assert partition == [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 3}]


def test_a_null_user_list_asks_to_describe_every_user_and_stays_apart_from_an_empty_one() -> None:
    request = DESCRIBE_USER_SCRAM_CREDENTIALS.request
    # A compact nullable array: 00 is null, 01 is empty; then the request's tags.
    assert request.encode({}, 0) == bytes.fromhex("00 00")
    assert request.encode({"users": []}, 0) == bytes.fromhex("01 00")
    assert _present(request, {"users": None}, 0)["users"] is None
    assert _present(request, {"users": []}, 0)["users"] == []


def test_an_upsertion_carries_salt_and_salted_password_as_compact_bytes() -> None:
    body = {
        "upsertions": [
            {
                "name": "a",
                "mechanism": 1,
                "iterations": 4096,
                "salt": b"s",
                "salted_password": b"pw",
            }
        ]
    }
    assert ALTER_USER_SCRAM_CREDENTIALS.request.encode(body, 0) == bytes.fromhex(
        "01"  # no deletions
        "02"  # one upsertion
        "02 61"  # name "a"
        "01"  # SCRAM-SHA-256
        "00001000"  # 4096 iterations
        "02 73"  # salt
        "03 7077"  # salted password
        "00"  # upsertion tags
        "00"  # request tags
    )
