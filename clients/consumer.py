"""The consumer: kafka-python's ``KafkaConsumer`` API over the leader replica actors.

Standalone mode: the application chooses partitions with ``assign`` (or ``subscribe`` to whole
topics, which without a ``group_id`` assigns every partition of them) and positions with ``seek``;
``poll`` returns ``{TopicPartition: [ConsumerRecord]}`` and iteration yields records one by one;
``poll_arrow`` returns the same records as one ``pyarrow.Table``, built column by column from the
fetched batches. Both take from the same buffer and move the same positions, so they can be mixed.

Group mode (``group_id`` set, then ``subscribe``): the group's coordinator splits the subscribed
partitions among the members; ``poll`` joins, rebalances and (with ``enable_auto_commit``) commits,
never past its timeout (a join not finished goes on at the next poll), a background thread
heartbeats, and a member starts each partition at the group's committed offset
(``auto_offset_reset`` where there is none). ``assign`` with a ``group_id`` consumes chosen
partitions and may commit them while the group has no members, as Kafka allows.

``isolation_level="read_committed"`` reads only committed transactional records: fetches stop at
the last stable offset, aborted transactions are dropped, and ``end_offsets``/``seek_to_end`` and
``auto_offset_reset="latest"`` mean the last stable offset. Transaction markers are never returned,
in either isolation level.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

import pyarrow as pa

from rafka.actors import names
from rafka.clients import metrics_reporter
from rafka.clients.client_metrics import MetricsConfig, MetricsView, consumer_sensors
from rafka.clients.cluster import ClusterConnection
from rafka.clients.config import CONSUMER_CONFIG, merge_config
from rafka.clients.consumer_coordinator import (
    CommitFailedError,
    ConsumerCoordinator,
    RebalanceListener,
)
from rafka.clients.fetcher import ARROW_SCHEMA, Fetcher
from rafka.clients.records import ConsumerRecord, OffsetAndTimestamp
from rafka.clients.transaction_filter import isolation_level
from rafka.clients.transport import Transport
from rafka.groups.group_metadata import validate_group_id
from rafka.protocol.errors import (
    Errors,
    InvalidConfigError,
    InvalidGroupIdError,
    RafkaError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from rafka.protocol.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

logger = logging.getLogger(__name__)

Drained = TypeVar("Drained")


class Consumer:
    """Read records from rafka partitions (``assign``/``seek``/``poll``, or ``for record in
    consumer``)."""

    def __init__(
        self,
        *topics: str,
        namespace: str = names.DEFAULT_NAMESPACE,
        ray_address: str | None = None,
        transport: Transport | None = None,
        **configs: Any,
    ) -> None:
        self.config = merge_config("consumer", CONSUMER_CONFIG, configs)
        isolation = isolation_level(self.config["isolation_level"])
        if self.config["group_id"] is not None:
            validate_group_id(self.config["group_id"])
            if int(self.config["heartbeat_interval_ms"]) >= int(self.config["session_timeout_ms"]):
                raise InvalidConfigError(
                    f"heartbeat_interval_ms={self.config['heartbeat_interval_ms']} "
                    "must be lower than "
                    f"session_timeout_ms={self.config['session_timeout_ms']}"
                )
        self._cluster = ClusterConnection(
            namespace,
            ray_address,
            int(self.config["request_timeout_ms"]),
            transport,
            int(self.config["connect_timeout_ms"]),
        )
        self._group = (
            ConsumerCoordinator(self._cluster, self.config)
            if self.config["group_id"] is not None
            else None
        )
        self._subscribed = False
        self._next_auto_commit = (
            time.monotonic() + int(self.config["auto_commit_interval_ms"]) / 1000
        )
        self._sensors = consumer_sensors(self.config["client_id"], MetricsConfig.of(self.config))
        self._fetcher = Fetcher(
            self._cluster,
            int(self.config["max_partition_fetch_bytes"]),
            int(self.config["fetch_min_bytes"]),
            int(self.config["fetch_max_wait_ms"]),
            self.config["auto_offset_reset"],
            self.config["key_deserializer"],
            self.config["value_deserializer"],
            self._sensors,
            bool(self.config["check_crcs"]),
            isolation,
        )
        self._assignment: list[TopicPartition] = []
        self._paused: set[TopicPartition] = set()
        self._iterator: Iterator[ConsumerRecord] | None = None
        self._closed = False
        if topics:
            self.subscribe(topics)
        metrics_reporter.register(self._sensors.registry)  # last: a failed __init__ exports nothing

    # ------------------------------------------------------------------ assignment

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly these partitions (UNKNOWN_TOPIC_OR_PARTITION if one does not exist; a
        topic being auto-created is waited for up to ``request_timeout_ms``)."""
        wanted = [TopicPartition(*tp) for tp in partitions]
        if wanted:
            # One fresh look-up for all the topics, then each partition is checked against it.
            response = self._cluster.refresh_metadata(sorted({tp.topic for tp in wanted}))
            for topic in response.topics:
                if topic.error is not Errors.NONE:
                    self._cluster.topic_once_created(topic.name, self._cluster.request_timeout_s)
        for tp in wanted:
            self._cluster.partition(tp.topic, tp.partition)
        removed = set(self._assignment) - set(wanted)
        self._fetcher.forget(removed)
        self._paused -= removed
        self._assignment = wanted

    def subscribe(
        self,
        topics: Iterable[str] = (),
        pattern: str | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        """With a ``group_id``: join the group for these topics (or every topic matching
        ``pattern``), the coordinator deciding which partitions are this member's; ``listener``
        hears of each change. Without one: assign every partition of the topics."""
        if isinstance(topics, str):
            raise TypeError(f"subscribe() takes a list of topics, got the string {topics!r}")
        names_ = list(topics)
        if self._group is not None:
            if not names_ and pattern is None:
                raise ValueError("subscribe() needs topics or a pattern")
            self._group.subscribe(tuple(names_), pattern, listener)
            self._subscribed = True
            return
        if pattern is not None:
            regex = re.compile(pattern)
            names_ += [
                t.name
                for t in self._cluster.refresh_metadata(None).topics
                if regex.fullmatch(t.name) and not t.is_internal
            ]
        partitions = [
            TopicPartition(name, p.partition)
            for name in names_
            for p in self._cluster.topic(name, refresh=True).partitions
        ]
        self.assign(partitions)

    def unsubscribe(self) -> None:
        """Drop every partition (and leave the group)."""
        if self._group is not None and self._subscribed:
            if not self._group.partitions_lost:
                self._commit_on_revoke(set(self._assignment))
            self._group.unsubscribe()
            self._subscribed = False
        self.assign([])

    def assignment(self) -> set[TopicPartition]:
        """The partitions being consumed (none once the group removed this member)."""
        if self._group is not None and self._group.partitions_lost:
            return set()
        return set(self._assignment)

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching these partitions until resumed."""
        self._paused.update(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch these partitions again."""
        self._paused.difference_update(partitions)

    def paused(self) -> set[TopicPartition]:
        """The paused partitions."""
        return set(self._paused)

    # ------------------------------------------------------------------ positions

    def _check_assigned(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        result = [TopicPartition(*tp) for tp in partitions] or list(self._assignment)
        for tp in result:
            if tp not in self._assignment:
                raise UnknownTopicOrPartitionError(
                    f"{tp.topic}-{tp.partition} is not assigned to this consumer"
                )
        return result

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """The next poll returns records of ``partition`` from ``offset``."""
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        self._fetcher.seek(self._check_assigned([partition])[0], offset)

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Move to the log start offset (all assigned partitions if none given)."""
        self._fetcher.reset_positions(self._check_assigned(partitions), "earliest")

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Move to the high watermark, or the last stable offset with ``read_committed`` (all
        assigned partitions if none given)."""
        self._fetcher.reset_positions(self._check_assigned(partitions), "latest")

    def position(self, partition: TopicPartition) -> int:
        """The offset of the next record poll returns for ``partition``."""
        tp = self._check_assigned([partition])[0]
        if tp not in self._fetcher.positions:
            self._fetcher.reset_positions([tp])
        return self._fetcher.positions[tp]

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark as of the last fetch."""
        return self._fetcher.highwater.get(TopicPartition(*partition))

    def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Log start offset of each partition."""
        found = self._fetcher.list_offsets(
            [TopicPartition(*tp) for tp in partitions], EARLIEST_TIMESTAMP
        )
        return {tp: offset for tp, (offset, _) in found.items()}

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """High watermark of each partition (the offset the next committed record gets); the last
        stable offset with ``read_committed``."""
        found = self._fetcher.list_offsets(
            [TopicPartition(*tp) for tp in partitions], LATEST_TIMESTAMP
        )
        return {tp: offset for tp, (offset, _) in found.items()}

    def offsets_for_times(
        self, timestamps: dict[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """First offset whose timestamp is >= the given one, per partition (None if there is
        none)."""
        result: dict[TopicPartition, OffsetAndTimestamp | None] = {}
        for tp, timestamp in timestamps.items():
            if timestamp < 0:
                raise ValueError(f"timestamp for {tp} must be >= 0, got {timestamp}")
            offset, found_ts = self._fetcher.list_offsets([TopicPartition(*tp)], timestamp)[
                TopicPartition(*tp)
            ]
            result[TopicPartition(*tp)] = (
                OffsetAndTimestamp(offset, found_ts) if offset >= 0 else None
            )
        return result

    # ------------------------------------------------------------------ consuming

    def poll(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Fetched records by partition: what is buffered, else what arrives within ``timeout_ms``.

        In a group, the join or rebalance goes as far as the timeout allows first; the call never
        blocks much longer than ``timeout_ms``."""
        return self._poll("poll()", timeout_ms, max_records, self._fetcher.drain) or {}

    def poll_arrow(self, timeout_ms: int = 0, max_records: int | None = None) -> pa.Table:
        """The records ``poll`` would return, as one ``pyarrow.Table`` with Spark's Kafka columns
        (``key``, ``value``, ``topic``, ``partition``, ``offset``, ``timestamp`` in microseconds
        UTC, ``timestampType``, ``headers``); rows are in the order of ``poll``'s records, and the
        table is empty (with those columns) when ``poll`` would return ``{}``.

        Keys and values are the stored bytes: deserializers are not applied. Positions, commits and
        group membership behave exactly as with ``poll``, so the two can be mixed."""
        batches = self._poll("poll_arrow()", timeout_ms, max_records, self._fetcher.drain_arrow)
        return pa.Table.from_batches(batches or [], schema=ARROW_SCHEMA)

    def _poll(
        self,
        caller: str,
        timeout_ms: int,
        max_records: int | None,
        drain: Callable[[int], Drained],
    ) -> Drained | None:
        """``poll``'s loop, handing out buffered records with ``drain``; None if none came in
        time."""
        if self._closed:
            raise RuntimeError(f"{caller} on a closed consumer")
        limit = max_records or int(self.config["max_poll_records"])
        deadline = time.monotonic() + timeout_ms / 1000
        group = self._group if self._subscribed else None
        if group is not None and group.poll(deadline, self._apply_assignment):
            self._maybe_auto_commit()
        active = [tp for tp in self._assignment if tp not in self._paused]
        if not active and not self._fetcher.has_buffered():
            time.sleep(max(0.0, deadline - time.monotonic()))
            return None
        while True:
            if self._fetcher.has_buffered():
                records = drain(limit)
                if group is not None and group.partitions_lost:
                    # Removed from the group while these were fetched: they are no longer ours.
                    group.drop_lost_partitions(self._apply_assignment)
                    return None
                # Prefetch: the partitions just emptied fetch again while the caller handles these.
                self._fetcher.send_fetches(active)
                if records:
                    return records
                # Only rows below the position were buffered (a compacted batch's tail): fetch on.
            self._fetcher.send_fetches(active)
            remaining = deadline - time.monotonic()
            self._fetcher.collect(max(0.0, remaining))
            if remaining <= 0 and not self._fetcher.has_buffered():
                # Time is up; answers that brought nothing to hand out (a read_committed fetch
                # stopped at the last stable offset) must not keep the loop going.
                return None

    def __iter__(self) -> Consumer:
        return self

    def __next__(self) -> ConsumerRecord:
        if self._iterator is None:
            self._iterator = self._records()
        return next(self._iterator)

    def _records(self) -> Iterator[ConsumerRecord]:
        timeout_s = self.config["consumer_timeout_ms"] / 1000
        idle_since = time.monotonic()
        while True:
            batch = self.poll(timeout_ms=100)
            if batch:
                idle_since = time.monotonic()
                for records in batch.values():
                    yield from records
            elif time.monotonic() - idle_since >= timeout_s:
                return

    # ------------------------------------------------------------------ groups and committed
    # offsets

    def _apply_assignment(
        self, revoked: set[TopicPartition], added: set[TopicPartition], lost: bool
    ) -> None:
        """A rebalance's outcome: stop on revoked partitions (committing them first unless they were
        lost), start added ones at the group's committed offsets."""
        if not lost:
            self._commit_on_revoke(revoked)
        self._fetcher.forget(revoked)
        self._paused -= revoked
        self._assignment = [tp for tp in self._assignment if tp not in revoked] + sorted(
            added - set(self._assignment)
        )
        if added:
            assert self._group is not None
            for tp, committed in self._group.fetch_committed(sorted(added)).items():
                if committed is not None:
                    self._fetcher.seek(tp, committed.offset)

    def _commit_on_revoke(self, revoked: set[TopicPartition]) -> None:
        if not revoked or not self.config["enable_auto_commit"] or self._group is None:
            return
        offsets = {
            tp: OffsetAndMetadata(self._fetcher.positions[tp], "")
            for tp in revoked
            if tp in self._fetcher.positions
        }
        try:
            if offsets:
                self._group.commit(offsets)
        except CommitFailedError as exc:
            logger.warning("auto-commit before giving up %s failed: %s", sorted(revoked), exc)

    def _maybe_auto_commit(self) -> None:
        if not self.config["enable_auto_commit"] or time.monotonic() < self._next_auto_commit:
            return
        self._next_auto_commit = (
            time.monotonic() + int(self.config["auto_commit_interval_ms"]) / 1000
        )
        offsets = self._current_offsets()
        if offsets:
            self.commit_async(offsets)

    def _current_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return {
            tp: OffsetAndMetadata(self._fetcher.positions[tp], "")
            for tp in self._assignment
            if tp in self._fetcher.positions
        }

    def _require_group(self, what: str) -> ConsumerCoordinator:
        if self._group is None:
            raise InvalidGroupIdError(f"{what} requires a group_id")
        return self._group

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        """Commit ``offsets`` (default: the position of every assigned partition) and wait for it,
        up to ``timeout_ms`` (default: the request timeout; KafkaTimeoutError after it).

        Raises CommitFailedError if the group rebalanced since this member joined, or removed it.
        """
        group = self._require_group("commit()")
        group.commit(self._normalise(offsets), _seconds(timeout_ms))

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: Callable[[dict[TopicPartition, OffsetAndMetadata], Exception | None], None]
        | None = None,
    ) -> Future[None]:
        """Commit in the background; ``callback(offsets, exception_or_None)`` runs when it
        completes."""
        group = self._require_group("commit_async()")
        return group.commit_async(self._normalise(offsets), callback)

    def _normalise(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if offsets is None:
            return self._current_offsets()
        return {
            TopicPartition(*tp): v
            if isinstance(v, OffsetAndMetadata)
            else OffsetAndMetadata(int(v), "")
            for tp, v in offsets.items()
        }

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group id, generation and member id this consumer holds now, for
        ``send_offsets_to_transaction`` (the coordinator fences a zombie member's commits with
        them, KIP-447); no generation (-1, "") while not in one."""
        return self._require_group("group_metadata()").group_metadata()

    def committed(
        self, partition: TopicPartition, metadata: bool = False, timeout_ms: int | None = None
    ) -> int | OffsetAndMetadata | None:
        """The group's committed offset of ``partition`` (None if it has none); with ``metadata``,
        an OffsetAndMetadata. Waits up to ``timeout_ms`` (default: the request timeout)."""
        group = self._require_group("committed()")
        tp = TopicPartition(*partition)
        found = group.fetch_committed([tp], _seconds(timeout_ms))[tp]
        if found is None or metadata:
            return found
        return found.offset

    # ------------------------------------------------------------------ metadata and lifecycle

    def topics(self) -> set[str]:
        """Every topic in the cluster."""
        return {
            t.name for t in self._cluster.refresh_metadata(None).topics if t.error is Errors.NONE
        }

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """Partition ids of a topic, or None if it does not exist."""
        try:
            return {p.partition for p in self._cluster.topic(topic, refresh=True).partitions}
        except UnknownTopicOrPartitionError:
            return None

    def metrics(self) -> MetricsView:
        """kafka-python's metrics: ``{"consumer-fetch-manager-metrics": {"records-lag-max": ...,
        ...}, "consumer-fetch-manager-metrics.<topic>-<partition>": {"records-lag": ...}, ...}``
        (``{}`` with ``metrics_enabled=False``)."""
        return self._sensors.view()

    def close(self, autocommit: bool = True, timeout_ms: int | None = None) -> None:
        """Stop consuming; in a group, commit (if auto-commit is on) and leave it at once, within
        ``timeout_ms`` (default: the request timeout). Idempotent."""
        if self._closed:
            return
        self._closed = True
        timeout_s = (
            int(self.config["request_timeout_ms"]) if timeout_ms is None else timeout_ms
        ) / 1000
        deadline = time.monotonic() + timeout_s
        if self._group is not None:
            if autocommit and self.config["enable_auto_commit"] and self._subscribed:
                try:
                    offsets = self._current_offsets()
                    if offsets and not self._group.partitions_lost:
                        self._group.commit(offsets, timeout_s)
                except (CommitFailedError, RafkaError) as exc:
                    logger.warning(
                        "final auto-commit of group %s failed: %s", self.config["group_id"], exc
                    )
            self._group.close(deadline)
        self._fetcher.forget(set(self._assignment))
        metrics_reporter.unregister(self._sensors.registry)

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _seconds(timeout_ms: int | None) -> float | None:
    return None if timeout_ms is None else timeout_ms / 1000


KafkaConsumer = Consumer
"""kafka-python's name for the consumer."""
