"""Declarations of the transaction APIs (KIP-98), taken from Kafka's message JSON.

As in ``rafka.protocol.wire.apis``: field lists, version ranges, nullable versions and defaults
follow Apache Kafka's ``clients/src/main/resources/common/message/*.json`` with snake_case names,
each API declared only over the versions rafka serves. Versions 4 and up of AddPartitionsToTxn,
AddOffsetsToTxn and EndTxn and version 4 and up of TxnOffsetCommit belong to KIP-890's second
transaction protocol (brokers verifying for each other, the coordinator adding partitions
implicitly), which rafka's coordinator does not speak; kafka-python asks for at most version 3 of
each, librdkafka for AddPartitionsToTxn 0, AddOffsetsToTxn 0, EndTxn 1 and TxnOffsetCommit 3.

Versions served: AddPartitionsToTxn 0-3, AddOffsetsToTxn 0-3, EndTxn 0-3 and TxnOffsetCommit 0-3
(InitProducerId is in ``rafka.protocol.wire.apis``).
"""

from __future__ import annotations

from rafka.protocol.wire.group_apis import OFFSET_COMMIT_TOPIC_RESPONSE
from rafka.protocol.wire.schema import (
    BOOL,
    INT16,
    INT32,
    INT64,
    STRING,
    ArrayOf,
    Field,
    Struct,
)
from rafka.protocol.wire.schema import declare_api as _api

_ADD_PARTITIONS_TO_TXN_TOPIC = Struct(
    "AddPartitionsToTxnTopic", (Field("name", STRING), Field("partitions", ArrayOf(INT32)))
)
_ADD_PARTITIONS_TO_TXN_PARTITION_RESULT = Struct(
    "AddPartitionsToTxnPartitionResult",
    (Field("partition_index", INT32), Field("partition_error_code", INT16)),
)
_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT = Struct(
    "AddPartitionsToTxnTopicResult",
    (
        Field("name", STRING),
        Field("results_by_partition", ArrayOf(_ADD_PARTITIONS_TO_TXN_PARTITION_RESULT)),
    ),
)

# Kafka's JSON names these fields "V3AndBelow..." since version 4 batched them by transaction.
ADD_PARTITIONS_TO_TXN = _api(
    24,
    "AddPartitionsToTxn",
    versions="0-3",
    flexible="3+",
    request=(
        Field("v3_and_below_transactional_id", STRING, "0-3"),
        Field("v3_and_below_producer_id", INT64, "0-3"),
        Field("v3_and_below_producer_epoch", INT16, "0-3"),
        Field("v3_and_below_topics", ArrayOf(_ADD_PARTITIONS_TO_TXN_TOPIC), "0-3"),
    ),
    response=(
        Field("throttle_time_ms", INT32),
        Field("results_by_topic_v3_and_below", ArrayOf(_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT), "0-3"),
    ),
)

# The producer AddOffsetsToTxn and EndTxn speak for, and their whole answer.
_TRANSACTIONAL_PRODUCER = (
    Field("transactional_id", STRING),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
)
_THROTTLE_AND_ERROR = (Field("throttle_time_ms", INT32), Field("error_code", INT16))

ADD_OFFSETS_TO_TXN = _api(
    25,
    "AddOffsetsToTxn",
    versions="0-3",
    flexible="3+",
    request=(*_TRANSACTIONAL_PRODUCER, Field("group_id", STRING)),
    response=_THROTTLE_AND_ERROR,
)

END_TXN = _api(
    26,
    "EndTxn",
    versions="0-3",
    flexible="3+",
    request=(*_TRANSACTIONAL_PRODUCER, Field("committed", BOOL)),
    response=_THROTTLE_AND_ERROR,
)

_TXN_OFFSET_COMMIT_PARTITION = Struct(
    "TxnOffsetCommitRequestPartition",
    (
        Field("partition_index", INT32),
        Field("committed_offset", INT64),
        Field("committed_leader_epoch", INT32, "2+", default=-1),
        Field("committed_metadata", STRING, nullable_versions="0+"),
    ),
)
_TXN_OFFSET_COMMIT_TOPIC = Struct(
    "TxnOffsetCommitRequestTopic",
    (Field("name", STRING), Field("partitions", ArrayOf(_TXN_OFFSET_COMMIT_PARTITION))),
)
# Before v3 (KIP-447) a commit names no generation or member: the coordinator's admin form.
TXN_OFFSET_COMMIT = _api(
    28,
    "TxnOffsetCommit",
    versions="0-3",
    flexible="3+",
    request=(
        Field("transactional_id", STRING),
        Field("group_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("generation_id", INT32, "3+", default=-1),
        Field("member_id", STRING, "3+"),
        Field("group_instance_id", STRING, "3+", nullable_versions="3+", default=None),
        Field("topics", ArrayOf(_TXN_OFFSET_COMMIT_TOPIC)),
    ),
    response=(
        Field("throttle_time_ms", INT32),
        # Each partition's error under its topic: the same fields as OffsetCommit's answer.
        Field("topics", ArrayOf(OFFSET_COMMIT_TOPIC_RESPONSE)),
    ),
)
