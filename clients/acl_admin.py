"""The admin client's ACL operations (kafka-python's names): ``create_acls``, ``describe_acls`` and
``delete_acls``, over the ACL types of ``rafka.security.acl`` (kafka-python's names too).

The ACLs live in ZooKeeper as Kafka's AclAuthorizer keeps them (``/kafka-acl``), so any live
broker reads and writes them; every broker's authorizer takes a change from the notification it
writes. The answers keep kafka-python's information in rafka's Admin shapes:

- ``create_acls`` answers one ``AclCreationResult`` per ACL, in order (kafka-python splits them
  into ``succeeded`` and ``failed``): NONE, or INVALID_REQUEST with a message saying what makes
  the ACL invalid. A refused ACL does not raise and is not stored; the others are.
- ``describe_acls`` answers the selected ACLs, in a stable order (by resource, then principal,
  host and operation); a failure raises its Kafka error, so kafka-python's second element, always
  NoError when it returns, is left out.
- ``delete_acls`` answers one ``AclDeletionResult`` per filter, in order: the filter, its error
  and the ACLs it deleted (kafka-python's 3-tuples, with named fields).

ACLs are stored whether or not the brokers run an authorizer; without one they are not enforced.
"""

from __future__ import annotations

from collections.abc import Sequence

from rafka.clients.config_admin import ConfigAdminMixin
from rafka.protocol.errors import Errors
from rafka.protocol.messages.acls import (
    AclCreationResult,
    AclDeletionResult,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeAclsResult,
)
from rafka.security.acl import ACL, ACLFilter


class AclAdminMixin(ConfigAdminMixin):
    """ACL operations of ``Admin``, asked of any live broker as config operations are."""

    def create_acls(self, acls: Sequence[ACL]) -> list[AclCreationResult]:
        """Add each ACL (one already there stays as it is); one result per ACL, in order."""
        results: list[AclCreationResult] = self._ask(
            None, "create_acls", CreateAclsRequest(tuple(acls))
        )
        return results

    def describe_acls(self, acl_filter: ACLFilter) -> list[ACL]:
        """The ACLs ``acl_filter`` selects."""
        result: DescribeAclsResult = self._ask(
            None, "describe_acls", DescribeAclsRequest(acl_filter)
        )
        if result.error is not Errors.NONE:
            raise result.error.exception(result.message or result.error.message)
        return list(result.acls)

    def delete_acls(self, acl_filters: Sequence[ACLFilter]) -> list[AclDeletionResult]:
        """Remove every ACL each filter selects; one result per filter, in order, listing the
        ACLs it removed."""
        results: list[AclDeletionResult] = self._ask(
            None, "delete_acls", DeleteAclsRequest(tuple(acl_filters))
        )
        return results
