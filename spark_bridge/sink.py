"""The ``rafka`` sink: ``df.write`` and ``df.writeStream`` with Spark's Kafka sink semantics.

Input columns: ``value`` (required, string or binary), ``key`` (string or binary),
``headers`` (``array<struct<key:string,value:binary>>``), ``topic`` (string; the ``topic``
option wins) and ``partition`` (int; null leaves it to the producer's partitioner). Each
task sends through its Python worker's long-lived producer, reads Arrow batches column by
column, flushes before it reports success and fails on the first record the cluster refused.

Delivery is at-least-once, as with Spark's Kafka sink: a retried task or a replayed micro-batch
writes its records again. Exactly-once results downstream need a deterministic identity per record
(e.g. the source coordinates, or the streaming batch id plus a key) that consumers deduplicate on.

With the option ``transactional.id.prefix`` each task writes its rows in one transaction of a
producer whose transactional id is ``<prefix>-<Spark partition id>``: a task that fails aborts
it, and a retried attempt of the task fences the previous attempt (``init_transactions``), whose
open transaction is aborted, so ``read_committed`` consumers see each task's rows once or not at
all. A micro-batch Spark replays after a driver failure is still written again.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from rafka.protocol.errors import UnknownTopicOrPartitionError
from rafka.spark_bridge.options import SinkOptions, option_error, parse_sink_options

logger = logging.getLogger(__name__)

COLUMNS = ("value", "key", "headers", "topic", "partition")


@dataclass
class RafkaCommitMessage(WriterCommitMessage):
    """What one task reports: how many records the cluster acknowledged."""

    records: int


def _is_header_array(data_type: DataType) -> bool:
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    fields = data_type.elementType.fields
    return (
        len(fields) == 2
        and fields[0].name == "key"
        and isinstance(fields[0].dataType, StringType)
        and fields[1].name == "value"
        and isinstance(fields[1].dataType, BinaryType)
    )


def validate_columns(schema: StructType, sink: SinkOptions) -> None:
    """Check the input columns as Spark's Kafka sink does; errors name the column or the option."""
    types = {f.name.lower(): f.dataType for f in schema.fields}
    if "value" not in types:
        raise option_error("value", "the DataFrame needs a 'value' column (string or binary)")
    for name in ("value", "key"):
        if name in types and not isinstance(types[name], (StringType, BinaryType)):
            raise option_error(
                name,
                f"the '{name}' column must be string or binary, not {types[name].simpleString()}",
            )
    if sink.topic is None and "topic" not in types:
        raise option_error(
            "topic", "the 'topic' option is required when the DataFrame has no 'topic' column"
        )
    if "topic" in types and not isinstance(types["topic"], StringType):
        raise option_error(
            "topic", f"the 'topic' column must be a string, not {types['topic'].simpleString()}"
        )
    if "partition" in types and not isinstance(types["partition"], IntegerType):
        raise option_error(
            "partition",
            f"the 'partition' column must be an int, not {types['partition'].simpleString()}",
        )
    if "headers" in types and not _is_header_array(types["headers"]):
        raise option_error(
            "headers",
            "the 'headers' column must be array<struct<key:string,value:binary>>, "
            f"not {types['headers'].simpleString()}",
        )


def plan_sink(options: Mapping[str, str], schema: StructType) -> SinkOptions:
    """A writer's checks at planning time, before any task runs: options, columns, and that the
    ``topic`` option names an existing topic (a task's failure would reach the user wrapped in
    Spark's job-abort stack; a planning failure reaches them as this error's message)."""
    sink = parse_sink_options(options)
    validate_columns(schema, sink)
    if sink.topic is not None:
        from rafka.spark_bridge import connection

        try:
            connection.cluster(sink.cluster).topic(
                sink.topic, refresh=True, allow_auto_topic_creation=False
            )
        except UnknownTopicOrPartitionError:
            raise UnknownTopicOrPartitionError(
                f"option 'topic': topic {sink.topic!r} does not exist; create it first "
                f"(rafka topics --create --topic {sink.topic})"
            ) from None
    return sink


def _column(batch: pa.RecordBatch, name: str, as_bytes: bool = False) -> Iterator[Any] | list[Any]:
    """A column's values as Python objects (strings as UTF-8 bytes if ``as_bytes``).

    An absent column is None for every row.
    """
    names = [n.lower() for n in batch.schema.names]
    if name not in names:
        return itertools.repeat(None)
    column = batch.column(names.index(name))
    if as_bytes and (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        column = column.cast(pa.binary())  # UTF-8 bytes, without a Python str per row
    values = column.to_pylist()
    if name == "headers":
        return [None if hs is None else [(h["key"], h["value"]) for h in hs] for hs in values]
    return values


def send_batches(sink: SinkOptions, batches: Iterator[pa.RecordBatch]) -> RafkaCommitMessage:
    """Send every row through the worker's producer (or, with ``transactional.id.prefix``, in one
    transaction of the task's own), flush, raise the first refusal's error."""
    from rafka.spark_bridge import connection

    if sink.transactional_id_prefix is not None:
        transactional_id = f"{sink.transactional_id_prefix}-{_task_partition_id()}"
        return send_in_transaction(sink, batches, transactional_id)
    producer = connection.producer(sink.cluster, sink.producer_config)
    return RafkaCommitMessage(_send_rows(producer, sink, batches))


def send_in_transaction(
    sink: SinkOptions, batches: Iterator[pa.RecordBatch], transactional_id: str
) -> RafkaCommitMessage:
    """Send every row in one transaction of a new producer with ``transactional_id``: committed
    once all are acknowledged, aborted if anything fails."""
    from rafka.spark_bridge import connection

    producer: Any = connection.transactional_producer(
        sink.cluster, sink.producer_config, transactional_id
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        try:
            records = _send_rows(producer, sink, batches)
            producer.commit_transaction()
        except BaseException:
            _abort(producer, transactional_id)
            raise
    finally:
        producer.close()
    return RafkaCommitMessage(records)


def _abort(producer: Any, transactional_id: str) -> None:
    try:
        producer.abort_transaction()
    except Exception:  # fenced or unreachable: the coordinator aborts it on timeout or fencing
        logger.exception("aborting the transaction of %s failed", transactional_id)


def _task_partition_id() -> int:
    """The Spark partition this task writes (0 outside a Spark task)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return 0 if context is None else context.partitionId()


def _send_rows(producer: Any, sink: SinkOptions, batches: Iterator[pa.RecordBatch]) -> int:
    """Send every row through ``producer``, flush, raise the first refusal's error; the count."""
    send = producer.send
    # Futures are checked oldest first as they complete, so memory holds only the in-flight window.
    pending: deque[Any] = deque()
    records = 0
    for batch in batches:
        if sink.topic is not None:
            topics: Any = itertools.repeat(sink.topic)
        else:
            topics = _column(batch, "topic")
            if None in topics:
                raise option_error(
                    "topic", "a row has a null 'topic'; set the 'topic' option for a default topic"
                )
        for value, key, headers, topic, partition in zip(
            _column(batch, "value", as_bytes=True),
            _column(batch, "key", as_bytes=True),
            _column(batch, "headers"),
            topics,
            _column(batch, "partition"),
            strict=False,  # absent columns are endless repeats of None
        ):
            pending.append(send(topic, value, key, headers, partition))
        records += batch.num_rows
        _raise_failures(pending, wait=False)
    producer.flush()
    _raise_failures(pending, wait=True)
    return records


def _raise_failures(pending: deque[Any], wait: bool) -> None:
    while pending and (wait or pending[0].is_done):
        future = pending.popleft()
        if future.failed():
            raise future.exception


class RafkaBatchWriter(DataSourceArrowWriter):
    """``df.write.format("rafka").mode("append")``: at-least-once, a producer per Python worker."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise option_error(
                "mode",
                "save mode 'overwrite' is not allowed: a log can only be appended to; use "
                "mode('append')",
            )
        self.sink = plan_sink(options, schema)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RafkaCommitMessage:
        """Executor side: send this task's rows and wait until every one is acknowledged."""
        return send_batches(self.sink, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Driver side: every task flushed, so the records are in the log."""
        logger.info(
            "rafka sink wrote %d records",
            sum(m.records for m in messages if isinstance(m, RafkaCommitMessage)),
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to undo: records already acknowledged stay in the log (at-least-once)."""
        written = sum(m.records for m in messages if isinstance(m, RafkaCommitMessage))
        logger.warning(
            "rafka write aborted; %d records from finished tasks stay in the log", written
        )


class RafkaStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rafka")``: each micro-batch's tasks send and flush like batch tasks.

    ``commit`` receives the micro-batch id, which stays the same when Spark replays a batch after a
    failure: the handle for idempotent, exactly-once bookkeeping downstream.
    """

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        # ``overwrite`` is the complete output mode: each
        # batch rewrites the whole result, as with Kafka.
        self.sink = plan_sink(options, schema)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RafkaCommitMessage:
        """Executor side: send this task's rows and wait until every one is acknowledged."""
        return send_batches(self.sink, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Driver side: micro-batch ``batchId`` is fully in the log."""
        written = sum(m.records for m in messages if isinstance(m, RafkaCommitMessage))
        logger.info("rafka sink committed micro-batch %d: %d records", batchId, written)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo; a replay of ``batchId`` writes its records again (at-least-once)."""
        logger.warning(
            "rafka sink aborted micro-batch %d; it will be written again when replayed", batchId
        )
