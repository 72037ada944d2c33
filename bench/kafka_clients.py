"""Kafka-client benchmark: real Kafka clients (confluent-kafka and kafka-python) against rafka's
Kafka listener, with rafka's own clients beside them in the same run.

One cluster of 3 brokers, 6-partition topics (each created for its runs and deleted after them,
since every idle replica is a process taking CPU), 100-byte records, and ``__consumer_offsets``
created before anything is timed. Each producer sends the same number
of records with acks=1 and 1 MiB batches into its own RF 1 topic (confluent-kafka also with acks=all
into an RF 3 topic), and each consumer reads a topic from the start: confluent-kafka's both what
rafka's producer wrote (converted for it) and what confluent-kafka wrote (sent from the segment
files). A Kafka consumer's rate runs from its first record to its last, and the time it took to get
that first record is shown beside it.
Latency is confluent-kafka's acks=all produce on RF 3 at a paced 10,000 records/s, from send to
delivery report. The listener's own cost per request is an empty Metadata and an empty Fetch round
trip on one connection, next to a Ray actor call (the broker's ``ping``) from the same process.
Run it alone: ``.venv/bin/python bench/kafka_clients.py``.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import confluent_kafka
import ray
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from rafka.cli.perf import consumer_perf, producer_perf
from rafka.cluster.local_cluster import LocalCluster
from rafka.groups.offsets_codec import OFFSETS_TOPIC
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY
from rafka.testing import wait_until

NAMESPACE = "rafka-bench-wire"
RECORDS = 200_000
RECORD = b"x" * 100
PARTITIONS = 6
ROUND_TRIPS = 2_000
LATENCY_RATE = 10_000
LATENCY_RECORDS = 30_000
HEADER = ("client", "measure", "result")


@dataclass(frozen=True)
class Reading:
    """A consumer's run: records/s from its first record to its last (kafka-consumer-perf-test's
    fetch rate, which leaves out joining), and seconds from assignment to the first record."""

    records_per_s: float
    first_record_s: float

    def __str__(self) -> str:
        return f"{self.records_per_s:,.0f} records/s (first after {self.first_record_s:.2f} s)"


def _read(poll: Callable[[], int], records: int) -> Reading:
    """Call ``poll`` (records it returned) until ``records`` are read, timing the run."""
    assigned = time.perf_counter()
    seen = poll()
    while not seen:
        seen = poll()
    first, first_seen = time.perf_counter(), seen
    while seen < records:
        seen += poll()
    return Reading((seen - first_seen) / (time.perf_counter() - first), first - assigned)


def _kafka_python_produce(bootstrap: str, topic: str, records: int) -> float:
    """records/s of kafka-python's KafkaProducer, acks=1, until every record is acknowledged."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, batch_size=1_048_576, linger_ms=5)
    started = time.perf_counter()
    for _ in range(records):
        producer.send(topic, RECORD)
    producer.flush(300)
    elapsed = time.perf_counter() - started
    producer.close()
    return records / elapsed


def _kafka_python_consume(bootstrap: str, topic: str, records: int) -> Reading:
    """kafka-python's KafkaConsumer reading ``records`` from the start."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=4 << 20,
        fetch_max_bytes=16 << 20,
    )
    consumer.assign([KafkaTopicPartition(topic, p) for p in range(PARTITIONS)])
    reading = _read(
        lambda: sum(
            len(batch) for batch in consumer.poll(timeout_ms=50, max_records=100_000).values()
        ),
        records,
    )
    consumer.close()
    return reading


def confluent_produce(
    bootstrap: str, topic: str, records: int, acks: str, security: dict[str, Any] | None = None
) -> float:
    """records/s of confluent-kafka's Producer until every record is acknowledged (``security``:
    the client's security settings, if any)."""
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "batch.size": 1_048_576,
            "queue.buffering.max.messages": 1_000_000,
            **(security or {}),
        }
    )
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, RECORD)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.01)
    if producer.flush(300) != 0:
        raise RuntimeError("confluent-kafka did not deliver every record within 300 s")
    return records / (time.perf_counter() - started)


def confluent_consume(
    bootstrap: str, topic: str, records: int, security: dict[str, Any] | None = None
) -> Reading:
    """confluent-kafka's Consumer reading ``records`` from the start (``security``: the client's
    security settings, if any)."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 16 << 20,
            "max.partition.fetch.bytes": 4 << 20,
            **(security or {}),
        }
    )
    consumer.assign(
        [
            confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
            for p in range(PARTITIONS)
        ]
    )
    # A short timeout: consume() waits for all 10,000 records or the timeout, and the last call
    # would otherwise wait out the timeout for records that never come.
    reading = _read(
        lambda: sum(1 for m in consumer.consume(10_000, 0.05) if m.error() is None), records
    )
    consumer.close()
    return reading


def create_offsets_topic(bootstrap: str, admin: Any) -> None:
    """Have the cluster create ``__consumer_offsets`` before anything is timed: the first consumer
    with a group id triggers it, and its replica actors starting would slow whatever ran next."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench"})
    consumer.committed([confluent_kafka.TopicPartition("native", 0)], timeout=120)
    consumer.close()
    # In sync means every replica actor has started and fetches.
    wait_until(
        lambda: all(
            p.leader >= 0 and len(p.isr) == len(p.replicas)
            for p in admin.describe_topic(OFFSETS_TOPIC).partitions
        ),
        300,
        "every __consumer_offsets replica to be in sync",
    )


def _confluent_latency_ms(bootstrap: str, topic: str) -> tuple[float, float]:
    """p50 and p99 milliseconds from send to delivery report of acks=all produce at a paced
    ``LATENCY_RATE`` records/s."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    latencies: list[float] = []

    def delivered(sent: float) -> Callable[[Any, Any], None]:
        def report(error: Any, _message: Any) -> None:
            if error is None:
                latencies.append(time.perf_counter() - sent)

        return report

    started = time.perf_counter()
    for i in range(LATENCY_RECORDS):
        due = started + i / LATENCY_RATE
        while (now := time.perf_counter()) < due:
            producer.poll(max(0.0, min(0.001, due - now)))
        producer.produce(topic, RECORD, on_delivery=delivered(time.perf_counter()))
        producer.poll(0)
    producer.flush(60)
    if len(latencies) != LATENCY_RECORDS:
        raise RuntimeError(f"{LATENCY_RECORDS - len(latencies)} records were not delivered")
    latencies.sort()
    return (
        latencies[len(latencies) // 2] * 1000,
        latencies[int(len(latencies) * 0.99)] * 1000,
    )


def _round_trip_us(bootstrap: str, header: RequestHeader, body: dict[str, object]) -> float:
    """Microseconds per request and answer on one connection."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    frame = DEFAULT_REGISTRY.encode_request(header, body)
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        started = time.perf_counter()
        for _ in range(ROUND_TRIPS):
            sock.sendall(frame)
            (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
            sock.recv(size, socket.MSG_WAITALL)
        return (time.perf_counter() - started) / ROUND_TRIPS * 1e6


def _metadata_round_trip_us(bootstrap: str) -> float:
    """Microseconds per empty Metadata request (v9) and answer."""
    return _round_trip_us(bootstrap, RequestHeader(3, 9, 1, "bench"), {"topics": []})


def _fetch_round_trip_us(bootstrap: str) -> float:
    """Microseconds per empty Fetch request (v4, no partitions, no wait) and answer."""
    body: dict[str, object] = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "topics": []}
    return _round_trip_us(bootstrap, RequestHeader(1, 4, 1, "bench"), body)


def _ray_call_us(cluster: LocalCluster) -> float:
    """Microseconds per Ray actor call to a broker (``ping``) from this process."""
    broker = cluster.brokers[0]
    ray.get(broker.ping.remote())
    started = time.perf_counter()
    for _ in range(ROUND_TRIPS):
        ray.get(broker.ping.remote())
    return (time.perf_counter() - started) / ROUND_TRIPS * 1e6


def run(records: int = RECORDS) -> list[tuple[str, ...]]:
    """Measure every kind of client on one cluster; table rows (client, measure, result)."""
    with tempfile.TemporaryDirectory(prefix="rafka-bench-wire-") as data_dir:
        with LocalCluster(brokers=3, data_dir=data_dir, namespace=NAMESPACE) as cluster:
            admin = cluster.admin()
            bootstrap = cluster.bootstrap_servers()
            admin.create_topic("native", PARTITIONS, 1)
            create_offsets_topic(bootstrap, admin)
            native_config = {"acks": 1, "batch_size": 1_048_576, "linger_ms": 5}
            native_produce = producer_perf(
                NAMESPACE, "native", records, len(RECORD), -1, native_config, progress=False
            ).records_per_s
            # Each other topic lives only for its own runs: every replica is a process, and idle
            # ones would take CPU from the runs after them.
            admin.create_topic("confluent", PARTITIONS, 1)
            confluent_acks1 = confluent_produce(bootstrap, "confluent", records, "1")
            native_consume = consumer_perf(
                NAMESPACE, "confluent", records, progress=False
            ).records_per_s
            confluent_own = confluent_consume(bootstrap, "confluent", records)
            admin.delete_topics(["confluent"])
            admin.create_topic("confluent-rf3", PARTITIONS, 3)
            confluent_rf3 = confluent_produce(bootstrap, "confluent-rf3", records, "all")
            admin.delete_topics(["confluent-rf3"])
            admin.create_topic("kafka-python", PARTITIONS, 1)
            python_produce = _kafka_python_produce(bootstrap, "kafka-python", records)
            admin.delete_topics(["kafka-python"])
            confluent_reads_native = confluent_consume(bootstrap, "native", records)
            python_consume = _kafka_python_consume(bootstrap, "native", records)
            admin.delete_topics(["native"])
            admin.create_topic("latency", PARTITIONS, 3)
            p50, p99 = _confluent_latency_ms(bootstrap, "latency")
            metadata_us = _metadata_round_trip_us(bootstrap)
            fetch_us = _fetch_round_trip_us(bootstrap)
            ray_us = _ray_call_us(cluster)
    produce, rf3 = "produce, RF 1, acks=1", "produce, RF 3, acks=all"
    return [
        ("rafka Producer", produce, f"{native_produce:,.0f} records/s"),
        ("confluent-kafka Producer", produce, f"{confluent_acks1:,.0f} records/s"),
        ("confluent-kafka Producer", rf3, f"{confluent_rf3:,.0f} records/s"),
        ("kafka-python KafkaProducer", produce, f"{python_produce:,.0f} records/s"),
        ("rafka Consumer", "read what confluent-kafka wrote", f"{native_consume:,.0f} records/s"),
        ("confluent-kafka Consumer", "read what rafka wrote", str(confluent_reads_native)),
        ("confluent-kafka Consumer", "read what confluent-kafka wrote", str(confluent_own)),
        ("kafka-python KafkaConsumer", "read what rafka wrote", str(python_consume)),
        (
            "confluent-kafka Producer",
            f"acks=all latency, RF 3, {LATENCY_RATE:,} records/s",
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms",
        ),
        ("raw socket", "empty Metadata round trip", f"{metadata_us:,.0f} µs"),
        ("raw socket", "empty Fetch round trip", f"{fetch_us:,.0f} µs"),
        ("Ray", "actor call (broker ping) round trip", f"{ray_us:,.0f} µs"),
    ]


def title(records: int) -> str:
    """The table's title."""
    return f"Kafka clients over the wire (3 brokers, RF 1, {records:,} records of 100 bytes)"


def main() -> None:
    """Print the rows as a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=RECORDS, help="records per client run")
    records = parser.parse_args().records
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    print_table(title(records), HEADER, run(records))


if __name__ == "__main__":
    main()
