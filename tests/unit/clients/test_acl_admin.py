"""Tests for Admin's ACL operations (rafka.clients.acl_admin) against an in-memory fake cluster
whose brokers answer with their own decisions over one ACL store."""

from __future__ import annotations

import pytest

from rafka.actors import names
from rafka.clients.admin import Admin
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.acls import AclCreationResult, AclDeletionResult, DescribeAclsResult
from rafka.security.acl import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
PAY_PREFIX = ResourcePattern(ResourceType.TOPIC, "pay-", ACLResourcePatternType.PREFIXED)
SHIPPING = ResourcePattern(ResourceType.GROUP, "shipping")
EVERY_PATTERN = ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)


def allow(principal: str, pattern: ResourcePattern, operation: ACLOperation) -> ACL:
    return ACL(principal, "*", operation, ACLPermissionType.ALLOW, pattern)


def selecting(
    principal: str | None = None, pattern: ResourcePatternFilter = EVERY_PATTERN
) -> ACLFilter:
    return ACLFilter(principal, None, ACLOperation.ANY, ACLPermissionType.ANY, pattern)


ALICE_READS = allow("User:alice", ORDERS, ACLOperation.READ)
ALICE_WRITES = allow("User:alice", PAY_PREFIX, ACLOperation.WRITE)
BOB_READS = allow("User:bob", SHIPPING, ACLOperation.READ)


@pytest.fixture
def admin(fake_cluster) -> Admin:
    """An admin client of two fake brokers sharing one ACL store."""
    fake_cluster.add_brokers(2)
    return Admin(request_timeout_ms=2000)


def test_created_acls_answer_one_result_each_and_are_described_in_a_stable_order(
    fake_cluster, admin: Admin
) -> None:
    assert admin.create_acls([BOB_READS, ALICE_WRITES, ALICE_READS]) == [
        AclCreationResult(BOB_READS, Errors.NONE),
        AclCreationResult(ALICE_WRITES, Errors.NONE),
        AclCreationResult(ALICE_READS, Errors.NONE),
    ]
    assert fake_cluster.acls.read_all() == {BOB_READS, ALICE_WRITES, ALICE_READS}
    # Topics before groups, LITERAL before PREFIXED.
    assert admin.describe_acls(selecting()) == [ALICE_READS, ALICE_WRITES, BOB_READS]
    assert admin.describe_acls(selecting("User:bob")) == [BOB_READS]
    applying = ResourcePatternFilter(ResourceType.TOPIC, "pay-eu", ACLResourcePatternType.MATCH)
    assert admin.describe_acls(selecting(pattern=applying)) == [ALICE_WRITES]


def test_an_invalid_acl_is_reported_not_raised_and_the_others_are_created(
    fake_cluster, admin: Admin
) -> None:
    cluster_read = allow(
        "User:alice", ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"), ACLOperation.READ
    )
    [refused, created] = admin.create_acls([cluster_read, ALICE_READS])
    assert (refused.acl, refused.error) == (cluster_read, Errors.INVALID_REQUEST)
    assert (
        refused.message is not None and "READ is not an operation on a CLUSTER" in refused.message
    )
    assert created == AclCreationResult(ALICE_READS, Errors.NONE)
    assert fake_cluster.acls.read_all() == {ALICE_READS}


def test_deleting_answers_each_filter_with_the_acls_it_removed(fake_cluster, admin: Admin) -> None:
    admin.create_acls([ALICE_READS, ALICE_WRITES, BOB_READS])
    by_alice = selecting("User:alice")
    nothing = selecting("User:carol")
    assert admin.delete_acls([by_alice, nothing]) == [
        AclDeletionResult(by_alice, Errors.NONE, None, (ALICE_READS, ALICE_WRITES)),
        AclDeletionResult(nothing, Errors.NONE),
    ]
    assert admin.describe_acls(selecting()) == [BOB_READS]


def test_a_describe_failure_raises_its_kafka_error(
    fake_cluster, admin: Admin, monkeypatch: pytest.MonkeyPatch
) -> None:
    for broker_id in fake_cluster.broker_ids:
        monkeypatch.setattr(
            fake_cluster.broker(broker_id),
            "describe_acls",
            lambda request: DescribeAclsResult(Errors.SECURITY_DISABLED, "no authorizer"),
        )
    with pytest.raises(RafkaError, match="no authorizer") as raised:
        admin.describe_acls(selecting())
    assert raised.value.error is Errors.SECURITY_DISABLED


def test_another_broker_answers_when_the_first_is_gone(fake_cluster, admin: Admin) -> None:
    fake_cluster.dead.add(names.broker_actor_name(0))
    assert admin.create_acls([ALICE_READS]) == [AclCreationResult(ALICE_READS, Errors.NONE)]
    assert admin.describe_acls(selecting()) == [ALICE_READS]
