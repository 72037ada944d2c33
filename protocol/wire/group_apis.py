"""Declarations of the consumer group APIs, taken from Kafka's message JSON.

As in ``rafka.protocol.wire.apis``: field lists, version ranges, nullable versions and defaults
follow Apache Kafka's ``clients/src/main/resources/common/message/*.json`` with snake_case names,
each API declared only over the versions rafka serves (fields beyond them are left out).
Subscription and assignment metadata are opaque bytes here: each client encodes its own
ConsumerProtocol and the coordinator passes them through.

Versions served: OffsetCommit 0-8, OffsetFetch 0-8, JoinGroup 0-9,
Heartbeat 0-4, LeaveGroup 0-5, SyncGroup 0-5, DescribeGroups 0-5, ListGroups 0-4 and
DeleteGroups 0-2.
"""

from __future__ import annotations

from rafka.protocol.wire.schema import (
    AUTHORIZED_OPERATIONS_OMITTED,
    BOOL,
    BYTES,
    INT16,
    INT32,
    INT64,
    STRING,
    ArrayOf,
    Field,
    Struct,
)
from rafka.protocol.wire.schema import declare_api as _api

_OFFSET_COMMIT_PARTITION = Struct(
    "OffsetCommitRequestPartition",
    (
        Field("partition_index", INT32),
        Field("committed_offset", INT64),
        Field("committed_leader_epoch", INT32, "6+", default=-1),
        Field("commit_timestamp", INT64, "1", default=-1),
        Field("committed_metadata", STRING, nullable_versions="0+"),
    ),
)
_OFFSET_COMMIT_TOPIC = Struct(
    "OffsetCommitRequestTopic",
    (Field("name", STRING), Field("partitions", ArrayOf(_OFFSET_COMMIT_PARTITION))),
)
_OFFSET_COMMIT_PARTITION_RESPONSE = Struct(
    "OffsetCommitResponsePartition",
    (Field("partition_index", INT32), Field("error_code", INT16)),
)
OFFSET_COMMIT_TOPIC_RESPONSE = Struct(
    "OffsetCommitResponseTopic",
    (Field("name", STRING), Field("partitions", ArrayOf(_OFFSET_COMMIT_PARTITION_RESPONSE))),
)

# v0 commits carry no generation or member: they read as an admin commit (-1, "").
OFFSET_COMMIT = _api(
    8,
    "OffsetCommit",
    versions="0-8",
    flexible="8+",
    request=(
        Field("group_id", STRING),
        Field("generation_id_or_member_epoch", INT32, "1+", default=-1),
        Field("member_id", STRING, "1+"),
        Field("group_instance_id", STRING, "7+", nullable_versions="7+", default=None),
        Field("retention_time_ms", INT64, "2-4", default=-1),
        Field("topics", ArrayOf(_OFFSET_COMMIT_TOPIC)),
    ),
    response=(
        Field("throttle_time_ms", INT32, "3+"),
        Field("topics", ArrayOf(OFFSET_COMMIT_TOPIC_RESPONSE)),
    ),
)

_OFFSET_FETCH_TOPIC = Struct(
    "OffsetFetchRequestTopic",
    (Field("name", STRING), Field("partition_indexes", ArrayOf(INT32))),
)
_OFFSET_FETCH_PARTITION_RESPONSE = Struct(
    "OffsetFetchResponsePartition",
    (
        Field("partition_index", INT32),
        Field("committed_offset", INT64),
        Field("committed_leader_epoch", INT32, "5+", default=-1),
        Field("metadata", STRING, nullable_versions="0+"),
        Field("error_code", INT16),
    ),
)
_OFFSET_FETCH_TOPIC_RESPONSE = Struct(
    "OffsetFetchResponseTopic",
    (Field("name", STRING), Field("partitions", ArrayOf(_OFFSET_FETCH_PARTITION_RESPONSE))),
)

_OFFSET_FETCH_GROUP = Struct(
    "OffsetFetchRequestGroup",
    (
        Field("group_id", STRING, "8+"),
        Field("topics", ArrayOf(_OFFSET_FETCH_TOPIC), "8+", nullable_versions="8+"),
    ),
)
_OFFSET_FETCH_GROUP_RESPONSE = Struct(
    "OffsetFetchResponseGroup",
    (
        Field("group_id", STRING, "8+"),
        Field("topics", ArrayOf(_OFFSET_FETCH_TOPIC_RESPONSE), "8+"),
        Field("error_code", INT16, "8+"),
    ),
)

# Up to v7 one group; v8 (KIP-709) a batch of groups, each answered with its own error.
OFFSET_FETCH = _api(
    9,
    "OffsetFetch",
    versions="0-8",
    flexible="6+",
    request=(
        Field("group_id", STRING, "0-7"),
        # v2+: null asks for every partition the group has committed.
        Field("topics", ArrayOf(_OFFSET_FETCH_TOPIC), "0-7", nullable_versions="2-7"),
        Field("groups", ArrayOf(_OFFSET_FETCH_GROUP), "8+"),
        Field("require_stable", BOOL, "7+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "3+"),
        Field("topics", ArrayOf(_OFFSET_FETCH_TOPIC_RESPONSE), "0-7"),
        Field("error_code", INT16, "2-7"),
        Field("groups", ArrayOf(_OFFSET_FETCH_GROUP_RESPONSE), "8+"),
    ),
)

_JOIN_GROUP_PROTOCOL = Struct(
    "JoinGroupRequestProtocol", (Field("name", STRING), Field("metadata", BYTES))
)
_JOIN_GROUP_MEMBER = Struct(
    "JoinGroupResponseMember",
    (
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "5+", nullable_versions="5+", default=None),
        Field("metadata", BYTES),
    ),
)

JOIN_GROUP = _api(
    11,
    "JoinGroup",
    versions="0-9",
    flexible="6+",
    request=(
        Field("group_id", STRING),
        Field("session_timeout_ms", INT32),
        # Absent (v0), the session timeout stands in for it.
        Field("rebalance_timeout_ms", INT32, "1+", default=-1),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "5+", nullable_versions="5+", default=None),
        Field("protocol_type", STRING),
        Field("protocols", ArrayOf(_JOIN_GROUP_PROTOCOL)),
        Field("reason", STRING, "8+", nullable_versions="8+", default=None),
    ),
    response=(
        Field("throttle_time_ms", INT32, "2+"),
        Field("error_code", INT16),
        Field("generation_id", INT32, default=-1),
        Field("protocol_type", STRING, "7+", nullable_versions="7+", default=None),
        Field("protocol_name", STRING, nullable_versions="7+"),
        Field("leader", STRING),
        Field("skip_assignment", BOOL, "9+"),
        Field("member_id", STRING),
        Field("members", ArrayOf(_JOIN_GROUP_MEMBER)),
    ),
)

HEARTBEAT = _api(
    12,
    "Heartbeat",
    versions="0-4",
    flexible="4+",
    request=(
        Field("group_id", STRING),
        Field("generation_id", INT32),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "3+", nullable_versions="3+", default=None),
    ),
    response=(Field("throttle_time_ms", INT32, "1+"), Field("error_code", INT16)),
)

_MEMBER_IDENTITY = Struct(
    "MemberIdentity",
    (
        Field("member_id", STRING, "3+"),
        Field("group_instance_id", STRING, "3+", nullable_versions="3+", default=None),
        Field("reason", STRING, "5+", nullable_versions="5+", default=None),
    ),
)
_MEMBER_RESPONSE = Struct(
    "MemberResponse",
    (
        Field("member_id", STRING, "3+"),
        Field("group_instance_id", STRING, "3+", nullable_versions="3+", default=None),
        Field("error_code", INT16, "3+"),
    ),
)

# v0-2 name one member; v3+ a batch of them, each answered with its own error.
LEAVE_GROUP = _api(
    13,
    "LeaveGroup",
    versions="0-5",
    flexible="4+",
    request=(
        Field("group_id", STRING),
        Field("member_id", STRING, "0-2"),
        Field("members", ArrayOf(_MEMBER_IDENTITY), "3+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
        Field("members", ArrayOf(_MEMBER_RESPONSE), "3+"),
    ),
)

_SYNC_GROUP_ASSIGNMENT = Struct(
    "SyncGroupRequestAssignment", (Field("member_id", STRING), Field("assignment", BYTES))
)

SYNC_GROUP = _api(
    14,
    "SyncGroup",
    versions="0-5",
    flexible="4+",
    request=(
        Field("group_id", STRING),
        Field("generation_id", INT32),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "3+", nullable_versions="3+", default=None),
        Field("protocol_type", STRING, "5+", nullable_versions="5+", default=None),
        Field("protocol_name", STRING, "5+", nullable_versions="5+", default=None),
        Field("assignments", ArrayOf(_SYNC_GROUP_ASSIGNMENT)),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
        Field("protocol_type", STRING, "5+", nullable_versions="5+", default=None),
        Field("protocol_name", STRING, "5+", nullable_versions="5+", default=None),
        Field("assignment", BYTES),
    ),
)

_DESCRIBED_GROUP_MEMBER = Struct(
    "DescribedGroupMember",
    (
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "4+", nullable_versions="4+", default=None),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("member_metadata", BYTES),
        Field("member_assignment", BYTES),
    ),
)
_DESCRIBED_GROUP = Struct(
    "DescribedGroup",
    (
        Field("error_code", INT16),
        Field("group_id", STRING),
        Field("group_state", STRING),
        Field("protocol_type", STRING),
        # The assignor's name for a consumer group.
        Field("protocol_data", STRING),
        Field("members", ArrayOf(_DESCRIBED_GROUP_MEMBER)),
        Field("authorized_operations", INT32, "3+", default=AUTHORIZED_OPERATIONS_OMITTED),
    ),
)

DESCRIBE_GROUPS = _api(
    15,
    "DescribeGroups",
    versions="0-5",
    flexible="5+",
    request=(
        Field("groups", ArrayOf(STRING)),
        Field("include_authorized_operations", BOOL, "3+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("groups", ArrayOf(_DESCRIBED_GROUP)),
    ),
)

_LISTED_GROUP = Struct(
    "ListedGroup",
    (
        Field("group_id", STRING),
        Field("protocol_type", STRING),
        Field("group_state", STRING, "4+"),
    ),
)

LIST_GROUPS = _api(
    16,
    "ListGroups",
    versions="0-4",
    flexible="3+",
    request=(Field("states_filter", ArrayOf(STRING), "4+"),),
    response=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
        Field("groups", ArrayOf(_LISTED_GROUP)),
    ),
)

_DELETABLE_GROUP_RESULT = Struct(
    "DeletableGroupResult", (Field("group_id", STRING), Field("error_code", INT16))
)

DELETE_GROUPS = _api(
    42,
    "DeleteGroups",
    versions="0-2",
    flexible="2+",
    request=(Field("groups_names", ArrayOf(STRING)),),
    response=(
        Field("throttle_time_ms", INT32),
        Field("results", ArrayOf(_DELETABLE_GROUP_RESULT)),
    ),
)
