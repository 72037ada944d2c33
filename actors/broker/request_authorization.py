"""The authorizer's question as a Kafka request handler asks it: may the running request's
connection (its principal and host, set by the listener) do an operation on a resource?

The handlers ask with ``authorized``; with no authorizer configured the answer is always yes.
"""

from __future__ import annotations

from typing import Protocol

from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.listener import connection_host, connection_principal
from rafka.security.acl import ACLOperation, ResourceType


class AuthorizingSide(Protocol):
    """What a handler needs of its broker to authorize: the broker's authorizer."""

    @property
    def authorizer(self) -> BrokerAuthorizer:
        """The broker's ACLs and decision."""


def authorized(
    side: AuthorizingSide, operation: ACLOperation, resource_type: ResourceType, name: str
) -> bool:
    """Whether the running request's connection may do ``operation`` on the resource."""
    return side.authorizer.allowed(
        connection_principal(), connection_host(), operation, resource_type, name
    )
