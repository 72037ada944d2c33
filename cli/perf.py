"""``rafka perf produce`` / ``consume``: kafka-producer-perf-test and kafka-consumer-perf-test.

Both print Kafka's summary lines and return their figures, so ``make bench`` reuses them. Producer
latency is measured per record from ``send`` to its acknowledgement, on every record or on an evenly
spaced sample when more than ``LATENCY_SAMPLES`` records are sent.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.cluster.timeline import percentile
from rafka.protocol.types import TopicPartition

VALUE = attrgetter("value")

LATENCY_SAMPLES = 20_000
# Rows per table in the columnar producer run: about 10 MB of 100-byte records.
ARROW_ROWS = 100_000


@dataclass(frozen=True)
class ProducerPerf:
    """Figures of one producer run."""

    records: int
    seconds: float
    record_size: int
    latencies_ms: list[float]

    @property
    def records_per_s(self) -> float:
        """Throughput in records/s."""
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        """Throughput in MB/s of record values."""
        return self.records * self.record_size / self.seconds / 1e6

    def percentile(self, fraction: float) -> float:
        """Latency at ``fraction`` (0.5 = p50) in ms."""
        return percentile(self.latencies_ms, fraction)

    def summary(self) -> str:
        """kafka-producer-perf-test's closing line."""
        lat = self.latencies_ms
        return (
            f"{self.records} records sent, {self.records_per_s:.1f} records/sec "
            f"({self.mb_per_s:.2f} MB/sec), "
            f"{sum(lat) / max(1, len(lat)):.2f} ms avg latency, "
            f"{max(lat, default=float('nan')):.2f} ms max latency, "
            f"{self.percentile(0.5):.0f} ms 50th, {self.percentile(0.95):.0f} ms 95th, "
            f"{self.percentile(0.99):.0f} ms 99th, {self.percentile(0.999):.0f} ms 99.9th."
        )


@dataclass(frozen=True)
class ConsumerPerf:
    """Figures of one consumer run."""

    records: int
    bytes: int
    seconds: float

    @property
    def records_per_s(self) -> float:
        """Throughput in records/s."""
        return self.records / self.seconds

    def summary(self) -> str:
        """kafka-consumer-perf-test's header and data line."""
        mb = self.bytes / 1e6
        return (
            "data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec\n"
            f"{mb:.4f}, {mb / self.seconds:.4f}, {self.records}, {self.records_per_s:.4f}"
        )


class Progress:
    """A one-line progress bar on stderr, redrawn at most five times a second."""

    def __init__(self, total: int, label: str, enabled: bool = True) -> None:
        self.total = total
        self.label = label
        self.enabled = enabled and total > 0
        self.started = time.perf_counter()
        self._last = 0.0

    def update(self, done: int, force: bool = False) -> None:
        """Redraw if due."""
        now = time.perf_counter()
        if not self.enabled or (not force and now - self._last < 0.2):
            return
        self._last = now
        fraction = min(1.0, done / self.total)
        bar = "#" * int(fraction * 30)
        rate = done / max(now - self.started, 1e-9)
        print(
            f"\r{self.label} [{bar:<30}] {done:>10,}/{self.total:,} {rate:>12,.0f} records/s",
            end="",
            file=sys.stderr,
            flush=True,
        )

    def close(self, done: int) -> None:
        """Final redraw and newline."""
        self.update(done, force=True)
        if self.enabled:
            print(file=sys.stderr)


def producer_perf(
    namespace: str,
    topic: str,
    num_records: int,
    record_size: int,
    throughput: float = -1,
    producer_config: dict[str, Any] | None = None,
    progress: bool = True,
    columnar: bool = False,
) -> ProducerPerf:
    """Send ``num_records`` records of ``record_size`` bytes, ``throughput`` records/s at most.

    A throughput of -1 sends unthrottled. ``columnar`` sends Arrow tables of ``ARROW_ROWS`` records
    with ``send_arrow``, unthrottled, and samples each table's latency.
    """
    if columnar:
        return _columnar_producer_perf(
            namespace, topic, num_records, record_size, producer_config, progress
        )
    payload = b"x" * record_size
    sample_every = max(1, num_records // LATENCY_SAMPLES)
    latencies: list[float] = []
    bar = Progress(num_records, "produce", progress)
    clock = time.perf_counter

    def acked(sent_at: float, _metadata: Any) -> None:
        latencies.append((clock() - sent_at) * 1000)

    with Producer(namespace=namespace, **(producer_config or {})) as producer:
        started = clock()
        for i in range(num_records):
            future = producer.send(topic, payload)
            if i % sample_every == 0:
                future.add_callback(acked, clock())
            if i & 1023 == 0:
                bar.update(i)
            if throughput > 0 and i & 15 == 0:
                # Kafka's ThroughputThrottler: sleep whenever
                # ahead of schedule, checked every few records.
                ahead = i / throughput - (clock() - started)
                if ahead > 0:
                    time.sleep(ahead)
        producer.flush()
        seconds = clock() - started
    bar.close(num_records)
    return ProducerPerf(num_records, seconds, record_size, latencies)


def _columnar_producer_perf(
    namespace: str,
    topic: str,
    num_records: int,
    record_size: int,
    producer_config: dict[str, Any] | None,
    progress: bool,
) -> ProducerPerf:
    """``producer_perf`` through ``send_arrow``: one table, sent again and again."""
    table = pa.table({"value": pa.array([b"x" * record_size] * min(num_records, ARROW_ROWS))})
    latencies: list[float] = []
    bar = Progress(num_records, "produce", progress)
    clock = time.perf_counter
    with Producer(namespace=namespace, **(producer_config or {})) as producer:
        started = clock()
        in_flight: list[tuple[float, Any]] = []
        sent = 0
        while sent < num_records:
            rows = table.slice(0, min(table.num_rows, num_records - sent))
            in_flight.append((clock(), producer.send_arrow(topic, rows)))
            sent += rows.num_rows
            bar.update(sent)
            while in_flight and (len(in_flight) > 8 or in_flight[0][1].is_done):
                sent_at, future = in_flight.pop(0)
                future.get()
                latencies.append((clock() - sent_at) * 1000)
        producer.flush()
        for sent_at, future in in_flight:
            future.get()
            latencies.append((clock() - sent_at) * 1000)
        seconds = clock() - started
    bar.close(num_records)
    return ProducerPerf(num_records, seconds, record_size, latencies)


def consumer_perf(
    namespace: str,
    topic: str,
    messages: int,
    timeout_ms: int = 30_000,
    progress: bool = True,
    consumer_config: dict[str, Any] | None = None,
    columnar: bool = False,
    partitions: Sequence[int] | None = None,
) -> ConsumerPerf:
    """Read ``messages`` records of ``topic`` from the beginning of every partition, or only of
    ``partitions`` when given, with ``poll`` or (``columnar``) ``poll_arrow``.

    Gives up after ``timeout_ms`` without data, so fewer records than ``messages`` may be counted.
    """
    consumer = Consumer(
        namespace=namespace,
        **{
            "auto_offset_reset": "earliest",
            "max_poll_records": 100_000,
            "max_partition_fetch_bytes": 4 << 20,
            **(consumer_config or {}),
        },
    )
    if partitions is None:
        partitions = sorted(consumer.partitions_for_topic(topic) or set())
    consumer.assign([TopicPartition(topic, p) for p in partitions])
    consumer.seek_to_beginning()
    bar = Progress(messages, "consume", progress)
    count = size = 0
    started = time.perf_counter()
    last_data = started
    while count < messages:
        if columnar:
            table = consumer.poll_arrow(timeout_ms=100)
            got = table.num_rows
            if got:
                count += got
                size += pc.sum(pc.binary_length(table.column("value"))).as_py() or 0
        else:
            polled = consumer.poll(timeout_ms=100)
            got = len(polled)
            for records in polled.values():
                count += len(records)
                size += sum(map(len, filter(None, map(VALUE, records))))
        now = time.perf_counter()
        if not got:
            if (now - last_data) * 1000 > timeout_ms:
                break
            continue
        last_data = now
        bar.update(count)
    seconds = time.perf_counter() - started
    bar.close(count)
    consumer.close()
    return ConsumerPerf(count, size, seconds)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka perf produce|consume`` (the perf tools' names)."""
    sub = parser.add_subparsers(dest="perf_command", required=True)
    produce = sub.add_parser("produce", help="kafka-producer-perf-test")
    produce.add_argument("--topic", required=True)
    produce.add_argument("--num-records", type=int, required=True)
    produce.add_argument("--record-size", type=int, default=100)
    produce.add_argument("--throughput", type=float, default=-1, help="records/s cap; -1 for none")
    produce.add_argument("--acks", default="1")
    produce.add_argument(
        "--producer-props",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="producer settings, e.g. batch_size=1048576 linger_ms=5",
    )
    consume = sub.add_parser("consume", help="kafka-consumer-perf-test")
    consume.add_argument("--topic", required=True)
    consume.add_argument("--messages", type=int, required=True)
    consume.add_argument(
        "--timeout", type=int, default=30_000, help="ms without data before giving up"
    )
    consume.add_argument(
        "--columnar", action="store_true", help="read with poll_arrow (Arrow tables), not poll"
    )


def _coerce(value: str) -> Any:
    for convert in (int, float):
        try:
            return convert(value)
        except ValueError:
            continue
    return value


def run(args: argparse.Namespace, namespace: str) -> int:
    """Execute ``rafka perf``."""
    if args.perf_command == "produce":
        config = {
            k.replace(".", "_"): _coerce(v)
            for k, v in (item.split("=", 1) for item in args.producer_props)
        }
        config["acks"] = args.acks
        result = producer_perf(
            namespace, args.topic, args.num_records, args.record_size, args.throughput, config
        )
        print(result.summary())
    else:
        consumed = consumer_perf(
            namespace, args.topic, args.messages, args.timeout, columnar=args.columnar
        )
        print(consumed.summary())
    return 0
