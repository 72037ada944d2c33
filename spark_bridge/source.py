"""The ``rafka`` PySpark data source and its batch and streaming readers.

Spark runs the pieces in different processes (platform notes 1.3): ``schema()`` and the batch
reader's ``partitions()`` in short-lived planner processes, the streaming reader's offset methods
in one long-lived driver process, and ``read()`` in executor Python workers on a reader unpickled
there. So the readers hold only validated options; every connection comes from ``connection``, per
process, on first use. Each Spark input partition is one ``OffsetRange`` of one topic-partition,
and ``read()`` returns exactly that range, so a replayed micro-batch yields the same rows.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rafka.protocol.errors import UnknownTopicOrPartitionError
from rafka.protocol.types import TopicPartition
from rafka.spark_bridge import offset_ranges as plan
from rafka.spark_bridge.options import (
    SourceOptions,
    include_headers,
    option_error,
    parse_source_options,
)

HEADERS_FIELD = StructField(
    "headers",
    ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
)


def kafka_schema(include_headers: bool) -> StructType:
    """Spark's Kafka source schema; ``headers`` only with ``includeHeaders``."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    return StructType([*fields, HEADERS_FIELD] if include_headers else fields)


@dataclass(frozen=True)
class RangePartition(InputPartition):
    """One Spark task's work: offsets [start, end) of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int


class RafkaDataSource(DataSource):
    """``format("rafka")``: Spark's Kafka source and sink, same options and schema, over rafka."""

    @classmethod
    def name(cls) -> str:
        """The format name (Spark matches it case-insensitively)."""
        return "rafka"

    def schema(self) -> StructType:
        """Spark's Kafka schema (``reader`` or ``streamReader`` check the other options)."""
        return kafka_schema(include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        """A batch reader (``spark.read``)."""
        return RafkaBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A streaming reader (``spark.readStream``)."""
        return RafkaStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """A batch writer (``df.write``); only append makes sense for a log."""
        from rafka.spark_bridge.sink import RafkaBatchWriter

        return RafkaBatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """A streaming writer (``df.writeStream``)."""
        from rafka.spark_bridge.sink import RafkaStreamWriter

        return RafkaStreamWriter(self.options, schema, overwrite)


# ---------------------------------------------------------------------- shared by both readers


def discover(options: SourceOptions, strict: bool) -> list[TopicPartition]:
    """The partitions the options select right now.

    With ``strict`` (a query being planned for the first time) an unknown topic or partition is an
    error naming ``subscribe`` or ``assign``; later triggers skip what vanished and let planning
    report it as data loss.
    """
    from rafka.spark_bridge import connection

    cluster = connection.cluster(options.cluster)
    selection = options.selection
    if selection.pattern is not None:
        regex = re.compile(selection.pattern)
        topics = [
            t.name
            for t in cluster.refresh_metadata(None).topics
            if not t.is_internal and regex.fullmatch(t.name)
        ]
    else:
        topics = list(dict.fromkeys(selection.topics or (t for t, _ in selection.assignment)))
    found: list[TopicPartition] = []
    for topic in topics:
        try:
            metadata = cluster.topic(topic, refresh=True, allow_auto_topic_creation=False)
            partitions = {p.partition for p in metadata.partitions}
        except UnknownTopicOrPartitionError:
            if strict and selection.pattern is None:
                raise option_error(
                    selection.option,
                    f"unknown topic {topic!r} in Ray namespace {options.cluster.namespace!r}",
                ) from None
            continue
        if selection.assignment:
            wanted = {p for t, p in selection.assignment if t == topic}
            if strict and wanted - partitions:
                raise option_error(
                    selection.option,
                    f"topic {topic!r} has no partition {sorted(wanted - partitions)} "
                    f"(it has {len(partitions)})",
                )
            partitions &= wanted
        found.extend(TopicPartition(topic, p) for p in sorted(partitions))
    return found


def read_partition(options: SourceOptions, partition: InputPartition) -> Iterator[Any]:
    """``read()`` of both readers: the Arrow batches of a RangePartition, from its leader."""
    if not isinstance(partition, RangePartition):
        return iter(())  # Spark's placeholder partition when there was nothing to read
    from rafka.spark_bridge import connection
    from rafka.spark_bridge.range_reader import read_range

    return read_range(
        connection.cluster(options.cluster),
        plan.OffsetRange(partition.topic, partition.partition, partition.start, partition.end),
        options.include_headers,
        options.fail_on_data_loss,
        options.max_partition_fetch_bytes,
        options.fetch_max_wait_ms,
        options.poll_timeout_ms,
        options.isolation_level,
    )


def to_partitions(
    ranges: list[plan.OffsetRange], min_partitions: int | None
) -> list[InputPartition]:
    """Spark input partitions for offset ranges, split for ``minPartitions`` (a list)."""
    return [
        RangePartition(r.topic, r.partition, r.start, r.end)
        for r in plan.split_ranges(ranges, min_partitions)
    ]


def _lookup(options: SourceOptions) -> plan.OffsetLookup:
    from rafka.spark_bridge.connection import ConsumerOffsetLookup

    return ConsumerOffsetLookup(options.cluster, options.isolation_level)


# ---------------------------------------------------------------------- batch


class RafkaBatchReader(DataSourceReader):
    """``spark.read.format("rafka")``: a task per range from starting to ending offsets."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        """Resolve starting and ending offsets now (planner process) and cut the ranges."""
        options = self.options
        found = discover(options, strict=True)
        lookup = _lookup(options)
        start = plan.resolve(options.starting, found, lookup, options.timestamp_strategy)
        end = plan.resolve(options.ending, found, lookup, options.timestamp_strategy)
        for (topic, partition), until in end.items():
            begin = start[TopicPartition(topic, partition)]
            if until < begin:
                raise option_error(
                    options.starting.option,
                    f"the starting offset {begin} of "
                    f"{topic}-{partition} is after its ending offset {until} "
                    f"(from option '{options.ending.option}')",
                )
        ranges, _ = plan.plan_ranges(start, end)
        return to_partitions(ranges, options.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Executor side: the range's records as Arrow batches."""
        return read_partition(self.options, partition)


# ---------------------------------------------------------------------- streaming


class RafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("rafka")``: offsets are ``{"topic": {"partition": offset}}`` JSON.

    The offset methods run in one long-lived driver process, so the reader keeps the time of the
    last batch (``maxTriggerDelay``) and the ``Trigger.AvailableNow`` target there.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._available_now: plan.PartitionOffsets | None = None
        self._latest: plan.PartitionOffsets | None = None
        self._last_batch = time.monotonic()

    def initialOffset(self) -> dict:
        """Where a new query starts (``startingOffsets``, else latest); restarts use checkpoints."""
        found = discover(self.options, strict=True)
        return plan.to_json(
            plan.resolve(
                self.options.starting, found, _lookup(self.options), self.options.timestamp_strategy
            )
        )

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxOffsetsPerTrigger``, else ``minOffsetsPerTrigger``, else everything available."""
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """``Trigger.AvailableNow``: read up to the high watermarks (last stable offsets with
        ``read_committed``) of this moment, then stop."""
        self._available_now = self._current_latest()

    def _current_latest(self) -> plan.PartitionOffsets:
        return _lookup(self.options).latest(discover(self.options, strict=False))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next micro-batch: high watermarks, capped and held back by the limits.

        Partitions that appeared since ``start`` are included (read from
        earliest). Returning ``start`` means no batch now. Under AvailableNow
        the minimum is ignored, or the last batch could wait forever.
        """
        begin = plan.from_json(start)
        latest = self._available_now if self._available_now is not None else self._current_latest()
        self._latest = latest
        end = latest
        if not isinstance(limit, ReadAllAvailable):
            max_rows = (
                limit.max_rows
                if isinstance(limit, ReadMaxRows)
                else self.options.max_offsets_per_trigger
            )
            min_rows = (
                limit.min_rows
                if isinstance(limit, ReadMinRows)
                else self.options.min_offsets_per_trigger
            )
            waited_ms = (time.monotonic() - self._last_batch) * 1000
            if (
                min_rows is not None
                and self._available_now is None
                and plan.should_delay(
                    min_rows,
                    plan.backlog(begin, latest),
                    waited_ms,
                    self.options.max_trigger_delay_ms,
                )
            ):
                return start
            if max_rows is not None:
                added = [tp for tp in latest if tp not in begin]
                from_offsets = {**(_lookup(self.options).earliest(added) if added else {}), **begin}
                end = plan.rate_limit(max_rows, from_offsets, latest)
        self._last_batch = time.monotonic()
        return plan.to_json(end)

    def reportLatestOffset(self) -> dict | None:
        """The high watermarks last seen, shown as ``latestOffset`` in the query progress."""
        return None if self._latest is None else plan.to_json(self._latest)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        """Ranges between two checkpointed offsets; vanished or truncated partitions lost data."""
        ranges, losses = plan.plan_ranges(plan.from_json(start), plan.from_json(end))
        for loss in losses:
            plan.report_data_loss(loss, self.options.fail_on_data_loss)
        return to_partitions(ranges, self.options.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Executor side: the range's records as Arrow batches."""
        return read_partition(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: as in Spark's Kafka source, offsets live in the checkpoint."""
