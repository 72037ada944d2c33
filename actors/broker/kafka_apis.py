"""KafkaApis: what a Kafka client's request means, answered with the broker's own machinery.

The listener decodes a frame into a body (a dict with Kafka's field names); this module maps it
onto the internal request types rafka's own clients send (ProduceRequest, FetchRequest,
ListOffsetsRequest, InitProducerIdRequest) and sends them where a native client would: the
partition's replica actor, the broker's producer ids. One transport, two front doors: there is
no second implementation of produce or fetch here, only the translation of field names and of
record batches (Kafka's varint records to and from rafka's columnar ones). Metadata and
FindCoordinator are ``KafkaMetadataApis``'s, the consumer group APIs ``KafkaGroupApis``'s, the
transaction APIs ``KafkaTxnApis``'s and the admin APIs ``KafkaAdminApis``'s, served through the
same handler map.

With an authorizer each request is checked as Kafka's KafkaApis checks it
(``request_authorization``): a Produce needs WRITE on each topic (and on its transactional id
when its batches are transactional), a consumer's Fetch READ on each topic (a follower's
CLUSTER_ACTION on the cluster), ListOffsets DESCRIBE on each topic, and InitProducerId WRITE on
its transactional id, or for an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on
some topic. A refused partition is answered TOPIC_AUTHORIZATION_FAILED and nothing is asked of
its replica.

A Produce's record bytes and a consumer Fetch's are recorded against the client's quota
(``client_quotas``); over it, the response carries Kafka's throttle time and the connection is
muted for that time (``listener.throttle_connection``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from rafka.actors.broker.authentication import refusing_handlers
from rafka.actors.broker.client_quotas import ClientQuotaManager, ClientQuotaType
from rafka.actors.broker.high_watermark_waits import HighWatermarkWaits
from rafka.actors.broker.kafka_admin_apis import AdminSide, KafkaAdminApis
from rafka.actors.broker.kafka_group_apis import KafkaGroupApis
from rafka.actors.broker.kafka_metadata_apis import KafkaMetadataApis, MetadataSide
from rafka.actors.broker.kafka_txn_apis import (
    KafkaTxnApis,
    TransactionCoordinatorSide,
    wire_error,
)
from rafka.actors.broker.listener import (
    Deferred,
    connection_principal,
    open_region,
    throttle_connection,
)
from rafka.actors.broker.produce_appends import ProduceAppends
from rafka.actors.broker.request_authorization import (
    AuthorizingSide,
    answered,
    authorized_on_any,
    cluster_authorized,
    refused,
    request_refusal,
)
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.fetch import READ_COMMITTED, FetchRequest, FetchResponse
from rafka.protocol.messages.offsets import ListOffsetsRequest, ListOffsetsResponse
from rafka.protocol.messages.produce import (
    ACKS_NONE,
    HighWatermarkReached,
    HighWatermarkWait,
    ProduceAppended,
    ProduceRequest,
    ProduceResponse,
)
from rafka.protocol.messages.transactions import InitProducerIdRequest, InitProducerIdResponse
from rafka.protocol.records.batch import read_header
from rafka.protocol.records.kafka_records import (
    as_kafka_batches,
    validate_kafka_batches,
)
from rafka.protocol.wire.apis import (
    API_VERSIONS,
    FETCH,
    INIT_PRODUCER_ID,
    LIST_OFFSETS,
    PRODUCE,
)
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.primitives import FileSlice
from rafka.protocol.wire.registry import ApiRegistry
from rafka.security.acl import ACLOperation, ResourceType

logger = logging.getLogger(__name__)

# Appends queued on this broker (all connections, all partitions) past which a produce request is
# held until its own are done, as Kafka's queued.max.requests (500) bounds its request queue.
MAX_QUEUED_APPENDS = 500

Body = Mapping[str, Any]
T = TypeVar("T")


class BrokerSide(TransactionCoordinatorSide, AdminSide, MetadataSide, Protocol):
    """What KafkaApis needs of its broker (the broker actor, or a fake in unit tests); the group,
    transaction, admin and metadata APIs' ``coordinator_call``, ``transaction_coordinator_call``,
    ``controller_call`` and ``find_coordinator`` included, and the ``authorizer`` every handler
    asks."""

    async def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        """A producer id for an idempotent producer."""

    async def replica_call(self, topic: str, partition: int, method: str, request: Any) -> Any:
        """``method(request)`` on this broker's replica of the partition; raises
        NOT_LEADER_OR_FOLLOWER (or UNKNOWN_TOPIC_OR_PARTITION) if it has none."""


class KafkaApis:
    """Handles the decoded requests of the Kafka listener for one broker."""

    def __init__(
        self,
        broker: BrokerSide,
        registry: ApiRegistry,
        quotas: ClientQuotaManager | None = None,
    ) -> None:
        self._broker = broker
        self._registry = registry
        self._quotas = quotas or ClientQuotaManager()
        self._txn = KafkaTxnApis(broker)
        self._appends = ProduceAppends(self._ask_append)
        self._high_watermarks = HighWatermarkWaits(self._ask_high_watermark)
        self._handlers: dict[
            int, Callable[[RequestHeader, Body], Awaitable[Body | Deferred | None]]
        ] = {
            API_VERSIONS.key: self._api_versions,
            PRODUCE.key: self._produce,
            FETCH.key: self._fetch,
            LIST_OFFSETS.key: self._list_offsets,
            INIT_PRODUCER_ID.key: self._init_producer_id,
            **KafkaMetadataApis(broker).handlers(),
            **KafkaGroupApis(broker).handlers(),
            **self._txn.handlers(),
            **KafkaAdminApis(broker).handlers(),
            **refusing_handlers(),
        }

    async def handle(self, header: RequestHeader, body: Body) -> Body | Deferred | None:
        """The response body for a request the registry decoded; None when Kafka sends none;
        ``Deferred`` when the rest of its work need not hold up the connection's next request."""
        return await self._handlers[header.api_key](header, body)

    async def _api_versions(self, _header: RequestHeader, _body: Body) -> Body:
        return self._registry.api_versions_body()

    # ------------------------------------------------------------------ producer ids

    async def _init_producer_id(self, header: RequestHeader, body: Body) -> Body:
        request = InitProducerIdRequest(
            body["transactional_id"],
            body["transaction_timeout_ms"],
            body["producer_id"],
            body["producer_epoch"],
        )
        refusal = _producer_id_refusal(self._broker, request.transactional_id)
        if refusal is not None:
            answer = InitProducerIdResponse(refusal)
        elif request.transactional_id is None:
            answer = await self._broker.init_producer_id(request)
        else:
            answer = await self._txn.init_producer_id(request)
        return {
            "error_code": wire_error(header, answer.error),
            "producer_id": answer.producer_id,
            "producer_epoch": answer.producer_epoch,
        }

    # ------------------------------------------------------------------ produce

    async def _produce(self, header: RequestHeader, body: Body) -> Body | Deferred | None:
        """Queue every partition's batches behind the appends taken before them, and leave the
        rest ``Deferred``: the connection's next request is taken at once (unless the client is
        over its produce quota), so the appends of requests a client pipelines go to the replica
        together, and so do their acks=all waits."""
        acks, timeout_ms = body["acks"], body["timeout_ms"]
        targets = [
            (topic["name"], data["index"], data["records"])
            for topic in body["topic_data"]
            for data in topic["partition_data"]
        ]
        record_bytes = sum(len(records or b"") for _, _, records in targets)
        throttle_ms = self._throttled(ClientQuotaType.PRODUCE, header, record_bytes)
        refusals = _produce_refusals(self._broker, body["transactional_id"], targets)
        appended = [
            self._append_one(t, p, records, acks, timeout_ms, refusals.get(t))
            for t, p, records in targets
        ]
        if len(self._appends) > MAX_QUEUED_APPENDS:
            # Hold the connection until this request's batches are in the log: acks=0 requests
            # have no response to bound how many a connection has outstanding.
            await asyncio.wait(appended)
        if acks == ACKS_NONE:
            for append in appended:
                append.add_done_callback(_unanswered)
            return None
        return Deferred(self._produced(targets, appended, timeout_ms, throttle_ms))

    def _throttled(self, kind: ClientQuotaType, header: RequestHeader, value: int) -> int:
        """Record a client's bytes against its quota and return its throttle time; over the
        quota its connection is muted for that time, which the response tells the client."""
        throttle_ms = self._quotas.record(
            kind, connection_principal().name, header.client_id or "", value
        )
        throttle_connection(throttle_ms)
        return throttle_ms

    def _append_one(
        self,
        topic: str,
        partition: int,
        records: bytes | None,
        acks: int,
        timeout_ms: int,
        refusal: Errors | None = None,
    ) -> asyncio.Future[ProduceAppended]:
        """Queue one partition's batches; a partition refused ``refusal`` (or whose batches are
        invalid) is answered at once and nothing is appended."""
        try:
            if refusal is not None:
                raise refusal.exception()
            if not records:
                raise Errors.INVALID_RECORD.exception("a produce request carried no records")
            headers = validate_kafka_batches(records)
        except RafkaError as exc:
            failed: asyncio.Future[ProduceAppended] = asyncio.get_running_loop().create_future()
            failed.set_result(_append_failed(exc.error, error_message=exc.message))
            return failed
        request = ProduceRequest(records, acks, timeout_ms)
        return self._appends.append(topic, partition, request, headers)

    async def _ask_append(
        self, topic: str, partition: int, request: ProduceRequest
    ) -> ProduceAppended:
        return await self._ask_replica(topic, partition, "append", request, _append_failed)

    async def _produced(
        self,
        targets: list[tuple[str, int, bytes | None]],
        appended: list[asyncio.Future[ProduceAppended]],
        timeout_ms: int,
        throttle_ms: int,
    ) -> Body:
        answers = await asyncio.gather(
            *(
                self._await_high_watermark(topic, partition, append, timeout_ms)
                for (topic, partition, _), append in zip(targets, appended, strict=True)
            )
        )
        return _produce_body(targets, answers, throttle_ms)

    async def _await_high_watermark(
        self,
        topic: str,
        partition: int,
        pending: Awaitable[ProduceAppended],
        timeout_ms: int,
    ) -> ProduceResponse:
        appended = await pending
        if appended.required_offset is None:
            return appended.response
        error = await self._high_watermarks.wait(
            topic, partition, appended.required_offset, timeout_ms
        )
        if error is Errors.NONE:
            return appended.response
        return ProduceResponse(error, error_message=f"{topic}-{partition}: {error.message}")

    async def _ask_high_watermark(
        self, topic: str, partition: int, request: HighWatermarkWait
    ) -> HighWatermarkReached:
        return await self._ask_replica(
            topic, partition, "await_high_watermark", request, _high_watermark_unknown
        )

    # ------------------------------------------------------------------ fetch

    async def _fetch(self, header: RequestHeader, body: Body) -> Body:
        isolation = body["isolation_level"]
        targets = [
            (topic["topic"], data) for topic in body["topics"] for data in topic["partitions"]
        ]
        unreadable = _unreadable(self._broker, body["replica_id"], [t for t, _ in targets])

        def fetch_all(wait_ms: int) -> list[asyncio.Task[FetchResponse]]:
            return [
                asyncio.ensure_future(
                    answered(FetchResponse(Errors.TOPIC_AUTHORIZATION_FAILED))
                    if t in unreadable
                    else self._fetch_one(t, data, isolation, wait_ms)
                )
                for t, data in targets
            ]

        answers = list(await asyncio.gather(*fetch_all(0)))
        wanted = max(1, body["min_bytes"])
        # A fetch naming no partition is answered at once, as Kafka's ReplicaManager does: there
        # is nothing to wait on.
        if (
            targets
            and body["max_wait_ms"] > 0
            and sum(a.size for a in answers) < wanted
            and all(a.error is Errors.NONE for a in answers)
        ):
            # Long polling: every partition waits at its leader's purgatory, and the first to
            # answer with records (or the deadline) ends the wait, as Kafka's DelayedFetch does.
            waiting = fetch_all(body["max_wait_ms"])
            await asyncio.wait(
                waiting, timeout=body["max_wait_ms"] / 1000, return_when=asyncio.FIRST_COMPLETED
            )
            for i, task in enumerate(waiting):
                if task.done():
                    answers[i] = task.result()
                else:
                    task.cancel()
        by_topic: dict[str, list[dict[str, Any]]] = {}
        consumer = body["replica_id"] < 0
        budget = body["max_bytes"]
        if consumer:
            # As Kafka's: no larger than the consumer's quota allows after an idle window (it
            # would be throttled however long it waited), but with its first partition's records.
            user, client_id = connection_principal().name, header.client_id or ""
            window = self._quotas.max_value_in_quota_window(ClientQuotaType.FETCH, user, client_id)
            budget = min(budget, max(1, window))
        fetched = 0
        for (topic, data), answer in zip(targets, answers, strict=True):
            records: bytes | FileSlice = b""
            if answer.size and budget > 0:
                answer, records = await self._fetched_records(topic, data, isolation, answer)
            budget -= len(records)
            fetched += len(records)
            by_topic.setdefault(topic, []).append(
                {
                    "partition_index": data["partition"],
                    "error_code": int(answer.error),
                    "high_watermark": answer.high_watermark,
                    "last_stable_offset": answer.last_stable_offset,
                    "log_start_offset": answer.log_start_offset,
                    "aborted_transactions": (
                        [
                            {"producer_id": a.producer_id, "first_offset": a.first_offset}
                            for a in answer.aborted_transactions
                        ]
                        if isolation == READ_COMMITTED
                        else None
                    ),
                    "records": records,
                }
            )
        return {
            "throttle_time_ms": (
                self._throttled(ClientQuotaType.FETCH, header, fetched) if consumer else 0
            ),
            "error_code": 0,
            "responses": [
                {"topic": topic, "partitions": partitions} for topic, partitions in by_topic.items()
            ],
        }

    async def _fetch_one(
        self, topic: str, data: Body, isolation: int, wait_ms: int, file_regions: bool = True
    ) -> FetchResponse:
        request = FetchRequest(
            fetch_offset=data["fetch_offset"],
            max_bytes=data["partition_max_bytes"],
            max_wait_ms=wait_ms,
            current_leader_epoch=data["current_leader_epoch"],
            isolation_level=isolation,
            file_regions=file_regions,
        )
        return await self._ask_replica(topic, data["partition"], "fetch", request, FetchResponse)

    async def _fetched_records(
        self, topic: str, data: Body, isolation: int, answer: FetchResponse
    ) -> tuple[FetchResponse, bytes | FileSlice]:
        """An answer's batches as a Kafka client reads them: a file region sent from the file
        as it lies, or bytes (rafka's columnar batches converted once); with the answer they
        belong to."""
        if answer.region is None:
            return answer, as_kafka_batches(answer.records)
        opened = open_region(answer.region)
        if opened is not None:
            return answer, opened
        # The segment was deleted or replaced since the replica answered: read the bytes.
        again = await self._fetch_one(topic, data, isolation, 0, file_regions=False)
        return again, as_kafka_batches(again.records)

    # ------------------------------------------------------------------ list offsets

    async def _list_offsets(self, _header: RequestHeader, body: Body) -> Body:
        isolation = body["isolation_level"]
        targets = [
            (topic["name"], data) for topic in body["topics"] for data in topic["partitions"]
        ]
        undescribable = refused(self._broker, ACLOperation.DESCRIBE, (t for t, _ in targets))
        answers = await asyncio.gather(
            *(
                answered(ListOffsetsResponse(Errors.TOPIC_AUTHORIZATION_FAILED))
                if t in undescribable
                else self._list_offsets_one(t, data, isolation)
                for t, data in targets
            )
        )
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, data), answer in zip(targets, answers, strict=True):
            by_topic.setdefault(topic, []).append(
                {
                    "partition_index": data["partition_index"],
                    "error_code": int(answer.error),
                    "timestamp": answer.timestamp,
                    "offset": answer.offset,
                    "leader_epoch": answer.leader_epoch,
                }
            )
        return {
            "topics": [
                {"name": topic, "partitions": partitions} for topic, partitions in by_topic.items()
            ]
        }

    async def _list_offsets_one(
        self, topic: str, data: Body, isolation: int
    ) -> ListOffsetsResponse:
        request = ListOffsetsRequest(data["timestamp"], data["current_leader_epoch"], isolation)
        return await self._ask_replica(
            topic, data["partition_index"], "list_offsets", request, ListOffsetsResponse
        )

    async def _ask_replica(
        self, topic: str, partition: int, method: str, request: Any, failed: Callable[..., T]
    ) -> T:
        """The partition replica's answer, or ``failed(error, error_message=...)`` when this
        broker has no replica of it to ask."""
        try:
            answer: T = await self._broker.replica_call(topic, partition, method, request)
        except RafkaError as exc:
            return failed(exc.error, error_message=exc.message)
        return answer


def _produce_refusals(
    side: AuthorizingSide,
    transactional_id: str | None,
    targets: list[tuple[str, int, bytes | None]],
) -> dict[str, Errors]:
    """Why a Produce may not write each refused topic, as Kafka's handleProduceRequest decides:
    every topic is TRANSACTIONAL_ID_AUTHORIZATION_FAILED when transactional batches come without
    WRITE on their transactional id, else a topic without WRITE is TOPIC_AUTHORIZATION_FAILED.
    (An idempotent producer needs no more than WRITE on the topic, as since Kafka 2.8.)"""
    topics = [topic for topic, _, _ in targets]
    if any(_transactional(records) for _, _, records in targets):
        if transactional_id is None or request_refusal(side, transactional_id) is not None:
            return dict.fromkeys(topics, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    unwritable = refused(side, ACLOperation.WRITE, topics)
    return dict.fromkeys(unwritable, Errors.TOPIC_AUTHORIZATION_FAILED)


def _transactional(records: bytes | None) -> bool:
    """Whether a partition's records open with a transactional batch (Kafka looks at each
    partition's first)."""
    if not records:
        return False
    try:
        return read_header(records).is_transactional
    except RafkaError:
        return False  # malformed: validating the batches refuses it


def _unreadable(side: AuthorizingSide, replica_id: int, topics: list[str]) -> frozenset[str]:
    """The topics a Fetch may not read: for a consumer each topic without READ; for a follower
    (a replica id of 0 or more) every topic, unless it has CLUSTER_ACTION on the cluster."""
    if replica_id < 0:
        return refused(side, ACLOperation.READ, topics)
    if cluster_authorized(side, ACLOperation.CLUSTER_ACTION):
        return frozenset()
    return frozenset(topics)


def _producer_id_refusal(side: AuthorizingSide, transactional_id: str | None) -> Errors | None:
    """Why an InitProducerId is refused, as since Kafka 2.8: a transactional producer needs WRITE
    on its transactional id; an idempotent one IDEMPOTENT_WRITE on the cluster or WRITE on some
    topic (CLUSTER_AUTHORIZATION_FAILED)."""
    if transactional_id is not None:
        return request_refusal(side, transactional_id)
    if cluster_authorized(side, ACLOperation.IDEMPOTENT_WRITE) or authorized_on_any(
        side, ACLOperation.WRITE, ResourceType.TOPIC
    ):
        return None
    return Errors.CLUSTER_AUTHORIZATION_FAILED


def _high_watermark_unknown(
    error: Errors, error_message: str | None = None
) -> HighWatermarkReached:
    """A high watermark wait that could not reach the replica: every waiter gets ``error``."""
    return HighWatermarkReached(error, -1, error)


def _unanswered(append: asyncio.Future[ProduceAppended]) -> None:
    """An acks=0 append has no one to tell how it went; its failure is only logged."""
    if not append.cancelled() and append.exception() is not None:
        logger.warning("an acks=0 append failed: %s", append.exception())


def _append_failed(error: Errors, error_message: str | None = None) -> ProduceAppended:
    """The first half of a produce that failed before or at its append: the final answer."""
    return ProduceAppended(ProduceResponse(error, error_message=error_message))


def _produce_body(
    targets: list[tuple[str, int, bytes | None]], answers: list[ProduceResponse], throttle_ms: int
) -> Body:
    """Kafka's Produce response body for each target partition's answer, grouped by topic, and
    the client's throttle time."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition, _), answer in zip(targets, answers, strict=True):
        by_topic.setdefault(topic, []).append(
            {
                "index": partition,
                "error_code": int(answer.error),
                "base_offset": answer.base_offset,
                "log_append_time_ms": answer.log_append_time,
                "log_start_offset": answer.log_start_offset,
                "error_message": answer.error_message,
            }
        )
    return {
        "responses": [
            {"name": topic, "partition_responses": partitions}
            for topic, partitions in by_topic.items()
        ],
        "throttle_time_ms": throttle_ms,
    }
