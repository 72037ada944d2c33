"""Kafka's ACL model: the AclAuthorizer decision, implied operations, ACL validation, filters and
the ZooKeeper spellings of resource types and operations."""

from __future__ import annotations

import pytest

from rafka.security.acl import (
    ACL,
    CLUSTER_NAME,
    VALID_OPERATIONS,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    Authorizer,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    matching,
)
from rafka.security.principal import KafkaPrincipal

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
ADMIN = KafkaPrincipal.user("admin")
HOST = "10.0.0.1"
OTHER_HOST = "10.0.0.2"
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
LITERAL = ACLResourcePatternType.LITERAL
PREFIXED = ACLResourcePatternType.PREFIXED
ALLOW = ACLPermissionType.ALLOW
DENY = ACLPermissionType.DENY
Op = ACLOperation


def allow(
    principal: str, operation: ACLOperation, pattern: ResourcePattern = ORDERS, host: str = "*"
) -> ACL:
    return ACL(principal, host, operation, ALLOW, pattern)


def deny(
    principal: str, operation: ACLOperation, pattern: ResourcePattern = ORDERS, host: str = "*"
) -> ACL:
    return ACL(principal, host, operation, DENY, pattern)


def decide(
    acls: list[ACL],
    operation: ACLOperation,
    principal: KafkaPrincipal = ALICE,
    host: str = HOST,
    resource_type: ResourceType = ResourceType.TOPIC,
    name: str = "orders",
    super_users: frozenset[str] = frozenset(),
    allow_everyone: bool = False,
) -> bool:
    """The authorizer's decision over ``acls``."""
    authorizer = Authorizer(frozenset(acls), super_users, allow_everyone)
    return authorizer.authorize(principal, host, operation, resource_type, name)


# The decision table.


def test_an_allow_for_the_principal_lets_it_do_that_operation() -> None:
    assert decide([allow("User:alice", Op.READ)], Op.READ)


def test_an_allow_for_one_principal_does_not_let_another_in() -> None:
    assert not decide([allow("User:alice", Op.READ)], Op.READ, principal=BOB)


def test_an_allow_for_one_operation_does_not_allow_another() -> None:
    assert not decide([allow("User:alice", Op.READ)], Op.WRITE)


def test_a_deny_wins_over_an_allow_for_the_same_principal() -> None:
    acls = [allow("User:alice", Op.READ), deny("User:alice", Op.READ)]
    assert not decide(acls, Op.READ)


def test_a_deny_for_every_user_beats_an_allow_for_alice() -> None:
    acls = [allow("User:alice", Op.READ), deny("User:*", Op.READ)]
    assert not decide(acls, Op.READ)


def test_an_allow_for_every_user_lets_anyone_in() -> None:
    acls = [allow("User:*", Op.WRITE)]
    assert decide(acls, Op.WRITE, principal=BOB)
    assert decide(acls, Op.WRITE, principal=ALICE)


def test_a_deny_for_another_principal_does_not_touch_alice() -> None:
    acls = [allow("User:alice", Op.READ), deny("User:bob", Op.READ)]
    assert decide(acls, Op.READ)
    assert not decide(acls, Op.READ, principal=BOB)


def test_a_host_specific_allow_does_not_let_another_host_in() -> None:
    acls = [allow("User:alice", Op.READ, host=HOST)]
    assert decide(acls, Op.READ, host=HOST)
    assert not decide(acls, Op.READ, host=OTHER_HOST)


def test_a_host_specific_deny_only_denies_that_host() -> None:
    acls = [allow("User:alice", Op.READ), deny("User:alice", Op.READ, host=HOST)]
    assert not decide(acls, Op.READ, host=HOST)
    assert decide(acls, Op.READ, host=OTHER_HOST)


def test_the_wildcard_host_matches_every_host() -> None:
    acls = [allow("User:alice", Op.READ, host="*")]
    assert decide(acls, Op.READ, host=HOST)
    assert decide(acls, Op.READ, host="::1")


def test_all_allows_every_operation() -> None:
    acls = [allow("User:alice", Op.ALL)]
    for operation in VALID_OPERATIONS[ResourceType.TOPIC]:
        assert decide(acls, operation), operation


def test_a_deny_on_all_denies_every_operation_an_allow_grants() -> None:
    acls = [allow("User:alice", Op.ALL), deny("User:alice", Op.ALL)]
    for operation in VALID_OPERATIONS[ResourceType.TOPIC]:
        assert not decide(acls, operation), operation


def test_a_deny_on_one_operation_leaves_the_others_of_an_all_allow() -> None:
    acls = [allow("User:alice", Op.ALL), deny("User:alice", Op.WRITE)]
    assert not decide(acls, Op.WRITE)
    assert decide(acls, Op.READ)


def test_the_literal_wildcard_resource_matches_every_resource_of_its_type() -> None:
    acls = [allow("User:alice", Op.READ, ResourcePattern(ResourceType.TOPIC, "*"))]
    assert decide(acls, Op.READ, name="orders")
    assert decide(acls, Op.READ, name="payments")
    assert not decide(acls, Op.READ, resource_type=ResourceType.GROUP, name="orders")


def test_a_deny_on_the_wildcard_resource_beats_an_allow_on_the_named_one() -> None:
    acls = [
        allow("User:alice", Op.READ),
        deny("User:alice", Op.READ, ResourcePattern(ORDERS.resource_type, "*")),
    ]
    assert not decide(acls, Op.READ)


def test_a_prefixed_pattern_matches_only_names_with_the_prefix() -> None:
    acls = [allow("User:alice", Op.READ, ResourcePattern(ResourceType.TOPIC, "orders-", PREFIXED))]
    assert decide(acls, Op.READ, name="orders-eu")
    assert decide(acls, Op.READ, name="orders-")
    assert not decide(acls, Op.READ, name="orders")
    assert not decide(acls, Op.READ, name="eu-orders-x")
    assert not decide(acls, Op.READ, name="Orders-eu")


def test_a_prefixed_deny_beats_a_literal_allow() -> None:
    acls = [
        allow("User:alice", Op.READ, ResourcePattern(ResourceType.TOPIC, "orders-eu")),
        deny("User:alice", Op.READ, ResourcePattern(ResourceType.TOPIC, "orders-", PREFIXED)),
    ]
    assert not decide(acls, Op.READ, name="orders-eu")


def test_a_literal_name_is_not_a_prefix() -> None:
    acls = [allow("User:alice", Op.READ, ResourcePattern(ResourceType.TOPIC, "orders"))]
    assert not decide(acls, Op.READ, name="orders-eu")


def test_an_acl_on_another_resource_type_with_the_same_name_does_not_apply() -> None:
    acls = [allow("User:alice", Op.READ, ResourcePattern(ResourceType.GROUP, "orders"))]
    assert not decide(acls, Op.READ, resource_type=ResourceType.TOPIC, name="orders")
    assert decide(acls, Op.READ, resource_type=ResourceType.GROUP, name="orders")


@pytest.mark.parametrize("allow_everyone", [True, False])
def test_a_resource_no_acl_names_is_allowed_only_with_allow_everyone(allow_everyone: bool) -> None:
    acls = [allow("User:bob", Op.READ, ResourcePattern(ResourceType.TOPIC, "payments"))]
    for operation in (Op.READ, Op.WRITE, Op.DESCRIBE):
        assert decide(acls, operation, allow_everyone=allow_everyone) is allow_everyone
    assert decide([], Op.READ, allow_everyone=allow_everyone) is allow_everyone


def test_allow_everyone_does_not_apply_once_any_acl_names_the_resource() -> None:
    acls = [allow("User:bob", Op.READ)]
    assert not decide(acls, Op.READ, principal=ALICE, allow_everyone=True)
    assert not decide(acls, Op.WRITE, principal=BOB, allow_everyone=True)


def test_allow_everyone_does_not_apply_when_a_prefixed_acl_covers_the_resource() -> None:
    acls = [allow("User:bob", Op.READ, ResourcePattern(ResourceType.TOPIC, "ord", PREFIXED))]
    assert not decide(acls, Op.READ, principal=ALICE, allow_everyone=True)


def test_a_super_user_may_do_anything_even_against_a_deny() -> None:
    supers = frozenset({"User:admin"})
    acls = [deny("User:admin", Op.ALL), deny("User:*", Op.ALL)]
    for operation in (Op.READ, Op.WRITE, Op.ALTER_CONFIGS):
        assert decide(acls, operation, principal=ADMIN, super_users=supers)
    assert decide(
        [],
        Op.CLUSTER_ACTION,
        ADMIN,
        resource_type=ResourceType.CLUSTER,
        name=CLUSTER_NAME,
        super_users=supers,
    )
    assert not decide(acls, Op.READ, principal=ALICE, super_users=supers)


def test_a_super_user_is_matched_by_type_and_name() -> None:
    supers = frozenset({"User:admin"})
    assert not decide([], Op.READ, principal=KafkaPrincipal("Group", "admin"), super_users=supers)


# Implied operations.


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_allowing_read_write_delete_or_alter_implies_describe(granted: ACLOperation) -> None:
    assert decide([allow("User:alice", granted)], Op.DESCRIBE)


def test_allowing_alter_configs_implies_describe_configs() -> None:
    assert decide([allow("User:alice", Op.ALTER_CONFIGS)], Op.DESCRIBE_CONFIGS)


@pytest.mark.parametrize(
    ("granted", "asked"),
    [
        (Op.DESCRIBE, Op.READ),
        (Op.DESCRIBE, Op.WRITE),
        (Op.DESCRIBE, Op.ALTER),
        (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
        (Op.READ, Op.WRITE),
        (Op.WRITE, Op.READ),
        (Op.CREATE, Op.DESCRIBE),
        (Op.ALTER, Op.DESCRIBE_CONFIGS),
        (Op.ALTER_CONFIGS, Op.DESCRIBE),
    ],
)
def test_an_allow_implies_no_operation_beyond_kafkas_rules(
    granted: ACLOperation, asked: ACLOperation
) -> None:
    assert not decide([allow("User:alice", granted)], asked)


def test_a_deny_does_not_imply_a_deny_on_describe() -> None:
    acls = [allow("User:alice", Op.WRITE), deny("User:alice", Op.READ)]
    assert decide(acls, Op.DESCRIBE)
    assert not decide(acls, Op.READ)


def test_an_explicit_describe_deny_beats_the_describe_an_allow_implies() -> None:
    acls = [allow("User:alice", Op.READ), deny("User:alice", Op.DESCRIBE)]
    assert not decide(acls, Op.DESCRIBE)
    assert decide(acls, Op.READ)


def test_an_implied_describe_respects_the_host() -> None:
    acls = [allow("User:alice", Op.READ, host=HOST)]
    assert decide(acls, Op.DESCRIBE, host=HOST)
    assert not decide(acls, Op.DESCRIBE, host=OTHER_HOST)


# authorize_any: Kafka's authorizeByResourceType (a non-transactional InitProducerId's test).


def some_topic(
    acls: list[ACL],
    principal: KafkaPrincipal = ALICE,
    super_users: frozenset[str] = frozenset(),
    allow_everyone: bool = False,
) -> bool:
    """Whether ``principal`` may WRITE some topic, from HOST."""
    authorizer = Authorizer(frozenset(acls), super_users, allow_everyone)
    return authorizer.authorize_any(principal, HOST, Op.WRITE, ResourceType.TOPIC)


def topic(name: str, pattern_type: ACLResourcePatternType = LITERAL) -> ResourcePattern:
    return ResourcePattern(ResourceType.TOPIC, name, pattern_type)


def test_an_allow_on_any_one_topic_allows_some_topic() -> None:
    assert some_topic([allow("User:alice", Op.WRITE, topic("orders"))])
    assert some_topic([allow("User:*", Op.ALL, topic("ord", PREFIXED))])
    assert not some_topic([allow("User:bob", Op.WRITE)])
    assert not some_topic([allow("User:alice", Op.READ)])
    assert not some_topic([allow("User:alice", Op.WRITE, host=OTHER_HOST)])


def test_an_allow_on_a_group_allows_no_topic() -> None:
    group = ResourcePattern(ResourceType.GROUP, "orders")
    assert not some_topic([allow("User:alice", Op.ALL, group)])


def test_a_deny_on_the_same_name_or_a_covering_prefix_takes_an_allow_back() -> None:
    assert not some_topic([allow("User:alice", Op.WRITE), deny("User:alice", Op.WRITE)])
    covering = deny("User:alice", Op.WRITE, topic("or", PREFIXED))
    assert not some_topic([allow("User:alice", Op.WRITE), covering])
    assert not some_topic([allow("User:alice", Op.WRITE, topic("orders-", PREFIXED)), covering])
    narrower = deny("User:alice", Op.WRITE, topic("orders-eu", PREFIXED))
    assert some_topic([allow("User:alice", Op.WRITE, topic("orders-", PREFIXED)), narrower])


def test_a_deny_on_every_topic_forbids_even_with_allow_everyone() -> None:
    everything = deny("User:*", Op.WRITE, topic("*"))
    assert not some_topic([allow("User:alice", Op.WRITE), everything], allow_everyone=True)
    assert some_topic([allow("User:alice", Op.WRITE, topic("*"))])


def test_allow_everyone_and_super_users_allow_some_topic_without_an_allow() -> None:
    assert some_topic([], allow_everyone=True)
    assert not some_topic([])
    denied = [deny("User:admin", Op.WRITE, topic("*"))]
    assert some_topic(denied, principal=ADMIN, super_users=frozenset({"User:admin"}))


# ACL.check: what an ACL may not be.


def assert_refused(acl: ACL, *words: str) -> None:
    with pytest.raises(ValueError) as raised:
        acl.check()
    message = str(raised.value)
    for word in words:
        assert word in message, message


def test_an_any_operation_is_refused() -> None:
    assert_refused(allow("User:alice", Op.ANY), "operation", "ANY")


def test_an_unknown_operation_is_refused() -> None:
    assert_refused(allow("User:alice", Op.UNKNOWN), "operation", "UNKNOWN")


@pytest.mark.parametrize("permission", [ACLPermissionType.ANY, ACLPermissionType.UNKNOWN])
def test_a_permission_other_than_allow_or_deny_is_refused(permission: ACLPermissionType) -> None:
    assert_refused(
        ACL("User:alice", "*", Op.READ, permission, ORDERS), "ALLOW or DENY", permission.name
    )


def test_write_on_a_group_is_refused_naming_the_operations_a_group_has() -> None:
    acl = allow("User:alice", Op.WRITE, ResourcePattern(ResourceType.GROUP, "g"))
    assert_refused(acl, "WRITE", "GROUP", "READ", "DESCRIBE", "DELETE", "ALL")


def test_a_cluster_not_named_kafka_cluster_is_refused() -> None:
    acl = allow("User:alice", Op.ALTER, ResourcePattern(ResourceType.CLUSTER, "my-cluster"))
    assert_refused(acl, "kafka-cluster", "my-cluster")


@pytest.mark.parametrize("principal", ["alice", "User:", ":alice", ""])
def test_a_principal_not_of_the_form_type_colon_name_is_refused(principal: str) -> None:
    assert_refused(allow(principal, Op.READ), "Type:name")


def test_an_empty_host_is_refused() -> None:
    assert_refused(allow("User:alice", Op.READ, host=""), "host")


@pytest.mark.parametrize(
    "pattern_type",
    [ACLResourcePatternType.MATCH, ACLResourcePatternType.ANY, ACLResourcePatternType.UNKNOWN],
)
def test_a_filter_pattern_type_is_refused(pattern_type: ACLResourcePatternType) -> None:
    acl = allow("User:alice", Op.READ, ResourcePattern(ResourceType.TOPIC, "orders", pattern_type))
    assert_refused(acl, "LITERAL or PREFIXED", pattern_type.name)


@pytest.mark.parametrize("resource_type", [ResourceType.ANY, ResourceType.UNKNOWN])
def test_a_filter_resource_type_is_refused(resource_type: ResourceType) -> None:
    acl = allow("User:alice", Op.ALL, ResourcePattern(resource_type, "orders"))
    assert_refused(acl, "resource type", resource_type.name)


def test_an_empty_resource_name_is_refused() -> None:
    assert_refused(allow("User:alice", Op.READ, ResourcePattern(ResourceType.TOPIC, "")), "name")


@pytest.mark.parametrize("name", ["team/a", "/", "a/"])
@pytest.mark.parametrize("pattern_type", [LITERAL, PREFIXED])
def test_a_resource_name_holding_a_slash_is_refused_as_kafka_refuses_it(
    name: str, pattern_type: ACLResourcePatternType
) -> None:
    acl = allow("User:alice", Op.READ, ResourcePattern(ResourceType.GROUP, name, pattern_type))
    assert_refused(acl, "'/'", repr(name))


VALID_PAIRS = [
    (kind, operation)
    for kind, operations in VALID_OPERATIONS.items()
    for operation in sorted(operations | {Op.ALL})
]


@pytest.mark.parametrize(
    ("kind", "operation"), VALID_PAIRS, ids=[f"{k.name}-{o.name}" for k, o in VALID_PAIRS]
)
@pytest.mark.parametrize("permission", [ALLOW, DENY])
def test_every_operation_a_resource_type_has_passes_the_check(
    kind: ResourceType, operation: ACLOperation, permission: ACLPermissionType
) -> None:
    name = CLUSTER_NAME if kind is ResourceType.CLUSTER else "r"
    ACL("User:alice", "*", operation, permission, ResourcePattern(kind, name)).check()


def test_a_prefixed_acl_and_a_host_specific_acl_pass_the_check() -> None:
    allow("User:*", Op.READ, ResourcePattern(ResourceType.TOPIC, "orders-", PREFIXED), HOST).check()


def test_kafkas_operation_table_per_resource_type() -> None:
    assert VALID_OPERATIONS[ResourceType.GROUP] == {Op.READ, Op.DESCRIBE, Op.DELETE}
    assert VALID_OPERATIONS[ResourceType.TRANSACTIONAL_ID] == {Op.DESCRIBE, Op.WRITE}
    assert VALID_OPERATIONS[ResourceType.DELEGATION_TOKEN] == {Op.DESCRIBE}
    assert VALID_OPERATIONS[ResourceType.USER] == {Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS}
    assert Op.IDEMPOTENT_WRITE in VALID_OPERATIONS[ResourceType.CLUSTER]
    assert Op.CLUSTER_ACTION not in VALID_OPERATIONS[ResourceType.TOPIC]


# Filters.

ALICE_READ = allow("User:alice", Op.READ)
BOB_WRITE_HOST = allow("User:bob", Op.WRITE, host=HOST)
EVERYONE_DENIED = deny("User:*", Op.DESCRIBE, ResourcePattern(ResourceType.TOPIC, "payments"))
GROUP_READ = allow("User:alice", Op.READ, ResourcePattern(ResourceType.GROUP, "g"))
PREFIXED_READ = allow(
    "User:alice", Op.READ, ResourcePattern(ResourceType.TOPIC, "orders-", PREFIXED)
)
WILDCARD_READ = allow("User:alice", Op.READ, ResourcePattern(ResourceType.TOPIC, "*"))
ALL_ACLS = [ALICE_READ, BOB_WRITE_HOST, EVERYONE_DENIED, GROUP_READ, PREFIXED_READ, WILDCARD_READ]

EVERY_PATTERN = ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)


def acl_filter(
    principal: str | None = None,
    host: str | None = None,
    operation: ACLOperation = Op.ANY,
    permission: ACLPermissionType = ACLPermissionType.ANY,
    pattern: ResourcePatternFilter = EVERY_PATTERN,
) -> ACLFilter:
    return ACLFilter(principal, host, operation, permission, pattern)


def selected(chosen: ACLFilter) -> set[ACL]:
    return {acl for acl in ALL_ACLS if chosen.matches(acl)}


def test_a_filter_of_any_and_nulls_selects_every_acl() -> None:
    assert selected(acl_filter()) == set(ALL_ACLS)


def test_a_principal_filter_selects_that_principal_only_not_the_wildcard_one() -> None:
    assert selected(acl_filter(principal="User:bob")) == {BOB_WRITE_HOST}
    assert selected(acl_filter(principal="User:*")) == {EVERYONE_DENIED}


def test_a_host_filter_selects_that_exact_host() -> None:
    assert selected(acl_filter(host=HOST)) == {BOB_WRITE_HOST}
    assert selected(acl_filter(host="*")) == set(ALL_ACLS) - {BOB_WRITE_HOST}


def test_operation_and_permission_filters_select_exact_values() -> None:
    assert selected(acl_filter(operation=Op.WRITE)) == {BOB_WRITE_HOST}
    assert selected(acl_filter(permission=DENY)) == {EVERYONE_DENIED}
    assert selected(acl_filter(operation=Op.DESCRIBE, permission=ALLOW)) == set()


def test_a_resource_type_filter_selects_that_type() -> None:
    groups = ResourcePatternFilter(ResourceType.GROUP, None, ACLResourcePatternType.ANY)
    assert selected(acl_filter(pattern=groups)) == {GROUP_READ}


def test_a_pattern_type_filter_selects_that_pattern_type() -> None:
    prefixed = ResourcePatternFilter(ResourceType.ANY, None, PREFIXED)
    literal = ResourcePatternFilter(ResourceType.ANY, None, LITERAL)
    assert selected(acl_filter(pattern=prefixed)) == {PREFIXED_READ}
    assert selected(acl_filter(pattern=literal)) == set(ALL_ACLS) - {PREFIXED_READ}


def test_a_named_any_pattern_filter_selects_exactly_that_name() -> None:
    named = ResourcePatternFilter(ResourceType.TOPIC, "orders", ACLResourcePatternType.ANY)
    assert selected(acl_filter(pattern=named)) == {ALICE_READ, BOB_WRITE_HOST}
    prefix = ResourcePatternFilter(ResourceType.TOPIC, "orders-", ACLResourcePatternType.ANY)
    assert selected(acl_filter(pattern=prefix)) == {PREFIXED_READ}


def test_a_named_literal_filter_does_not_select_the_wildcard_or_a_prefix() -> None:
    named = ResourcePatternFilter(ResourceType.TOPIC, "orders-eu", LITERAL)
    assert selected(acl_filter(pattern=named)) == set()


def test_a_match_filter_selects_every_pattern_that_applies_to_the_name() -> None:
    match = ResourcePatternFilter(ResourceType.TOPIC, "orders-eu", ACLResourcePatternType.MATCH)
    assert selected(acl_filter(pattern=match)) == {PREFIXED_READ, WILDCARD_READ}
    exact = ResourcePatternFilter(ResourceType.TOPIC, "orders", ACLResourcePatternType.MATCH)
    assert selected(acl_filter(pattern=exact)) == {ALICE_READ, BOB_WRITE_HOST, WILDCARD_READ}


def test_a_match_filter_with_any_type_spans_resource_types() -> None:
    match = ResourcePatternFilter(ResourceType.ANY, "g", ACLResourcePatternType.MATCH)
    assert selected(acl_filter(pattern=match)) == {GROUP_READ, WILDCARD_READ}


def test_a_match_filter_without_a_name_selects_every_pattern() -> None:
    match = ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.MATCH)
    assert selected(acl_filter(pattern=match)) == set(ALL_ACLS)


def test_matching_lists_the_selected_acls_by_resource_then_principal() -> None:
    expected = [
        WILDCARD_READ,
        ALICE_READ,
        BOB_WRITE_HOST,
        EVERYONE_DENIED,
        PREFIXED_READ,
        GROUP_READ,
    ]
    assert matching(ALL_ACLS, acl_filter()) == expected
    assert matching(reversed(ALL_ACLS), acl_filter()) == expected
    assert matching(ALL_ACLS, acl_filter(principal="User:bob")) == [BOB_WRITE_HOST]
    assert matching(ALL_ACLS, acl_filter(principal="User:carol")) == []


def test_an_acl_is_a_filter_that_selects_only_itself() -> None:
    assert selected(ALICE_READ) == {ALICE_READ}


# Kafka's ZooKeeper spellings.

RESOURCE_TYPE_NAMES = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
    ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.USER: "User",
}
OPERATION_NAMES = {
    Op.READ: "Read",
    Op.WRITE: "Write",
    Op.CREATE: "Create",
    Op.DELETE: "Delete",
    Op.ALTER: "Alter",
    Op.DESCRIBE: "Describe",
    Op.CLUSTER_ACTION: "ClusterAction",
    Op.DESCRIBE_CONFIGS: "DescribeConfigs",
    Op.ALTER_CONFIGS: "AlterConfigs",
    Op.IDEMPOTENT_WRITE: "IdempotentWrite",
    Op.ALL: "All",
    Op.CREATE_TOKENS: "CreateTokens",
    Op.DESCRIBE_TOKENS: "DescribeTokens",
}


@pytest.mark.parametrize(("kind", "name"), RESOURCE_TYPE_NAMES.items())
def test_a_resource_type_has_kafkas_zookeeper_name_and_back(kind: ResourceType, name: str) -> None:
    assert kind.zk_name == name
    assert ResourceType.from_zk_name(name) is kind


@pytest.mark.parametrize("kind", list(ResourceType))
def test_every_resource_type_round_trips_its_zookeeper_name(kind: ResourceType) -> None:
    assert ResourceType.from_zk_name(kind.zk_name) is kind


@pytest.mark.parametrize(("operation", "name"), OPERATION_NAMES.items())
def test_an_operation_has_kafkas_zookeeper_name_and_back(
    operation: ACLOperation, name: str
) -> None:
    assert operation.zk_name == name
    assert ACLOperation.from_zk_name(name) is operation


@pytest.mark.parametrize("operation", list(ACLOperation))
def test_every_operation_round_trips_its_zookeeper_name(operation: ACLOperation) -> None:
    assert ACLOperation.from_zk_name(operation.zk_name) is operation


@pytest.mark.parametrize("name", ["Topics", "topic-ish", ""])
def test_an_unknown_resource_type_name_is_a_value_error(name: str) -> None:
    with pytest.raises(ValueError, match="not a resource type"):
        ResourceType.from_zk_name(name)


@pytest.mark.parametrize("name", ["Reads", "Publish", ""])
def test_an_unknown_operation_name_is_a_value_error(name: str) -> None:
    with pytest.raises(ValueError, match="not an ACL operation"):
        ACLOperation.from_zk_name(name)


def test_a_resource_pattern_is_written_as_kafka_writes_it() -> None:
    assert str(ORDERS) == "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    prefixed = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-", PREFIXED)
    assert str(prefixed) == (
        "ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx-, patternType=PREFIXED)"
    )


def test_a_resource_pattern_filter_is_written_as_kafka_writes_it_with_any_for_no_name() -> None:
    every_topic = ResourcePatternFilter(ResourceType.TOPIC, None, ACLResourcePatternType.ANY)
    assert str(every_topic) == "ResourcePattern(resourceType=TOPIC, name=<any>, patternType=ANY)"
    matching_orders = ResourcePatternFilter(
        ResourceType.TOPIC, "orders", ACLResourcePatternType.MATCH
    )
    assert str(matching_orders) == (
        "ResourcePattern(resourceType=TOPIC, name=orders, patternType=MATCH)"
    )


def test_a_resource_pattern_is_literal_unless_told_otherwise() -> None:
    assert ResourcePattern(ResourceType.TOPIC, "t").pattern_type is LITERAL
