"""Declarations of the admin APIs, taken from Kafka's message JSON.

As in ``rafka.protocol.wire.apis``: field lists, version ranges, nullable versions, tags and
defaults follow Apache Kafka's ``clients/src/main/resources/common/message/*.json`` with snake_case
names, over the ranges a Kafka 3.x/4.x broker declares. rafka keeps no topic ids: a response's
``topic_id`` is the zero UUID Kafka itself uses for "unknown".

Versions served: CreateTopics 0-7, DeleteTopics 0-6, DeleteRecords 0-2, OffsetForLeaderEpoch 0-4,
DescribeConfigs 0-4, AlterConfigs 0-2, CreatePartitions 0-3, IncrementalAlterConfigs 0-1,
DescribeUserScramCredentials 0, AlterUserScramCredentials 0 and DescribeCluster 0-2.
"""

from __future__ import annotations

from rafka.protocol.wire.schema import (
    AUTHORIZED_OPERATIONS_OMITTED,
    BOOL,
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UUID,
    Api,
    ArrayOf,
    Field,
    Struct,
)
from rafka.protocol.wire.schema import declare_api as _api

# ------------------------------------------------------------------ topics

_CREATABLE_REPLICA_ASSIGNMENT = Struct(
    "CreatableReplicaAssignment",
    (Field("partition_index", INT32), Field("broker_ids", ArrayOf(INT32))),
)
_CREATABLE_TOPIC_CONFIG = Struct(
    "CreatableTopicConfig",
    (Field("name", STRING), Field("value", STRING, nullable_versions="0+")),
)
_CREATABLE_TOPIC = Struct(
    "CreatableTopic",
    (
        Field("name", STRING),
        # -1 (v4+, KIP-464) takes the broker's num.partitions / default.replication.factor.
        Field("num_partitions", INT32),
        Field("replication_factor", INT16),
        Field("assignments", ArrayOf(_CREATABLE_REPLICA_ASSIGNMENT)),
        Field("configs", ArrayOf(_CREATABLE_TOPIC_CONFIG)),
    ),
)
_CREATABLE_TOPIC_CONFIGS = Struct(
    "CreatableTopicConfigs",
    (
        Field("name", STRING, "5+"),
        Field("value", STRING, "5+", nullable_versions="5+"),
        Field("read_only", BOOL, "5+"),
        Field("config_source", INT8, "5+", default=-1),
        Field("is_sensitive", BOOL, "5+"),
    ),
)
_CREATABLE_TOPIC_RESULT = Struct(
    "CreatableTopicResult",
    (
        Field("name", STRING),
        Field("topic_id", UUID, "7+"),
        Field("error_code", INT16),
        Field("error_message", STRING, "1+", nullable_versions="0+", default=None),
        Field("topic_config_error_code", INT16, "5+", tagged_versions="5+", tag=0),
        Field("num_partitions", INT32, "5+", default=-1),
        Field("replication_factor", INT16, "5+", default=-1),
        Field(
            "configs",
            ArrayOf(_CREATABLE_TOPIC_CONFIGS),
            "5+",
            nullable_versions="5+",
            default=None,
        ),
    ),
)

CREATE_TOPICS = _api(
    19,
    "CreateTopics",
    versions="0-7",
    flexible="5+",
    request=(
        Field("topics", ArrayOf(_CREATABLE_TOPIC)),
        Field("timeout_ms", INT32, default=60_000),
        Field("validate_only", BOOL, "1+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "2+"),
        Field("topics", ArrayOf(_CREATABLE_TOPIC_RESULT)),
    ),
)

_DELETE_TOPIC_STATE = Struct(
    "DeleteTopicState",
    (
        Field("name", STRING, "6+", nullable_versions="6+", default=None),
        Field("topic_id", UUID, "6+"),
    ),
)
_DELETABLE_TOPIC_RESULT = Struct(
    "DeletableTopicResult",
    (
        Field("name", STRING, nullable_versions="6+"),
        Field("topic_id", UUID, "6+"),
        Field("error_code", INT16),
        Field("error_message", STRING, "5+", nullable_versions="5+", default=None),
    ),
)

# v0-5 name topics; v6 (KIP-516) names each by name or id.
DELETE_TOPICS = _api(
    20,
    "DeleteTopics",
    versions="0-6",
    flexible="4+",
    request=(
        Field("topics", ArrayOf(_DELETE_TOPIC_STATE), "6+"),
        Field("topic_names", ArrayOf(STRING), "0-5"),
        Field("timeout_ms", INT32),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("responses", ArrayOf(_DELETABLE_TOPIC_RESULT)),
    ),
)

_CREATE_PARTITIONS_ASSIGNMENT = Struct(
    "CreatePartitionsAssignment", (Field("broker_ids", ArrayOf(INT32)),)
)
_CREATE_PARTITIONS_TOPIC = Struct(
    "CreatePartitionsTopic",
    (
        Field("name", STRING),
        Field("count", INT32),
        Field(
            "assignments",
            ArrayOf(_CREATE_PARTITIONS_ASSIGNMENT),
            nullable_versions="0+",
            default=None,
        ),
    ),
)
_CREATE_PARTITIONS_TOPIC_RESULT = Struct(
    "CreatePartitionsTopicResult",
    (
        Field("name", STRING),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
    ),
)

CREATE_PARTITIONS = _api(
    37,
    "CreatePartitions",
    versions="0-3",
    flexible="2+",
    request=(
        Field("topics", ArrayOf(_CREATE_PARTITIONS_TOPIC)),
        Field("timeout_ms", INT32),
        Field("validate_only", BOOL),
    ),
    response=(
        Field("throttle_time_ms", INT32),
        Field("results", ArrayOf(_CREATE_PARTITIONS_TOPIC_RESULT)),
    ),
)

# ------------------------------------------------------------------ records and epochs

_DELETE_RECORDS_PARTITION = Struct(
    "DeleteRecordsPartition", (Field("partition_index", INT32), Field("offset", INT64))
)
_DELETE_RECORDS_TOPIC = Struct(
    "DeleteRecordsTopic",
    (Field("name", STRING), Field("partitions", ArrayOf(_DELETE_RECORDS_PARTITION))),
)
_DELETE_RECORDS_PARTITION_RESULT = Struct(
    "DeleteRecordsPartitionResult",
    (
        Field("partition_index", INT32),
        Field("low_watermark", INT64),
        Field("error_code", INT16),
    ),
)
_DELETE_RECORDS_TOPIC_RESULT = Struct(
    "DeleteRecordsTopicResult",
    (Field("name", STRING), Field("partitions", ArrayOf(_DELETE_RECORDS_PARTITION_RESULT))),
)

DELETE_RECORDS = _api(
    21,
    "DeleteRecords",
    versions="0-2",
    flexible="2+",
    request=(
        Field("topics", ArrayOf(_DELETE_RECORDS_TOPIC)),
        Field("timeout_ms", INT32),
    ),
    response=(
        Field("throttle_time_ms", INT32),
        Field("topics", ArrayOf(_DELETE_RECORDS_TOPIC_RESULT)),
    ),
)

_OFFSET_FOR_LEADER_PARTITION = Struct(
    "OffsetForLeaderPartition",
    (
        Field("partition", INT32),
        Field("current_leader_epoch", INT32, "2+", default=-1),
        Field("leader_epoch", INT32),
    ),
)
_OFFSET_FOR_LEADER_TOPIC = Struct(
    "OffsetForLeaderTopic",
    (Field("topic", STRING), Field("partitions", ArrayOf(_OFFSET_FOR_LEADER_PARTITION))),
)
_EPOCH_END_OFFSET = Struct(
    "EpochEndOffset",
    (
        Field("error_code", INT16),
        Field("partition", INT32),
        Field("leader_epoch", INT32, "1+", default=-1),
        Field("end_offset", INT64, default=-1),
    ),
)
_OFFSET_FOR_LEADER_TOPIC_RESULT = Struct(
    "OffsetForLeaderTopicResult",
    (Field("topic", STRING), Field("partitions", ArrayOf(_EPOCH_END_OFFSET))),
)

# The replica id is -2 for a consumer (v3+; earlier versions were asked by followers only).
OFFSET_FOR_LEADER_EPOCH = _api(
    23,
    "OffsetForLeaderEpoch",
    versions="0-4",
    flexible="4+",
    request=(
        Field("replica_id", INT32, "3+", default=-2),
        Field("topics", ArrayOf(_OFFSET_FOR_LEADER_TOPIC)),
    ),
    response=(
        Field("throttle_time_ms", INT32, "2+"),
        Field("topics", ArrayOf(_OFFSET_FOR_LEADER_TOPIC_RESULT)),
    ),
)

# ------------------------------------------------------------------ configs

_DESCRIBE_CONFIGS_RESOURCE = Struct(
    "DescribeConfigsResource",
    (
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        # Null asks for every config of the resource.
        Field("configuration_keys", ArrayOf(STRING), nullable_versions="0+", default=None),
    ),
)
_DESCRIBE_CONFIGS_SYNONYM = Struct(
    "DescribeConfigsSynonym",
    (
        Field("name", STRING, "1+"),
        Field("value", STRING, "1+", nullable_versions="0+"),
        Field("source", INT8, "1+"),
    ),
)
_DESCRIBE_CONFIGS_RESOURCE_RESULT = Struct(
    "DescribeConfigsResourceResult",
    (
        Field("name", STRING),
        Field("value", STRING, nullable_versions="0+"),
        Field("read_only", BOOL),
        Field("config_source", INT8, "1+", default=-1),
        Field("is_default", BOOL, "0"),
        Field("is_sensitive", BOOL),
        Field("synonyms", ArrayOf(_DESCRIBE_CONFIGS_SYNONYM), "1+"),
        Field("config_type", INT8, "3+"),
        Field("documentation", STRING, "3+", nullable_versions="0+", default=None),
    ),
)
_DESCRIBE_CONFIGS_RESULT = Struct(
    "DescribeConfigsResult",
    (
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configs", ArrayOf(_DESCRIBE_CONFIGS_RESOURCE_RESULT)),
    ),
)

DESCRIBE_CONFIGS = _api(
    32,
    "DescribeConfigs",
    versions="0-4",
    flexible="4+",
    request=(
        Field("resources", ArrayOf(_DESCRIBE_CONFIGS_RESOURCE)),
        Field("include_synonyms", BOOL, "1+"),
        Field("include_documentation", BOOL, "3+"),
    ),
    response=(
        Field("throttle_time_ms", INT32),
        Field("results", ArrayOf(_DESCRIBE_CONFIGS_RESULT)),
    ),
)

_ALTER_CONFIGS_RESOURCE_RESPONSE = Struct(
    "AlterConfigsResourceResponse",
    (
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
    ),
)


def _alter_configs_api(key: int, name: str, versions: str, flexible: str, config: Struct) -> Api:
    """AlterConfigs or IncrementalAlterConfigs: resources whose configs are ``config`` structs,
    answered resource by resource in the same shape."""
    resource = Struct(
        f"{name}Resource",
        (
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configs", ArrayOf(config)),
        ),
    )
    return _api(
        key,
        name,
        versions,
        flexible,
        request=(Field("resources", ArrayOf(resource)), Field("validate_only", BOOL)),
        response=(
            Field("throttle_time_ms", INT32),
            Field("responses", ArrayOf(_ALTER_CONFIGS_RESOURCE_RESPONSE)),
        ),
    )


ALTER_CONFIGS = _alter_configs_api(
    33,
    "AlterConfigs",
    versions="0-2",
    flexible="2+",
    config=Struct(
        "AlterableConfig",
        (Field("name", STRING), Field("value", STRING, nullable_versions="0+")),
    ),
)

INCREMENTAL_ALTER_CONFIGS = _alter_configs_api(
    44,
    "IncrementalAlterConfigs",
    versions="0-1",
    flexible="1+",
    config=Struct(
        "IncrementalAlterableConfig",
        (
            Field("name", STRING),
            # AlterConfigOp.OpType: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT.
            Field("config_operation", INT8),
            Field("value", STRING, nullable_versions="0+"),
        ),
    ),
)

# ------------------------------------------------------------------ users (KIP-554)

# A mechanism travels as Kafka's ScramMechanism byte: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
_USER_NAME = Struct("UserName", (Field("name", STRING),))
_CREDENTIAL_INFO = Struct("CredentialInfo", (Field("mechanism", INT8), Field("iterations", INT32)))
_DESCRIBE_USER_SCRAM_CREDENTIALS_RESULT = Struct(
    "DescribeUserScramCredentialsResult",
    (
        Field("user", STRING),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
        Field("credential_infos", ArrayOf(_CREDENTIAL_INFO)),
    ),
)

DESCRIBE_USER_SCRAM_CREDENTIALS = _api(
    50,
    "DescribeUserScramCredentials",
    versions="0",
    flexible="0+",
    # Null (or empty) describes every user with a credential.
    request=(Field("users", ArrayOf(_USER_NAME), nullable_versions="0+", default=None),),
    response=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
        Field("results", ArrayOf(_DESCRIBE_USER_SCRAM_CREDENTIALS_RESULT)),
    ),
)

_SCRAM_CREDENTIAL_DELETION = Struct(
    "ScramCredentialDeletion", (Field("name", STRING), Field("mechanism", INT8))
)
_SCRAM_CREDENTIAL_UPSERTION = Struct(
    "ScramCredentialUpsertion",
    (
        Field("name", STRING),
        Field("mechanism", INT8),
        Field("iterations", INT32),
        # The client's random salt and the password salted with it: never the password.
        Field("salt", BYTES),
        Field("salted_password", BYTES),
    ),
)
_ALTER_USER_SCRAM_CREDENTIALS_RESULT = Struct(
    "AlterUserScramCredentialsResult",
    (
        Field("user", STRING),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
    ),
)

ALTER_USER_SCRAM_CREDENTIALS = _api(
    51,
    "AlterUserScramCredentials",
    versions="0",
    flexible="0+",
    request=(
        Field("deletions", ArrayOf(_SCRAM_CREDENTIAL_DELETION)),
        Field("upsertions", ArrayOf(_SCRAM_CREDENTIAL_UPSERTION)),
    ),
    response=(
        Field("throttle_time_ms", INT32),
        # One result per user that the request alters.
        Field("results", ArrayOf(_ALTER_USER_SCRAM_CREDENTIALS_RESULT)),
    ),
)

# ------------------------------------------------------------------ cluster

# EndpointType (KIP-919): 1 brokers, 2 controllers.
ENDPOINT_TYPE_BROKERS = 1

_DESCRIBE_CLUSTER_BROKER = Struct(
    "DescribeClusterBroker",
    (
        Field("broker_id", INT32),
        Field("host", STRING),
        Field("port", INT32),
        Field("rack", STRING, nullable_versions="0+", default=None),
        Field("is_fenced", BOOL, "2+"),
    ),
)

DESCRIBE_CLUSTER = _api(
    60,
    "DescribeCluster",
    versions="0-2",
    flexible="0+",
    request=(
        Field("include_cluster_authorized_operations", BOOL),
        Field("endpoint_type", INT8, "1+", default=ENDPOINT_TYPE_BROKERS),
        Field("include_fenced_brokers", BOOL, "2+"),
    ),
    response=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable_versions="0+", default=None),
        Field("endpoint_type", INT8, "1+", default=ENDPOINT_TYPE_BROKERS),
        Field("cluster_id", STRING),
        Field("controller_id", INT32, default=-1),
        Field("brokers", ArrayOf(_DESCRIBE_CLUSTER_BROKER)),
        Field("cluster_authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_OMITTED),
    ),
)
