"""The authorizer's question as a Kafka request handler asks it: may the running request's
connection (its principal and host, set by the listener) do an operation on a resource?

The handlers ask with ``authorized``; with no authorizer configured the answer is always yes. The
other helpers are the shapes of that question Kafka's KafkaApis asks again and again: which of a
request's topics are refused (``refused``), whether a request about a transactional id or a group
is refused as a whole (``request_refusal``), and the authorized-operations bit field that Metadata,
DescribeCluster and DescribeGroups report on request (``authorized_operations``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol, TypeVar

from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.listener import connection_host, connection_principal
from rafka.protocol.errors import Errors
from rafka.security.acl import CLUSTER_NAME, VALID_OPERATIONS, ACLOperation, ResourceType

T = TypeVar("T")
audit = logging.getLogger("rafka.authorizer")
"""Where denials are logged (Kafka's ``kafka.authorizer.logger``)."""


class AuthorizingSide(Protocol):
    """What a handler needs of its broker to authorize: the broker's authorizer."""

    @property
    def authorizer(self) -> BrokerAuthorizer:
        """The broker's ACLs and decision."""


def authorized(
    side: AuthorizingSide, operation: ACLOperation, resource_type: ResourceType, name: str
) -> bool:
    """Whether the running request's connection may do ``operation`` on the resource; a denial
    is logged, as Kafka's authorizer logger does."""
    principal, host = connection_principal(), connection_host()
    if side.authorizer.allowed(principal, host, operation, resource_type, name):
        return True
    audit.info(
        "Principal = %s is Denied Operation = %s from host = %s on resource = %s:%s",
        principal,
        operation.name,
        host,
        resource_type.zk_name,
        name,
    )
    return False


def cluster_authorized(side: AuthorizingSide, operation: ACLOperation) -> bool:
    """Whether the running request's connection may do ``operation`` on the cluster."""
    return authorized(side, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def authorized_on_any(
    side: AuthorizingSide, operation: ACLOperation, resource_type: ResourceType
) -> bool:
    """Whether the running request's connection may do ``operation`` on some resource of the
    type (Kafka's ``authorizeByResourceType``)."""
    return side.authorizer.allowed_on_any(
        connection_principal(), connection_host(), operation, resource_type
    )


def refused(
    side: AuthorizingSide,
    operation: ACLOperation,
    names: Iterable[str],
    resource_type: ResourceType = ResourceType.TOPIC,
) -> frozenset[str]:
    """The names among ``names`` (topics unless ``resource_type`` says otherwise) whose resource
    the running request may not do ``operation`` on, each asked once."""
    if not side.authorizer.enabled:
        return frozenset()  # the common case: no authorizer, no question per topic
    return frozenset(n for n in set(names) if not authorized(side, operation, resource_type, n))


def request_refusal(
    side: AuthorizingSide, transactional_id: str | None = None, group_id: str | None = None
) -> Errors | None:
    """The error refusing a whole request about a transactional id and/or a group, checked in
    Kafka's order: TRANSACTIONAL_ID_AUTHORIZATION_FAILED without WRITE on the transactional id,
    then GROUP_AUTHORIZATION_FAILED without READ on the group; None when the request may go on."""
    if transactional_id is not None and not authorized(
        side, ACLOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if group_id is not None and not authorized(
        side, ACLOperation.READ, ResourceType.GROUP, group_id
    ):
        return Errors.GROUP_AUTHORIZATION_FAILED
    return None


def authorized_operations(side: AuthorizingSide, resource_type: ResourceType, name: str) -> int:
    """Kafka's authorized-operations bit field for a resource: bit ``code`` set for each operation
    of its type the running request may do."""
    return sum(
        1 << operation
        for operation in VALID_OPERATIONS[resource_type]
        if authorized(side, operation, resource_type, name)
    )


def cluster_operations(side: AuthorizingSide) -> int:
    """The cluster's authorized operations as Metadata and DescribeCluster report them: none
    without DESCRIBE on the cluster."""
    if not cluster_authorized(side, ACLOperation.DESCRIBE):
        return 0
    return authorized_operations(side, ResourceType.CLUSTER, CLUSTER_NAME)


async def answered(answer: T) -> T:
    """An answer known without asking (a refused partition's), awaitable beside the replica calls
    of the partitions that were allowed."""
    return answer
