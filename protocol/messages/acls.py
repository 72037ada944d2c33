"""CreateAcls, DescribeAcls and DeleteAcls: what an admin client asks a broker about Kafka ACLs
and what each ACL or filter gets back. The ACL types themselves are ``rafka.security.acl``'s."""

from __future__ import annotations

from dataclasses import dataclass

from rafka.protocol.errors import Errors
from rafka.security.acl import ACL, ACLFilter


@dataclass(frozen=True)
class CreateAclsRequest:
    """Add each ACL (one already there is left as it is)."""

    acls: tuple[ACL, ...]


@dataclass(frozen=True)
class AclCreationResult:
    """One ACL's creation: NONE, or why it was not created (INVALID_REQUEST names the problem)."""

    acl: ACL
    error: Errors
    message: str | None = None


@dataclass(frozen=True)
class DescribeAclsRequest:
    """The ACLs one filter selects."""

    acl_filter: ACLFilter


@dataclass(frozen=True)
class DescribeAclsResult:
    """The selected ACLs, or why none could be listed."""

    error: Errors
    message: str | None = None
    acls: tuple[ACL, ...] = ()


@dataclass(frozen=True)
class DeleteAclsRequest:
    """Remove every ACL each filter selects."""

    filters: tuple[ACLFilter, ...]


@dataclass(frozen=True)
class AclDeletionResult:
    """One filter's deletion: the ACLs it removed, or why it removed none."""

    acl_filter: ACLFilter
    error: Errors
    message: str | None = None
    deleted: tuple[ACL, ...] = ()
