"""KafkaAclApis against a broker that answers with its own decisions (``acl_manager``) over an
in-memory ACL store: Kafka's DescribeAcls, CreateAcls and DeleteAcls bodies (round-tripped through
the wire codec) mapped onto rafka's requests, the answers back, and the cluster authorization each
handler asks for first."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rafka.actors.broker.acl_manager import create_acls, delete_acls, describe_acls
from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.kafka_acl_apis import KafkaAclApis
from rafka.protocol.errors import Errors
from rafka.protocol.messages.acls import (
    AclCreationResult,
    AclDeletionResult,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeAclsResult,
)
from rafka.protocol.wire.acl_apis import CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY
from rafka.security.acl import (
    ACL,
    CLUSTER_NAME,
    ACLOperation,
    ACLPermissionType,
    ResourcePattern,
    ResourceType,
)

DESCRIBE, CREATE, DELETE = DESCRIBE_ACLS.key, CREATE_ACLS.key, DELETE_ACLS.key
TOPIC, GROUP, CLUSTER = int(ResourceType.TOPIC), int(ResourceType.GROUP), int(ResourceType.CLUSTER)
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4  # pattern types (and ANY for the other enums)
READ, WRITE, ALTER = int(ACLOperation.READ), int(ACLOperation.WRITE), int(ACLOperation.ALTER)
DENY, ALLOW = int(ACLPermissionType.DENY), int(ACLPermissionType.ALLOW)
# The principal of a request outside any connection, as the listener's default says.
ANONYMOUS = "User:ANONYMOUS"


class AclBroker:
    """The broker's ACL methods over a FakeAclStore, and its authorizer (none unless given);
    ``asked`` keeps each request that reached it."""

    def __init__(self, store: Any, authorizer: BrokerAuthorizer | None = None) -> None:
        self.store = store
        self.authorizer = authorizer or BrokerAuthorizer(False, frozenset(), False)
        self.asked: list[Any] = []

    async def create_acls(self, request: CreateAclsRequest) -> list[AclCreationResult]:
        self.asked.append(request)
        return create_acls(self.store, request)

    async def describe_acls(self, request: DescribeAclsRequest) -> DescribeAclsResult:
        self.asked.append(request)
        return describe_acls(self.store, request)

    async def delete_acls(self, request: DeleteAclsRequest) -> list[AclDeletionResult]:
        self.asked.append(request)
        return delete_acls(self.store, request)


def handle(broker: AclBroker, api_key: int, body: dict[str, Any], version: int = 3) -> Any:
    """``body`` sent through the codec and KafkaAclApis; the answer must encode at ``version``."""
    header = RequestHeader(api_key, version, 1, "admin-client")
    frame = DEFAULT_REGISTRY.encode_request(header, body)
    request = DEFAULT_REGISTRY.decode_request(frame[4:])
    apis = KafkaAclApis(broker)

    async def call() -> Any:
        return await apis.handlers()[api_key](request.header, request.body)

    answer = asyncio.run(call())
    response = DEFAULT_REGISTRY.encode_response(header, answer)
    return DEFAULT_REGISTRY.decode_response(response[4:], header)[1]


def creation(
    name: str,
    principal: str = "User:alice",
    operation: int = READ,
    resource_type: int = TOPIC,
    pattern_type: int = LITERAL,
    permission: int = ALLOW,
    host: str = "*",
) -> dict[str, Any]:
    """A CreateAcls creation."""
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "resource_pattern_type": pattern_type,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission,
    }


def acl_filter(
    name: str | None = None,
    resource_type: int = ANY,
    pattern_type: int = ANY,
    principal: str | None = None,
    operation: int = ANY,
) -> dict[str, Any]:
    """A DescribeAcls body or DeleteAcls filter."""
    return {
        "resource_type_filter": resource_type,
        "resource_name_filter": name,
        "pattern_type_filter": pattern_type,
        "principal_filter": principal,
        "host_filter": None,
        "operation": operation,
        "permission_type": ANY,
    }


def cluster_acl(operation: ACLOperation) -> ACL:
    """ANONYMOUS allowed ``operation`` on the cluster."""
    return ACL(
        ANONYMOUS,
        "*",
        operation,
        ACLPermissionType.ALLOW,
        ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME),
    )


def authorizer(*acls: ACL) -> BrokerAuthorizer:
    """An enabled authorizer holding ``acls``."""
    found = BrokerAuthorizer(True, frozenset(), False)
    found.load(acls)
    return found


@pytest.mark.parametrize("version", [1, 2, 3])
def test_created_acls_are_described_one_resource_at_a_time(acl_store: Any, version: int) -> None:
    broker = AclBroker(acl_store)
    created = handle(
        broker,
        CREATE,
        {
            "creations": [
                creation("orders"),
                creation("orders", "User:bob", WRITE, permission=DENY, host="10.0.0.9"),
                creation("pay-", pattern_type=PREFIXED),
            ]
        },
        version,
    )
    assert created["results"] == [{"error_code": 0, "error_message": None}] * 3
    described = handle(broker, DESCRIBE, acl_filter(), version)
    assert (described["error_code"], described["error_message"]) == (0, None)
    assert described["resources"] == [
        {
            "resource_type": TOPIC,
            "resource_name": "orders",
            "pattern_type": LITERAL,
            "acls": [
                {"principal": "User:alice", "host": "*", "operation": READ, "permission_type": 3},
                {
                    "principal": "User:bob",
                    "host": "10.0.0.9",
                    "operation": WRITE,
                    "permission_type": 2,
                },
            ],
        },
        {
            "resource_type": TOPIC,
            "resource_name": "pay-",
            "pattern_type": PREFIXED,
            "acls": [
                {"principal": "User:alice", "host": "*", "operation": READ, "permission_type": 3}
            ],
        },
    ]


def test_an_invalid_acl_is_invalid_request_naming_why_and_the_others_are_created(
    acl_store: Any,
) -> None:
    answer = handle(
        AclBroker(acl_store),
        CREATE,
        {
            "creations": [
                creation("kafka-cluster", operation=READ, resource_type=CLUSTER),
                creation("orders"),
                creation("orders", principal="alice"),
            ]
        },
    )
    [cluster_read, created, no_type] = answer["results"]
    assert cluster_read["error_code"] == int(Errors.INVALID_REQUEST)
    assert "READ is not an operation on a CLUSTER" in cluster_read["error_message"]
    assert created == {"error_code": 0, "error_message": None}
    assert no_type["error_code"] == int(Errors.INVALID_REQUEST)
    assert [acl.principal for acl in acl_store.read_all()] == ["User:alice"]


def test_an_unknown_enum_code_in_a_creation_fails_that_creation_only(acl_store: Any) -> None:
    broker = AclBroker(acl_store)
    answer = handle(
        broker,
        CREATE,
        {
            "creations": [
                creation("orders", operation=99),
                creation("orders", permission=0),
                creation("orders"),
            ]
        },
    )
    assert answer["results"] == [
        {"error_code": 42, "error_message": "99 is not a known ACLOperation code"},
        {"error_code": 42, "error_message": "0 is not a known ACLPermissionType code"},
        {"error_code": 0, "error_message": None},
    ]
    [request] = broker.asked
    assert [acl.operation for acl in request.acls] == [ACLOperation.READ]


def test_deleting_answers_each_filters_acls_and_leaves_the_rest(acl_store: Any) -> None:
    broker = AclBroker(acl_store)
    handle(
        broker,
        CREATE,
        {
            "creations": [
                creation("orders"),
                creation("orders", operation=WRITE),
                creation("g", resource_type=GROUP),
            ]
        },
    )
    answer = handle(
        broker,
        DELETE,
        {
            "filters": [
                acl_filter("orders", TOPIC, LITERAL, operation=WRITE),
                acl_filter("nothing", TOPIC),
            ]
        },
    )
    assert answer["filter_results"] == [
        {
            "error_code": 0,
            "error_message": None,
            "matching_acls": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": TOPIC,
                    "resource_name": "orders",
                    "pattern_type": LITERAL,
                    "principal": "User:alice",
                    "host": "*",
                    "operation": WRITE,
                    "permission_type": ALLOW,
                }
            ],
        },
        {"error_code": 0, "error_message": None, "matching_acls": []},
    ]
    left = handle(broker, DESCRIBE, acl_filter())["resources"]
    assert [(r["resource_name"], [a["operation"] for a in r["acls"]]) for r in left] == [
        ("orders", [READ]),
        ("g", [READ]),
    ]


def test_a_match_filter_lists_every_pattern_that_applies_to_the_name(acl_store: Any) -> None:
    broker = AclBroker(acl_store)
    handle(
        broker,
        CREATE,
        {
            "creations": [
                creation("orders"),
                creation("*"),
                creation("ord", pattern_type=PREFIXED),
                creation("payments"),
            ]
        },
    )
    answer = handle(broker, DESCRIBE, acl_filter("orders", TOPIC, MATCH))
    assert [(r["resource_name"], r["pattern_type"]) for r in answer["resources"]] == [
        ("*", LITERAL),
        ("orders", LITERAL),
        ("ord", PREFIXED),
    ]


def test_an_unknown_code_in_a_describe_filter_is_invalid_request(acl_store: Any) -> None:
    broker = AclBroker(acl_store)
    answer = handle(broker, DESCRIBE, acl_filter(resource_type=42))
    assert answer == {
        "throttle_time_ms": 0,
        "error_code": int(Errors.INVALID_REQUEST),
        "error_message": "42 is not a known ResourceType code",
        "resources": [],
    }
    assert broker.asked == []


def test_one_unknown_code_in_a_delete_filter_refuses_the_whole_request(acl_store: Any) -> None:
    broker = AclBroker(acl_store)
    handle(broker, CREATE, {"creations": [creation("orders")]})
    answer = handle(broker, DELETE, {"filters": [acl_filter(), acl_filter(pattern_type=0)]})
    assert [r["error_code"] for r in answer["filter_results"]] == [42, 42]
    assert all(r["matching_acls"] == [] for r in answer["filter_results"])
    assert len(acl_store.read_all()) == 1


def test_a_refused_connection_gets_cluster_authorization_failed_and_nothing_is_written(
    acl_store: Any,
) -> None:
    broker = AclBroker(acl_store, authorizer())
    created = handle(broker, CREATE, {"creations": [creation("orders"), creation("t")]})
    assert (
        created["results"]
        == [{"error_code": 31, "error_message": "CreateAcls needs ALTER on the cluster resource"}]
        * 2
    )
    described = handle(broker, DESCRIBE, acl_filter())
    assert (described["error_code"], described["resources"]) == (31, [])
    assert described["error_message"] == "DescribeAcls needs DESCRIBE on the cluster resource"
    deleted = handle(broker, DELETE, {"filters": [acl_filter()]})
    assert deleted["filter_results"] == [
        {
            "error_code": 31,
            "error_message": "DeleteAcls needs ALTER on the cluster resource",
            "matching_acls": [],
        }
    ]
    assert broker.asked == []
    assert acl_store.changes == []


def test_describe_on_the_cluster_lets_a_connection_list_acls_but_not_change_them(
    acl_store: Any,
) -> None:
    broker = AclBroker(acl_store, authorizer(cluster_acl(ACLOperation.DESCRIBE)))
    assert handle(broker, DESCRIBE, acl_filter())["error_code"] == 0
    assert handle(broker, CREATE, {"creations": [creation("t")]})["results"][0]["error_code"] == 31
    deleted = handle(broker, DELETE, {"filters": [acl_filter()]})
    assert deleted["filter_results"][0]["error_code"] == 31


def test_alter_on_the_cluster_lets_a_connection_change_and_list_acls(acl_store: Any) -> None:
    broker = AclBroker(acl_store, authorizer(cluster_acl(ACLOperation.ALTER)))
    assert handle(broker, CREATE, {"creations": [creation("t")]})["results"][0]["error_code"] == 0
    # ALLOW on ALTER implies DESCRIBE, as in Kafka.
    assert len(handle(broker, DESCRIBE, acl_filter())["resources"]) == 1
    deleted = handle(broker, DELETE, {"filters": [acl_filter("t", TOPIC)]})
    assert len(deleted["filter_results"][0]["matching_acls"]) == 1


def test_an_empty_request_reaches_no_broker(acl_store: Any) -> None:
    broker = AclBroker(acl_store)
    assert handle(broker, CREATE, {"creations": []})["results"] == []
    assert handle(broker, DELETE, {"filters": []})["filter_results"] == []
    assert broker.asked == []
