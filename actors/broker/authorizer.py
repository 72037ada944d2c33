"""A broker's authorizer: Kafka's ``authorizer.class.name``, ``super.users`` and
``allow.everyone.if.no.acl.found`` settings, and the cluster's ACLs cached from ZooKeeper so a
request's check reads memory, kept current from the ACL change notifications.

With no authorizer configured every request is allowed, as in Kafka. With one, each request
handler asks ``allowed`` for the operations Kafka's KafkaApis checks; the decision itself is
``rafka.security.acl.Authorizer``'s.
"""

from __future__ import annotations

from collections.abc import Iterable

from rafka.security.acl import (
    ACL,
    ACLFilter,
    ACLOperation,
    Authorizer,
    ResourcePattern,
    ResourceType,
    matching,
)
from rafka.security.principal import KafkaPrincipal

ACL_AUTHORIZER_NAMES = frozenset(
    {
        "kafka.security.authorizer.AclAuthorizer",
        "kafka.security.auth.SimpleAclAuthorizer",
        "AclAuthorizer",
    }
)
"""The ``authorizer_class_name`` values that switch rafka's ACL authorizer on: Kafka's class
names, so a Kafka broker's settings carry over."""


def authorizer_class_text(value: str) -> str:
    """``authorizer_class_name`` checked: empty (no authorizer) or an ACL authorizer's name;
    ValueError names the accepted ones."""
    if value and value not in ACL_AUTHORIZER_NAMES:
        raise ValueError(
            f"{value!r} is not an authorizer rafka has; use "
            f"{', '.join(sorted(ACL_AUTHORIZER_NAMES))} or leave it empty"
        )
    return value


def parse_super_users(value: str) -> frozenset[str]:
    """``super_users``: principals separated by semicolons (``User:admin;User:ops``), each
    checked (ValueError names a bad one)."""
    principals = [part.strip() for part in value.split(";") if part.strip()]
    return frozenset(str(KafkaPrincipal.parse(p)) for p in principals)


def super_users_text(value: str) -> str:
    """``super_users`` checked (ValueError if bad), unchanged."""
    parse_super_users(value)
    return value


class BrokerAuthorizer:
    """The ACLs this broker knows and the decision over them; ``enabled`` False allows all."""

    def __init__(
        self, enabled: bool, super_users: frozenset[str], allow_everyone_if_no_acl_found: bool
    ) -> None:
        self.enabled = enabled
        self._super_users = super_users
        self._allow_if_none = allow_everyone_if_no_acl_found
        self._acls: dict[ResourcePattern, frozenset[ACL]] = {}
        self._decision = self._rebuild()

    def load(self, acls: Iterable[ACL]) -> None:
        """Replace every cached ACL."""
        by_pattern: dict[ResourcePattern, set[ACL]] = {}
        for acl in acls:
            by_pattern.setdefault(acl.resource_pattern, set()).add(acl)
        self._acls = {pattern: frozenset(found) for pattern, found in by_pattern.items()}
        self._decision = self._rebuild()

    def replace(self, pattern: ResourcePattern, acls: Iterable[ACL]) -> None:
        """Replace the cached ACLs of one resource pattern (none: forget it)."""
        found = frozenset(acls)
        if found:
            self._acls[pattern] = found
        else:
            self._acls.pop(pattern, None)
        self._decision = self._rebuild()

    def _rebuild(self) -> Authorizer:
        every = frozenset(acl for found in self._acls.values() for acl in found)
        return Authorizer(every, self._super_users, self._allow_if_none)

    def allowed(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: ACLOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether the request may do ``operation`` on the resource (always, with no
        authorizer)."""
        if not self.enabled:
            return True
        return self._decision.authorize(principal, host, operation, resource_type, name)

    def allowed_on_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: ACLOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether the request may do ``operation`` on some resource of the type (always, with no
        authorizer): Kafka's ``authorizeByResourceType``."""
        if not self.enabled:
            return True
        return self._decision.authorize_any(principal, host, operation, resource_type)

    def acls(self, acl_filter: ACLFilter) -> list[ACL]:
        """The cached ACLs a filter selects."""
        return matching(self._decision.acls, acl_filter)
