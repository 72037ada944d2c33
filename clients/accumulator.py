"""The producer's record accumulator: per-partition batches waiting to be sent.

``send`` appends to the last open batch of the record's partition (Kafka's RecordAccumulator); the
sender thread drains a partition's oldest batch when it is full, when ``linger_ms`` has passed, or
when the producer flushes. ``buffer_memory`` caps the bytes held in unsent and unacknowledged
batches: ``append`` blocks up to ``max_block_ms`` for room, then raises KafkaTimeoutError.
"""

from __future__ import annotations

import threading
import time
from collections import deque

from rafka.clients.column_chunk import ColumnChunk
from rafka.clients.records import FutureRecordMetadata, ProduceRequestResult
from rafka.protocol.errors import KafkaTimeoutError
from rafka.protocol.records.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE
from rafka.protocol.records.builder import RecordBatchBuilder
from rafka.protocol.records.compression import Compression
from rafka.protocol.types import TopicPartition


class ProducerBatch:
    """Records for one partition that travel together in one produce request."""

    __slots__ = (
        "_bytes",
        "attempts",
        "builder",
        "closed",
        "created",
        "maybe_written",
        "reserved",
        "result",
        "retry_at",
        "topic_partition",
    )

    def __init__(
        self, topic_partition: TopicPartition, batch_size: int, compression: Compression
    ) -> None:
        self.topic_partition = topic_partition
        self.builder = RecordBatchBuilder(compression=compression, batch_size=batch_size)
        self.result = ProduceRequestResult(topic_partition)
        self.created = time.monotonic()
        self.attempts = 0
        self.retry_at = 0.0
        self.closed = False
        self._bytes: bytes | None = None
        self.reserved = batch_size
        # Whether an attempt may have been appended though no answer said so (it timed out, or its
        # leader died): resending it under a new producer id could write it twice.
        self.maybe_written = False

    def encoded(self) -> bytes:
        """The batch's bytes, built once so a retry resends exactly the same batch."""
        if self._bytes is None:
            self.closed = True
            self._bytes = self.builder.build()
        return self._bytes

    @property
    def is_stamped(self) -> bool:
        """Whether the batch took a sequence number (an idempotent producer's batch once sent)."""
        return self.builder.base_sequence != NO_SEQUENCE

    def stamp(
        self, producer_id: int, producer_epoch: int, base_sequence: int, transactional: bool
    ) -> None:
        """Give the batch its producer id, epoch and base sequence (before it is first encoded)."""
        builder = self.builder
        builder.producer_id = producer_id
        builder.producer_epoch = producer_epoch
        builder.base_sequence = base_sequence
        builder.is_transactional = transactional
        self._bytes = None

    def unstamp(self) -> None:
        """Forget the sequence taken: the batch is stamped afresh under a new producer id."""
        self.stamp(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, False)


class RecordAccumulator:
    """Thread-safe per-partition queues of batches, shared by ``send`` and the sender thread."""

    def __init__(
        self, batch_size: int, linger_ms: int, buffer_memory: int, compression: Compression
    ) -> None:
        self.batch_size = batch_size
        self.linger_s = linger_ms / 1000
        self.buffer_memory = buffer_memory
        self.compression = compression
        self._batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._open: dict[TopicPartition, ProducerBatch] = {}
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._used = 0
        self.flushing = 0
        self.incomplete: set[ProducerBatch] = set()

    def append(
        self,
        tp: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]],
        max_block_s: float,
    ) -> tuple[FutureRecordMetadata, bool, bool]:
        """Add a record to the partition's open batch; return (future, whether a batch closed,
        whether a batch was opened).

        A batch closes when it is full or the next record does not fit (the record then opens a new
        batch): the sender may ship it and a sticky partitioner moves on. With ``linger_ms=0`` an
        opened batch is sendable at once, so the producer wakes its sender.
        """
        with self._lock:
            batch = self._open.get(tp)
            closed = False
            if batch is not None:
                relative = batch.builder.try_append(timestamp, key, value, headers)
                if relative >= 0:
                    if batch.builder.is_full():
                        # Full: ship now rather than after linger_ms or the next record.
                        batch.closed = True
                        del self._open[tp]
                        return FutureRecordMetadata(batch.result, relative, timestamp), True, False
                    return FutureRecordMetadata(batch.result, relative, timestamp), False, False
                batch.closed = closed = True
                del self._open[tp]
            self._wait_for_room(max_block_s, tp)
            batch = ProducerBatch(tp, self.batch_size, self.compression)
            relative = batch.builder.append(timestamp, key, value, headers)
            # Reserve a whole batch_size chunk (or the oversized record's size) as Kafka's
            # BufferPool does.
            batch.reserved = max(self.batch_size, batch.builder.estimated_size)
            self._used += batch.reserved
            self._batches.setdefault(tp, deque()).append(batch)
            self.incomplete.add(batch)
            if batch.builder.is_full():
                batch.closed = closed = True
            else:
                self._open[tp] = batch
        return FutureRecordMetadata(batch.result, relative, timestamp), closed, True

    def append_chunk(
        self, tp: TopicPartition, chunk: ColumnChunk, max_block_s: float
    ) -> ProduceRequestResult:
        """Queue ``chunk`` as a batch of its own, closed and sendable at once; return its result.

        The partition's open batch is closed first, so the chunk's records follow those already
        sent to the partition."""
        with self._lock:
            opened = self._open.pop(tp, None)
            if opened is not None:
                opened.closed = True
            self._wait_for_room(max_block_s, tp)
            batch = ProducerBatch(tp, self.batch_size, self.compression)
            batch.builder.extend(chunk.values, chunk.keys, chunk.timestamps, chunk.headers)
            batch.closed = True
            batch.reserved = max(self.batch_size, batch.builder.estimated_size)
            self._used += batch.reserved
            self._batches.setdefault(tp, deque()).append(batch)
            self.incomplete.add(batch)
        return batch.result

    def _wait_for_room(self, max_block_s: float, tp: TopicPartition) -> None:
        # A new batch reserves batch_size: wait until that chunk fits (a lone batch always may).
        def fits() -> bool:
            return self._used == 0 or self._used + self.batch_size <= self.buffer_memory

        if fits():
            return
        if not self._room.wait_for(fits, max_block_s):
            raise KafkaTimeoutError(
                f"buffer_memory={self.buffer_memory} bytes stayed full for "
                f"max_block_ms={int(max_block_s * 1000)} "
                f"while sending to {tp.topic}-{tp.partition}"
            )

    def ready(
        self,
        now: float,
        busy: set[TopicPartition],
        allowed: set[TopicPartition] | None = None,
    ) -> tuple[list[ProducerBatch], float]:
        """Drain the oldest sendable batch of every partition not in ``busy`` (and in ``allowed``,
        when given: a transaction's partitions); also return how long the sender may sleep before
        the next batch becomes sendable by ``linger_ms``."""
        drained: list[ProducerBatch] = []
        next_check = self.linger_s if self.linger_s > 0 else 0.05
        with self._lock:
            for tp, queue in self._batches.items():
                if not queue or tp in busy or (allowed is not None and tp not in allowed):
                    continue
                batch = queue[0]
                if batch.retry_at > now:
                    next_check = min(next_check, batch.retry_at - now)
                    continue
                waited = now - batch.created
                if batch.closed or len(queue) > 1 or self.flushing or waited >= self.linger_s:
                    queue.popleft()
                    if self._open.get(tp) is batch:
                        del self._open[tp]
                    batch.closed = True
                    drained.append(batch)
                else:
                    next_check = min(next_check, self.linger_s - waited)
        return drained, max(next_check, 0.0)

    def reenqueue(self, batch: ProducerBatch, retry_at: float) -> None:
        """Put a batch back at the front of its partition for a retry, keeping the partition's
        order."""
        batch.retry_at = retry_at
        with self._lock:
            self._batches.setdefault(batch.topic_partition, deque()).appendleft(batch)

    def release(self, batch: ProducerBatch) -> None:
        """A batch completed: free its memory and wake blocked appends."""
        with self._lock:
            self.incomplete.discard(batch)
            self._used -= batch.reserved
            self._room.notify_all()

    def queued_partitions(self) -> list[TopicPartition]:
        """Partitions with a batch waiting to be sent."""
        with self._lock:
            return [tp for tp, queue in self._batches.items() if queue]

    def take_unsent(self) -> list[ProducerBatch]:
        """Remove and return every batch waiting to be sent (to fail them: the transaction is
        aborting, or no producer id could be had)."""
        with self._lock:
            taken = [batch for queue in self._batches.values() for batch in queue]
            for queue in self._batches.values():
                queue.clear()
            self._open.clear()
            for batch in taken:
                batch.closed = True
            return taken

    def has_unsent(self) -> bool:
        """Whether any batch waits to be sent."""
        with self._lock:
            return any(self._batches.values())

    def pending_results(self) -> list[ProduceRequestResult]:
        """Results of every batch not yet completed (what ``flush`` waits for)."""
        with self._lock:
            return [batch.result for batch in self.incomplete]
