"""Declarations of the ACL APIs, taken from Kafka's message JSON.

As in ``rafka.protocol.wire.apis``: field lists, version ranges, nullable versions and defaults
follow Apache Kafka's ``clients/src/main/resources/common/message/*.json`` with snake_case names.
Version 0 of each is left out, as Kafka 4.0 removed it: it has no pattern type, so it names
LITERAL patterns only.

Each enum travels as Kafka's int8 code (``rafka.security.acl``'s IntEnums hold the same values):
resource type (2 TOPIC, 3 GROUP, 4 CLUSTER, 5 TRANSACTIONAL_ID, ...), pattern type (1 ANY,
2 MATCH, 3 LITERAL, 4 PREFIXED), operation (2 ALL, 3 READ, 4 WRITE, ...) and permission
(1 ANY, 2 DENY, 3 ALLOW). A null name, principal or host in a filter matches every one.

Versions served: DescribeAcls 1-3, CreateAcls 1-3, DeleteAcls 1-3.
"""

from __future__ import annotations

from rafka.protocol.wire.schema import INT8, INT16, INT32, STRING, ArrayOf, Field, Struct
from rafka.protocol.wire.schema import declare_api as _api

PATTERN_TYPE_LITERAL = 3
"""Kafka's code of the LITERAL pattern type: what a request leaves out means."""

# ------------------------------------------------------------------ DescribeAcls

# A DescribeAcls request and each DeleteAcls filter: which ACLs, by resource and entry.
_ACL_FILTER = (
    Field("resource_type_filter", INT8),
    Field("resource_name_filter", STRING, nullable_versions="0+", default=None),
    Field("pattern_type_filter", INT8, default=PATTERN_TYPE_LITERAL),
    Field("principal_filter", STRING, nullable_versions="0+", default=None),
    Field("host_filter", STRING, nullable_versions="0+", default=None),
    Field("operation", INT8),
    Field("permission_type", INT8),
)

_ACL_DESCRIPTION = Struct(
    "AclDescription",
    (
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ),
)
_DESCRIBE_ACLS_RESOURCE = Struct(
    "DescribeAclsResource",
    (
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("pattern_type", INT8, default=PATTERN_TYPE_LITERAL),
        Field("acls", ArrayOf(_ACL_DESCRIPTION)),
    ),
)

DESCRIBE_ACLS = _api(
    29,
    "DescribeAcls",
    versions="1-3",
    flexible="2+",
    request=_ACL_FILTER,
    response=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
        # One entry per resource pattern, with the selected ACLs on it.
        Field("resources", ArrayOf(_DESCRIBE_ACLS_RESOURCE)),
    ),
)

# ------------------------------------------------------------------ CreateAcls

_ACL_CREATION = Struct(
    "AclCreation",
    (
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("resource_pattern_type", INT8, default=PATTERN_TYPE_LITERAL),
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ),
)
_ACL_CREATION_RESULT = Struct(
    "AclCreationResult",
    (
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
    ),
)

CREATE_ACLS = _api(
    30,
    "CreateAcls",
    versions="1-3",
    flexible="2+",
    request=(Field("creations", ArrayOf(_ACL_CREATION)),),
    response=(
        Field("throttle_time_ms", INT32),
        # One result per creation, in the request's order.
        Field("results", ArrayOf(_ACL_CREATION_RESULT)),
    ),
)

# ------------------------------------------------------------------ DeleteAcls

_DELETE_ACLS_FILTER = Struct("DeleteAclsFilter", _ACL_FILTER)
_DELETE_ACLS_MATCHING_ACL = Struct(
    "DeleteAclsMatchingAcl",
    (
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("pattern_type", INT8, default=PATTERN_TYPE_LITERAL),
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ),
)
_DELETE_ACLS_FILTER_RESULT = Struct(
    "DeleteAclsFilterResult",
    (
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
        Field("matching_acls", ArrayOf(_DELETE_ACLS_MATCHING_ACL)),
    ),
)

DELETE_ACLS = _api(
    31,
    "DeleteAcls",
    versions="1-3",
    flexible="2+",
    request=(Field("filters", ArrayOf(_DELETE_ACLS_FILTER)),),
    response=(
        Field("throttle_time_ms", INT32),
        # One result per filter, in the request's order, listing the ACLs it deleted.
        Field("filter_results", ArrayOf(_DELETE_ACLS_FILTER_RESULT)),
    ),
)
