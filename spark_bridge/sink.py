"""The ``rafka`` sink: ``df.write`` and ``df.writeStream`` with Spark's Kafka sink semantics.

Input columns: ``value`` (required, string or binary), ``key`` (string or binary),
``headers`` (``array<struct<key:string,value:binary>>``), ``topic`` (string; the ``topic``
option wins) and ``partition`` (int; null leaves it to the producer's partitioner). Each
task reads Arrow batches column by column, flushes before it reports success and fails on the
first record the cluster refused.

Without ``transactional.id.prefix`` each task sends through its Python worker's long-lived producer
and delivery is at-least-once, as with Spark's Kafka sink: a retried task or a replayed micro-batch
writes its records again. Exactly-once results downstream need a deterministic identity per record
(e.g. the source coordinates, or the streaming batch id plus a key) that consumers deduplicate on.

With the option ``transactional.id.prefix`` a batch write (or a streaming micro-batch) is all or
nothing for ``read_committed`` consumers, by a two-phase commit over Kafka transactions (as Flink's
Kafka sink does it). Each task sends its rows in one transaction of a new producer whose
transactional id is ``<prefix>-<Spark partition id>``, flushes and prepares it
(``prepare_transaction``: no EndTxn), closes the producer and hands the ``PreparedTransaction`` to
the driver in its commit message; a task that fails aborts its transaction, and a retried attempt
of the task reuses the transactional id, so its ``init_transactions`` fences the failed attempt and
aborts whatever it left open. The driver's ``commit`` then commits every task's transaction; its
``abort`` (the job failed) aborts those of the tasks that finished. So the rows of a batch write
become visible to ``read_committed`` consumers together when the driver commits, and if the job
fails none do. Each transaction stays open from its task's first row until the driver ends it, and
the coordinator aborts a transaction older than ``transaction.timeout.ms`` (60 s unless set): it
must exceed the job's duration.

What remains possible:
- the driver dying halfway through its commit loop leaves some tasks' transactions committed and
  the others aborted on timeout: transactions on several coordinators cannot commit atomically;
- speculative execution must stay off: a speculative attempt of a task fences the first attempt,
  whose transaction it aborts, and only one of them reports to the driver;
- a streaming micro-batch is committed the same way, but one that Spark replays because the driver
  committed it and died before the checkpoint recorded it is written again.
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

from rafka.clients.prepared_transaction import PreparedTransaction, end_prepared_transaction
from rafka.protocol.errors import RafkaError, UnknownTopicOrPartitionError
from rafka.spark_bridge.options import SinkOptions, option_error, parse_sink_options

logger = logging.getLogger(__name__)

COLUMNS = ("value", "key", "headers", "topic", "partition")


@dataclass
class RafkaCommitMessage(WriterCommitMessage):
    """What one task reports: how many records the cluster acknowledged and, with
    ``transactional.id.prefix``, its prepared transaction for the driver to end."""

    records: int
    prepared: PreparedTransaction | None = None


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
    """Send every row in one transaction of a new producer with ``transactional_id`` and prepare
    it once all are acknowledged (the driver commits it); abort it if anything fails."""
    from rafka.spark_bridge import connection

    config = sink.producer_config
    if sink.transaction_timeout_ms is not None:
        config = (*config, ("transaction_timeout_ms", sink.transaction_timeout_ms))
    producer: Any = connection.transactional_producer(sink.cluster, config, transactional_id)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        try:
            records = _send_rows(producer, sink, batches)
            prepared = producer.prepare_transaction()
        except BaseException:
            _abort(producer, transactional_id)
            raise
    finally:
        producer.close()
    return RafkaCommitMessage(records, prepared)


def _abort(producer: Any, transactional_id: str) -> None:
    try:
        producer.abort_transaction()
    except Exception:  # fenced or unreachable: the coordinator aborts it on timeout or fencing
        logger.exception("aborting the transaction of %s failed", transactional_id)


def _prepared(messages: list[WriterCommitMessage | None]) -> list[PreparedTransaction]:
    return [
        m.prepared for m in messages if isinstance(m, RafkaCommitMessage) and m.prepared is not None
    ]


def commit_prepared(sink: SinkOptions, messages: list[WriterCommitMessage | None]) -> None:
    """Driver side: commit every task's prepared transaction. All are tried, since once one is
    committed the others should be too; the failures raise together afterwards."""
    failures: list[str] = []
    first: RafkaError | None = None
    for prepared in _prepared(messages):
        try:
            end_prepared_transaction(
                prepared, True, sink.cluster.namespace, sink.cluster.ray_address
            )
        except RafkaError as exc:
            failures.append(f"{prepared.transactional_id}: {exc}")
            first = first or exc
    if first is not None:
        raise first.error.exception(
            f"committing {len(failures)} of the tasks' transactions failed: " + "; ".join(failures)
        )


def abort_prepared(sink: SinkOptions, messages: list[WriterCommitMessage | None]) -> None:
    """Driver side: abort the prepared transactions of the tasks that finished. Failures are only
    logged: the coordinator aborts a transaction on timeout anyway."""
    for prepared in _prepared(messages):
        try:
            end_prepared_transaction(
                prepared, False, sink.cluster.namespace, sink.cluster.ray_address
            )
        except Exception:
            logger.exception(
                "aborting the transaction of %s failed; the coordinator aborts it after "
                "transaction.timeout.ms",
                prepared.transactional_id,
            )


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
            # One topic: the whole batch goes column by column, no Python call per row.
            batch = batch.rename_columns([name.lower() for name in batch.schema.names])
            pending.append(producer.send_arrow(sink.topic, batch))
            records += batch.num_rows
            _raise_failures(pending, wait=False)
            continue
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
    """``df.write.format("rafka").mode("append")``: at-least-once through a producer per Python
    worker, or all or nothing with ``transactional.id.prefix``."""

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
        """Driver side: every task flushed, so the records are in the log; with
        ``transactional.id.prefix``, commit the tasks' transactions."""
        commit_prepared(self.sink, messages)
        logger.info("rafka sink wrote %d records", _written(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Records already acknowledged stay in the log (at-least-once), unless the tasks wrote in
        transactions, which are aborted."""
        abort_prepared(self.sink, messages)
        transactional = self.sink.transactional_id_prefix is not None
        logger.warning(
            "rafka write aborted; %d records from finished tasks %s",
            _written(messages),
            "were aborted" if transactional else "stay in the log",
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
        """Driver side: micro-batch ``batchId`` is fully in the log; with
        ``transactional.id.prefix``, commit the tasks' transactions."""
        commit_prepared(self.sink, messages)
        logger.info("rafka sink committed micro-batch %d: %d records", batchId, _written(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Abort the tasks' transactions, if any; a replay of ``batchId`` writes its records
        again."""
        abort_prepared(self.sink, messages)
        logger.warning(
            "rafka sink aborted micro-batch %d; it will be written again when replayed", batchId
        )


def _written(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.records for m in messages if isinstance(m, RafkaCommitMessage))
