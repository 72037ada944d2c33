"""Reading one offset range of one partition, straight from its leader replica, as Arrow record
batches.

This is what a Spark task runs. It fetches committed records (the leader answers consumers only
below the high watermark, or below the last stable offset for ``read_committed``) from ``start``
until ``end`` and keeps exactly the offsets in [start, end), so a replayed micro-batch reads the
same rows. Transaction markers are never rows, and with ``read_committed`` neither are the records
of aborted transactions (``transaction_filter``); the position moves past both. The next fetch is
sent as soon as the current response's batch headers say where it ends, so the leader reads while
this process decodes. Each response becomes one Arrow record batch
(``rafka.protocol.records.arrow_batches``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from rafka.actors import names
from rafka.clients.cluster import ClusterConnection
from rafka.clients.transaction_filter import visible_batches
from rafka.clients.transport import TransportError
from rafka.protocol.errors import (
    Errors,
    KafkaTimeoutError,
    RafkaError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.fetch import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchRequest,
    FetchResponse,
)
from rafka.protocol.records.arrow_batches import arrow_schema, to_arrow
from rafka.protocol.records.batch import BatchHeader, iter_batches
from rafka.spark_bridge.offset_ranges import OffsetRange, report_data_loss

logger = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1


class LeaderFetcher:
    """Sends fetches for one partition to its current leader replica, finding a new one when it
    moves."""

    def __init__(
        self,
        cluster: ClusterConnection,
        topic: str,
        partition: int,
        max_bytes: int,
        max_wait_ms: int,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> None:
        self.cluster = cluster
        self.topic = topic
        self.partition = partition
        self.max_bytes = max_bytes
        self.max_wait_ms = max_wait_ms
        self.isolation_level = isolation_level
        self._leader: Any = None
        self._leader_id = -1
        self._epoch = -1
        self._stale = False

    def send(self, offset: int) -> Any:
        """Start a fetch at ``offset``; returns the transport's call. Looks the leader up if none is
        known."""
        if self._leader is None:
            self._leader, metadata = self.cluster.leader_replica(
                self.topic, self.partition, refresh=self._stale
            )
            self._leader_id, self._epoch, self._stale = (
                metadata.leader,
                metadata.leader_epoch,
                False,
            )
        request = FetchRequest(
            offset,
            self.max_bytes,
            self.max_wait_ms,
            1,
            current_leader_epoch=self._epoch,
            isolation_level=self.isolation_level,
        )
        return self.cluster.transport.send(self._leader, "fetch", request)

    def forget_leader(self) -> None:
        """The leader moved or died: the next send refreshes metadata first."""
        if self._leader_id >= 0:
            self.cluster.forget(
                names.replica_actor_name(self.topic, self.partition, self._leader_id)
            )
        self._leader = None
        self._stale = True


def read_range(
    cluster: ClusterConnection,
    offsets: OffsetRange,
    include_headers: bool,
    fail_on_data_loss: bool,
    max_bytes: int,
    max_wait_ms: int,
    poll_timeout_ms: int,
    isolation_level: int = READ_UNCOMMITTED,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``offsets`` as Arrow batches of Spark's Kafka schema.

    Offsets retention already deleted are data loss (``failOnDataLoss``); a compacted-away offset is
    simply absent. Leader changes are retried; no progress for ``poll_timeout_ms`` fails the task.
    """
    topic, partition, end = offsets.topic, offsets.partition, offsets.end
    schema = arrow_schema(include_headers)
    fetcher = LeaderFetcher(cluster, topic, partition, max_bytes, max_wait_ms, isolation_level)
    position = offsets.start
    ref: Any = None
    progress_deadline = time.monotonic() + poll_timeout_ms / 1000
    while position < end:
        if time.monotonic() > progress_deadline:
            raise KafkaTimeoutError(
                f"option 'kafkaConsumer.pollTimeoutMs': no records of {topic}-{partition} "
                f"at offset {position} within {poll_timeout_ms} ms "
                f"(reading [{offsets.start}, {end}))"
            )
        try:
            if ref is None:
                ref = fetcher.send(position)
            response: FetchResponse = cluster.transport.result(
                ref, max_wait_ms / 1000 + cluster.request_timeout_s
            )
        except UnknownTopicOrPartitionError as exc:
            report_data_loss(
                f"Cannot fetch offsets [{position}, {end}) of {topic}-{partition}: {exc}",
                fail_on_data_loss,
            )
            return
        except (RafkaError, TransportError) as exc:
            logger.info(
                "fetch of %s-%d at %d failed (%s); looking up the leader again",
                topic,
                partition,
                position,
                exc,
            )
            fetcher.forget_leader()
            ref = None
            time.sleep(RETRY_BACKOFF_S)
            continue
        ref = None
        if response.error is Errors.OFFSET_OUT_OF_RANGE:
            if position < response.log_start_offset:
                resume = min(response.log_start_offset, end)
                report_data_loss(
                    f"Cannot fetch offsets [{position}, {resume}) of {topic}-{partition}: "
                    f"the log now starts at {response.log_start_offset}",
                    fail_on_data_loss,
                )
                position = resume
            else:
                report_data_loss(
                    f"Cannot fetch offsets [{position}, {end}) of {topic}-{partition}: "
                    f"the log now ends at {response.log_end_offset}",
                    fail_on_data_loss,
                )
                return
            continue
        if response.error is not Errors.NONE:
            if not response.error.retriable:
                raise response.error.exception(
                    f"{topic}-{partition} at offset {position}: {response.error_message}"
                )
            fetcher.forget_leader()
            time.sleep(RETRY_BACKOFF_S)
            continue
        data = response.records
        batches: list[tuple[int, BatchHeader]] = []
        following = position
        for start, header in iter_batches(data):
            if header.next_offset <= position:
                continue
            batches.append((start, header))
            following = header.next_offset
            if following >= end:
                break
        if not batches:
            continue  # nothing new below the high watermark yet: the next fetch long-polls
        if following < end:
            ref = fetcher.send(following)  # in flight while this response is decoded
        aborted = response.aborted_transactions if isolation_level == READ_COMMITTED else None
        visible = list(visible_batches(data, batches, aborted))
        batch = to_arrow(data, visible, position, end, topic, partition, schema, include_headers)
        position = following
        progress_deadline = time.monotonic() + poll_timeout_ms / 1000
        if batch.num_rows:
            yield batch
