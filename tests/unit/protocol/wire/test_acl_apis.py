"""Tests for rafka.protocol.wire.acl_apis: DescribeAcls, CreateAcls and DeleteAcls round-trip at
every version they declare, encode Kafka's bytes (worked by hand), and decode as kafka-python's
own, independently generated, declarations decode them."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.admin import acl as kafka_acl

from rafka.protocol.wire.acl_apis import CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS
from rafka.protocol.wire.schema import Api, Message

APIS = (DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS)

_FILTER = {
    "resource_type_filter": 2,
    "resource_name_filter": "orders-",
    "pattern_type_filter": 4,
    "principal_filter": "User:alice",
    "host_filter": None,
    "operation": 3,
    "permission_type": 3,
}
_MATCHED = {
    "error_code": 0,
    "error_message": None,
    "resource_type": 2,
    "resource_name": "orders-",
    "pattern_type": 4,
    "principal": "User:alice",
    "host": "*",
    "operation": 3,
    "permission_type": 3,
}

# A request and a response body per API, every field set away from its default where it can be.
BODIES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "DescribeAcls": (
        _FILTER,
        {
            "throttle_time_ms": 4,
            "error_code": 0,
            "error_message": None,
            "resources": [
                {
                    "resource_type": 4,
                    "resource_name": "kafka-cluster",
                    "pattern_type": 3,
                    "acls": [
                        {
                            "principal": "User:ops",
                            "host": "10.0.0.1",
                            "operation": 7,
                            "permission_type": 2,
                        }
                    ],
                }
            ],
        },
    ),
    "CreateAcls": (
        {
            "creations": [
                {
                    "resource_type": 3,
                    "resource_name": "billing",
                    "resource_pattern_type": 4,
                    "principal": "User:bob",
                    "host": "*",
                    "operation": 3,
                    "permission_type": 3,
                }
            ]
        },
        {
            "throttle_time_ms": 2,
            "results": [
                {"error_code": 0, "error_message": None},
                {"error_code": 42, "error_message": "an ACL's host must not be empty"},
            ],
        },
    ),
    "DeleteAcls": (
        {"filters": [_FILTER]},
        {
            "throttle_time_ms": 1,
            "filter_results": [
                {"error_code": 0, "error_message": None, "matching_acls": [_MATCHED]},
                {"error_code": 31, "error_message": "refused", "matching_acls": []},
            ],
        },
    ),
}
KAFKA_PYTHON = {
    "DescribeAcls": (kafka_acl.DescribeAclsRequest, kafka_acl.DescribeAclsResponse),
    "CreateAcls": (kafka_acl.CreateAclsRequest, kafka_acl.CreateAclsResponse),
    "DeleteAcls": (kafka_acl.DeleteAclsRequest, kafka_acl.DeleteAclsResponse),
}


def _cases() -> list[Any]:
    return [
        pytest.param(api, side, version, id=f"{api.name}-{side}-v{version}")
        for api in APIS
        for side in (0, 1)
        for version in range(api.min_version, api.max_version + 1)
    ]


def _message(api: Api, side: int) -> Message:
    return api.request if side == 0 else api.response


@pytest.mark.parametrize(("api", "side", "version"), _cases())
def test_every_version_round_trips_every_field(api: Api, side: int, version: int) -> None:
    body = BODIES[api.name][side]
    message = _message(api, side)
    assert message.decode(message.encode(body, version), version) == body


@pytest.mark.parametrize(("api", "side", "version"), _cases())
def test_kafka_python_decodes_our_bytes_to_the_same_body(api: Api, side: int, version: int) -> None:
    body = BODIES[api.name][side]
    theirs = KAFKA_PYTHON[api.name][side].decode(_message(api, side).encode(body, version), version)
    assert theirs.to_dict() == body


def test_the_acl_apis_are_served_from_version_1_and_flexible_from_2() -> None:
    for api in APIS:
        assert (api.min_version, api.max_version) == (1, 3)
        assert [api.request.is_flexible(v) for v in (1, 2, 3)] == [False, True, True]
    assert [api.key for api in APIS] == [29, 30, 31]


def test_create_acls_v1_request_is_kafkas_fixed_layout() -> None:
    body = {
        "creations": [
            {
                "resource_type": 2,
                "resource_name": "t",
                "resource_pattern_type": 3,
                "principal": "User:a",
                "host": "*",
                "operation": 3,
                "permission_type": 3,
            }
        ]
    }
    assert CREATE_ACLS.request.encode(body, 1) == bytes.fromhex(
        "00000001"  # one creation
        "02 0001 74"  # TOPIC, "t"
        "03"  # LITERAL
        "0006 557365723a61"  # "User:a"
        "0001 2a"  # "*"
        "03 03"  # READ, ALLOW
    )


def test_describe_acls_v2_request_uses_compact_nullable_strings_and_tagged_sections() -> None:
    body = {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": "User:a",
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    assert DESCRIBE_ACLS.request.encode(body, 2) == bytes.fromhex(
        "01"  # ANY resource type
        "00"  # null name: compact length 0
        "01"  # ANY pattern type
        "07 557365723a61"  # "User:a", compact length + 1
        "00"  # null host
        "01 01"  # ANY operation, ANY permission
        "00"  # no tagged fields
    )


def test_a_request_left_without_a_pattern_type_means_literal() -> None:
    assert DESCRIBE_ACLS.request.decode(DESCRIBE_ACLS.request.encode({}, 1), 1) == {
        "resource_type_filter": 0,
        "resource_name_filter": None,
        "pattern_type_filter": 3,
        "principal_filter": None,
        "host_filter": None,
        "operation": 0,
        "permission_type": 0,
    }
