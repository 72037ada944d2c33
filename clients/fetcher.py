"""The consumer's fetch pipeline: one fetch in flight per partition, records buffered for ``poll``.

Fetches go straight to each partition's leader replica and long-poll there (``fetch_min_bytes``,
``fetch_max_wait_ms``). A response is buffered as its bytes and visible batches, and decoded only
when handed out: to ConsumerRecords for ``poll``, or to one Arrow record batch for ``poll_arrow``
(``rafka.protocol.records.arrow_batches``). Records below the position are dropped (a fetch returns
whole batches), as are transaction markers and, with ``read_committed``, aborted transactions
(``transaction_filter``). The position moves as records are handed out, past the response's last
batch once all its records are out, and a partition's next fetch is sent as soon as its buffer is
empty, so it is in flight while the application works on the records it just got. Each answer
and each hand-out reports to the consumer's sensors (fetch latency and bytes, records consumed, a
partition's lag: its end minus its position).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any

import pyarrow as pa

from rafka.actors import names
from rafka.clients.client_metrics import ConsumerSensors
from rafka.clients.cluster import ClusterConnection
from rafka.clients.records import ConsumerRecord
from rafka.clients.transaction_filter import visible_batches
from rafka.clients.transport import UnreachableError
from rafka.protocol.errors import Errors, OffsetOutOfRangeError, RafkaError
from rafka.protocol.messages.fetch import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchRequest,
    FetchResponse,
)
from rafka.protocol.messages.offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from rafka.protocol.records.arrow_batches import arrow_schema, to_arrow
from rafka.protocol.records.batch import (
    BatchHeader,
    decode_columns,
    gc_paused,
    iter_batches,
    verify_crc,
)
from rafka.protocol.types import TopicPartition

logger = logging.getLogger(__name__)

RESET_TIMESTAMPS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}
RETRY_BACKOFF_S = 0.1
ARROW_SCHEMA = arrow_schema(include_headers=True)
"""The columns of ``Consumer.poll_arrow``: Spark's Kafka schema, headers included."""


class NoOffsetForPartitionError(OffsetOutOfRangeError):
    """A partition has no position and ``auto_offset_reset`` is 'none'."""


class FetchedRecords:
    """One fetch response's records of a partition, kept as the response's bytes until handed out.

    ``poll`` and ``poll_arrow`` each decode the same rows (those at or after ``low``) into their own
    form once, and ``taken`` counts the rows handed out in either form, so mixing the two neither
    repeats nor skips a record.
    """

    __slots__ = ("arrow", "batches", "data", "following", "low", "records", "taken", "tp")

    def __init__(
        self,
        tp: TopicPartition,
        data: bytes,
        batches: list[tuple[int, BatchHeader]],
        low: int,
        following: int,
    ) -> None:
        self.tp = tp
        self.data = data
        self.batches = batches
        self.low = low
        # Where the position goes once every row is out: past the response's last batch.
        self.following = following
        self.taken = 0
        self.records: list[ConsumerRecord] | None = None
        self.arrow: pa.RecordBatch | None = None

    def position_after_taken(self) -> int:
        """The offset after the last row handed out (some were, not all)."""
        if self.records is not None:
            return int(self.records[self.taken - 1].offset) + 1
        assert self.arrow is not None
        return int(self.arrow.column("offset")[self.taken - 1].as_py()) + 1


class Fetcher:
    """Positions, in-flight fetches and the buffer of fetched records of one consumer."""

    def __init__(
        self,
        cluster: ClusterConnection,
        max_partition_fetch_bytes: int,
        fetch_min_bytes: int,
        fetch_max_wait_ms: int,
        auto_offset_reset: str,
        key_deserializer: Callable[[bytes], Any] | None,
        value_deserializer: Callable[[bytes], Any] | None,
        sensors: ConsumerSensors,
        check_crcs: bool = True,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> None:
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError(
                f"auto_offset_reset={auto_offset_reset!r} must be 'earliest', 'latest' or 'none'"
            )
        self.cluster = cluster
        self._transport = cluster.transport
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.auto_offset_reset = auto_offset_reset
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.check_crcs = check_crcs
        self.isolation_level = isolation_level
        self._sensors = sensors
        self.positions: dict[TopicPartition, int] = {}
        self.highwater: dict[TopicPartition, int] = {}
        # Each fetch in flight: its partition, the offset it asked for and when it was sent.
        self._inflight: dict[Any, tuple[TopicPartition, int, float]] = {}
        self._busy: set[TopicPartition] = set()
        self._retry_at: dict[TopicPartition, float] = {}
        self._buffer: deque[FetchedRecords] = deque()

    # ------------------------------------------------------------------ positions

    def forget(self, partitions: set[TopicPartition]) -> None:
        """Drop state of partitions no longer assigned (in-flight answers for them are ignored)."""
        for tp in partitions:
            self.positions.pop(tp, None)
            self.highwater.pop(tp, None)
        self._sensors.forget(partitions)
        self._buffer = deque(entry for entry in self._buffer if entry.tp not in partitions)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Set the next offset to fetch; buffered records of the partition are dropped."""
        self.positions[tp] = offset
        self._buffer = deque(entry for entry in self._buffer if entry.tp != tp)

    def reset_positions(
        self, partitions: list[TopicPartition], strategy: str | None = None
    ) -> None:
        """Set positions by ``auto_offset_reset`` (or the given 'earliest'/'latest')."""
        strategy = strategy or self.auto_offset_reset
        if strategy == "none":
            raise NoOffsetForPartitionError(
                f"no position for {sorted(partitions)} and auto_offset_reset is 'none'"
            )
        for tp, (offset, _) in self.list_offsets(partitions, RESET_TIMESTAMPS[strategy]).items():
            self.seek(tp, offset)

    def list_offsets(
        self, partitions: list[TopicPartition], timestamp: int, timeout_s: float = 30.0
    ) -> dict[TopicPartition, tuple[int, int]]:
        """ListOffsets at each partition's leader, retrying leader changes until ``timeout_s``;
        latest is the last stable offset for ``read_committed``."""
        return list_offsets(self.cluster, partitions, timestamp, timeout_s, self.isolation_level)

    # ------------------------------------------------------------------ fetching

    def send_fetches(self, partitions: list[TopicPartition]) -> None:
        """Start a fetch for every partition with a position and none in flight."""
        now = time.monotonic()
        missing = [tp for tp in partitions if tp not in self.positions]
        if missing:
            self.reset_positions(missing)
        buffered = {entry.tp for entry in self._buffer}
        for tp in partitions:
            if tp in self._busy or tp in buffered or self._retry_at.get(tp, 0.0) > now:
                continue
            try:
                leader, metadata = self.cluster.leader_replica(
                    tp.topic, tp.partition, refresh=tp in self._retry_at
                )
            except (RafkaError, UnreachableError) as exc:
                logger.debug("no leader for %s: %s", tp, exc)
                self._retry_at[tp] = now + RETRY_BACKOFF_S
                continue
            self._retry_at.pop(tp, None)
            offset = self.positions[tp]
            request = FetchRequest(
                offset,
                self.max_partition_fetch_bytes,
                self.fetch_max_wait_ms,
                self.fetch_min_bytes,
                current_leader_epoch=metadata.leader_epoch,
                isolation_level=self.isolation_level,
            )
            self._inflight[self._transport.send(leader, "fetch", request)] = (tp, offset, now)
            self._busy.add(tp)

    def collect(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for in-flight fetches; buffer what arrived. True if any
        completed."""
        if not self._inflight:
            return False
        inflight = list(self._inflight)
        done = self._transport.ready(inflight, len(inflight), 0)
        if not done and timeout_s > 0:
            done = self._transport.ready(inflight, 1, timeout_s)
        # Answers are taken here, not as they arrive, so a fetch's latency includes the time it
        # waited for this poll (as with Kafka's consumer, which reads responses only in poll).
        now = time.monotonic()
        for ref in done:
            tp, offset, sent_at = self._inflight.pop(ref)
            self._busy.discard(tp)
            self._handle(tp, offset, ref, now - sent_at)
        return bool(done)

    def _handle(self, tp: TopicPartition, offset: int, ref: Any, latency_s: float) -> None:
        if self.positions.get(tp) != offset:
            return  # reassigned or sought while the fetch was in flight
        try:
            response: FetchResponse = self._transport.result(ref, None)
        except UnreachableError:
            self.cluster.forget(
                names.replica_actor_name(
                    tp.topic, tp.partition, self.cluster.partition(tp.topic, tp.partition).leader
                )
            )
            self._retry_at[tp] = time.monotonic() + RETRY_BACKOFF_S
            return
        if response.error is Errors.OFFSET_OUT_OF_RANGE:
            logger.info(
                "fetch offset %d out of range for %s: %s", offset, tp, response.error_message
            )
            self.reset_positions([tp])
            return
        if response.error is not Errors.NONE:
            if not response.error.retriable:
                raise response.error.exception(response.error_message)
            self._retry_at[tp] = time.monotonic() + RETRY_BACKOFF_S
            return
        self.highwater[tp] = response.high_watermark
        data = response.records
        self._sensors.fetched(tp, self._lag_end(response), len(data), latency_s)
        batches = list(iter_batches(data))
        if not batches:
            self._sensors.position(tp, offset)
            return
        following = max(offset, batches[-1][1].next_offset)
        aborted = response.aborted_transactions if self.isolation_level == READ_COMMITTED else None
        visible = [
            (start, header)
            for start, header in visible_batches(data, batches, aborted)
            if header.next_offset > offset
        ]
        if any(header.record_count for _, header in visible):
            self._buffer.append(FetchedRecords(tp, data, visible, offset, following))
        else:
            # Nothing to hand out (records below the position, markers, aborted transactions): the
            # position moves past them now, so the next fetch asks for what follows.
            self.positions[tp] = following
            self._sensors.position(tp, following)

    def _lag_end(self, response: FetchResponse) -> int:
        """Where a partition's lag is counted to: the high watermark, or with read_committed the
        last stable offset (what the consumer may read)."""
        if self.isolation_level == READ_COMMITTED and response.last_stable_offset >= 0:
            return response.last_stable_offset
        return response.high_watermark

    def _decode(
        self,
        tp: TopicPartition,
        position: int,
        data: bytes,
        batches: Iterable[tuple[int, BatchHeader]],
    ) -> list[ConsumerRecord]:
        topic, partition = tp
        make = tuple.__new__
        records: list[ConsumerRecord] = []
        kd, vd = self.key_deserializer, self.value_deserializer
        with gc_paused():
            for start, header in batches:
                if header.next_offset <= position:
                    continue
                if self.check_crcs:
                    verify_crc(data, start, header)
                base, first_ts, ts_type = (
                    header.base_offset,
                    header.first_timestamp,
                    header.timestamp_type,
                )
                columns = decode_columns(data, start, header)
                if kd is None and vd is None and base >= position:
                    # The common case (no deserializers, whole batch wanted) runs without Python
                    # bytecode per record: map and zip feed tuple.__new__ straight from the columns.
                    ods = columns.offset_deltas
                    offsets = (
                        range(base, base + len(ods))
                        if isinstance(ods, range)
                        else map(base.__add__, ods)
                    )
                    records += map(
                        make,
                        repeat(ConsumerRecord),
                        zip(
                            repeat(topic),
                            repeat(partition),
                            offsets,
                            map(first_ts.__add__, columns.timestamp_deltas),
                            repeat(ts_type),
                            columns.keys,
                            columns.values,
                            map(list, columns.headers),
                        ),
                    )
                    continue
                rows = columns.rows()
                records += [
                    make(
                        ConsumerRecord,
                        (
                            topic,
                            partition,
                            base + od,
                            first_ts + td,
                            ts_type,
                            k if kd is None or k is None else kd(k),
                            v if vd is None or v is None else vd(v),
                            list(h) if h else [],
                        ),
                    )
                    for od, td, k, v, h in rows
                    if base + od >= position
                ]
        return records

    def _records_of(self, entry: FetchedRecords) -> list[ConsumerRecord]:
        if entry.records is None:
            entry.records = self._decode(entry.tp, entry.low, entry.data, entry.batches)
        return entry.records

    def _arrow_of(self, entry: FetchedRecords) -> pa.RecordBatch:
        if entry.arrow is None:
            topic, partition = entry.tp
            entry.arrow = to_arrow(
                entry.data,
                entry.batches,
                entry.low,
                entry.following,
                topic,
                partition,
                ARROW_SCHEMA,
                include_headers=True,
                check_crcs=self.check_crcs,
            )
        return entry.arrow

    def _take(
        self, max_records: int, rows_of: Callable[[FetchedRecords], Any]
    ) -> list[tuple[TopicPartition, Any]]:
        """Up to ``max_records`` buffered rows as (partition, slice of ``rows_of``'s form)."""
        taken: list[tuple[TopicPartition, Any]] = []
        count = 0
        while self._buffer and count < max_records:
            entry = self._buffer[0]
            rows = rows_of(entry)
            chunk = rows[entry.taken : entry.taken + max_records - count]
            entry.taken += len(chunk)
            if entry.taken >= len(rows):
                self._buffer.popleft()
                self.positions[entry.tp] = entry.following
            else:
                # The position is the next offset poll() returns, so it moves as records go out.
                self.positions[entry.tp] = entry.position_after_taken()
            self._sensors.position(entry.tp, self.positions[entry.tp])
            if len(chunk):
                taken.append((entry.tp, chunk))
            count += len(chunk)
        if count:
            self._sensors.consumed(count)
        return taken

    def drain(self, max_records: int) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Take up to ``max_records`` buffered records, grouped by partition."""
        taken: dict[TopicPartition, list[ConsumerRecord]] = {}
        for tp, records in self._take(max_records, self._records_of):
            taken.setdefault(tp, []).extend(records)
        return taken

    def drain_arrow(self, max_records: int) -> list[pa.RecordBatch]:
        """Take up to ``max_records`` buffered records as Arrow record batches of ``ARROW_SCHEMA``
        (deserializers are not applied), in the order ``drain`` would return them."""
        return [batch for _, batch in self._take(max_records, self._arrow_of)]

    def has_buffered(self) -> bool:
        """Whether fetched records wait to be returned."""
        return bool(self._buffer)


def list_offsets(
    cluster: ClusterConnection,
    partitions: list[TopicPartition],
    timestamp: int,
    timeout_s: float = 30.0,
    isolation_level: int = READ_UNCOMMITTED,
) -> dict[TopicPartition, tuple[int, int]]:
    """(offset, timestamp) of each partition from ListOffsets at its leader; the admin client shares
    it with the consumer. With ``isolation_level`` READ_COMMITTED, latest is the last stable offset.

    Each round refreshes metadata once and asks every leader still unanswered at once; partitions
    whose leader moved or could not be reached are asked again, after a fresh look-up, until
    ``timeout_s``.
    """
    answers: dict[TopicPartition, tuple[int, int]] = {}
    wanted = list(dict.fromkeys(partitions))

    def ask_remaining() -> bool:
        pending = [tp for tp in wanted if tp not in answers]
        cluster.refresh_metadata(sorted({tp.topic for tp in pending}))
        requests = {}
        for tp in pending:
            leader, metadata = cluster.leader_replica(tp.topic, tp.partition)
            requests[tp] = cluster.transport.send(
                leader,
                "list_offsets",
                ListOffsetsRequest(timestamp, metadata.leader_epoch, isolation_level),
            )
        for tp, call in requests.items():
            response: ListOffsetsResponse = cluster.transport.result(call, timeout_s)
            if response.error is Errors.NONE:
                answers[tp] = (response.offset, response.timestamp)
            elif not response.error.retriable:
                raise response.error.exception(response.error_message)
        return len(answers) == len(wanted)

    if wanted:
        cluster.wait_for(
            ask_remaining,
            timeout_s,
            "offsets of " + ", ".join(f"{tp.topic}-{tp.partition}" for tp in wanted),
        )
    return answers
