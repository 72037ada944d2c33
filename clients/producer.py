"""The producer: kafka-python's ``KafkaProducer`` API, sending straight to leader replica actors.

``send`` picks the partition (murmur2 of the key, sticky for null keys, or explicit), appends to the
partition's open batch and returns a future. Batches go to the partitions' leader replicas one in
flight per partition, so retries keep per-partition order; retriable errors are retried after a
metadata refresh. Shipping and completing happen in "turns" under one lock, taken by ``send`` when a
batch closes and by a sender thread for lingering batches and while the application is idle.
Responses are not polled for: each request's completion callback queues it and wakes the sender, so
an acknowledgement reaches its futures as soon as the sender thread gets the GIL. A request left
unanswered is given up on and its batch sent again once the metadata names another leader for its
partition (a frozen leader never answers) or ``request_timeout_ms`` has passed.

Idempotence (``enable_idempotence``, on by default as in Kafka 3.x) stamps each batch, when it is
first sent, with the producer id and epoch a broker gave and the partition's next sequence number;
a retry resends the same bytes, so the leader can drop a batch it already has. The id is fetched by
the sender thread before the first batch goes. A transactional producer (``transactional_id``) adds
Kafka's transactional API; its state lives in ``TransactionManager``. ``metrics()`` is
kafka-python's dictionary, recorded per batch and request, never per record (``client_metrics``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa

from rafka.actors import names
from rafka.clients import metrics_reporter
from rafka.clients.accumulator import ProducerBatch, RecordAccumulator
from rafka.clients.client_metrics import MetricsConfig, MetricsView, producer_sensors
from rafka.clients.cluster import ClusterConnection
from rafka.clients.column_chunk import ProducerColumns, plan_chunks
from rafka.clients.config import PRODUCER_CONFIG, TRANSACTION_CONFIG, merge_config
from rafka.clients.partitioner import DefaultPartitioner
from rafka.clients.producer_transactions import ProducerTransactions, TransactionalApi
from rafka.clients.records import FutureArrowSend, FutureRecordMetadata
from rafka.clients.transaction_manager import (
    SEQUENCE_ANSWERS,
    UNKNOWN_OUTCOME,
    SequenceReaction,
    TransactionManager,
    resolve_idempotence,
    sequence_reaction,
)
from rafka.clients.transactional_requests import TransactionalRequests
from rafka.clients.transport import RemoteError, Transport, UnreachableError
from rafka.protocol.errors import (
    Errors,
    InvalidConfigError,
    KafkaTimeoutError,
    MessageTooLargeError,
    NotLeaderOrFollowerError,
    RafkaError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.produce import (
    ACKS_ALL,
    ACKS_NONE,
    ProduceRequest,
    ProduceResponse,
)
from rafka.protocol.records.batch import HEADER_SIZE
from rafka.protocol.records.builder import RECORD_OVERHEAD
from rafka.protocol.records.compression import Compression
from rafka.protocol.types import TopicPartition, now_ms

logger = logging.getLogger(__name__)
# A produce request unanswered this long makes the sender ask whether its partition's leader moved:
# a leader that froze (a paused process, a lost node not yet noticed by Ray) answers nothing, and
# waiting for it would keep the partition unavailable after a new leader has taken over.
IN_FLIGHT_CHECK_S = 0.25


class TopicPartitions(NamedTuple):
    """What ``send`` knows of a topic: its partition count, the partitions with a leader (the
    partitioner's choice for records without a key) and when to ask the cluster again."""

    partition_count: int
    available: list[int]
    partitions: list[TopicPartition]
    expires_at: float


@dataclass(frozen=True, eq=False)
class InFlight:
    """A produce request awaiting its answer: the batch, when it was sent and to which leader."""

    batch: ProducerBatch
    sent_at: float
    leader: int


class Producer(TransactionalApi):
    """Publish records to rafka topics (``send(...).get()``, ``flush()``, ``close()``)."""

    def __init__(
        self,
        namespace: str = names.DEFAULT_NAMESPACE,
        ray_address: str | None = None,
        transport: Transport | None = None,
        **configs: Any,
    ) -> None:
        self.config = merge_config("producer", {**PRODUCER_CONFIG, **TRANSACTION_CONFIG}, configs)
        acks = self.config["acks"]
        if acks not in (0, 1, -1, "all", "0", "1", "-1"):
            raise InvalidConfigError(f"acks={acks!r} must be 0, 1, -1 or 'all'")
        self.acks = ACKS_ALL if acks in ("all", -1, "-1") else int(acks)
        transactional_id = self.config["transactional_id"]
        self.idempotent = resolve_idempotence(
            configs.get("enable_idempotence"),
            self.acks,
            self.config["max_in_flight_requests_per_connection"],
            transactional_id,
        )
        # Idempotence state, None for a plain producer (whose sends check nothing more).
        self._txn = (
            TransactionManager(transactional_id, int(self.config["transaction_timeout_ms"]))
            if self.idempotent
            else None
        )
        self.retries = int(self.config["retries"])
        self.retry_backoff_s = self.config["retry_backoff_ms"] / 1000
        self.metadata_max_age_s = self.config["metadata_max_age_ms"] / 1000
        self.request_timeout_ms = int(self.config["request_timeout_ms"])
        self.delivery_timeout_s = self.config["delivery_timeout_ms"] / 1000
        self.max_block_s = self.config["max_block_ms"] / 1000
        self.max_request_size = int(self.config["max_request_size"])
        self._key_serializer: Callable[[Any], bytes] | None = self.config["key_serializer"]
        self._value_serializer: Callable[[Any], bytes] | None = self.config["value_serializer"]
        self._partitioner = self.config["partitioner"] or DefaultPartitioner()
        self._cluster = ClusterConnection(
            namespace,
            ray_address,
            self.request_timeout_ms,
            transport,
            int(self.config["connect_timeout_ms"]),
        )
        self._transport = self._cluster.transport
        self._accumulator = RecordAccumulator(
            int(self.config["batch_size"]),
            int(self.config["linger_ms"]),
            int(self.config["buffer_memory"]),
            Compression.from_name(self.config["compression_type"]),
        )
        self._partitions: dict[str, TopicPartitions] = {}
        self._stale: set[TopicPartition] = set()
        self._wakeup = threading.Event()
        self._io_lock = threading.Lock()
        # The one request in flight per partition, by partition (a response for any other attempt
        # of a batch is stale: the sender gave up waiting for it).
        self._in_flight: dict[TopicPartition, InFlight] = {}
        self._next_in_flight_check = 0.0
        # Completed requests, appended by the transport's callback thread and drained under
        # _io_lock.
        self._responses: deque[tuple[InFlight, Future[Any]]] = deque()
        self._busy: set[TopicPartition] = set()
        self._next_check = 0.0
        self._linger_zero = int(self.config["linger_ms"]) == 0
        self._closed = False
        # Whether send() must look before appending: the producer is closed, transactional (sends
        # only inside a transaction) or failed fatally. One flag keeps the plain path's one test.
        self._guarded = self._txn is not None and self._txn.is_transactional
        self._transactions = (
            ProducerTransactions(
                self._txn,
                TransactionalRequests(self._cluster, transactional_id),
                self._accumulator,
                self.flush,
                self._fail_unsent,
                self._fatal,
                self._wakeup,
                self.max_block_s,
            )
            if self._txn is not None
            else None
        )
        self._sensors = producer_sensors(self.config["client_id"], MetricsConfig.of(self.config))
        self._sender = threading.Thread(
            target=self._run, name=f"{self.config['client_id']}-sender", daemon=True
        )
        self._sender.start()
        metrics_reporter.register(self._sensors.registry)

    # ------------------------------------------------------------------ public API

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: list[tuple[str, bytes | None]] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> FutureRecordMetadata:
        """Queue a record; the future's ``get()`` returns its RecordMetadata once acknowledged."""
        if self._guarded:
            self._check_send()
        if self._key_serializer is not None and key is not None:
            key = self._key_serializer(key)
        if self._value_serializer is not None and value is not None:
            value = self._value_serializer(value)
        count, available, tps, expires_at = self._partitions.get(topic) or self._load_partitions(
            topic
        )
        if partition is None:
            partition = self._partitioner(topic, key, count, available)
        elif not 0 <= partition < count:
            raise UnknownTopicOrPartitionError(
                f"topic {topic!r} has partitions 0..{count - 1}, not {partition}"
            )
        size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
        if size > self.max_request_size:
            raise MessageTooLargeError(
                f"record of about {size} bytes exceeds max_request_size={self.max_request_size}"
            )
        timestamp = timestamp_ms if timestamp_ms is not None else now_ms()
        future, closed, opened = self._accumulator.append(
            tps[partition], timestamp, key, value, headers or [], self.max_block_s
        )
        if closed and key is None and hasattr(self._partitioner, "on_new_batch"):
            self._partitioner.on_new_batch(topic, count, partition, available)
        if closed or opened:
            # Checked once per batch, not per record.
            if time.monotonic() >= expires_at:
                self._partitions.pop(topic, None)  # the next send asks the cluster again
            if closed or self._linger_zero:
                self._ship_now()
            if self._txn is not None and self._txn.blocks(tps[partition]):
                self._wakeup.set()  # the sender thread gets the producer id or adds the partition
        return future

    def send_arrow(
        self, topic: str, data: pa.Table | pa.RecordBatch, partition: int | None = None
    ) -> FutureArrowSend:
        """Queue a whole Arrow table (or record batch) of records; ``get()`` on the result waits
        for every row and returns the row count.

        Columns: ``value`` (binary or string, required), ``key``, ``partition``, ``timestamp``
        (timestamp or int64 milliseconds; now when absent or null) and ``headers``
        (``list<struct<key: string, value: binary>>``), the columns ``poll_arrow`` returns; others
        are ignored. Serializers are not applied. Rows are cut into batches of ``batch_size`` per
        partition: ``partition`` sends every row there; otherwise a row's ``partition`` column, else
        its key, decides, and rows with neither go a batch at a time to the partitioner's choice
        for a record without a key. A bad column or row raises before any row is queued."""
        if self._guarded:
            self._check_send()
        count, available, tps, expires_at = self._partitions.get(topic) or self._load_partitions(
            topic
        )
        columns = ProducerColumns.of(data, now_ms())
        budget = self._accumulator.batch_size - HEADER_SIZE
        results = []
        for chunk in plan_chunks(
            columns,
            topic,
            self._partitioner,
            count,
            available,
            partition,
            budget,
            self.max_request_size,
        ):
            tp = tps[chunk.partition]
            results.append(self._accumulator.append_chunk(tp, chunk, self.max_block_s))
            if self._txn is not None and self._txn.blocks(tp):
                self._wakeup.set()
            self._ship_now()
        if time.monotonic() >= expires_at:
            self._partitions.pop(topic, None)
        return FutureArrowSend(results, len(columns))

    def _ship_now(self) -> None:
        """Ship ready batches from this thread when the sender is not mid-turn: waiting for the
        sender thread to win the GIL back from a busy send() loop would cost a switch interval per
        batch."""
        if self._io_lock.acquire(blocking=False):
            try:
                self._turn()
            finally:
                self._io_lock.release()
        else:
            self._wakeup.set()

    def _check_send(self) -> None:
        """Refuse a send after close, after a fatal error, or (transactional) outside a
        transaction."""
        if self._closed:
            raise KafkaTimeoutError("send() after close(): the producer is closed")
        if self._txn is not None:
            self._txn.check_can_send()

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued and wait for every outstanding record to complete."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self._accumulator.flushing += 1
        self._wakeup.set()
        try:
            for result in self._accumulator.pending_results():
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not result.wait(remaining):
                    raise KafkaTimeoutError(f"flush() did not complete within {timeout}s")
        finally:
            self._accumulator.flushing -= 1

    def close(self, timeout: float | None = None) -> None:
        """Flush, then stop the sender thread, all within ``timeout`` seconds. Idempotent."""
        if self._closed:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self.flush(timeout)
        finally:
            self._closed = self._guarded = True
            self._wakeup.set()
            self._sender.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            metrics_reporter.unregister(self._sensors.registry)

    def partitions_for(self, topic: str) -> set[int]:
        """Partition ids of a topic."""
        return set(range(self._load_partitions(topic).partition_count))

    def metrics(self) -> MetricsView:
        """kafka-python's metrics: ``{"producer-metrics": {"record-send-total": ..., ...}}``
        (``{}`` with ``metrics_enabled=False``)."""
        return self._sensors.view(len(self._in_flight))

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _load_partitions(self, topic: str) -> TopicPartitions:
        """Ask the cluster for ``topic``'s partitions and cache the answer.

        The answer is kept for ``metadata_max_age_ms``, or for ``retry_backoff_ms`` while a
        partition has no leader: records without a key go only to partitions with a leader, and a
        partition leaderless at one look must not stay without records once it has one again.
        """
        metadata = self._cluster.topic_once_created(topic, self.max_block_s)
        count = len(metadata.partitions)
        available = [p.partition for p in metadata.partitions if p.leader >= 0]
        max_age_s = self.metadata_max_age_s if len(available) == count else self.retry_backoff_s
        # TopicPartition objects are built once per topic: building one per send is a measurable
        # cost.
        entry = TopicPartitions(
            count,
            available,
            [TopicPartition(topic, p) for p in range(count)],
            time.monotonic() + max_age_s,
        )
        self._partitions[topic] = entry
        return entry

    # ------------------------------------------------------------------ sender thread

    def _turn(self) -> None:
        """Complete answered requests, then ship every sendable batch (the caller holds
        ``_io_lock``)."""
        self._drain_responses()
        txn = self._txn
        if txn is None:
            batches, self._next_check = self._accumulator.ready(time.monotonic(), self._busy)
        elif txn.needs_producer_id:
            return  # nothing is stamped before the sender thread has a producer id
        else:
            batches, self._next_check = self._accumulator.ready(
                time.monotonic(), self._busy, txn.partitions if txn.is_transactional else None
            )
        for batch in batches:
            self._send_batch(batch)

    def _drain_responses(self) -> None:
        """Complete every answered request (the caller holds ``_io_lock``)."""
        responses = self._responses
        while responses:
            request, answer = responses.popleft()
            tp = request.batch.topic_partition
            if self._in_flight.get(tp) is not request:
                continue  # abandoned: the batch was sent again (or given up) meanwhile
            del self._in_flight[tp]
            self._complete(request, answer)

    def _run(self) -> None:
        """The sender thread: turns whenever a request completes, a batch lingers long enough, or on
        wake-up."""
        while True:
            self._wakeup.clear()
            self._check_in_flight()
            if self._transactions is not None:
                self._transactions.prepare()
            with self._io_lock:
                self._turn()
                sleep_s = self._next_check
                idle = not self._in_flight and not self._responses
            if idle and self._closed and not self._accumulator.has_unsent():
                return
            self._wakeup.wait(sleep_s)

    def _fail_unsent(self, error: RafkaError) -> None:
        """Fail every batch not sent yet with ``error``."""
        with self._io_lock:
            for batch in self._accumulator.take_unsent():
                self._finish(batch, -1, error)

    def _fatal(self, error: RafkaError) -> None:
        """The producer cannot go on: every later send raises ``error``."""
        assert self._txn is not None
        self._txn.fail(error)
        self._guarded = True

    def _answered(self, request: InFlight, answer: Future[Any]) -> None:
        """The transport's callback for a finished produce request: hand it to the sender thread."""
        self._responses.append((request, answer))
        self._wakeup.set()

    def _check_in_flight(self) -> None:
        """Give up waiting on requests the leader will not answer: past ``request_timeout_ms``
        (Kafka's client-side request timeout), or sent to a leader the metadata no longer names.

        Runs on the sender thread without ``_io_lock`` while it asks for metadata, which may wait
        for a frozen broker's grace period; sends go on meanwhile. A batch given up on is sent
        again; should the old leader still append it, it never reaches that leader's HW (the new
        leader's followers do not fetch from it), and at worst the batch is written twice, as
        with any retry.
        """
        now = time.monotonic()
        if now < self._next_in_flight_check:
            return
        self._next_in_flight_check = now + IN_FLIGHT_CHECK_S
        with self._io_lock:
            waiting = [r for r in self._in_flight.values() if now - r.sent_at >= IN_FLIGHT_CHECK_S]
        if not waiting:
            return
        try:
            self._cluster.refresh_metadata(sorted({r.batch.topic_partition.topic for r in waiting}))
        except RafkaError as exc:
            logger.debug("metadata refresh for requests in flight failed: %s", exc)
        with self._io_lock:
            self._drain_responses()  # an answer that came meanwhile is taken, not abandoned
            for request in waiting:
                tp = request.batch.topic_partition
                if self._in_flight.get(tp) is not request:
                    continue
                if self._leader_moved(request):
                    # The new leader is known: no reason to back off before sending to it.
                    self._abandon(
                        request,
                        NotLeaderOrFollowerError(
                            f"leadership of {tp.topic}-{tp.partition} moved off broker "
                            f"{request.leader} while a request waited for it"
                        ),
                        0.0,
                    )
                elif now - request.sent_at >= self.request_timeout_ms / 1000:
                    self._abandon(
                        request,
                        Errors.REQUEST_TIMED_OUT.exception(
                            f"no answer from the leader of {tp.topic}-{tp.partition} within "
                            f"request_timeout_ms={self.request_timeout_ms}"
                        ),
                        self.retry_backoff_s,
                    )

    def _leader_moved(self, request: InFlight) -> bool:
        tp = request.batch.topic_partition
        try:
            current = self._cluster.partition(tp.topic, tp.partition)
        except RafkaError:
            return False
        # Only a new leader counts: an ISR change also bumps the epoch, and the leader then still
        # answers.
        return current.leader >= 0 and current.leader != request.leader

    def _abandon(self, request: InFlight, error: RafkaError, backoff_s: float) -> None:
        """Stop waiting for a request (the caller holds ``_io_lock``): retry its batch after
        ``backoff_s``."""
        tp = request.batch.topic_partition
        del self._in_flight[tp]
        self._busy.discard(tp)
        request.batch.maybe_written = True
        logger.info("%s; sending the batch again", error)
        if self.acks != ACKS_NONE:  # acks=0: the batch completed when sent
            self._retry_or_fail(request.batch, error, backoff_s)
        # The metadata was just refreshed: the retry needs no second refresh, which could wait out
        # a frozen broker's grace period again.
        self._stale.discard(tp)

    def _send_batch(self, batch: ProducerBatch) -> None:
        tp = batch.topic_partition
        try:
            refresh = tp in self._stale
            self._stale.discard(tp)
            leader, metadata = self._cluster.leader_replica(tp.topic, tp.partition, refresh=refresh)
            if self._transactions is not None and not batch.is_stamped:
                self._transactions.stamp(batch)
            encoded = batch.encoded()
            request = ProduceRequest(encoded, self.acks, self.request_timeout_ms)
            call = self._transport.send(leader, "produce", request)
        except (RafkaError, UnreachableError) as exc:
            error = (
                exc
                if isinstance(exc, RafkaError)
                else NotLeaderOrFollowerError(
                    f"leader of {tp.topic}-{tp.partition} not found: {exc}"
                )
            )
            if refresh and isinstance(error, UnknownTopicOrPartitionError):
                # Fresh metadata no longer knows the topic (it was deleted): no retry can help.
                self._finish(batch, -1, error)
                return
            self._retry_or_fail(batch, error)
            return
        batch.attempts += 1
        self._sensors.sent(batch.builder.record_count, len(encoded))
        in_flight = self._in_flight[tp] = InFlight(batch, time.monotonic(), metadata.leader)
        self._busy.add(tp)
        self._transport.on_done(call, lambda answer: self._answered(in_flight, answer))
        if self.acks == ACKS_NONE:
            # Nothing to wait for, yet the partition's next batch goes only once this request has
            # run: a replica actor runs concurrent requests, and only one at a time per partition
            # keeps order.
            self._finish(batch, -1, None)

    def _complete(self, request: InFlight, answer: Future[Any]) -> None:
        batch = request.batch
        tp = batch.topic_partition
        self._busy.discard(tp)
        if self.acks == ACKS_NONE:
            self._sent_unacknowledged(request, answer)
            return
        try:
            response: ProduceResponse = self._transport.answer(answer)
        except UnreachableError as exc:
            self._forget_leader(request)
            batch.maybe_written = True
            self._retry_or_fail(
                batch,
                NotLeaderOrFollowerError(
                    f"leader replica of {tp.topic}-{tp.partition} is gone: {type(exc).__name__}"
                ),
            )
            return
        except RemoteError as exc:
            # The leader raised: a bug, not a state a retry can fix; fail the batch rather than the
            # sender.
            self._finish(
                batch,
                -1,
                Errors.UNKNOWN_SERVER_ERROR.exception(
                    f"produce to {tp.topic}-{tp.partition} failed: {exc}"
                ),
            )
            return
        self._sensors.answered(time.monotonic() - request.sent_at)
        error = response.error
        if error is Errors.NONE:
            self._finish(batch, response.base_offset, None)
        elif self._txn is not None and error in SEQUENCE_ANSWERS:
            self._sequence_answer(batch, response)
        else:
            if error in UNKNOWN_OUTCOME:
                batch.maybe_written = True
            self._retry_or_fail(batch, error.exception(response.error_message))

    def _sequence_answer(self, batch: ProducerBatch, response: ProduceResponse) -> None:
        """An idempotent producer's batch answered with a sequence or epoch error."""
        assert self._txn is not None
        reaction = sequence_reaction(
            response.error, self._txn.is_transactional, batch.maybe_written
        )
        if reaction is SequenceReaction.SUCCEED:
            self._finish(batch, response.base_offset, None)
            return
        error = response.error.exception(response.error_message)
        if reaction is SequenceReaction.RESEND_UNDER_NEW_ID:
            logger.info("%s; taking a new producer id to send the batch again", error)
            self._txn.request_new_producer_id()
            batch.unstamp()
            self._sensors.retried(batch.builder.record_count)
            self._accumulator.reenqueue(batch, time.monotonic())
            return
        if reaction is SequenceReaction.FAIL_PRODUCER:
            self._fatal(error)
        self._finish(batch, -1, error)

    def _sent_unacknowledged(self, request: InFlight, answer: Future[Any]) -> None:
        """acks=0: the batch completed when sent and errors go unreported (as in Kafka); a dead
        leader is forgotten and a refused batch makes the partition's next one look its leader up
        afresh."""
        try:
            response: ProduceResponse = self._transport.answer(answer)
        except UnreachableError:
            self._forget_leader(request)
            return
        except RemoteError:
            return  # acks=0 reports no errors
        if response.error is not Errors.NONE:
            self._stale.add(request.batch.topic_partition)

    def _forget_leader(self, request: InFlight) -> None:
        """Drop the cached handle of the replica the request went to: it died (the metadata may
        name another leader by now, whose handle is fine)."""
        tp = request.batch.topic_partition
        self._cluster.forget(names.replica_actor_name(tp.topic, tp.partition, request.leader))

    def _retry_or_fail(
        self, batch: ProducerBatch, error: RafkaError, backoff_s: float | None = None
    ) -> None:
        """Queue the batch again after ``backoff_s`` (default ``retry_backoff_ms``) if the error is
        retriable and the batch has retries and time left; otherwise fail it."""
        tp = batch.topic_partition
        age = time.monotonic() - batch.created
        if error.retriable and batch.attempts <= self.retries and age < self.delivery_timeout_s:
            self._sensors.retried(batch.builder.record_count)
            self._stale.add(tp)
            self._partitions.pop(tp.topic, None)
            logger.debug("retrying batch for %s-%d after %s", tp.topic, tp.partition, error)
            wait_s = self.retry_backoff_s if backoff_s is None else backoff_s
            self._accumulator.reenqueue(batch, time.monotonic() + wait_s)
            return
        self._finish(batch, -1, error)

    def _finish(self, batch: ProducerBatch, base_offset: int, error: RafkaError | None) -> None:
        if error is not None:
            self._sensors.failed(batch.builder.record_count)
            if self._txn is not None and batch.is_stamped:
                # The batch took a sequence number the leader may never see: the next batch would
                # leave a gap, so the producer takes a new id first (a transaction must abort).
                self._txn.request_new_producer_id()
                assert self._transactions is not None
                self._transactions.error(error)
        self._accumulator.release(batch)
        batch.result.complete(base_offset, error)


KafkaProducer = Producer
"""kafka-python's name for the producer."""
