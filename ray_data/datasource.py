"""``read_rafka`` and ``write_rafka``: rafka topics as Ray Data datasets, without Kafka's wire.

``read_rafka`` plans one read task per partition range on the driver (``plan_reads``), and each
task reads its range with a consumer of its own through ``Consumer.poll_arrow``: records come out
as Arrow columns built straight from the stored batches, never as a Python object per record.
Blocks have the columns ``poll_arrow`` returns. ``write_rafka`` sends each block with
``Producer.send_arrow`` and waits for every row's acknowledgement before the write task reports
success.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import ray.data
from ray.data import Datasink, Datasource, ReadTask
from ray.data.block import BlockMetadata

from rafka.actors import names
from rafka.clients.consumer import Consumer
from rafka.clients.fetcher import ARROW_SCHEMA
from rafka.clients.producer import Producer
from rafka.protocol.errors import KafkaTimeoutError, UnknownTopicOrPartitionError
from rafka.protocol.types import TopicPartition
from rafka.ray_data.offsets import OffsetForm, plan_reads
from rafka.spark_bridge.connection import ConsumerOffsets
from rafka.spark_bridge.offset_ranges import OffsetRange

# Rows gathered into one block: large enough that Ray Data's per-block costs stay small.
BLOCK_BYTES = 64 << 20
READ_CONFIG = {"max_poll_records": 100_000, "max_partition_fetch_bytes": 4 << 20}


def read_range(
    offsets: OffsetRange, consumer_config: dict[str, Any], timeout_ms: int
) -> Iterator[pa.Table]:
    """The records of ``offsets`` as tables of about ``BLOCK_BYTES``; KafkaTimeoutError when no
    record arrives for ``timeout_ms``."""
    tp = TopicPartition(offsets.topic, offsets.partition)
    consumer = Consumer(**{**READ_CONFIG, **consumer_config, "group_id": None})
    try:
        consumer.assign([tp])
        consumer.seek(tp, offsets.start)
        pending: list[pa.Table] = []
        held = 0
        deadline = time.monotonic() + timeout_ms / 1000
        while consumer.position(tp) < offsets.end:
            table = consumer.poll_arrow(timeout_ms=200)
            if table.num_rows:
                deadline = time.monotonic() + timeout_ms / 1000
                if table.column("offset")[-1].as_py() >= offsets.end:
                    table = table.filter(pc.less(table.column("offset"), offsets.end))
                pending.append(table)
                held += table.nbytes
                if held >= BLOCK_BYTES:
                    yield pa.concat_tables(pending)
                    pending, held = [], 0
            elif time.monotonic() > deadline:
                raise KafkaTimeoutError(
                    f"no records of {tp.topic}-{tp.partition} at offset {consumer.position(tp)} "
                    f"within timeout_ms={timeout_ms} (reading [{offsets.start}, {offsets.end}))"
                )
        yield pa.concat_tables(pending) if pending else ARROW_SCHEMA.empty_table()
    finally:
        consumer.close()


class RafkaDatasource(Datasource):
    """Bounded reads of rafka topics: one read task per partition range."""

    def __init__(
        self,
        topics: list[str],
        start_offset: OffsetForm,
        end_offset: OffsetForm,
        consumer_config: dict[str, Any],
        timeout_ms: int,
    ) -> None:
        self.consumer_config = consumer_config
        self.timeout_ms = timeout_ms
        consumer = Consumer(**{**consumer_config, "group_id": None})
        try:
            partitions: list[TopicPartition] = []
            for topic in topics:
                found = consumer.partitions_for_topic(topic)
                if not found:
                    raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
                partitions.extend(TopicPartition(topic, p) for p in sorted(found))
            lookup = ConsumerOffsets(consumer)
            self.ranges = plan_reads(partitions, start_offset, end_offset, lookup)
        finally:
            consumer.close()

    def estimate_inmemory_data_size(self) -> int | None:
        """Unknown before reading: record sizes are not known to the plan."""
        return None

    def get_name(self) -> str:
        """The name Ray Data shows for this read."""
        return "Rafka"

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        """One task per planned range, whatever ``parallelism`` asks (as ``read_kafka`` does)."""
        tasks = []
        for offsets in self.ranges:
            metadata = BlockMetadata(
                num_rows=offsets.size, size_bytes=None, exec_stats=None, input_files=None
            )

            def read(offsets: OffsetRange = offsets) -> Iterable[pa.Table]:
                return read_range(offsets, self.consumer_config, self.timeout_ms)

            tasks.append(
                ReadTask(read, metadata, schema=ARROW_SCHEMA, per_task_row_limit=per_task_row_limit)
            )
        return tasks


def read_rafka(
    topics: str | list[str],
    *,
    start_offset: OffsetForm = "earliest",
    end_offset: OffsetForm = "latest",
    namespace: str = names.DEFAULT_NAMESPACE,
    consumer_config: dict[str, Any] | None = None,
    timeout_ms: int = 60_000,
    **read_args: Any,
) -> ray.data.Dataset:
    """A ``ray.data.Dataset`` of the records of ``topics`` between ``start_offset`` and
    ``end_offset`` (``read_kafka``'s forms), read from the rafka cluster in ``namespace`` of the
    connected Ray cluster; ``read_args`` go to ``ray.data.read_datasource`` (``concurrency``,
    ``num_cpus``...). ``consumer_config`` takes kafka-python's consumer settings, e.g.
    ``isolation_level="read_committed"``."""
    config = {**(consumer_config or {}), "namespace": namespace}
    selected = [topics] if isinstance(topics, str) else list(topics)
    source = RafkaDatasource(selected, start_offset, end_offset, config, timeout_ms)
    return ray.data.read_datasource(source, **read_args)


class RafkaDatasink(Datasink[int]):
    """Each write task sends its blocks with one producer and waits for every acknowledgement."""

    def __init__(self, topic: str, producer_config: dict[str, Any]) -> None:
        self.topic = topic
        self.producer_config = producer_config

    def get_name(self) -> str:
        """The name Ray Data shows for this write."""
        return "Rafka"

    def write(self, blocks: Iterable[Any], ctx: Any) -> int:
        """Send every block's rows; return how many were acknowledged."""
        written = 0
        with Producer(**self.producer_config) as producer:
            sent = [producer.send_arrow(self.topic, _arrow(block)) for block in blocks]
            for future in sent:
                written += future.get()
        return written


def _arrow(block: Any) -> pa.Table:
    return block if isinstance(block, pa.Table) else pa.Table.from_pandas(block)


def write_rafka(
    dataset: ray.data.Dataset,
    topic: str,
    *,
    namespace: str = names.DEFAULT_NAMESPACE,
    producer_config: dict[str, Any] | None = None,
    **write_args: Any,
) -> None:
    """Write ``dataset``'s rows to ``topic``: a ``value`` column (binary or string) and optionally
    ``key``, ``partition``, ``timestamp`` and ``headers``, as ``Producer.send_arrow`` takes them."""
    config = {**(producer_config or {}), "namespace": namespace}
    dataset.write_datasink(RafkaDatasink(topic, config), **write_args)
