"""KafkaTxnApis against fake coordinators: Kafka's transaction request bodies (round-tripped through
the wire codec at several versions) mapped onto the requests rafka's own transactional producer
sends, to the transaction coordinator or (TxnOffsetCommit) the group coordinator, and the answers
mapped back into bodies that encode at the request's version, errors as Kafka's codes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.kafka_txn_apis import KafkaTxnApis
from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import OffsetCommitEntry
from rafka.protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from rafka.protocol.types import TopicPartition
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY

pytestmark = pytest.mark.timeout(30)

ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 24, 25, 26, 28


class FakeCoordinators:
    """Records what KafkaTxnApis asks each coordinator; answers from ``answers`` by method, or
    raises COORDINATOR_NOT_AVAILABLE as the broker does when the actor is gone."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.answers = answers or {}
        self.group_calls: list[tuple[str, tuple[Any, ...]]] = []
        self.txn_calls: list[tuple[str, tuple[Any, ...]]] = []
        self.unavailable = False
        # No authorizer: every request is allowed (the test_acl_checks_* modules check ACLs).
        self.authorizer = BrokerAuthorizer(False, frozenset(), False)

    def _answer(self, method: str, args: tuple[Any, ...]) -> Any:
        if self.unavailable:
            raise Errors.COORDINATOR_NOT_AVAILABLE.exception("coordinator restarting")
        answer = self.answers[method]
        return answer(*args) if callable(answer) else answer

    async def coordinator_call(self, method: str, *args: Any) -> Any:
        self.group_calls.append((method, args))
        return self._answer(method, args)

    async def transaction_coordinator_call(self, method: str, *args: Any) -> Any:
        self.txn_calls.append((method, args))
        return self._answer(method, args)


def handle(broker: FakeCoordinators, api_key: int, version: int, body: dict[str, Any]) -> Any:
    """``body`` sent through the codec and KafkaTxnApis; the answer must encode at ``version``."""
    header = RequestHeader(api_key, version, 1, "rdkafka")
    frame = DEFAULT_REGISTRY.encode_request(header, body)
    request = DEFAULT_REGISTRY.decode_request(frame[4:])
    apis = KafkaTxnApis(broker)

    async def call() -> Any:
        return await apis.handlers()[api_key](request.header, request.body)

    answer = asyncio.run(call())
    response = DEFAULT_REGISTRY.encode_response(header, answer)
    return DEFAULT_REGISTRY.decode_response(response[4:], header)[1]


ADD_PARTITIONS_BODY = {
    "v3_and_below_transactional_id": "txn",
    "v3_and_below_producer_id": 12,
    "v3_and_below_producer_epoch": 3,
    "v3_and_below_topics": [{"name": "a", "partitions": [0, 1]}, {"name": "b", "partitions": [4]}],
}


@pytest.mark.parametrize("version", [0, 3])
def test_add_partitions_to_txn_asks_the_transaction_coordinator_for_every_partition(
    version: int,
) -> None:
    broker = FakeCoordinators({"add_partitions_to_txn": AddPartitionsToTxnResponse(Errors.NONE)})
    answer = handle(broker, ADD_PARTITIONS, version, ADD_PARTITIONS_BODY)
    assert broker.txn_calls == [
        (
            "add_partitions_to_txn",
            (
                AddPartitionsToTxnRequest(
                    "txn",
                    12,
                    3,
                    (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 4)),
                ),
            ),
        )
    ]
    assert broker.group_calls == []
    assert answer["results_by_topic_v3_and_below"] == [
        {
            "name": "a",
            "results_by_partition": [
                {"partition_index": 0, "partition_error_code": 0},
                {"partition_index": 1, "partition_error_code": 0},
            ],
        },
        {"name": "b", "results_by_partition": [{"partition_index": 4, "partition_error_code": 0}]},
    ]


def test_add_partitions_to_txn_answers_each_partition_with_its_own_error() -> None:
    refused = AddPartitionsToTxnResponse(
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        (
            (TopicPartition("a", 0), Errors.OPERATION_NOT_ATTEMPTED),
            (TopicPartition("a", 1), Errors.OPERATION_NOT_ATTEMPTED),
            (TopicPartition("b", 4), Errors.UNKNOWN_TOPIC_OR_PARTITION),
        ),
    )
    answer = handle(
        FakeCoordinators({"add_partitions_to_txn": refused}), ADD_PARTITIONS, 1, ADD_PARTITIONS_BODY
    )
    codes = {
        (t["name"], p["partition_index"]): p["partition_error_code"]
        for t in answer["results_by_topic_v3_and_below"]
        for p in t["results_by_partition"]
    }
    assert codes == {
        ("a", 0): Errors.OPERATION_NOT_ATTEMPTED,
        ("a", 1): Errors.OPERATION_NOT_ATTEMPTED,
        ("b", 4): Errors.UNKNOWN_TOPIC_OR_PARTITION,
    }


def test_an_unreachable_transaction_coordinator_is_coordinator_not_available_per_partition() -> (
    None
):
    broker = FakeCoordinators()
    broker.unavailable = True
    answer = handle(broker, ADD_PARTITIONS, 3, ADD_PARTITIONS_BODY)
    codes = [
        p["partition_error_code"]
        for t in answer["results_by_topic_v3_and_below"]
        for p in t["results_by_partition"]
    ]
    assert codes == [Errors.COORDINATOR_NOT_AVAILABLE] * 3


@pytest.mark.parametrize(
    ("version", "expected"),
    [(1, Errors.INVALID_PRODUCER_EPOCH), (2, Errors.PRODUCER_FENCED)],
)
def test_a_fenced_producer_is_told_in_the_code_its_version_knows(
    version: int, expected: Errors
) -> None:
    broker = FakeCoordinators(
        {"add_partitions_to_txn": AddPartitionsToTxnResponse(Errors.PRODUCER_FENCED)}
    )
    answer = handle(broker, ADD_PARTITIONS, version, ADD_PARTITIONS_BODY)
    assert {
        p["partition_error_code"]
        for t in answer["results_by_topic_v3_and_below"]
        for p in t["results_by_partition"]
    } == {expected}


@pytest.mark.parametrize("version", [0, 3])
def test_add_offsets_to_txn_names_the_group_to_the_transaction_coordinator(version: int) -> None:
    broker = FakeCoordinators(
        {"add_offsets_to_txn": AddOffsetsToTxnResponse(Errors.CONCURRENT_TRANSACTIONS)}
    )
    body = {"transactional_id": "txn", "producer_id": 12, "producer_epoch": 3, "group_id": "g"}
    answer = handle(broker, ADD_OFFSETS, version, body)
    assert broker.txn_calls == [
        ("add_offsets_to_txn", (AddOffsetsToTxnRequest("txn", 12, 3, "g"),))
    ]
    assert answer["error_code"] == Errors.CONCURRENT_TRANSACTIONS


@pytest.mark.parametrize(("version", "committed"), [(0, True), (1, False), (3, True)])
def test_end_txn_commits_or_aborts_at_the_transaction_coordinator(
    version: int, committed: bool
) -> None:
    broker = FakeCoordinators({"end_txn": EndTxnResponse(Errors.NONE)})
    body = {
        "transactional_id": "txn",
        "producer_id": 12,
        "producer_epoch": 3,
        "committed": committed,
    }
    answer = handle(broker, END_TXN, version, body)
    assert broker.txn_calls == [("end_txn", (EndTxnRequest("txn", 12, 3, committed),))]
    assert answer["error_code"] == 0


def test_end_txn_v0_reports_fencing_as_invalid_producer_epoch() -> None:
    broker = FakeCoordinators({"end_txn": EndTxnResponse(Errors.PRODUCER_FENCED)})
    body = {"transactional_id": "txn", "producer_id": 12, "producer_epoch": 2, "committed": True}
    assert handle(broker, END_TXN, 0, body)["error_code"] == Errors.INVALID_PRODUCER_EPOCH


TXN_COMMIT_BODY = {
    "transactional_id": "txn",
    "group_id": "g",
    "producer_id": 12,
    "producer_epoch": 3,
    "generation_id": 5,
    "member_id": "m-1",
    "group_instance_id": None,
    "topics": [
        {
            "name": "a",
            "partitions": [
                {"partition_index": 0, "committed_offset": 10, "committed_metadata": None},
                {"partition_index": 1, "committed_offset": 20, "committed_metadata": "x"},
            ],
        }
    ],
}


def test_txn_offset_commit_v3_goes_to_the_group_coordinator_with_the_member() -> None:
    broker = FakeCoordinators(
        {
            "txn_offset_commit": TxnOffsetCommitResponse(
                Errors.NONE,
                (
                    (TopicPartition("a", 0), Errors.NONE),
                    (TopicPartition("a", 1), Errors.NONE),
                ),
            )
        }
    )
    answer = handle(broker, TXN_OFFSET_COMMIT, 3, TXN_COMMIT_BODY)
    assert broker.group_calls == [
        (
            "txn_offset_commit",
            (
                TxnOffsetCommitRequest(
                    "txn",
                    "g",
                    12,
                    3,
                    (OffsetCommitEntry("a", 0, 10, ""), OffsetCommitEntry("a", 1, 20, "x")),
                    5,
                    "m-1",
                    None,
                ),
            ),
        )
    ]
    assert broker.txn_calls == []
    assert answer["topics"] == [
        {
            "name": "a",
            "partitions": [
                {"partition_index": 0, "error_code": 0},
                {"partition_index": 1, "error_code": 0},
            ],
        }
    ]


def test_txn_offset_commit_v0_carries_no_group_metadata_and_a_refusal_covers_each_partition() -> (
    None
):
    broker = FakeCoordinators(
        {"txn_offset_commit": TxnOffsetCommitResponse(Errors.NOT_COORDINATOR)}
    )
    answer = handle(broker, TXN_OFFSET_COMMIT, 0, TXN_COMMIT_BODY)
    request = broker.group_calls[0][1][0]
    assert (request.generation_id, request.member_id, request.group_instance_id) == (-1, "", None)
    assert [p["error_code"] for p in answer["topics"][0]["partitions"]] == [
        Errors.NOT_COORDINATOR,
        Errors.NOT_COORDINATOR,
    ]
