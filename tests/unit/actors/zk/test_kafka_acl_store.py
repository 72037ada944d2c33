"""Kafka's ZooKeeper encoding of ACLs: the znode of each resource pattern, its JSON, and the change
notifications of both folders (the store itself is tested against a real ZooKeeper in
tests/integration/test_kafka_acl_store.py)."""

from __future__ import annotations

import json

import pytest

from rafka.actors.zk.kafka_acl_store import (
    LITERAL_CHANGES,
    PREFIXED_CHANGES,
    decode_acls,
    decode_change,
    encode_acls,
    encode_change,
    pattern_path,
)
from rafka.security.acl import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourceType,
)

LITERAL = ACLResourcePatternType.LITERAL
PREFIXED = ACLResourcePatternType.PREFIXED
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
CONCRETE_TYPES = [t for t in ResourceType if t not in (ResourceType.ANY, ResourceType.UNKNOWN)]
CONCRETE_OPERATIONS = [
    op for op in ACLOperation if op not in (ACLOperation.ANY, ACLOperation.UNKNOWN)
]


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        (ORDERS, "/kafka-acl/Topic/orders"),
        (ResourcePattern(ResourceType.GROUP, "g1"), "/kafka-acl/Group/g1"),
        (
            ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
            "/kafka-acl/Cluster/kafka-cluster",
        ),
        (ResourcePattern(ResourceType.TOPIC, "*"), "/kafka-acl/Topic/*"),
        (
            ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx"),
            "/kafka-acl/TransactionalId/tx",
        ),
        (
            ResourcePattern(ResourceType.TOPIC, "orders-", PREFIXED),
            "/kafka-acl-extended/prefixed/Topic/orders-",
        ),
        (
            ResourcePattern(ResourceType.DELEGATION_TOKEN, "tok", PREFIXED),
            "/kafka-acl-extended/prefixed/DelegationToken/tok",
        ),
    ],
)
def test_a_pattern_lives_where_kafka_keeps_it(pattern: ResourcePattern, path: str) -> None:
    assert pattern_path(pattern) == path


def test_acls_are_written_in_kafkas_json() -> None:
    acls = [
        ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW, ORDERS),
        ACL("User:bob", "10.0.0.1", ACLOperation.DESCRIBE_CONFIGS, ACLPermissionType.DENY, ORDERS),
    ]
    assert json.loads(encode_acls(acls)) == {
        "version": 1,
        "acls": [
            {
                "principal": "User:alice",
                "permissionType": "Allow",
                "operation": "Read",
                "host": "*",
            },
            {
                "principal": "User:bob",
                "permissionType": "Deny",
                "operation": "DescribeConfigs",
                "host": "10.0.0.1",
            },
        ],
    }


def test_no_acls_are_an_empty_list() -> None:
    assert json.loads(encode_acls([])) == {"version": 1, "acls": []}


def test_acls_kafka_wrote_are_read_for_the_znodes_pattern() -> None:
    written = (
        b'{"version": 1, "acls": ['
        b'{"principal": "User:alice", "permissionType": "Allow", "operation": "IdempotentWrite",'
        b' "host": "*"},'
        b'{"host": "10.0.0.2", "operation": "All", "permissionType": "Deny",'
        b' "principal": "User:*"}]}'
    )
    cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")
    assert decode_acls(cluster, written) == {
        ACL("User:alice", "*", ACLOperation.IDEMPOTENT_WRITE, ACLPermissionType.ALLOW, cluster),
        ACL("User:*", "10.0.0.2", ACLOperation.ALL, ACLPermissionType.DENY, cluster),
    }


def test_an_empty_znode_holds_no_acls() -> None:
    assert decode_acls(ORDERS, b"") == set()


@pytest.mark.parametrize("operation", CONCRETE_OPERATIONS, ids=lambda op: op.name)
@pytest.mark.parametrize("permission", [ACLPermissionType.ALLOW, ACLPermissionType.DENY])
def test_every_operation_and_permission_round_trip(
    operation: ACLOperation, permission: ACLPermissionType
) -> None:
    pattern = ResourcePattern(ResourceType.TOPIC, "orders-", PREFIXED)
    acls = {
        ACL("User:alice", "*", operation, permission, pattern),
        ACL("User:CN=a:b,O=x", "::1", operation, permission, pattern),
    }
    assert decode_acls(pattern, encode_acls(acls)) == acls


def test_a_literal_change_is_type_literal_name_in_the_legacy_folder() -> None:
    assert encode_change(ORDERS) == (LITERAL_CHANGES, b"Topic:LITERAL:orders")
    tx = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx:1")
    assert encode_change(tx) == (LITERAL_CHANGES, b"TransactionalId:LITERAL:tx:1")


def test_a_prefixed_change_is_json_in_the_extended_folder() -> None:
    pattern = ResourcePattern(ResourceType.GROUP, "team-", PREFIXED)
    folder, data = encode_change(pattern)
    assert folder == PREFIXED_CHANGES
    assert json.loads(data) == {
        "version": 1,
        "resourceType": "Group",
        "name": "team-",
        "patternType": "PREFIXED",
    }


@pytest.mark.parametrize("kind", CONCRETE_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("pattern_type", [LITERAL, PREFIXED])
@pytest.mark.parametrize("name", ["orders", "a:b", "LITERAL:x", "*"])
def test_every_change_round_trips(
    kind: ResourceType, pattern_type: ACLResourcePatternType, name: str
) -> None:
    pattern = ResourcePattern(kind, name, pattern_type)
    assert decode_change(*encode_change(pattern)) == pattern


def test_kafkas_legacy_literal_change_names_type_and_name_only() -> None:
    assert decode_change(LITERAL_CHANGES, b"Topic:orders") == ORDERS
    assert decode_change(LITERAL_CHANGES, b"Group:a:b") == ResourcePattern(
        ResourceType.GROUP, "a:b"
    )


def test_a_literal_change_keeps_colons_in_the_name() -> None:
    assert decode_change(LITERAL_CHANGES, b"Topic:LITERAL:a:b:c") == ResourcePattern(
        ResourceType.TOPIC, "a:b:c"
    )


def test_a_prefixed_change_kafka_wrote_is_read() -> None:
    data = b'{"version":1,"resourceType":"TransactionalId","name":"tx-","patternType":"PREFIXED"}'
    assert decode_change(PREFIXED_CHANGES, data) == ResourcePattern(
        ResourceType.TRANSACTIONAL_ID, "tx-", PREFIXED
    )


def test_a_change_naming_an_unknown_resource_type_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="Topics"):
        decode_change(LITERAL_CHANGES, b"Topics:LITERAL:orders")
