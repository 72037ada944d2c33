"""``Producer.send_arrow`` against a fake cluster: rows land where ``send`` would put them, in
order, in batches under ``batch_size``, with their keys, timestamps and headers; bad tables are
refused before anything is queued."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pytest

from rafka.actors import names
from rafka.clients.column_chunk import ProducerColumns, runs
from rafka.clients.partitioner import partition_for_key
from rafka.clients.producer import Producer
from rafka.protocol.errors import Errors, MessageTooLargeError, UnknownTopicOrPartitionError
from rafka.protocol.messages.metadata import (
    BrokerMetadata,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from rafka.protocol.messages.produce import ProduceRequest, ProduceResponse
from rafka.protocol.messages.transactions import InitProducerIdRequest, InitProducerIdResponse
from rafka.protocol.records.batch import decode_records, iter_batches
from rafka.protocol.records.columns import Record

PARTITIONS = 3


class Leader:
    """A leader replica keeping every record it is sent, and the size of each batch."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.batch_sizes: list[int] = []

    def produce(self, request: ProduceRequest) -> ProduceResponse:
        base = len(self.records)
        for position, header in iter_batches(request.records):
            self.batch_sizes.append(header.size_in_bytes)
            self.records.extend(decode_records(request.records, position, header))
        return ProduceResponse(Errors.NONE, base_offset=base)


class Metadata:
    """Broker 0, leader of every partition of topic "events"."""

    def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        return InitProducerIdResponse(Errors.NONE, 1000, 0)

    def metadata(self, request: MetadataRequest) -> MetadataResponse:
        partitions = tuple(PartitionMetadata(p, 0, 0, (0,), (0,)) for p in range(PARTITIONS))
        return MetadataResponse(
            (BrokerMetadata(0, "127.0.0.1", "node-0"),),
            0,
            (TopicMetadata("events", partitions),),
            "fake-cluster",
        )


@pytest.fixture
def leaders(fake_cluster: Any) -> list[Leader]:
    fake_cluster.add_brokers(1)
    fake_cluster.actors[names.broker_actor_name(0)] = Metadata()
    created = [Leader() for _ in range(PARTITIONS)]
    for partition, leader in enumerate(created):
        fake_cluster.actors[names.replica_actor_name("events", partition, 0)] = leader
    return created


def producer(fake_cluster: Any, **config: Any) -> Producer:
    return Producer(transport=fake_cluster.transport, linger_ms=0, **config)


def test_keyed_rows_land_on_their_keys_partitions_in_table_order(
    fake_cluster: Any, leaders: list[Leader]
) -> None:
    keys = [f"user-{i % 7}".encode() for i in range(300)]
    values = [f"event-{i}".encode() for i in range(300)]
    with producer(fake_cluster) as sender:
        sent = sender.send_arrow("events", pa.table({"key": keys, "value": values}))
        assert sent.get(timeout=5) == 300
    for partition, leader in enumerate(leaders):
        expected = [
            (k, v)
            for k, v in zip(keys, values, strict=True)
            if partition_for_key(k, PARTITIONS) == partition
        ]
        assert [(r.key, r.value) for r in leader.records] == expected


def test_rows_without_a_key_fill_batches_under_batch_size_and_keep_their_order(
    fake_cluster: Any, leaders: list[Leader]
) -> None:
    values = [b"%06d" % i + b"x" * 94 for i in range(2_000)]
    with producer(fake_cluster, batch_size=16_384) as sender:
        sender.send_arrow("events", pa.table({"value": values})).get(timeout=5)
    landed = [bytes(r.value or b"") for leader in leaders for r in leader.records]
    assert sorted(landed) == values
    for leader in leaders:
        values_here = [bytes(r.value or b"") for r in leader.records]
        assert values_here == sorted(values_here)
        assert leader.batch_sizes and max(leader.batch_sizes) <= 16_384
    assert sum(len(leader.batch_sizes) for leader in leaders) >= 2_000 * 116 // 16_384


def test_the_partition_argument_and_column_choose_the_partition(
    fake_cluster: Any, leaders: list[Leader]
) -> None:
    with producer(fake_cluster) as sender:
        sender.send_arrow("events", pa.table({"value": [b"a", b"b"]}), partition=2).get(5)
        table = pa.table(
            {"value": [b"c", b"d", b"e"], "key": [b"k", b"k", b"k"], "partition": [1, None, 0]}
        )
        sender.send_arrow("events", table).get(timeout=5)
    hashed = partition_for_key(b"k", PARTITIONS)
    where = {r.value: p for p, leader in enumerate(leaders) for r in leader.records}
    assert where == {b"a": 2, b"b": 2, b"c": 1, b"d": hashed, b"e": 0}


def test_timestamps_headers_and_string_columns_arrive_as_sent(
    fake_cluster: Any, leaders: list[Leader]
) -> None:
    when = datetime(2026, 11, 27, 10, 0, 0, 123000, tzinfo=timezone.utc)
    table = pa.table(
        {
            "value": pa.array(["héllo", None], pa.string()),
            "key": pa.array(["k1", "k1"], pa.large_string()),
            "timestamp": pa.array([when, None], pa.timestamp("us", tz="UTC")),
            "headers": pa.array(
                [[{"key": "trace", "value": b"abc"}], []],
                pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
            ),
        }
    )
    with producer(fake_cluster) as sender:
        sender.send_arrow("events", table).get(timeout=5)
    (records,) = [leader.records for leader in leaders if leader.records]
    first, second = records
    assert (first.key, first.value, first.headers) == (
        b"k1",
        "héllo".encode(),
        (("trace", b"abc"),),
    )
    assert first.timestamp == int(when.timestamp() * 1000)
    assert (second.value, second.headers) == (None, ())
    assert second.timestamp > first.timestamp  # null: the time of the send


def test_a_table_from_poll_arrow_can_be_sent_on_as_it_is(
    fake_cluster: Any, leaders: list[Leader]
) -> None:
    from rafka.clients.fetcher import ARROW_SCHEMA

    polled = pa.Table.from_pylist(
        [
            {
                "key": None,
                "value": b"v",
                "topic": "elsewhere",
                "partition": 1,
                "offset": 7,
                "timestamp": datetime(2026, 1, 1, tzinfo=timezone.utc),
                "timestampType": 0,
                "headers": [],
            }
        ],
        schema=ARROW_SCHEMA,
    )
    with producer(fake_cluster) as sender:
        sender.send_arrow("events", polled).get(timeout=5)
    assert [r.value for r in leaders[1].records] == [b"v"]


@pytest.mark.parametrize(
    ("table", "error", "message"),
    [
        (pa.table({"key": [b"k"]}), TypeError, "needs a 'value' column"),
        (pa.table({"value": [1, 2]}), TypeError, "column 'value' must be binary or string"),
        (pa.table({"value": [b"a"], "partition": ["0"]}), TypeError, "'partition' must be"),
        (pa.table({"value": [b"a"], "timestamp": [1.5]}), TypeError, "'timestamp' must be"),
        (
            pa.table({"value": [b"a", b"b"], "partition": [0, 3]}),
            UnknownTopicOrPartitionError,
            "row 1",
        ),
        (pa.table({"value": [b"a", b"x" * 5_000]}), MessageTooLargeError, "row 1"),
    ],
)
def test_a_bad_table_is_refused_with_the_column_or_row_named_and_nothing_sent(
    fake_cluster: Any, leaders: list[Leader], table: pa.Table, error: type, message: str
) -> None:
    with producer(fake_cluster, max_request_size=4_096) as sender:
        with pytest.raises(error, match=message):
            sender.send_arrow("events", table)
        sender.flush(timeout=5)
    assert all(not leader.records for leader in leaders)


def test_runs_cut_rows_into_budgets_and_give_an_oversized_row_a_run_of_its_own() -> None:
    assert list(runs([40, 40, 40, 200, 10], 100)) == [
        (0, 2, 80),
        (2, 3, 40),
        (3, 4, 200),
        (4, 5, 10),
    ]
    assert list(runs([], 100)) == []


def test_row_sizes_count_keys_values_and_headers_as_the_builder_does() -> None:
    from rafka.protocol.records.builder import RecordBatchBuilder

    table = pa.table(
        {
            "value": [b"abc", None],
            "key": [None, b"kk"],
            "headers": pa.array(
                [[{"key": "h", "value": b"12"}], None],
                pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
            ),
        }
    )
    builder = RecordBatchBuilder(batch_size=1 << 30)
    empty = builder.estimated_size
    builder.append(0, None, b"abc", [("h", b"12")])
    first = builder.estimated_size - empty
    builder.append(0, b"kk", None)
    assert ProducerColumns.of(table, 0).row_sizes() == [
        first,
        builder.estimated_size - empty - first,
    ]
