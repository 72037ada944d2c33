"""KafkaAclApis: Kafka's ACL requests answered with the requests rafka's own Admin sends.

DescribeAcls, CreateAcls and DeleteAcls become this broker's ``describe_acls``, ``create_acls``
and ``delete_acls``, which read and write Kafka's ``/kafka-acl`` znodes. Each handler first asks
the authorizer, as Kafka's AclApis does: DescribeAcls needs DESCRIBE on the cluster, CreateAcls
and DeleteAcls need ALTER on it; a refused request is CLUSTER_AUTHORIZATION_FAILED (the response's
error, or every result's) and reaches no ZooKeeper.

Each enum travels as Kafka's int8 code. A code rafka does not know, or Kafka's UNKNOWN (0), is
INVALID_REQUEST naming it: for one creation that creation's result (the others are created, and
an invalid ACL is refused the same way by the broker's own checks), for a DescribeAcls filter the
response's error, and for any DeleteAcls filter every filter's result, with nothing deleted, as
Kafka refuses such a request whole. ``KafkaAdminApis`` serves these handlers beside its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from rafka.actors.broker.request_authorization import AuthorizingSide, authorized
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.acls import (
    AclCreationResult,
    AclDeletionResult,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeAclsResult,
)
from rafka.protocol.wire.acl_apis import CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS
from rafka.protocol.wire.headers import RequestHeader
from rafka.security.acl import (
    ACL,
    CLUSTER_NAME,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

Body = Mapping[str, Any]
Handler = Callable[[RequestHeader, Body], Awaitable[Body]]
Code = TypeVar("Code", ResourceType, ACLResourcePatternType, ACLOperation, ACLPermissionType)


class AclSide(AuthorizingSide, Protocol):
    """What the ACL APIs need of their broker (the broker actor, or a fake in unit tests)."""

    async def create_acls(self, request: CreateAclsRequest) -> list[AclCreationResult]:
        """Store each valid ACL; one result per ACL, in order."""

    async def describe_acls(self, request: DescribeAclsRequest) -> DescribeAclsResult:
        """The stored ACLs a filter selects."""

    async def delete_acls(self, request: DeleteAclsRequest) -> list[AclDeletionResult]:
        """Remove what each filter selects; one result per filter, in order."""


class KafkaAclApis:
    """Handles the ACL requests of the Kafka listener for one broker."""

    def __init__(self, broker: AclSide) -> None:
        self._broker = broker

    def handlers(self) -> dict[int, Handler]:
        """The handler of each ACL API, by api key."""
        return {
            DESCRIBE_ACLS.key: self._describe_acls,
            CREATE_ACLS.key: self._create_acls,
            DELETE_ACLS.key: self._delete_acls,
        }

    def _authorize(self, api: str, operation: ACLOperation) -> None:
        """Raise CLUSTER_AUTHORIZATION_FAILED unless the connection may do ``operation`` on the
        cluster."""
        if not authorized(self._broker, operation, ResourceType.CLUSTER, CLUSTER_NAME):
            raise Errors.CLUSTER_AUTHORIZATION_FAILED.exception(
                f"{api} needs {operation.name} on the cluster resource"
            )

    async def _describe_acls(self, _header: RequestHeader, body: Body) -> Body:
        try:
            self._authorize("DescribeAcls", ACLOperation.DESCRIBE)
            acl_filter = _acl_filter(body)
        except RafkaError as exc:
            return {**_error(exc.error, exc.message), "resources": []}
        result = await self._broker.describe_acls(DescribeAclsRequest(acl_filter))
        return {**_error(result.error, result.message), "resources": _resources(result.acls)}

    async def _create_acls(self, _header: RequestHeader, body: Body) -> Body:
        try:
            self._authorize("CreateAcls", ACLOperation.ALTER)
        except RafkaError as exc:
            return {"results": [_error(exc.error, exc.message) for _ in body["creations"]]}
        outcomes: list[RafkaError | None] = []
        asked: list[ACL] = []
        for wire in body["creations"]:
            try:
                asked.append(_acl(wire))
                outcomes.append(None)
            except RafkaError as exc:
                outcomes.append(exc)
        created = iter(
            await self._broker.create_acls(CreateAclsRequest(tuple(asked))) if asked else []
        )
        results = []
        for outcome in outcomes:
            if outcome is None:
                result = next(created)
                results.append(_error(result.error, result.message))
            else:
                results.append(_error(outcome.error, outcome.message))
        return {"results": results}

    async def _delete_acls(self, _header: RequestHeader, body: Body) -> Body:
        try:
            self._authorize("DeleteAcls", ACLOperation.ALTER)
            filters = tuple(_acl_filter(wire) for wire in body["filters"])
        except RafkaError as exc:
            return {"filter_results": [_error(exc.error, exc.message) for _ in body["filters"]]}
        deleted = await self._broker.delete_acls(DeleteAclsRequest(filters)) if filters else []
        return {
            "filter_results": [
                {
                    **_error(result.error, result.message),
                    "matching_acls": [_matching_acl(acl) for acl in result.deleted],
                }
                for result in deleted
            ]
        }


def _error(error: Errors, message: str | None) -> dict[str, Any]:
    """A result's ``error_code`` and ``error_message``."""
    return {"error_code": int(error), "error_message": message}


def _code(kind: type[Code], code: int) -> Code:
    """The member of ``kind`` with Kafka's ``code``; INVALID_REQUEST for a code rafka does not
    know and for UNKNOWN (0), which no request may carry."""
    for member in kind:
        if member.value == code and member.name != "UNKNOWN":
            return member
    raise Errors.INVALID_REQUEST.exception(f"{code} is not a known {kind.__name__} code")


def _acl(wire: Body) -> ACL:
    """A CreateAcls creation as an ACL (the broker checks the rest)."""
    return ACL(
        wire["principal"],
        wire["host"],
        _code(ACLOperation, wire["operation"]),
        _code(ACLPermissionType, wire["permission_type"]),
        ResourcePattern(
            _code(ResourceType, wire["resource_type"]),
            wire["resource_name"],
            _code(ACLResourcePatternType, wire["resource_pattern_type"]),
        ),
    )


def _acl_filter(wire: Body) -> ACLFilter:
    """A DescribeAcls request's or a DeleteAcls filter's fields as an ACLFilter."""
    return ACLFilter(
        wire["principal_filter"],
        wire["host_filter"],
        _code(ACLOperation, wire["operation"]),
        _code(ACLPermissionType, wire["permission_type"]),
        ResourcePatternFilter(
            _code(ResourceType, wire["resource_type_filter"]),
            wire["resource_name_filter"],
            _code(ACLResourcePatternType, wire["pattern_type_filter"]),
        ),
    )


def _resources(acls: Iterable[ACL]) -> list[Body]:
    """DescribeAcls' answer: one entry per resource pattern, with its ACLs, in the given order."""
    by_pattern: dict[ResourcePattern, list[Body]] = {}
    for acl in acls:
        by_pattern.setdefault(acl.resource_pattern, []).append(
            {
                "principal": acl.principal,
                "host": acl.host,
                "operation": int(acl.operation),
                "permission_type": int(acl.permission_type),
            }
        )
    return [
        {
            "resource_type": int(pattern.resource_type),
            "resource_name": pattern.resource_name,
            "pattern_type": int(pattern.pattern_type),
            "acls": entries,
        }
        for pattern, entries in by_pattern.items()
    ]


def _matching_acl(acl: ACL) -> Body:
    """One deleted ACL as DeleteAcls lists it."""
    pattern = acl.resource_pattern
    return {
        **_error(Errors.NONE, None),
        "resource_type": int(pattern.resource_type),
        "resource_name": pattern.resource_name,
        "pattern_type": int(pattern.pattern_type),
        "principal": acl.principal,
        "host": acl.host,
        "operation": int(acl.operation),
        "permission_type": int(acl.permission_type),
    }
