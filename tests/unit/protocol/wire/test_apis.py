"""Tests for rafka.protocol.wire.apis: the declared APIs encode Kafka's bytes, worked by hand."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rafka.protocol.wire.apis import (
    API_VERSIONS,
    DECLARED_APIS,
    FETCH,
    FIND_COORDINATOR,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
)
from rafka.protocol.wire.primitives import WireFormatError
from rafka.protocol.wire.schema import Message


def _every_message_version() -> list[tuple[Message, int]]:
    return [
        (message, version)
        for api in DECLARED_APIS
        for message in (api.request, api.response)
        for version in range(api.min_version, api.max_version + 1)
    ]


def test_served_version_ranges_are_the_ones_clients_negotiate() -> None:
    served = {api.name: (api.min_version, api.max_version) for api in DECLARED_APIS}
    assert served == {
        "ApiVersions": (0, 3),
        "Metadata": (0, 12),
        "Produce": (3, 9),
        "Fetch": (4, 12),
        "ListOffsets": (1, 7),
        "FindCoordinator": (0, 4),
        "InitProducerId": (0, 4),
        "AddPartitionsToTxn": (0, 3),
        "AddOffsetsToTxn": (0, 3),
        "EndTxn": (0, 3),
        "TxnOffsetCommit": (0, 3),
        "DescribeAcls": (1, 3),
        "CreateAcls": (1, 3),
        "DeleteAcls": (1, 3),
        "OffsetCommit": (0, 8),
        "OffsetFetch": (0, 8),
        "JoinGroup": (0, 9),
        "Heartbeat": (0, 4),
        "LeaveGroup": (0, 5),
        "SyncGroup": (0, 5),
        "DescribeGroups": (0, 5),
        "ListGroups": (0, 4),
        "DeleteGroups": (0, 2),
        "CreateTopics": (0, 7),
        "DeleteTopics": (0, 6),
        "DeleteRecords": (0, 2),
        "OffsetForLeaderEpoch": (0, 4),
        "DescribeConfigs": (0, 4),
        "AlterConfigs": (0, 2),
        "CreatePartitions": (0, 3),
        "IncrementalAlterConfigs": (0, 1),
        "DescribeCluster": (0, 2),
        "DescribeUserScramCredentials": (0, 0),
        "AlterUserScramCredentials": (0, 0),
        "SaslHandshake": (1, 1),
        "SaslAuthenticate": (0, 2),
    }
    keys = [api.key for api in DECLARED_APIS]
    assert keys == [
        *(0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23),
        *(24, 25, 26, 28, 29, 30, 31, 32, 33, 36, 37, 42, 44, 50, 51, 60),
    ]


@pytest.mark.parametrize(("message", "version"), _every_message_version())
def test_default_bodies_round_trip_at_every_version(message: Message, version: int) -> None:
    defaults = message.decode(message.encode({}, version), version)
    assert message.decode(message.encode(defaults, version), version) == defaults


def test_flexible_versions_match_kafkas_declarations() -> None:
    first_flexible = {
        api.name: next(
            (v for v in range(api.min_version, api.max_version + 1) if api.request.is_flexible(v)),
            None,
        )
        for api in DECLARED_APIS
    }
    assert first_flexible == {
        "ApiVersions": 3,
        "Metadata": 9,
        "Produce": 9,
        "Fetch": 12,
        "ListOffsets": 6,
        "FindCoordinator": 3,
        "InitProducerId": 2,
        "AddPartitionsToTxn": 3,
        "AddOffsetsToTxn": 3,
        "EndTxn": 3,
        "TxnOffsetCommit": 3,
        "DescribeAcls": 2,
        "CreateAcls": 2,
        "DeleteAcls": 2,
        "OffsetCommit": 8,
        "OffsetFetch": 6,
        "JoinGroup": 6,
        "Heartbeat": 4,
        "LeaveGroup": 4,
        "SyncGroup": 4,
        "DescribeGroups": 5,
        "ListGroups": 3,
        "DeleteGroups": 2,
        "CreateTopics": 5,
        "DeleteTopics": 4,
        "DeleteRecords": 2,
        "OffsetForLeaderEpoch": 4,
        "DescribeConfigs": 4,
        "AlterConfigs": 2,
        "CreatePartitions": 2,
        "IncrementalAlterConfigs": 1,
        "DescribeCluster": 0,
        "DescribeUserScramCredentials": 0,
        "AlterUserScramCredentials": 0,
        "SaslHandshake": None,
        "SaslAuthenticate": 2,
    }


def test_api_versions_v0_request_body_is_empty_and_v3_names_the_client() -> None:
    assert API_VERSIONS.request.encode({}, 0) == b""
    body = {"client_software_name": "kcat", "client_software_version": "1.7"}
    assert API_VERSIONS.request.encode(body, 3) == bytes.fromhex(
        "05 6b636174"  # compact string: length + 1, "kcat"
        "04 312e37"  # "1.7"
        "00"  # the body's empty tagged-fields section
    )


def test_api_versions_v3_response_layout() -> None:
    body = {"api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}]}
    assert API_VERSIONS.response.encode(body, 3) == bytes.fromhex(
        "0000"  # error_code
        "02 0012 0000 0003 00"  # compact array of one ApiVersion, with its tagged section
        "00000000"  # throttle_time_ms
        "00"  # no tagged fields: the features hold their defaults
    )


def test_api_versions_v3_response_carries_features_as_tagged_fields() -> None:
    encoded = API_VERSIONS.response.encode({"finalized_features_epoch": 5}, 3)
    # One tagged field: tag 1, 8 bytes, the int64 epoch.
    assert encoded.endswith(bytes.fromhex("01 01 08 0000000000000005"))
    assert API_VERSIONS.response.decode(encoded, 3)["finalized_features_epoch"] == 5


def test_metadata_v1_request_with_one_topic() -> None:
    body = {"topics": [{"name": "foo"}]}
    assert METADATA.request.encode(body, 1) == bytes.fromhex("00000001 0003 666f6f")


def test_metadata_null_topics_means_all_from_v1_and_is_refused_in_v0() -> None:
    assert METADATA.request.encode({"topics": None}, 1).hex() == "ffffffff"
    assert METADATA.request.decode(bytes.fromhex("ffffffff"), 1)["topics"] is None
    with pytest.raises(WireFormatError) as caught:
        METADATA.request.encode({"topics": None}, 0)
    assert caught.value.field == "topics"


def test_metadata_v12_request_carries_topic_ids_and_nullable_names() -> None:
    topic_id = uuid.UUID(int=7)
    body = {"topics": [{"topic_id": topic_id, "name": None}]}
    encoded = METADATA.request.encode(body, 12)
    assert encoded == bytes.fromhex(
        "02"  # one topic
        "00000000000000000000000000000007"  # its id
        "00 00"  # null compact name, the topic's tagged section
        "01"  # allow_auto_topic_creation defaults to true
        "00"  # include_topic_authorized_operations
        "00"  # tagged fields
    )
    assert METADATA.request.decode(encoded, 12)["topics"] == [{"topic_id": topic_id, "name": None}]


def test_metadata_response_v0_decodes_with_later_fields_at_their_defaults() -> None:
    encoded = bytes.fromhex(
        "00000001 00000001 0001 68 00002384"  # one broker: id 1, host "h", port 9092
        "00000001 0000 0001 74"  # one topic "t", no error
        "00000001 0000 00000000 00000001"  # one partition: no error, index 0, leader 1
        "00000001 00000001 00000001 00000001"  # replicas [1], isr [1]
    )
    decoded = METADATA.response.decode(encoded, 0)
    assert decoded["brokers"] == [{"node_id": 1, "host": "h", "port": 9092, "rack": None}]
    assert decoded["controller_id"] == -1
    assert decoded["cluster_id"] is None
    partition = decoded["topics"][0]["partitions"][0]
    assert partition["leader_epoch"] == -1
    assert (partition["replica_nodes"], partition["isr_nodes"]) == ([1], [1])


def test_produce_v3_request_body() -> None:
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"abc"}]}],
    }
    assert PRODUCE.request.encode(body, 3) == bytes.fromhex(
        "ffff"  # null transactional id
        "ffff"  # acks -1
        "00007530"  # timeout 30000
        "00000001 0001 74"  # one topic "t"
        "00000001 00000000 00000003 616263"  # partition 0 with 3 bytes of records
    )


def test_produce_v9_request_uses_compact_records() -> None:
    body = {"acks": 1, "timeout_ms": 1, "topic_data": [{"name": "t", "partition_data": [{}]}]}
    assert PRODUCE.request.encode(body, 9) == bytes.fromhex(
        "00 0001 00000001"  # null compact transactional id, acks, timeout
        "02 02 74"  # one topic "t"
        "02 00000000 00 00"  # one partition: index 0, null compact records, its tags
        "00"  # topic tags
        "00"  # message tags
    )


def test_fetch_v12_request_carries_the_cluster_id_as_tag_zero() -> None:
    encoded = FETCH.request.encode({"cluster_id": "c1"}, 12)
    # One tagged field: tag 0, 3 bytes, compact string "c1".
    assert encoded.endswith(bytes.fromhex("01 00 03 03 6331"))
    assert FETCH.request.decode(encoded, 12)["cluster_id"] == "c1"
    assert FETCH.request.decode(FETCH.request.encode({}, 12), 12)["cluster_id"] is None


def test_fetch_v12_response_round_trips_tagged_partition_structs() -> None:
    partition = {
        "partition_index": 0,
        "high_watermark": 10,
        "diverging_epoch": {"epoch": 3, "end_offset": 4},
        "current_leader": {"leader_id": 1, "leader_epoch": 2},
        "aborted_transactions": None,
        "records": b"xyz",
    }
    body = {"responses": [{"topic": "t", "partitions": [partition]}]}
    decoded = FETCH.response.decode(FETCH.response.encode(body, 12), 12)
    got = decoded["responses"][0]["partitions"][0]
    assert got["diverging_epoch"] == {"epoch": 3, "end_offset": 4}
    assert got["current_leader"] == {"leader_id": 1, "leader_epoch": 2}
    assert got["snapshot_id"] == {"end_offset": -1, "epoch": -1}
    assert got["records"] == b"xyz"
    assert got["aborted_transactions"] is None


def test_list_offsets_v1_has_no_isolation_level_and_v2_does() -> None:
    body = {"replica_id": -1, "isolation_level": 1, "topics": []}
    assert LIST_OFFSETS.request.encode(body, 1) == bytes.fromhex("ffffffff 00000000")
    assert LIST_OFFSETS.request.encode(body, 2) == bytes.fromhex("ffffffff 01 00000000")


def test_find_coordinator_moves_from_one_key_to_a_batch_at_v4() -> None:
    assert FIND_COORDINATOR.request.encode({"key": "g"}, 0) == bytes.fromhex("0001 67")
    single = {"key": "g", "key_type": 1}
    assert FIND_COORDINATOR.request.encode(single, 3) == bytes.fromhex("02 67 01 00")
    batch = {"coordinator_keys": ["g"], "key_type": 0}
    assert FIND_COORDINATOR.request.encode(batch, 4) == bytes.fromhex("00 02 02 67 00")


def test_truncated_produce_request_names_the_failing_field() -> None:
    partition = {"index": 0, "records": b"abcdef"}
    body = {
        "acks": 1,
        "timeout_ms": 1,
        "topic_data": [{"name": "t", "partition_data": [partition]}],
    }
    encoded = PRODUCE.request.encode(body, 3)
    with pytest.raises(WireFormatError) as caught:
        PRODUCE.request.decode(encoded[:-2], 3)
    assert caught.value.field == "topic_data[0].partition_data[0].records"


@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_raise_only_wire_format_errors(data: bytes) -> None:
    for message, version in _every_message_version():
        try:
            message.decode(data, version)
        except WireFormatError:
            pass


# Empty bodies (ApiVersions v0-2, ListGroups v0-2 requests) have nothing to cut. Listed once:
# encoding every declared message per example would eat the example's deadline.
_CUTTABLE = [(m, v) for m, v in _every_message_version() if m.encode({}, v)]


@given(st.data())
def test_every_truncation_of_a_real_body_raises_wire_format_error(data: st.DataObject) -> None:
    message, version = data.draw(st.sampled_from(_CUTTABLE))
    encoded = message.encode({}, version)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(WireFormatError):
        message.decode(encoded[:cut], version)
