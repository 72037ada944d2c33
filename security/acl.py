"""Kafka's ACL model and its authorizer's decision, with kafka-python's names for the types.

An ``ACL`` lets (or forbids) a principal from a host one operation on the resources a
``ResourcePattern`` matches: one resource by name (LITERAL; the name ``*`` matches every resource of
its type) or every resource whose name starts with a prefix (PREFIXED). ``Authorizer.authorize``
decides a request as Kafka's AclAuthorizer does:

1. a super user may do anything;
2. a matching DENY wins over any ALLOW;
3. ALLOW on READ, WRITE, DELETE or ALTER implies DESCRIBE, and ALLOW on ALTER_CONFIGS implies
   DESCRIBE_CONFIGS; ALL matches every operation;
4. a resource that no ACL matches at all is allowed only with ``allow_everyone_if_no_acl_found``.

Filters (``ACLFilter``) select ACLs for DescribeAcls and DeleteAcls, with ANY matching every value
and MATCH matching the patterns that would apply to a resource name. No ZooKeeper here: the
ACLs are handed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum

from rafka.security.principal import KafkaPrincipal

WILDCARD = "*"
"""The resource name, principal name and host that match every one."""
WILDCARD_PRINCIPAL = "User:*"
"""The principal of an ACL for everyone, whatever their principal type (as in Kafka)."""
CLUSTER_NAME = "kafka-cluster"
"""The one CLUSTER resource's name."""


def _kafka_case(member_name: str) -> str:
    """An enum member's name as Kafka writes it in ZooKeeper (``TRANSACTIONAL_ID`` ->
    ``TransactionalId``)."""
    return "".join(part.capitalize() for part in member_name.split("_"))


class ResourceType(IntEnum):
    """What an ACL guards (Kafka's codes)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7

    @property
    def zk_name(self) -> str:
        """Kafka's name for it in ``/kafka-acl`` paths (``Topic``, ``TransactionalId``)."""
        return _kafka_case(self.name)

    @staticmethod
    def from_zk_name(name: str) -> ResourceType:
        """The type a ``/kafka-acl`` path names; ValueError for none."""
        for member in ResourceType:
            if member.zk_name == name:
                return member
        raise ValueError(f"{name!r} is not a resource type")


class ACLOperation(IntEnum):
    """What a request does to a resource (Kafka's codes)."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14

    @property
    def zk_name(self) -> str:
        """Kafka's name for it in stored ACLs (``Read``, ``DescribeConfigs``)."""
        return _kafka_case(self.name)

    @staticmethod
    def from_zk_name(name: str) -> ACLOperation:
        """The operation a stored ACL names; ValueError for none."""
        for member in ACLOperation:
            if member.zk_name.lower() == name.replace("_", "").lower():
                return member
        raise ValueError(f"{name!r} is not an ACL operation")


class ACLPermissionType(IntEnum):
    """Whether an ACL allows or denies (Kafka's codes)."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class ACLResourcePatternType(IntEnum):
    """How an ACL's resource name matches (Kafka's codes)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


IMPLIED_BY: dict[ACLOperation, frozenset[ACLOperation]] = {
    ACLOperation.DESCRIBE: frozenset(
        {ACLOperation.READ, ACLOperation.WRITE, ACLOperation.DELETE, ACLOperation.ALTER}
    ),
    ACLOperation.DESCRIBE_CONFIGS: frozenset({ACLOperation.ALTER_CONFIGS}),
}
"""Operations an ALLOW on another operation also allows, as Kafka's authorizer grants them."""

VALID_OPERATIONS: dict[ResourceType, frozenset[ACLOperation]] = {
    ResourceType.TOPIC: frozenset(
        {
            ACLOperation.READ,
            ACLOperation.WRITE,
            ACLOperation.CREATE,
            ACLOperation.DELETE,
            ACLOperation.ALTER,
            ACLOperation.DESCRIBE,
            ACLOperation.DESCRIBE_CONFIGS,
            ACLOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset({ACLOperation.READ, ACLOperation.DESCRIBE, ACLOperation.DELETE}),
    ResourceType.CLUSTER: frozenset(
        {
            ACLOperation.CREATE,
            ACLOperation.CLUSTER_ACTION,
            ACLOperation.DESCRIBE_CONFIGS,
            ACLOperation.ALTER_CONFIGS,
            ACLOperation.IDEMPOTENT_WRITE,
            ACLOperation.ALTER,
            ACLOperation.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({ACLOperation.DESCRIBE, ACLOperation.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({ACLOperation.DESCRIBE}),
    ResourceType.USER: frozenset({ACLOperation.CREATE_TOKENS, ACLOperation.DESCRIBE_TOKENS}),
}
"""The operations that mean something on each resource type (ALL is valid on every one)."""


@dataclass(frozen=True)
class ResourcePatternFilter:
    """Selects resource patterns: ANY type, a null name or ANY pattern type match every one;
    MATCH selects the patterns that apply to the named resource."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: ACLResourcePatternType

    def __str__(self) -> str:
        """Kafka's form, as kafka-acls prints it (``<any>`` for a null name)."""
        name = "<any>" if self.resource_name is None else self.resource_name
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={name}, "
            f"patternType={self.pattern_type.name})"
        )

    def matches(self, pattern: ResourcePattern) -> bool:
        """Whether ``pattern`` is one this filter selects."""
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        if self.pattern_type is ACLResourcePatternType.MATCH:
            return self.resource_name is None or pattern.applies_to(self.resource_name)
        if self.pattern_type not in (ACLResourcePatternType.ANY, pattern.pattern_type):
            return False
        return self.resource_name is None or self.resource_name == pattern.resource_name


@dataclass(frozen=True)
class ResourcePattern(ResourcePatternFilter):
    """One resource (LITERAL, ``*`` for all of its type) or every resource with a name prefix
    (PREFIXED)."""

    resource_name: str
    pattern_type: ACLResourcePatternType = ACLResourcePatternType.LITERAL

    def applies_to(self, name: str) -> bool:
        """Whether this pattern covers the resource called ``name``."""
        if self.pattern_type is ACLResourcePatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (WILDCARD, name)

    def check(self) -> None:
        """ValueError for a pattern an ACL may not have (a filter's ANY or MATCH values, an
        empty name or one holding ``/``, which ZooKeeper would read as a path, a cluster not
        named ``kafka-cluster``)."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError(
                f"an ACL's resource type must be concrete, not {self.resource_type.name}"
            )
        if self.pattern_type not in (
            ACLResourcePatternType.LITERAL,
            ACLResourcePatternType.PREFIXED,
        ):
            raise ValueError(
                f"an ACL's pattern type must be LITERAL or PREFIXED, not {self.pattern_type.name}"
            )
        if not self.resource_name:
            raise ValueError("an ACL's resource name must not be empty")
        # The name is a znode's name under /kafka-acl, which ZooKeeper restricts.
        if "/" in self.resource_name or "\0" in self.resource_name:
            raise ValueError(
                f"an ACL's resource name must not contain '/' or NUL: {self.resource_name!r}"
            )
        if self.resource_name in (".", ".."):
            raise ValueError(f"an ACL's resource name must not be {self.resource_name!r}")
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise ValueError(
                f"the cluster resource is named {CLUSTER_NAME!r}, not {self.resource_name!r}"
            )


@dataclass(frozen=True)
class ACLFilter:
    """Selects ACLs: a null principal or host, and ANY operation or permission, match every
    one; the resource side is a ``ResourcePatternFilter``."""

    principal: str | None
    host: str | None
    operation: ACLOperation
    permission_type: ACLPermissionType
    resource_pattern: ResourcePatternFilter

    def matches(self, acl: ACL) -> bool:
        """Whether ``acl`` is one this filter selects."""
        return (
            self.principal in (None, acl.principal)
            and self.host in (None, acl.host)
            and self.operation in (ACLOperation.ANY, acl.operation)
            and self.permission_type in (ACLPermissionType.ANY, acl.permission_type)
            and self.resource_pattern.matches(acl.resource_pattern)
        )


@dataclass(frozen=True)
class ACL(ACLFilter):
    """One access control entry bound to a resource pattern."""

    principal: str
    host: str
    resource_pattern: ResourcePattern

    def check(self) -> None:
        """ValueError naming what makes this ACL invalid: a principal not of the form
        ``Type:name``, an operation or permission that is a filter's (ANY, UNKNOWN), an
        operation the resource type does not have, or an invalid pattern."""
        KafkaPrincipal.parse(self.principal)
        if not self.host:
            raise ValueError("an ACL's host must not be empty (use * for every host)")
        if self.operation in (ACLOperation.ANY, ACLOperation.UNKNOWN):
            raise ValueError(f"an ACL's operation must be concrete, not {self.operation.name}")
        if self.permission_type not in (ACLPermissionType.ALLOW, ACLPermissionType.DENY):
            raise ValueError(
                f"an ACL's permission must be ALLOW or DENY, not {self.permission_type.name}"
            )
        self.resource_pattern.check()
        valid = VALID_OPERATIONS[self.resource_pattern.resource_type]
        if self.operation is not ACLOperation.ALL and self.operation not in valid:
            kind = self.resource_pattern.resource_type.name
            names = ", ".join(sorted(op.name for op in valid))
            raise ValueError(
                f"{self.operation.name} is not an operation on a {kind} (use {names} or ALL)"
            )

    def grants(self, principal: KafkaPrincipal, host: str, operation: ACLOperation) -> bool:
        """Whether this entry speaks for ``principal`` from ``host`` doing ``operation`` (for
        either permission; implied operations are the authorizer's business)."""
        return (
            self.principal in (str(principal), WILDCARD_PRINCIPAL)
            and self.host in (WILDCARD, host)
            and self.operation in (ACLOperation.ALL, operation)
        )


@dataclass(frozen=True)
class Authorizer:
    """Kafka's AclAuthorizer decision over a set of ACLs (see the module's docstring)."""

    acls: frozenset[ACL]
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False
    # A check runs for every topic of every request: it reads the ACLs of that one name (and of
    # ``*``) and the type's PREFIXED ones, not every ACL of the cluster.
    _literal: dict[tuple[ResourceType, str], tuple[ACL, ...]] = field(
        init=False, repr=False, compare=False
    )
    _prefixed: dict[ResourceType, tuple[ACL, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        literal: dict[tuple[ResourceType, str], list[ACL]] = {}
        prefixed: dict[ResourceType, list[ACL]] = {}
        for acl in self.acls:
            pattern = acl.resource_pattern
            if pattern.pattern_type is ACLResourcePatternType.PREFIXED:
                prefixed.setdefault(pattern.resource_type, []).append(acl)
            else:
                literal.setdefault((pattern.resource_type, pattern.resource_name), []).append(acl)
        # Frozen: the indexes are set once, here.
        object.__setattr__(self, "_literal", {k: tuple(v) for k, v in literal.items()})
        object.__setattr__(self, "_prefixed", {k: tuple(v) for k, v in prefixed.items()})

    def _applying(self, resource_type: ResourceType, name: str) -> list[ACL]:
        """The ACLs whose pattern covers the resource: its name's, ``*``'s and matching
        prefixes'."""
        found = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            found += self._literal.get((resource_type, WILDCARD), ())
        found += (
            acl
            for acl in self._prefixed.get(resource_type, ())
            if name.startswith(acl.resource_pattern.resource_name)
        )
        return found

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: ACLOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether ``principal`` connected from ``host`` may do ``operation`` on a resource."""
        if str(principal) in self.super_users:
            return True
        found = self._applying(resource_type, name)
        if not found:
            return self.allow_everyone_if_no_acl_found
        denied = (
            acl.permission_type is ACLPermissionType.DENY and acl.grants(principal, host, operation)
            for acl in found
        )
        if any(denied):
            return False
        allowing = (operation, *IMPLIED_BY.get(operation, ()))
        return any(
            acl.permission_type is ACLPermissionType.ALLOW and acl.grants(principal, host, op)
            for acl in found
            for op in allowing
        )

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: ACLOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether ``principal`` from ``host`` may do ``operation`` on some resource of the type,
        as Kafka's AclAuthorizer.authorizeByResourceType decides: a super user may; a DENY on every
        name (``*``) forbids; ``allow_everyone_if_no_acl_found`` allows; otherwise an ALLOW on a
        name or prefix that no DENY on that name, or on a prefix of it, takes back."""
        if str(principal) in self.super_users:
            return True
        own = [
            acl
            for acl in self.acls
            if acl.resource_pattern.resource_type is resource_type
            and acl.grants(principal, host, operation)
        ]
        denied = [a.resource_pattern for a in own if a.permission_type is ACLPermissionType.DENY]
        denied_names = {
            p.resource_name for p in denied if p.pattern_type is ACLResourcePatternType.LITERAL
        }
        if WILDCARD in denied_names:
            return False
        if self.allow_everyone_if_no_acl_found:
            return True
        denied_prefixes = [
            p.resource_name for p in denied if p.pattern_type is ACLResourcePatternType.PREFIXED
        ]

        def stands(pattern: ResourcePattern) -> bool:
            if pattern.pattern_type is ACLResourcePatternType.LITERAL:
                if pattern.resource_name == WILDCARD:
                    return True
                if pattern.resource_name in denied_names:
                    return False
            return not any(pattern.resource_name.startswith(p) for p in denied_prefixes)

        return any(
            stands(acl.resource_pattern)
            for acl in own
            if acl.permission_type is ACLPermissionType.ALLOW
        )


def matching(acls: Iterable[ACL], acl_filter: ACLFilter) -> list[ACL]:
    """The ACLs a filter selects, in a stable order (by resource, then principal, host and
    operation)."""
    return sorted(
        (acl for acl in acls if acl_filter.matches(acl)),
        key=lambda a: (
            a.resource_pattern.resource_type,
            a.resource_pattern.pattern_type,
            a.resource_pattern.resource_name,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        ),
    )
