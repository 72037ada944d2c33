"""A broker's ACLs over ZooKeeper: the authorizer's cache kept current from the change
notifications, and the CreateAcls, DescribeAcls and DeleteAcls requests it answers (Kafka's
AclAuthorizer's storage side).

Validation happens before anything is written: an invalid ACL is INVALID_REQUEST naming the
problem and is not stored, while the valid ones of the same request are. Describe reads
ZooKeeper, not the cache, so an ACL just created is listed at once. Calls block on ZooKeeper, so
an asyncio actor runs them in a worker thread.

The requests' decisions (``create_acls``, ``describe_acls``, ``delete_acls``) work over any
``AclStore``: ``KafkaAclStore`` here, an in-memory one in unit tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from rafka.actors.broker.authorizer import BrokerAuthorizer, parse_super_users
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.zk.client import ZkClient
from rafka.actors.zk.kafka_acl_store import KafkaAclStore
from rafka.protocol.errors import Errors
from rafka.protocol.messages.acls import (
    AclCreationResult,
    AclDeletionResult,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeAclsResult,
)
from rafka.security.acl import ACL, ACLFilter, ResourcePattern, matching


class AclStore(Protocol):
    """The ACLs by resource pattern, as ``KafkaAclStore`` keeps them."""

    def read_all(self) -> set[ACL]:
        """Every ACL of the cluster."""

    def change(self, pattern: ResourcePattern, update: Callable[[set[ACL]], set[ACL]]) -> set[ACL]:
        """Replace a pattern's ACLs with ``update(current)`` and announce it; the ACLs written."""


class AclManager:
    """The ACLs as one broker sees them."""

    def __init__(self, client: ZkClient, config: BrokerConfig) -> None:
        self.store = KafkaAclStore(client)
        self.authorizer = BrokerAuthorizer(
            bool(config.authorizer_class_name),
            parse_super_users(config.super_users),
            config.allow_everyone_if_no_acl_found,
        )
        self._seen = self.store.latest_changes()
        self.authorizer.load(self.store.read_all())

    def take_changes(self, watch: Callable[[Any], None] | None = None) -> list[ResourcePattern]:
        """Re-read the ACLs of every pattern a notification since the last call names, leaving
        ``watch`` on the next notification; the patterns re-read."""
        changed = self.store.changes_after(self._seen, watch)
        for pattern in dict.fromkeys(changed):
            self.authorizer.replace(pattern, self.store.read(pattern))
        return changed

    def create(self, request: CreateAclsRequest) -> list[AclCreationResult]:
        """CreateAcls over ZooKeeper (``create_acls``)."""
        return create_acls(self.store, request)

    def describe(self, request: DescribeAclsRequest) -> DescribeAclsResult:
        """DescribeAcls over ZooKeeper (``describe_acls``)."""
        return describe_acls(self.store, request)

    def delete(self, request: DeleteAclsRequest) -> list[AclDeletionResult]:
        """DeleteAcls over ZooKeeper (``delete_acls``)."""
        return delete_acls(self.store, request)


def create_acls(store: AclStore, request: CreateAclsRequest) -> list[AclCreationResult]:
    """Store each valid ACL; an invalid one gets INVALID_REQUEST and is skipped."""
    results = []
    for acl in request.acls:
        try:
            acl.check()
        except ValueError as exc:
            results.append(AclCreationResult(acl, Errors.INVALID_REQUEST, str(exc)))
            continue
        store.change(acl.resource_pattern, _with(acl))
        results.append(AclCreationResult(acl, Errors.NONE))
    return results


def describe_acls(store: AclStore, request: DescribeAclsRequest) -> DescribeAclsResult:
    """The stored ACLs the filter selects."""
    return DescribeAclsResult(
        Errors.NONE, None, tuple(matching(store.read_all(), request.acl_filter))
    )


def delete_acls(store: AclStore, request: DeleteAclsRequest) -> list[AclDeletionResult]:
    """Remove what each filter selects; each result lists the ACLs its filter removed."""
    results = []
    for acl_filter in request.filters:
        selected = matching(store.read_all(), acl_filter)
        removed: list[ACL] = []
        for pattern in dict.fromkeys(acl.resource_pattern for acl in selected):
            dropped: list[ACL] = []
            store.change(pattern, _without(acl_filter, dropped))
            removed.extend(dropped)
        results.append(AclDeletionResult(acl_filter, Errors.NONE, None, tuple(removed)))
    return results


def _with(acl: ACL) -> Callable[[set[ACL]], set[ACL]]:
    """An update adding ``acl``."""
    return lambda current: current | {acl}


def _without(acl_filter: ACLFilter, dropped: list[ACL]) -> Callable[[set[ACL]], set[ACL]]:
    """An update removing the ACLs ``acl_filter`` selects, listing them in ``dropped`` (those of
    the last attempt: a retried write starts again from the ACLs stored then)."""

    def update(current: set[ACL]) -> set[ACL]:
        dropped[:] = matching(current, acl_filter)
        return current - set(dropped)

    return update
