"""KafkaTxnApis: Kafka's transaction requests answered by the broker's coordinators.

AddPartitionsToTxn, AddOffsetsToTxn and EndTxn arrive at the broker FindCoordinator named for the
transactional id and go to its transaction coordinator actor; TxnOffsetCommit arrives at the
group's coordinator and goes to its group coordinator actor. Each body becomes the request
rafka's own transactional producer sends (``rafka.protocol.messages.transactions``) and the answer
is mapped back. The records themselves travel in Produce requests, whose batches carry producer
id, epoch, sequence and the transactional bit unchanged. ``KafkaApis`` serves these handlers
beside its own.

With an authorizer each request is checked as Kafka's KafkaApis checks it, and a refused one is
not sent to a coordinator: every one needs WRITE on its transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED); AddPartitionsToTxn also WRITE on each topic (a refused
topic's partitions are TOPIC_AUTHORIZATION_FAILED, internal topics always, and the others
OPERATION_NOT_ATTEMPTED); AddOffsetsToTxn and TxnOffsetCommit READ on the group
(GROUP_AUTHORIZATION_FAILED); TxnOffsetCommit READ on each topic, whose refused partitions'
offsets are not written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from rafka.actors.broker.kafka_group_apis import (
    CoordinatorSide,
    authorize_commit,
    partitions_by_topic,
)
from rafka.actors.broker.metadata_cache import INTERNAL_TOPICS
from rafka.actors.broker.request_authorization import refused, request_refusal
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.groups import OffsetCommitEntry
from rafka.protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from rafka.protocol.types import TopicPartition
from rafka.protocol.wire.apis import INIT_PRODUCER_ID
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.txn_apis import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    TXN_OFFSET_COMMIT,
)
from rafka.security.acl import ACLOperation

Body = Mapping[str, Any]
Handler = Callable[[RequestHeader, Body], Awaitable[Body]]
T = TypeVar("T")

# KIP-588: the first version of each API whose clients know PRODUCER_FENCED; older ones are told
# INVALID_PRODUCER_EPOCH instead, which they treat as the same fatal fencing.
_PRODUCER_FENCED_SINCE = {
    INIT_PRODUCER_ID.key: 4,
    ADD_PARTITIONS_TO_TXN.key: 2,
    ADD_OFFSETS_TO_TXN.key: 2,
    END_TXN.key: 2,
}


class TransactionCoordinatorSide(CoordinatorSide, Protocol):
    """What the transaction APIs need of their broker (the broker actor, or a fake in unit
    tests): its transaction coordinator, and its group coordinator for TxnOffsetCommit."""

    async def transaction_coordinator_call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on this broker's transaction coordinator actor; raises
        COORDINATOR_NOT_AVAILABLE when the coordinator cannot be reached."""


def wire_error(header: RequestHeader, error: Errors) -> int:
    """The error code a client of ``header``'s API version understands for ``error``."""
    since = _PRODUCER_FENCED_SINCE.get(header.api_key)
    if error is Errors.PRODUCER_FENCED and since is not None and header.api_version < since:
        return int(Errors.INVALID_PRODUCER_EPOCH)
    return int(error)


class KafkaTxnApis:
    """Handles the transaction requests of the Kafka listener for one broker."""

    def __init__(self, broker: TransactionCoordinatorSide) -> None:
        self._broker = broker

    def handlers(self) -> dict[int, Handler]:
        """The handler of each transaction API, by api key."""
        return {
            ADD_PARTITIONS_TO_TXN.key: self._add_partitions_to_txn,
            ADD_OFFSETS_TO_TXN.key: self._add_offsets_to_txn,
            END_TXN.key: self._end_txn,
            TXN_OFFSET_COMMIT.key: self._txn_offset_commit,
        }

    async def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        """InitProducerId for a transactional id, which only the id's transaction coordinator
        may answer: it fences the id's older producers and finishes their transaction first."""
        return await self._ask(
            self._broker.transaction_coordinator_call,
            InitProducerIdResponse,
            "init_producer_id",
            request,
        )

    @staticmethod
    async def _ask(
        call: Callable[..., Awaitable[Any]], failed: Callable[..., T], method: str, request: Any
    ) -> T:
        """``call(method, request)``'s answer, or ``failed(error, error_message=...)`` when the
        coordinator could not be asked."""
        try:
            answer: T = await call(method, request)
        except RafkaError as exc:
            return failed(exc.error, error_message=exc.message)
        return answer

    async def _add_partitions_to_txn(self, header: RequestHeader, body: Body) -> Body:
        partitions = tuple(
            TopicPartition(topic["name"], partition)
            for topic in body["v3_and_below_topics"]
            for partition in topic["partitions"]
        )
        request = AddPartitionsToTxnRequest(
            body["v3_and_below_transactional_id"],
            body["v3_and_below_producer_id"],
            body["v3_and_below_producer_epoch"],
            partitions,
        )
        refusal = request_refusal(self._broker, request.transactional_id)
        unwritable = frozenset() if refusal is not None else self._unwritable(partitions)
        if refusal is not None:
            answer = AddPartitionsToTxnResponse(refusal)
        elif unwritable:
            # One refused partition fails the whole request; the rest are not attempted.
            answer = AddPartitionsToTxnResponse(Errors.OPERATION_NOT_ATTEMPTED)
        else:
            answer = await self._ask(
                self._broker.transaction_coordinator_call,
                AddPartitionsToTxnResponse,
                "add_partitions_to_txn",
                request,
            )
        by_topic = _partition_errors(header, partitions, answer, "partition_error_code", unwritable)
        return {
            "results_by_topic_v3_and_below": [
                {"name": topic, "results_by_partition": results}
                for topic, results in by_topic.items()
            ]
        }

    def _unwritable(self, partitions: Iterable[TopicPartition]) -> frozenset[str]:
        """The topics of ``partitions`` a transaction may not add: those without WRITE, and as in
        Kafka the internal topics, whatever the ACLs."""
        topics = frozenset(tp.topic for tp in partitions)
        internal = topics & INTERNAL_TOPICS
        return internal | refused(self._broker, ACLOperation.WRITE, topics - internal)

    async def _add_offsets_to_txn(self, header: RequestHeader, body: Body) -> Body:
        request = AddOffsetsToTxnRequest(
            body["transactional_id"], body["producer_id"], body["producer_epoch"], body["group_id"]
        )
        refusal = request_refusal(self._broker, request.transactional_id, request.group_id)
        answer = (
            AddOffsetsToTxnResponse(refusal)
            if refusal is not None
            else await self._ask(
                self._broker.transaction_coordinator_call,
                AddOffsetsToTxnResponse,
                "add_offsets_to_txn",
                request,
            )
        )
        return {"error_code": wire_error(header, answer.error)}

    async def _end_txn(self, header: RequestHeader, body: Body) -> Body:
        request = EndTxnRequest(
            body["transactional_id"],
            body["producer_id"],
            body["producer_epoch"],
            bool(body["committed"]),
        )
        refusal = request_refusal(self._broker, request.transactional_id)
        answer = (
            EndTxnResponse(refusal)
            if refusal is not None
            else await self._ask(
                self._broker.transaction_coordinator_call, EndTxnResponse, "end_txn", request
            )
        )
        return {"error_code": wire_error(header, answer.error)}

    async def _txn_offset_commit(self, header: RequestHeader, body: Body) -> Body:
        offsets = tuple(
            OffsetCommitEntry(
                topic["name"],
                p["partition_index"],
                p["committed_offset"],
                p["committed_metadata"] or "",
            )
            for topic in body["topics"]
            for p in topic["partitions"]
        )
        commit = authorize_commit(self._broker, offsets, body["group_id"], body["transactional_id"])
        answer = TxnOffsetCommitResponse(commit.refusal or Errors.NONE)
        if commit.asks:
            request = TxnOffsetCommitRequest(
                body["transactional_id"],
                body["group_id"],
                body["producer_id"],
                body["producer_epoch"],
                commit.allowed,
                body["generation_id"],
                body["member_id"],
                body["group_instance_id"],
            )
            answer = await self._ask(
                self._broker.coordinator_call, TxnOffsetCommitResponse, "txn_offset_commit", request
            )
        partitions = [TopicPartition(e.topic, e.partition) for e in offsets]
        by_topic = _partition_errors(header, partitions, answer, "error_code", commit.unreadable)
        return {"topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}


def _partition_errors(
    header: RequestHeader,
    partitions: Sequence[TopicPartition],
    answer: AddPartitionsToTxnResponse | TxnOffsetCommitResponse,
    error_field: str,
    unauthorized: frozenset[str] = frozenset(),
) -> dict[str, list[dict[str, Any]]]:
    """Each partition's entry (index and ``error_field``) under its topic: TOPIC_AUTHORIZATION_
    FAILED for the topics ``unauthorized``. A refused request may carry no per-partition results:
    its error then stands for each partition."""
    results = dict(answer.results)
    results.update(
        (tp, Errors.TOPIC_AUTHORIZATION_FAILED) for tp in partitions if tp.topic in unauthorized
    )
    return partitions_by_topic(
        (
            tp.topic,
            {
                "partition_index": tp.partition,
                error_field: wire_error(header, results.get(tp, answer.error)),
            },
        )
        for tp in partitions
    )
