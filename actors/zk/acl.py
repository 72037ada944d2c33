"""Who may touch a cluster's znodes: Kafka's ``zookeeper.set.acl`` with a digest identity.

Every ZooKeeper session of a cluster (brokers and controllers) authenticates with the cluster's
identity, ``user:password`` for ZooKeeper's digest scheme, when one is configured. With
``set_acl`` every znode rafka creates carries an ACL granting that identity every permission and,
unless ``world_readable`` is off, anyone else read only, as Kafka's secure znodes are. Paths that
may hold secrets (Kafka's sensitive root paths) are never world-readable.

Decisions only: grants are plain data, turned into kazoo's ACL objects by ``client``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from rafka.protocol.errors import InvalidConfigError

READ, WRITE, CREATE, DELETE, ADMIN = "read", "write", "create", "delete", "admin"
ALL_PERMISSIONS = frozenset({READ, WRITE, CREATE, DELETE, ADMIN})
"""ZooKeeper's permissions, spelled as kazoo's ``make_acl`` keywords."""

SENSITIVE_ROOT_PATHS = ("/config/users", "/config/brokers", "/delegation_token")
"""Kafka's znodes that may hold credentials (SCRAM users, dynamic broker passwords, delegation
tokens): readable by the cluster's identity alone, whatever ``world_readable`` says."""


@dataclass(frozen=True)
class Grant:
    """One ACL entry: the permissions of the cluster's identity or of anyone."""

    grantee: Literal["identity", "world"]
    permissions: frozenset[str]


def parse_digest_credentials(text: str) -> str:
    """``text`` if it is empty or ``user:password`` with both parts non-empty; else ValueError
    (without the text: it is a secret)."""
    user, colon, password = text.partition(":")
    if text and not (user and colon and password):
        raise ValueError("expected user:password")
    return text


def is_sensitive(path: str) -> bool:
    """Whether a chroot-relative path lies under one of Kafka's sensitive root paths."""
    return any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOT_PATHS)


def chroot_parents(chroot: str) -> list[str]:
    """The ancestors of a chroot below ``/``, outermost first (``/rafka`` of ``/rafka/it``)."""
    parts = chroot.strip("/").split("/")
    return ["/" + "/".join(parts[:depth]) for depth in range(1, len(parts))]


def ancestors_first(paths: Iterable[str]) -> list[str]:
    """Every path with each of its ancestors before it, once each: so ``ensure_path`` gives each
    znode its own ACL rather than the one of a descendant it was created for."""
    ordered: dict[str, None] = {}
    for path in paths:
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            ordered.setdefault("/" + "/".join(parts[:depth]), None)
    return list(ordered)


@dataclass(frozen=True)
class ZkSecurity:
    """A cluster's ZooKeeper identity and ACL settings (``zookeeper_*`` broker configs)."""

    digest_credentials: str = field(default="", repr=False)
    set_acl: bool = False
    world_readable: bool = True

    def __post_init__(self) -> None:
        # An ACL naming no identity would lock the cluster out of its own znodes, so Kafka too
        # refuses zookeeper.set.acl without an authenticated ZooKeeper client.
        if self.set_acl and not self.digest_credentials:
            raise InvalidConfigError(
                "zookeeper_set_acl is true but zookeeper_digest_credentials is empty: the ACLs "
                "would name no identity"
            )
        try:
            parse_digest_credentials(self.digest_credentials)
        except ValueError as exc:
            raise InvalidConfigError(f"zookeeper_digest_credentials: {exc}") from None

    @property
    def username(self) -> str:
        """The identity's user name ('' when there is no identity)."""
        return self.digest_credentials.partition(":")[0]

    @property
    def password(self) -> str:
        """The identity's password ('' when there is no identity)."""
        return self.digest_credentials.partition(":")[2]

    def auth_data(self) -> list[tuple[str, str]]:
        """What a session presents when it connects (kazoo's ``auth_data``)."""
        return [("digest", self.digest_credentials)] if self.digest_credentials else []

    def acl(self, path: str) -> tuple[Grant, ...] | None:
        """The ACL of a znode created at a chroot-relative ``path``; None without ``set_acl``
        (ZooKeeper's open ACL, as before)."""
        if not self.set_acl:
            return None
        owner = Grant("identity", ALL_PERMISSIONS)
        if self.world_readable and not is_sensitive(path):
            return owner, Grant("world", frozenset({READ}))
        return (owner,)

    def chroot_parent_acl(self) -> tuple[Grant, ...] | None:
        """The ACL of a chroot's ancestors that rafka creates (``/rafka``); None without
        ``set_acl``.

        Other clusters on the same ensemble, with identities of their own or none, add their
        chroots beside this one, so anyone may create children there; only the identity may
        rewrite, delete or re-ACL the znode itself.
        """
        if not self.set_acl:
            return None
        others = frozenset({CREATE, READ}) if self.world_readable else frozenset({CREATE})
        return Grant("identity", ALL_PERMISSIONS), Grant("world", others)
