"""Produce, replicate and consume end to end through the Producer and Consumer clients."""

from __future__ import annotations

import os
import signal
import threading
import urllib.request

import pytest
import ray

from rafka.actors.replica.replica import MAX_CONCURRENCY
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.clients.records import ConsumerRecord
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.errors import Errors
from rafka.protocol.messages.fetch import FetchRequest
from rafka.protocol.messages.produce import ACKS_ALL, ProduceRequest
from rafka.protocol.records.builder import build_batch
from rafka.protocol.types import ReplicaPlacement, TopicPartition
from rafka.testing import serving_replica, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180), pytest.mark.usefixtures("cluster")]
NS = "rafka-test"

# Kafka's placement with start index 0: partition 0's preferred leader is broker 0, as these tests
# read it.
LEADS_ON_BROKER_0 = ReplicaPlacement(start_index=0)


def _consume_all(topic: str, partitions: int, expected: int) -> list:
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest", max_poll_records=10_000)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    records: list = []
    while len(records) < expected:
        batch = consumer.poll(timeout_ms=10_000)
        assert batch, f"no records after {len(records)} of {expected}"
        for part in batch.values():
            records.extend(part)
    consumer.close()
    return records


def test_records_keep_their_order_within_each_partition(admin: Admin, topic_name: str) -> None:
    admin.create_topic(topic_name, num_partitions=3, replication_factor=3)
    with Producer(namespace=NS, acks="all", linger_ms=2) as producer:
        futures = [
            producer.send(topic_name, value=str(i).encode(), key=f"key-{i % 10}".encode())
            for i in range(3000)
        ]
        producer.flush()
        metadata = [f.get(timeout=30) for f in futures]
    records = _consume_all(topic_name, 3, 3000)
    by_key: dict[bytes, list[int]] = {}
    for record in records:
        by_key.setdefault(record.key, []).append(int(record.value))
    for key, values in by_key.items():
        assert values == sorted(values), f"key {key!r} out of order"
    for record_meta in metadata[:3000]:
        assert record_meta.topic == topic_name
    offsets_per_partition: dict[int, list[int]] = {}
    for meta in metadata:
        offsets_per_partition.setdefault(meta.partition, []).append(meta.offset)
    for offsets in offsets_per_partition.values():
        assert offsets == list(range(len(offsets)))


def test_acks_zero_keeps_order_within_a_partition(admin: Admin, topic_name: str) -> None:
    # acks=0 waits for nothing, but the replica actor runs requests concurrently: the producer must
    # still send a partition's next batch only after the previous one ran.
    admin.create_topic(topic_name, num_partitions=1, replication_factor=1)
    with Producer(namespace=NS, acks=0, batch_size=256) as producer:
        for i in range(2000):
            producer.send(topic_name, value=str(i).encode(), partition=0)
        producer.flush()
    values = [int(record.value) for record in _consume_all(topic_name, 1, 2000)]
    assert values == list(range(2000))


def test_keyed_records_land_on_kafkas_murmur2_partition(admin: Admin, topic_name: str) -> None:
    admin.create_topic(topic_name, num_partitions=7, replication_factor=1)
    # Kafka's UtilsTest: murmur2("foobar") == -790332482, murmur2("abc") == 479470107.
    expected = {b"foobar": (-790332482 & 0x7FFFFFFF) % 7, b"abc": (479470107 & 0x7FFFFFFF) % 7}
    with Producer(namespace=NS) as producer:
        for key, partition in expected.items():
            assert producer.send(topic_name, b"v", key=key).get(timeout=30).partition == partition


def test_acks_all_returns_after_every_follower_has_the_batch(admin: Admin, topic_name: str) -> None:
    admin.create_topic(topic_name, num_partitions=1, replication_factor=3)
    with Producer(namespace=NS, acks="all") as producer:
        meta = producer.send(topic_name, b"replicated").get(timeout=30)
    for broker_id in range(3):
        replica = serving_replica(topic_name, 0, broker_id, NS)
        assert ray.get(replica.describe.remote(), timeout=30)["log_end_offset"] >= meta.offset + 1


def test_long_poll_fetch_wakes_when_data_arrives(admin: Admin, topic_name: str) -> None:
    admin.create_topic(
        topic_name, num_partitions=1, replication_factor=1, placement=LEADS_ON_BROKER_0
    )
    leader = serving_replica(topic_name, 0, 0, NS)
    pending = leader.fetch.remote(FetchRequest(0, max_wait_ms=60_000, min_bytes=1))
    ready, _ = ray.wait([pending], timeout=0.5)
    assert not ready, "a fetch with nothing to return must wait in the purgatory"
    ray.get(
        leader.produce.remote(ProduceRequest(build_batch([(None, b"wake", 1)]), acks=1)), timeout=30
    )
    response = ray.get(pending, timeout=30)
    assert response.records, "the parked fetch must return the new record, not time out empty"


def test_parked_acks_all_produces_cannot_starve_the_follower_fetches(
    admin: Admin, topic_name: str
) -> None:
    # Twice as many parked acks=all produces as the replica has handler threads:
    # the followers' fetches that complete them run in a thread pool of their
    # own. Starved, the followers would drop out of the ISR after
    # replica_lag_time_max_ms and every produce would fail min.insync.replicas=3.
    admin.create_topic(
        topic_name,
        num_partitions=1,
        replication_factor=3,
        config={"min.insync.replicas": "3"},
        placement=LEADS_ON_BROKER_0,
    )
    leader = serving_replica(topic_name, 0, 0, NS)
    batches = [build_batch([(None, str(i).encode(), 1)]) for i in range(2 * MAX_CONCURRENCY)]
    pending = [
        leader.produce.remote(ProduceRequest(batch, acks=ACKS_ALL, timeout_ms=120_000))
        for batch in batches
    ]
    responses = ray.get(pending, timeout=150)
    assert [r.error for r in responses] == [Errors.NONE] * len(batches)
    assert sorted(r.base_offset for r in responses) == list(range(len(batches)))


def test_records_above_the_high_watermark_stay_invisible_to_consumers(
    cluster: LocalCluster, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(
        topic_name, num_partitions=1, replication_factor=3, placement=LEADS_ON_BROKER_0
    )
    replicas = {b: serving_replica(topic_name, 0, b, NS) for b in range(3)}
    pids = [ray.get(replicas[b].describe.remote(), timeout=30)["pid"] for b in (1, 2)]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        response = ray.get(
            replicas[0].produce.remote(
                ProduceRequest(build_batch([(None, b"pending", 1)]), acks=1)
            ),
            timeout=30,
        )
        state = ray.get(replicas[0].describe.remote(), timeout=30)
        assert state["log_end_offset"] == response.base_offset + 1
        assert state["high_watermark"] <= response.base_offset
        fetched = ray.get(replicas[0].fetch.remote(FetchRequest(0, max_wait_ms=0)), timeout=30)
        assert fetched.records == b""
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic_name, 0)])
    records: list[ConsumerRecord] = []
    while not records:
        records = [r for part in consumer.poll(timeout_ms=10_000).values() for r in part]
    assert records[0].value == b"pending"


def test_consumer_seek_position_and_offset_lookups(admin: Admin, topic_name: str) -> None:
    admin.create_topic(topic_name, num_partitions=1, replication_factor=2)
    tp = TopicPartition(topic_name, 0)
    with Producer(namespace=NS, acks="all") as producer:
        for i in range(100):
            producer.send(topic_name, str(i).encode(), timestamp_ms=1_000_000 + i * 10)
        producer.flush()
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest")
    consumer.assign([tp])
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: 100}
    found = consumer.offsets_for_times({tp: 1_000_000 + 425})[tp]
    assert found is not None and found.offset == 43 and found.timestamp == 1_000_430
    consumer.seek(tp, 90)
    assert consumer.position(tp) == 90
    got: list[ConsumerRecord] = []
    while len(got) < 10:
        got += [r for part in consumer.poll(timeout_ms=10_000).values() for r in part]
    assert [r.offset for r in got] == list(range(90, 100))
    assert consumer.position(tp) == 100
    consumer.seek_to_beginning(tp)
    assert consumer.position(tp) == 0


def test_concurrent_producers_lose_nothing(admin: Admin, topic_name: str) -> None:
    admin.create_topic(topic_name, num_partitions=4, replication_factor=3)
    errors: list[BaseException] = []

    def produce(worker: int) -> None:
        try:
            with Producer(namespace=NS, acks="all") as producer:
                for i in range(500):
                    producer.send(topic_name, f"{worker}-{i}".encode())
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=produce, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    values = {r.value for r in _consume_all(topic_name, 4, 1500)}
    assert values == {f"{w}-{i}".encode() for w in range(3) for i in range(500)}


def _exported(name: str, client_id: str) -> float:
    """The sum of ``name``'s samples labelled ``client_id`` at every Ray node's Prometheus
    endpoint."""
    found = 0.0
    for node in ray.nodes():
        port = node.get("MetricsExportPort")
        if not node.get("Alive") or not port:
            continue
        url = f"http://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as answer:
            text = answer.read().decode()
        for line in text.splitlines():
            if line.startswith(name + "{") and f'client_id="{client_id}"' in line:
                found += float(line.rsplit(" ", 1)[1])
    return found


def test_client_metrics_count_what_was_sent_and_consumed_and_reach_rays_endpoints(
    admin: Admin, topic_name: str
) -> None:
    records = 3000
    admin.create_topic(topic_name, num_partitions=2, replication_factor=1)
    client_id = f"metrics-{topic_name}"
    with Producer(namespace=NS, client_id=client_id, linger_ms=5) as producer:
        for i in range(records):
            producer.send(topic_name, b"%099d" % i)
        producer.flush()
        sent = producer.metrics()["producer-metrics"]
    assert sent["record-send-total"] == records
    assert sent["record-error-total"] == 0
    assert sent["batch-size-avg"] >= 100 * sent["records-per-request-avg"]  # 100-byte values
    assert 0 < sent["request-latency-avg"] <= sent["request-latency-max"]

    consumer = Consumer(
        namespace=NS,
        client_id=client_id,
        auto_offset_reset="earliest",
        max_poll_records=100,
        fetch_max_wait_ms=100,
        metrics_sample_window_ms=500,
    )
    consumer.assign([TopicPartition(topic_name, p) for p in range(2)])
    taken = 0

    def consumed(count: int) -> bool:
        nonlocal taken
        taken += sum(len(part) for part in consumer.poll(timeout_ms=200).values())
        return taken >= count

    wait_until(lambda: consumed(1), 60, "the first records")
    behind = consumer.metrics()["consumer-fetch-manager-metrics"]
    assert behind["records-lag-max"] > 0
    wait_until(lambda: consumed(records), 60, "every record")
    # Empty fetches keep recording a lag of 0 until the windows that saw it lagging age out.
    wait_until(
        lambda: (
            consumed(records)
            and consumer.metrics()["consumer-fetch-manager-metrics"]["records-lag-max"] == 0
        ),
        30,
        "records-lag-max back to 0",
    )
    fetched = consumer.metrics()
    assert fetched["consumer-fetch-manager-metrics"]["records-consumed-total"] == records
    assert fetched["consumer-fetch-manager-metrics"]["bytes-consumed-total"] > 100 * records
    assert {
        fetched[f"consumer-fetch-manager-metrics.{topic_name}-{p}"]["records-lag"] for p in (0, 1)
    } == {0}
    consumer.close()

    wait_until(
        lambda: (
            _exported("ray_rafka_producer_record_send_total", client_id) >= records
            and _exported("ray_rafka_consumer_records_consumed_total", client_id) >= records
        ),
        90,
        "Ray's endpoints to show the clients' counts",
    )


def test_poll_arrow_mixed_with_poll_hands_out_each_record_once_and_commits(
    admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, num_partitions=2, replication_factor=2)
    with Producer(namespace=NS, acks="all", linger_ms=2) as producer:
        for i in range(400):
            producer.send(topic_name, str(i).encode(), partition=i % 2)
        producer.flush()
    group = f"{topic_name}-arrow"
    seen: list[tuple[int, int]] = []
    with Consumer(
        topic_name, namespace=NS, group_id=group, auto_offset_reset="earliest"
    ) as consumer:
        while len(seen) < 300:
            for part in consumer.poll(timeout_ms=10_000, max_records=7).values():
                seen += [(r.partition, r.offset) for r in part]
            table = consumer.poll_arrow(timeout_ms=10_000, max_records=50)
            seen += [(row["partition"], row["offset"]) for row in table.to_pylist()]
        consumer.commit()
    with Consumer(
        topic_name, namespace=NS, group_id=group, auto_offset_reset="earliest"
    ) as consumer:
        while len(seen) < 400:
            table = consumer.poll_arrow(timeout_ms=10_000)
            seen += [(row["partition"], row["offset"]) for row in table.to_pylist()]
    assert sorted(seen) == sorted((i % 2, i // 2) for i in range(400))
