"""A broker's authorizer: its ACL cache and decision, and the ``authorizer_class_name``,
``super_users`` and ``allow_everyone_if_no_acl_found`` settings."""

from __future__ import annotations

import pytest

from rafka.actors.broker.authorizer import (
    ACL_AUTHORIZER_NAMES,
    BrokerAuthorizer,
    authorizer_class_text,
    parse_super_users,
    super_users_text,
)
from rafka.actors.broker.config import BrokerConfig
from rafka.protocol.errors import Errors, InvalidConfigError
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
from rafka.security.principal import KafkaPrincipal

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
HOST = "10.0.0.1"
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
PAYMENTS = ResourcePattern(ResourceType.TOPIC, "payments")
READ = ACLOperation.READ
TOPIC = ResourceType.TOPIC
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


def allow(principal: str, pattern: ResourcePattern, operation: ACLOperation = READ) -> ACL:
    return ACL(principal, "*", operation, ACLPermissionType.ALLOW, pattern)


def deny(principal: str, pattern: ResourcePattern, operation: ACLOperation = READ) -> ACL:
    return ACL(principal, "*", operation, ACLPermissionType.DENY, pattern)


EVERY_ACL = ACLFilter(
    None,
    None,
    ACLOperation.ANY,
    ACLPermissionType.ANY,
    ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
)


def enabled(
    super_users: frozenset[str] = frozenset(), allow_everyone: bool = False
) -> BrokerAuthorizer:
    return BrokerAuthorizer(True, super_users, allow_everyone)


# The cache and its decision.


def test_a_disabled_authorizer_allows_everything_even_against_a_deny() -> None:
    authorizer = BrokerAuthorizer(False, frozenset(), False)
    authorizer.load([deny("User:*", ORDERS, ACLOperation.ALL)])
    for operation in (READ, ACLOperation.WRITE, ACLOperation.ALTER_CONFIGS):
        assert authorizer.allowed(ALICE, HOST, operation, TOPIC, "orders")
    assert authorizer.allowed(BOB, HOST, READ, ResourceType.GROUP, "g")


def test_an_enabled_authorizer_without_acls_denies_unless_allow_everyone() -> None:
    assert not enabled().allowed(ALICE, HOST, READ, TOPIC, "orders")
    assert enabled(allow_everyone=True).allowed(ALICE, HOST, READ, TOPIC, "orders")


def test_an_enabled_authorizer_decides_over_the_loaded_acls() -> None:
    authorizer = enabled()
    authorizer.load([allow("User:alice", ORDERS), deny("User:bob", ORDERS)])
    assert authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")
    assert authorizer.allowed(ALICE, HOST, ACLOperation.DESCRIBE, TOPIC, "orders")
    assert not authorizer.allowed(ALICE, HOST, ACLOperation.WRITE, TOPIC, "orders")
    assert not authorizer.allowed(BOB, HOST, READ, TOPIC, "orders")


def test_super_users_are_allowed_everything() -> None:
    authorizer = enabled(super_users=frozenset({"User:bob"}))
    authorizer.load([deny("User:bob", ORDERS, ACLOperation.ALL)])
    assert authorizer.allowed(BOB, HOST, ACLOperation.WRITE, TOPIC, "orders")
    assert not authorizer.allowed(ALICE, HOST, ACLOperation.WRITE, TOPIC, "orders")


def test_allowed_on_any_asks_about_some_resource_of_a_type_and_is_always_so_when_disabled() -> None:
    authorizer = enabled()
    authorizer.load([allow("User:alice", ORDERS, ACLOperation.WRITE)])
    assert authorizer.allowed_on_any(ALICE, HOST, ACLOperation.WRITE, TOPIC)
    assert not authorizer.allowed_on_any(BOB, HOST, ACLOperation.WRITE, TOPIC)
    assert BrokerAuthorizer(False, frozenset(), False).allowed_on_any(
        BOB, HOST, ACLOperation.WRITE, TOPIC
    )


def test_load_replaces_every_cached_acl() -> None:
    authorizer = enabled()
    authorizer.load([allow("User:alice", ORDERS), allow("User:alice", PAYMENTS)])
    authorizer.load([allow("User:bob", PAYMENTS)])
    assert not authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")
    assert not authorizer.allowed(ALICE, HOST, READ, TOPIC, "payments")
    assert authorizer.allowed(BOB, HOST, READ, TOPIC, "payments")
    assert authorizer.acls(EVERY_ACL) == [allow("User:bob", PAYMENTS)]


def test_load_keeps_every_acl_of_a_pattern() -> None:
    authorizer = enabled()
    authorizer.load([allow("User:alice", ORDERS), allow("User:bob", ORDERS)])
    assert authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")
    assert authorizer.allowed(BOB, HOST, READ, TOPIC, "orders")


def test_replace_changes_one_pattern_and_leaves_the_others() -> None:
    authorizer = enabled()
    authorizer.load([allow("User:alice", ORDERS), allow("User:alice", PAYMENTS)])
    authorizer.replace(ORDERS, [allow("User:bob", ORDERS)])
    assert not authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")
    assert authorizer.allowed(BOB, HOST, READ, TOPIC, "orders")
    assert authorizer.allowed(ALICE, HOST, READ, TOPIC, "payments")


def test_replace_with_no_acls_forgets_the_pattern() -> None:
    authorizer = enabled(allow_everyone=True)
    authorizer.load([allow("User:bob", ORDERS), allow("User:bob", PAYMENTS)])
    assert not authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")
    authorizer.replace(ORDERS, [])
    assert authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders"), "no ACL left: allow everyone"
    assert authorizer.acls(EVERY_ACL) == [allow("User:bob", PAYMENTS)]


def test_replace_of_an_unknown_pattern_adds_it_and_forgetting_one_is_harmless() -> None:
    authorizer = enabled()
    authorizer.replace(PAYMENTS, [])
    authorizer.replace(ORDERS, [allow("User:alice", ORDERS)])
    assert authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")
    assert authorizer.acls(EVERY_ACL) == [allow("User:alice", ORDERS)]


def test_acls_lists_the_cached_acls_a_filter_selects() -> None:
    authorizer = enabled()
    acls = [allow("User:alice", ORDERS), deny("User:bob", ORDERS), allow("User:bob", PAYMENTS)]
    authorizer.load(acls)
    bobs = ACLFilter(
        "User:bob",
        None,
        ACLOperation.ANY,
        ACLPermissionType.ANY,
        ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
    )
    assert authorizer.acls(bobs) == [deny("User:bob", ORDERS), allow("User:bob", PAYMENTS)]
    assert sorted(authorizer.acls(EVERY_ACL), key=acls.index) == acls


def test_a_disabled_authorizer_still_lists_its_acls() -> None:
    authorizer = BrokerAuthorizer(False, frozenset(), False)
    authorizer.load([allow("User:alice", ORDERS)])
    assert authorizer.acls(EVERY_ACL) == [allow("User:alice", ORDERS)]


# Settings.


@pytest.mark.parametrize("name", sorted(ACL_AUTHORIZER_NAMES))
def test_kafkas_acl_authorizer_class_names_are_accepted(name: str) -> None:
    assert authorizer_class_text(name) == name


def test_the_accepted_names_are_kafkas_current_and_legacy_classes() -> None:
    assert ACL_AUTHORIZER in ACL_AUTHORIZER_NAMES
    assert "kafka.security.auth.SimpleAclAuthorizer" in ACL_AUTHORIZER_NAMES


def test_an_empty_authorizer_class_name_means_no_authorizer() -> None:
    assert authorizer_class_text("") == ""


@pytest.mark.parametrize(
    "name",
    [
        "com.example.MyAuthorizer",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "aclauthorizer",
    ],
)
def test_another_authorizer_class_is_refused_naming_the_accepted_ones(name: str) -> None:
    with pytest.raises(ValueError) as raised:
        authorizer_class_text(name)
    message = str(raised.value)
    assert repr(name) in message
    for accepted in ACL_AUTHORIZER_NAMES:
        assert accepted in message


def test_super_users_are_separated_by_semicolons() -> None:
    assert parse_super_users("User:admin;User:ops") == {"User:admin", "User:ops"}


def test_super_users_ignore_spaces_around_entries_and_empty_entries() -> None:
    assert parse_super_users(" User:admin ; User:ops ;;") == {"User:admin", "User:ops"}
    assert parse_super_users("") == frozenset()
    assert parse_super_users(" ; ") == frozenset()


def test_a_super_user_keeps_colons_in_its_name() -> None:
    assert parse_super_users("User:CN=a:b") == {"User:CN=a:b"}


@pytest.mark.parametrize("bad", ["admin", "User:", ":admin"])
def test_a_bad_super_user_is_refused_naming_it(bad: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_super_users(f"User:ok;{bad}")
    assert repr(bad) in str(raised.value)
    assert "Type:name" in str(raised.value)


def test_super_users_text_checks_and_keeps_the_value() -> None:
    assert super_users_text("User:admin;User:ops") == "User:admin;User:ops"
    with pytest.raises(ValueError):
        super_users_text("admin")


def test_broker_config_reads_the_authorizer_settings_by_kafkas_names() -> None:
    config = BrokerConfig.from_dict(
        {
            "authorizer.class.name": ACL_AUTHORIZER,
            "super.users": "User:admin;User:ops",
            "allow.everyone.if.no.acl.found": "true",
        }
    )
    assert config.authorizer_class_name == ACL_AUTHORIZER
    assert parse_super_users(config.super_users) == {"User:admin", "User:ops"}
    assert config.allow_everyone_if_no_acl_found is True


def test_broker_config_has_no_authorizer_by_default() -> None:
    config = BrokerConfig()
    assert config.authorizer_class_name == ""
    assert config.super_users == ""
    assert config.allow_everyone_if_no_acl_found is False


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("authorizer.class.name", "com.example.MyAuthorizer"),
        ("authorizer_class_name", "kafka.security.auth.Nope"),
        ("super.users", "User:admin;ops"),
        ("super_users", "admin"),
        ("allow.everyone.if.no.acl.found", "sometimes"),
    ],
)
def test_broker_config_refuses_a_bad_authorizer_setting_as_invalid_config(
    key: str, value: str
) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        BrokerConfig.from_dict({key: value})
    assert raised.value.error is Errors.INVALID_CONFIG
    assert key in str(raised.value)
