"""Declarations of the APIs rafka's brokers speak on the wire, taken from Kafka's message JSON.

Field lists, version ranges, nullable versions, tags and defaults follow Apache Kafka's
``clients/src/main/resources/common/message/*.json``, with snake_case names. Each API is declared
only over the versions rafka serves, a range kafka-python, librdkafka and aiokafka all negotiate
into; fields that exist only beyond that range are left out.

Versions served: ApiVersions 0-3, Metadata 0-12, Produce 3-9, Fetch 4-12, ListOffsets 1-7,
FindCoordinator 0-4 and InitProducerId 0-4; the consumer group APIs are declared in
``rafka.protocol.wire.group_apis``, the transaction APIs in ``rafka.protocol.wire.txn_apis``,
the admin APIs in ``rafka.protocol.wire.admin_apis``, the ACL APIs in
``rafka.protocol.wire.acl_apis`` and the SASL APIs in ``rafka.protocol.wire.sasl_apis``, and
served with these.
"""

from __future__ import annotations

from rafka.protocol.wire.acl_apis import CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS
from rafka.protocol.wire.admin_apis import (
    ALTER_CONFIGS,
    ALTER_USER_SCRAM_CREDENTIALS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
    INCREMENTAL_ALTER_CONFIGS,
    OFFSET_FOR_LEADER_EPOCH,
)
from rafka.protocol.wire.group_apis import (
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC_GROUP,
)
from rafka.protocol.wire.sasl_apis import SASL_AUTHENTICATE, SASL_HANDSHAKE
from rafka.protocol.wire.schema import (
    AUTHORIZED_OPERATIONS_OMITTED,
    BOOL,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UUID,
    Api,
    ArrayOf,
    Field,
    Struct,
)
from rafka.protocol.wire.schema import declare_api as _api
from rafka.protocol.wire.txn_apis import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    TXN_OFFSET_COMMIT,
)

_API_VERSION = Struct(
    "ApiVersion",
    (Field("api_key", INT16), Field("min_version", INT16), Field("max_version", INT16)),
)
_SUPPORTED_FEATURE_KEY = Struct(
    "SupportedFeatureKey",
    (
        Field("name", STRING, "3+"),
        Field("min_version", INT16, "3+"),
        Field("max_version", INT16, "3+"),
    ),
)
_FINALIZED_FEATURE_KEY = Struct(
    "FinalizedFeatureKey",
    (
        Field("name", STRING, "3+"),
        Field("max_version_level", INT16, "3+"),
        Field("min_version_level", INT16, "3+"),
    ),
)

API_VERSIONS = _api(
    18,
    "ApiVersions",
    versions="0-3",
    flexible="3+",
    request=(
        Field("client_software_name", STRING, "3+"),
        Field("client_software_version", STRING, "3+"),
    ),
    response=(
        Field("error_code", INT16),
        Field("api_keys", ArrayOf(_API_VERSION)),
        Field("throttle_time_ms", INT32, "1+"),
        Field(
            "supported_features",
            ArrayOf(_SUPPORTED_FEATURE_KEY),
            "3+",
            tagged_versions="3+",
            tag=0,
        ),
        Field("finalized_features_epoch", INT64, "3+", tagged_versions="3+", tag=1, default=-1),
        Field(
            "finalized_features",
            ArrayOf(_FINALIZED_FEATURE_KEY),
            "3+",
            tagged_versions="3+",
            tag=2,
        ),
        Field("zk_migration_ready", BOOL, "3+", tagged_versions="3+", tag=3, default=False),
    ),
)

_METADATA_REQUEST_TOPIC = Struct(
    "MetadataRequestTopic",
    (Field("topic_id", UUID, "10+"), Field("name", STRING, nullable_versions="10+")),
)
_METADATA_RESPONSE_BROKER = Struct(
    "MetadataResponseBroker",
    (
        Field("node_id", INT32),
        Field("host", STRING),
        Field("port", INT32),
        Field("rack", STRING, "1+", nullable_versions="1+", default=None),
    ),
)
_METADATA_RESPONSE_PARTITION = Struct(
    "MetadataResponsePartition",
    (
        Field("error_code", INT16),
        Field("partition_index", INT32),
        Field("leader_id", INT32),
        Field("leader_epoch", INT32, "7+", default=-1),
        Field("replica_nodes", ArrayOf(INT32)),
        Field("isr_nodes", ArrayOf(INT32)),
        Field("offline_replicas", ArrayOf(INT32), "5+"),
    ),
)
_METADATA_RESPONSE_TOPIC = Struct(
    "MetadataResponseTopic",
    (
        Field("error_code", INT16),
        Field("name", STRING, nullable_versions="12+"),
        Field("topic_id", UUID, "10+"),
        Field("is_internal", BOOL, "1+", default=False),
        Field("partitions", ArrayOf(_METADATA_RESPONSE_PARTITION)),
        Field("topic_authorized_operations", INT32, "8+", default=AUTHORIZED_OPERATIONS_OMITTED),
    ),
)

METADATA = _api(
    3,
    "Metadata",
    versions="0-12",
    flexible="9+",
    request=(
        # v0: an empty list means all topics; v1+: null means all topics, empty means none.
        Field("topics", ArrayOf(_METADATA_REQUEST_TOPIC), nullable_versions="1+"),
        Field("allow_auto_topic_creation", BOOL, "4+", default=True),
        Field("include_cluster_authorized_operations", BOOL, "8-10"),
        Field("include_topic_authorized_operations", BOOL, "8+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "3+"),
        Field("brokers", ArrayOf(_METADATA_RESPONSE_BROKER)),
        Field("cluster_id", STRING, "2+", nullable_versions="2+", default=None),
        Field("controller_id", INT32, "1+", default=-1),
        Field("topics", ArrayOf(_METADATA_RESPONSE_TOPIC)),
        Field(
            "cluster_authorized_operations",
            INT32,
            "8-10",
            default=AUTHORIZED_OPERATIONS_OMITTED,
        ),
    ),
)

_PARTITION_PRODUCE_DATA = Struct(
    "PartitionProduceData",
    (Field("index", INT32), Field("records", RECORDS, nullable_versions="0+")),
)
_TOPIC_PRODUCE_DATA = Struct(
    "TopicProduceData",
    (Field("name", STRING), Field("partition_data", ArrayOf(_PARTITION_PRODUCE_DATA))),
)
_BATCH_INDEX_AND_ERROR_MESSAGE = Struct(
    "BatchIndexAndErrorMessage",
    (
        Field("batch_index", INT32, "8+"),
        Field("batch_index_error_message", STRING, "8+", nullable_versions="8+", default=None),
    ),
)
_PARTITION_PRODUCE_RESPONSE = Struct(
    "PartitionProduceResponse",
    (
        Field("index", INT32),
        Field("error_code", INT16),
        Field("base_offset", INT64),
        Field("log_append_time_ms", INT64, "2+", default=-1),
        Field("log_start_offset", INT64, "5+", default=-1),
        Field("record_errors", ArrayOf(_BATCH_INDEX_AND_ERROR_MESSAGE), "8+"),
        Field("error_message", STRING, "8+", nullable_versions="8+", default=None),
    ),
)
_TOPIC_PRODUCE_RESPONSE = Struct(
    "TopicProduceResponse",
    (Field("name", STRING), Field("partition_responses", ArrayOf(_PARTITION_PRODUCE_RESPONSE))),
)

PRODUCE = _api(
    0,
    "Produce",
    versions="3-9",
    flexible="9+",
    request=(
        Field("transactional_id", STRING, "3+", nullable_versions="3+", default=None),
        Field("acks", INT16),
        Field("timeout_ms", INT32),
        Field("topic_data", ArrayOf(_TOPIC_PRODUCE_DATA)),
    ),
    response=(
        Field("responses", ArrayOf(_TOPIC_PRODUCE_RESPONSE)),
        Field("throttle_time_ms", INT32, "1+", default=0),
    ),
)

_FETCH_PARTITION = Struct(
    "FetchPartition",
    (
        Field("partition", INT32),
        Field("current_leader_epoch", INT32, "9+", default=-1),
        Field("fetch_offset", INT64),
        Field("last_fetched_epoch", INT32, "12+", default=-1),
        Field("log_start_offset", INT64, "5+", default=-1),
        Field("partition_max_bytes", INT32),
    ),
)
_FETCH_TOPIC = Struct(
    "FetchTopic",
    (Field("topic", STRING, "0-12"), Field("partitions", ArrayOf(_FETCH_PARTITION))),
)
_FORGOTTEN_TOPIC = Struct(
    "ForgottenTopic",
    (Field("topic", STRING, "7-12"), Field("partitions", ArrayOf(INT32), "7+")),
)
_EPOCH_END_OFFSET = Struct(
    "EpochEndOffset",
    (
        Field("epoch", INT32, "12+", default=-1),
        Field("end_offset", INT64, "12+", default=-1),
    ),
)
_LEADER_ID_AND_EPOCH = Struct(
    "LeaderIdAndEpoch",
    (
        Field("leader_id", INT32, "12+", default=-1),
        Field("leader_epoch", INT32, "12+", default=-1),
    ),
)
_SNAPSHOT_ID = Struct(
    "SnapshotId",
    (Field("end_offset", INT64, default=-1), Field("epoch", INT32, default=-1)),
)
_ABORTED_TRANSACTION = Struct(
    "AbortedTransaction",
    (Field("producer_id", INT64, "4+"), Field("first_offset", INT64, "4+")),
)
_PARTITION_DATA = Struct(
    "PartitionData",
    (
        Field("partition_index", INT32),
        Field("error_code", INT16),
        Field("high_watermark", INT64),
        Field("last_stable_offset", INT64, "4+", default=-1),
        Field("log_start_offset", INT64, "5+", default=-1),
        Field("diverging_epoch", _EPOCH_END_OFFSET, "12+", tagged_versions="12+", tag=0),
        Field("current_leader", _LEADER_ID_AND_EPOCH, "12+", tagged_versions="12+", tag=1),
        Field("snapshot_id", _SNAPSHOT_ID, "12+", tagged_versions="12+", tag=2),
        Field(
            "aborted_transactions",
            ArrayOf(_ABORTED_TRANSACTION),
            "4+",
            nullable_versions="4+",
        ),
        Field("preferred_read_replica", INT32, "11+", default=-1),
        Field("records", RECORDS, nullable_versions="0+"),
    ),
)
_FETCHABLE_TOPIC_RESPONSE = Struct(
    "FetchableTopicResponse",
    (Field("topic", STRING, "0-12"), Field("partitions", ArrayOf(_PARTITION_DATA))),
)

# Fetch's and ListOffsets' isolation level: 0 is READ_UNCOMMITTED, 1 READ_COMMITTED.
FETCH = _api(
    1,
    "Fetch",
    versions="4-12",
    flexible="12+",
    request=(
        Field(
            "cluster_id",
            STRING,
            "12+",
            nullable_versions="12+",
            tagged_versions="12+",
            tag=0,
            default=None,
        ),
        Field("replica_id", INT32, "0-14", default=-1),
        Field("max_wait_ms", INT32),
        Field("min_bytes", INT32),
        Field("max_bytes", INT32, "3+", default=0x7FFFFFFF),
        Field("isolation_level", INT8, "4+", default=0),
        Field("session_id", INT32, "7+", default=0),
        Field("session_epoch", INT32, "7+", default=-1),
        Field("topics", ArrayOf(_FETCH_TOPIC)),
        Field("forgotten_topics_data", ArrayOf(_FORGOTTEN_TOPIC), "7+"),
        Field("rack_id", STRING, "11+", default=""),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16, "7+"),
        Field("session_id", INT32, "7+", default=0),
        Field("responses", ArrayOf(_FETCHABLE_TOPIC_RESPONSE)),
    ),
)

_LIST_OFFSETS_PARTITION = Struct(
    "ListOffsetsPartition",
    (
        Field("partition_index", INT32),
        Field("current_leader_epoch", INT32, "4+", default=-1),
        Field("timestamp", INT64),
    ),
)
_LIST_OFFSETS_TOPIC = Struct(
    "ListOffsetsTopic",
    (Field("name", STRING), Field("partitions", ArrayOf(_LIST_OFFSETS_PARTITION))),
)
_LIST_OFFSETS_PARTITION_RESPONSE = Struct(
    "ListOffsetsPartitionResponse",
    (
        Field("partition_index", INT32),
        Field("error_code", INT16),
        Field("timestamp", INT64, "1+", default=-1),
        Field("offset", INT64, "1+", default=-1),
        Field("leader_epoch", INT32, "4+", default=-1),
    ),
)
_LIST_OFFSETS_TOPIC_RESPONSE = Struct(
    "ListOffsetsTopicResponse",
    (Field("name", STRING), Field("partitions", ArrayOf(_LIST_OFFSETS_PARTITION_RESPONSE))),
)

LIST_OFFSETS = _api(
    2,
    "ListOffsets",
    versions="1-7",
    flexible="6+",
    request=(
        Field("replica_id", INT32),
        Field("isolation_level", INT8, "2+"),
        Field("topics", ArrayOf(_LIST_OFFSETS_TOPIC)),
    ),
    response=(
        Field("throttle_time_ms", INT32, "2+"),
        Field("topics", ArrayOf(_LIST_OFFSETS_TOPIC_RESPONSE)),
    ),
)

# FindCoordinator's key type: 0 is a consumer group, 1 a transactional id.
_COORDINATOR = Struct(
    "Coordinator",
    (
        Field("key", STRING, "4+"),
        Field("node_id", INT32, "4+"),
        Field("host", STRING, "4+"),
        Field("port", INT32, "4+"),
        Field("error_code", INT16, "4+"),
        Field("error_message", STRING, "4+", nullable_versions="4+"),
    ),
)

FIND_COORDINATOR = _api(
    10,
    "FindCoordinator",
    versions="0-4",
    flexible="3+",
    request=(
        Field("key", STRING, "0-3"),
        Field("key_type", INT8, "1+", default=0),
        Field("coordinator_keys", ArrayOf(STRING), "4+"),
    ),
    response=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16, "0-3"),
        Field("error_message", STRING, "1-3", nullable_versions="1-3"),
        Field("node_id", INT32, "0-3"),
        Field("host", STRING, "0-3"),
        Field("port", INT32, "0-3"),
        Field("coordinators", ArrayOf(_COORDINATOR), "4+"),
    ),
)

INIT_PRODUCER_ID = _api(
    22,
    "InitProducerId",
    versions="0-4",
    flexible="2+",
    request=(
        Field("transactional_id", STRING, nullable_versions="0+"),
        Field("transaction_timeout_ms", INT32),
        Field("producer_id", INT64, "3+", default=-1),
        Field("producer_epoch", INT16, "3+", default=-1),
    ),
    response=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("producer_id", INT64, default=-1),
        Field("producer_epoch", INT16),
    ),
)

DECLARED_APIS: tuple[Api, ...] = (
    PRODUCE,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    SYNC_GROUP,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    SASL_HANDSHAKE,
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DELETE_RECORDS,
    INIT_PRODUCER_ID,
    OFFSET_FOR_LEADER_EPOCH,
    ADD_PARTITIONS_TO_TXN,
    ADD_OFFSETS_TO_TXN,
    END_TXN,
    TXN_OFFSET_COMMIT,
    DESCRIBE_ACLS,
    CREATE_ACLS,
    DELETE_ACLS,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
    SASL_AUTHENTICATE,
    CREATE_PARTITIONS,
    DELETE_GROUPS,
    INCREMENTAL_ALTER_CONFIGS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
    ALTER_USER_SCRAM_CREDENTIALS,
    DESCRIBE_CLUSTER,
)
"""Every API declared here, in ``group_apis``, ``txn_apis``, ``admin_apis``, ``acl_apis`` and
``sasl_apis``, in api-key order."""
