"""Tests for rafka.protocol.wire.txn_apis: the transaction APIs encode Kafka's bytes, the same ones
kafka-python's own codec writes and reads at every served version (those tests are skipped where
kafka-python, a test extra, is not installed)."""

from __future__ import annotations

from typing import Any

import pytest

from rafka.protocol.wire.txn_apis import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    TXN_OFFSET_COMMIT,
)

VERSIONS = range(4)


def test_end_txn_v0_is_id_producer_epoch_and_decision() -> None:
    body = {"transactional_id": "t", "producer_id": 5, "producer_epoch": 1, "committed": True}
    assert END_TXN.request.encode(body, 0) == bytes.fromhex(
        "0001 74"  # transactional id "t"
        "0000000000000005"  # producer id
        "0001"  # epoch
        "01"  # commit
    )


def test_end_txn_v3_is_flexible() -> None:
    body = {"transactional_id": "t", "producer_id": 5, "producer_epoch": 1, "committed": False}
    assert END_TXN.request.encode(body, 3) == bytes.fromhex(
        "02 74 0000000000000005 0001 00 00"  # compact "t", ..., abort, empty tagged fields
    )


def test_add_partitions_to_txn_v3_golden_bytes() -> None:
    body = {
        "v3_and_below_transactional_id": "t",
        "v3_and_below_producer_id": 5,
        "v3_and_below_producer_epoch": 1,
        "v3_and_below_topics": [{"name": "a", "partitions": [0, 2]}],
    }
    assert ADD_PARTITIONS_TO_TXN.request.encode(body, 3) == bytes.fromhex(
        "02 74"  # compact "t"
        "0000000000000005 0001"
        "02"  # one topic (compact array: count + 1)
        "02 61"  # "a"
        "03 00000000 00000002"  # partitions 0 and 2
        "00"  # the topic's tagged fields
        "00"  # the body's tagged fields
    )


def test_txn_offset_commit_before_v3_reads_as_a_commit_without_group_metadata() -> None:
    body = {
        "transactional_id": "t",
        "group_id": "g",
        "producer_id": 5,
        "producer_epoch": 1,
        "topics": [
            {
                "name": "a",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 9, "committed_metadata": None}
                ],
            }
        ],
    }
    decoded = TXN_OFFSET_COMMIT.request.decode(TXN_OFFSET_COMMIT.request.encode(body, 2), 2)
    assert (decoded["generation_id"], decoded["member_id"], decoded["group_instance_id"]) == (
        -1,
        "",
        None,
    )
    partition = decoded["topics"][0]["partitions"][0]
    assert (partition["committed_leader_epoch"], partition["committed_metadata"]) == (-1, None)


def _kafka_python() -> Any:
    """kafka-python's transaction messages."""
    return pytest.importorskip("kafka.protocol.producer.transaction")


def _kafka_python_requests(version: int) -> list[tuple[Any, Any]]:
    """(rafka's message, kafka-python's request) pairs holding the same fields."""
    kp = _kafka_python()
    topic = kp.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    commit_topic = kp.TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    commit_partition = commit_topic.TxnOffsetCommitRequestPartition
    return [
        (
            ADD_PARTITIONS_TO_TXN.request,
            kp.AddPartitionsToTxnRequest(
                v3_and_below_transactional_id="txn",
                v3_and_below_producer_id=12,
                v3_and_below_producer_epoch=3,
                v3_and_below_topics=[
                    topic(name="a", partitions=[0, 1]),
                    topic(name="b", partitions=[4]),
                ],
                version=version,
            ),
        ),
        (
            ADD_OFFSETS_TO_TXN.request,
            kp.AddOffsetsToTxnRequest(
                transactional_id="txn",
                producer_id=12,
                producer_epoch=3,
                group_id="group",
                version=version,
            ),
        ),
        (
            END_TXN.request,
            kp.EndTxnRequest(
                transactional_id="txn",
                producer_id=12,
                producer_epoch=3,
                committed=True,
                version=version,
            ),
        ),
        (
            TXN_OFFSET_COMMIT.request,
            kp.TxnOffsetCommitRequest(
                transactional_id="txn",
                group_id="group",
                producer_id=12,
                producer_epoch=3,
                generation_id=7,
                member_id="member",
                group_instance_id=None,
                topics=[
                    commit_topic(
                        name="a",
                        partitions=[
                            commit_partition(
                                partition_index=1,
                                committed_offset=42,
                                committed_leader_epoch=2,
                                committed_metadata="meta",
                            )
                        ],
                    )
                ],
                version=version,
            ),
        ),
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_requests_encode_as_kafka_python_encodes_them(version: int) -> None:
    for message, theirs in _kafka_python_requests(version):
        wire = theirs.encode(version=version)
        ours = message.decode(wire, version)
        assert message.encode(ours, version) == wire, message.name
        assert "txn" in ours.values() or ours["v3_and_below_transactional_id"] == "txn"


RESPONSES: list[tuple[Any, str, dict[str, Any]]] = [
    (
        ADD_PARTITIONS_TO_TXN.response,
        "AddPartitionsToTxnResponse",
        {
            "throttle_time_ms": 0,
            "results_by_topic_v3_and_below": [
                {
                    "name": "a",
                    "results_by_partition": [{"partition_index": 1, "partition_error_code": 3}],
                }
            ],
        },
    ),
    (ADD_OFFSETS_TO_TXN.response, "AddOffsetsToTxnResponse", {"error_code": 51}),
    (END_TXN.response, "EndTxnResponse", {"error_code": 90}),
    (
        TXN_OFFSET_COMMIT.response,
        "TxnOffsetCommitResponse",
        {"topics": [{"name": "a", "partitions": [{"partition_index": 1, "error_code": 25}]}]},
    ),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("message", "theirs", "body"), RESPONSES)
def test_responses_decode_in_kafka_python(
    version: int, message: Any, theirs: str, body: dict[str, Any]
) -> None:
    decoded = getattr(_kafka_python(), theirs).decode(
        message.encode(body, version), version=version
    )
    assert decoded.to_dict() == {"throttle_time_ms": 0, **body}
