"""Tests for rafka.actors.zk.acl: which identity a session presents and which ACL a znode gets."""

from __future__ import annotations

import pytest

from rafka.actors.zk.acl import (
    ALL_PERMISSIONS,
    CREATE,
    READ,
    Grant,
    ZkSecurity,
    ancestors_first,
    chroot_parents,
    is_sensitive,
    parse_digest_credentials,
)
from rafka.protocol.errors import InvalidConfigError

OWNER = Grant("identity", ALL_PERMISSIONS)
READER = Grant("world", frozenset({READ}))


def test_without_an_identity_sessions_present_nothing_and_znodes_stay_open() -> None:
    security = ZkSecurity()
    assert security.auth_data() == []
    assert security.acl("/brokers/topics/t") is None
    assert security.chroot_parent_acl() is None


def test_an_identity_without_set_acl_authenticates_but_leaves_the_acls_open() -> None:
    security = ZkSecurity("rafka:pw")
    assert security.auth_data() == [("digest", "rafka:pw")]
    assert security.acl("/controller") is None


def test_set_acl_gives_the_identity_everything_and_the_world_read_only() -> None:
    security = ZkSecurity("rafka:pw", set_acl=True)
    for path in ("/", "/brokers/topics/t", "/controller", "/admin/delete_topics/t"):
        assert security.acl(path) == (OWNER, READER)


def test_without_world_readable_only_the_identity_has_an_entry() -> None:
    security = ZkSecurity("rafka:pw", set_acl=True, world_readable=False)
    assert security.acl("/brokers/ids") == (OWNER,)


@pytest.mark.parametrize(
    "path", ["/config/brokers", "/config/brokers/0", "/config/users/alice", "/delegation_token"]
)
def test_sensitive_paths_are_never_world_readable(path: str) -> None:
    assert is_sensitive(path)
    assert ZkSecurity("rafka:pw", set_acl=True).acl(path) == (OWNER,)


def test_a_path_that_only_starts_like_a_sensitive_one_is_not_sensitive() -> None:
    assert not is_sensitive("/config/brokersX")
    assert not is_sensitive("/config/topics/t")


def test_chroot_parents_let_other_clusters_add_their_chroots() -> None:
    assert ZkSecurity("rafka:pw", set_acl=True).chroot_parent_acl() == (
        OWNER,
        Grant("world", frozenset({READ, CREATE})),
    )
    hidden = ZkSecurity("rafka:pw", set_acl=True, world_readable=False)
    assert hidden.chroot_parent_acl() == (OWNER, Grant("world", frozenset({CREATE})))


def test_set_acl_without_an_identity_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match="zookeeper_set_acl"):
        ZkSecurity(set_acl=True)


@pytest.mark.parametrize("text", ["rafka", ":pw", "rafka:"])
def test_credentials_must_be_user_colon_password_and_errors_hide_them(text: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_digest_credentials(text)
    assert text not in str(raised.value)
    with pytest.raises(InvalidConfigError):
        ZkSecurity(text)


def test_the_password_may_hold_a_colon_and_repr_shows_no_secret() -> None:
    security = ZkSecurity("rafka:p:w", set_acl=True)
    assert (security.username, security.password) == ("rafka", "p:w")
    assert "p:w" not in repr(security)


def test_chroot_parents_are_listed_outermost_first() -> None:
    assert chroot_parents("/rafka/it") == ["/rafka"]
    assert chroot_parents("/a/b/c") == ["/a", "/a/b"]
    assert chroot_parents("/kafka") == []


def test_ancestors_come_before_each_path_once() -> None:
    assert ancestors_first(["/config/topics", "/config/brokers", "/brokers/ids"]) == [
        "/config",
        "/config/topics",
        "/config/brokers",
        "/brokers",
        "/brokers/ids",
    ]
