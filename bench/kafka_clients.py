"""Kafka-client benchmark: a real Kafka client (kafka-python) against rafka's Kafka listener, with
rafka's own clients beside it in the same run.

One cluster of 3 brokers, a 6-partition topic at RF 1, 100-byte records. Each producer sends the
same number of records with acks=1 and 1 MiB batches into its own topic, and each consumer reads a
topic from the start. The listener's own cost per request is an empty Metadata round trip on one
connection, next to a Ray actor call (the broker's ``ping``) from the same process. Run it alone:
``.venv/bin/python bench/kafka_clients.py``.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

import ray
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from rafka.cli.perf import consumer_perf, producer_perf
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY

NAMESPACE = "rafka-bench-wire"
RECORDS = 200_000
RECORD = b"x" * 100
PARTITIONS = 6
ROUND_TRIPS = 2_000
HEADER = ("client", "measure", "result")


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


def _kafka_python_consume(bootstrap: str, topic: str, records: int) -> float:
    """records/s of kafka-python's KafkaConsumer reading ``records`` from the start."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=4 << 20,
        fetch_max_bytes=16 << 20,
    )
    consumer.assign([KafkaTopicPartition(topic, p) for p in range(PARTITIONS)])
    seen = 0
    started = time.perf_counter()
    while seen < records:
        for batch in consumer.poll(timeout_ms=1000, max_records=100_000).values():
            seen += len(batch)
    elapsed = time.perf_counter() - started
    consumer.close()
    return records / elapsed


def _metadata_round_trip_us(bootstrap: str) -> float:
    """Microseconds per empty Metadata request and answer on one connection."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    header = RequestHeader(3, 9, 1, "bench")
    frame = DEFAULT_REGISTRY.encode_request(header, {"topics": []})
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        started = time.perf_counter()
        for _ in range(ROUND_TRIPS):
            sock.sendall(frame)
            (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
            sock.recv(size, socket.MSG_WAITALL)
        return (time.perf_counter() - started) / ROUND_TRIPS * 1e6


def _ray_call_us(cluster: LocalCluster) -> float:
    """Microseconds per Ray actor call to a broker (``ping``) from this process."""
    broker = cluster.brokers[0]
    ray.get(broker.ping.remote())
    started = time.perf_counter()
    for _ in range(ROUND_TRIPS):
        ray.get(broker.ping.remote())
    return (time.perf_counter() - started) / ROUND_TRIPS * 1e6


def run(records: int = RECORDS) -> list[tuple[str, ...]]:
    """Measure both kinds of client on one cluster; table rows (client, measure, result)."""
    with tempfile.TemporaryDirectory(prefix="rafka-bench-wire-") as data_dir:
        with LocalCluster(brokers=3, data_dir=data_dir, namespace=NAMESPACE) as cluster:
            admin = cluster.admin()
            for topic in ("native", "wire"):
                admin.create_topic(topic, PARTITIONS, 1)
            bootstrap = cluster.bootstrap_servers()
            native_config = {"acks": 1, "batch_size": 1_048_576, "linger_ms": 5}
            native_produce = producer_perf(
                NAMESPACE, "native", records, len(RECORD), -1, native_config, progress=False
            ).records_per_s
            wire_produce = _kafka_python_produce(bootstrap, "wire", records)
            native_consume = consumer_perf(NAMESPACE, "wire", records, progress=False).records_per_s
            wire_consume = _kafka_python_consume(bootstrap, "native", records)
            metadata_us = _metadata_round_trip_us(bootstrap)
            ray_us = _ray_call_us(cluster)
    return [
        ("rafka Producer", "produce, RF 1, acks=1", f"{native_produce:,.0f} records/s"),
        ("kafka-python KafkaProducer", "produce, RF 1, acks=1", f"{wire_produce:,.0f} records/s"),
        ("rafka Consumer", "read what kafka-python wrote", f"{native_consume:,.0f} records/s"),
        ("kafka-python KafkaConsumer", "read what rafka wrote", f"{wire_consume:,.0f} records/s"),
        ("raw socket", "empty Metadata round trip", f"{metadata_us:,.0f} µs"),
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
