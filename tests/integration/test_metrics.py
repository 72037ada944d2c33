"""Broker metrics on a real cluster, read through rafka's scrape, rafka's Prometheus endpoint and
the Prometheus endpoints of Ray's nodes, and checked against what the cluster really holds."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Callable, Iterator

import pytest
import ray

from rafka.actors import spawn
from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.ray_head import free_loopback_port
from rafka.metrics.registry import MetricFamily, select, total
from rafka.metrics.scrape import scrape
from rafka.protocol.messages.offsets import LATEST_TIMESTAMP
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NS = "rafka-metrics"
CLUSTER = "metrics"
TOPIC = "metrics-orders"
RECORDS = 3000
PARTITIONS = 3
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][\w:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@pytest.fixture(scope="module")
def mcluster(own_cluster: Callable[..., LocalCluster]) -> Iterator[LocalCluster]:
    """Three brokers exporting every half second, whose leaders drop a silent follower from the
    ISR after 3 s."""
    with own_cluster(
        CLUSTER, NS, metrics_export_interval_ms=500, replica_lag_time_max_ms=3000
    ) as local:
        yield local


@pytest.fixture(scope="module")
def madmin(mcluster: LocalCluster) -> Admin:
    return mcluster.admin()


@pytest.fixture(scope="module")
def produced(mcluster: LocalCluster, madmin: Admin) -> int:
    """RECORDS records of 100 bytes in TOPIC, acknowledged by all replicas."""
    madmin.create_topic(TOPIC, PARTITIONS, 3)
    with mcluster.producer(acks="all") as producer:
        for i in range(RECORDS):
            producer.send(TOPIC, b"%099d" % i)
        producer.flush()
    return RECORDS


def _families() -> list[MetricFamily]:
    return scrape(NS)


def _parse(text: str) -> list[tuple[str, dict[str, str], float]]:
    samples = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or line.startswith("#"):
            continue
        labels = dict(_LABEL.findall(match["labels"] or ""))
        samples.append((match["name"], labels, float(match["value"])))
    return samples


def _sum(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    return sum(
        value
        for sample_name, sample_labels, value in samples
        if sample_name == name and labels.items() <= sample_labels.items()
    )


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


def test_messages_in_counts_every_record_the_leaders_appended(produced: int) -> None:
    families = _families()
    assert total(families, "rafka_messages_in_total", topic=TOPIC) == produced
    assert total(families, "rafka_bytes_in_total", topic=TOPIC) > produced * 100
    assert total(families, "rafka_total_produce_requests_total", topic=TOPIC) > 0
    produce_times = [
        h
        for item in families
        if item.name == "rafka_request_total_time_ms"
        for h in item.histograms
        if ("request", "Produce") in h.labels
    ]
    assert sum(h.count for h in produce_times) > 0


def test_partition_and_leader_counts_match_the_assignment(produced: int, madmin: Admin) -> None:
    families = _families()
    partitions = madmin.describe_topic(TOPIC).partitions
    for broker_id in range(3):
        led = sum(p.leader == broker_id for p in partitions)
        hosted = total(families, "rafka_partition_count", broker=broker_id)
        assert total(families, "rafka_leader_count", broker=broker_id) >= led
        assert hosted >= sum(broker_id in p.replicas for p in partitions)
    assert total(families, "rafka_active_controller_count") == 1
    log_ends = select(families, "rafka_log_end_offset", topic=TOPIC)
    assert len(log_ends) == PARTITIONS * 3
    assert sum(sample.value for sample in log_ends) == 3 * produced


def test_consumer_lag_is_the_high_watermark_minus_the_committed_offset(
    produced: int, madmin: Admin
) -> None:
    group = "metrics-lagging"
    committed = {TopicPartition(TOPIC, p): 100 * (p + 1) for p in range(PARTITIONS)}
    madmin.alter_group_offsets(group, committed)
    ends = madmin.list_offsets(committed, LATEST_TIMESTAMP)
    expected = {tp: ends[tp].offset - offset for tp, offset in committed.items()}
    assert sum(expected.values()) == produced - 600

    def lag_matches() -> bool:
        families = _families()
        return all(
            total(families, "rafka_consumergroup_lag", group=group, partition=tp.partition) == lag
            for tp, lag in expected.items()
        )

    wait_until(lag_matches, 30, "lag metrics equal to the true lag")
    families = _families()
    for tp, offset in committed.items():
        current = total(
            families, "rafka_consumergroup_current_offset", group=group, partition=tp.partition
        )
        assert current == offset


def test_rafka_endpoint_serves_every_broker_in_prometheus_text(produced: int) -> None:
    node = ray.get_runtime_context().get_node_id()
    endpoint = spawn.spawn_metrics_endpoint(NS, "127.0.0.1", free_loopback_port(), node)
    try:
        url = ray.get(endpoint.start.remote(), timeout=30)
        text = _get(url)
    finally:
        ray.kill(endpoint)
    samples = _parse(text)
    assert "# TYPE rafka_messages_in_total counter" in text
    assert "# TYPE rafka_request_total_time_ms histogram" in text
    assert _sum(samples, "rafka_messages_in_total", topic=TOPIC) == produced
    assert {labels["broker"] for name, labels, _ in samples if name == "rafka_partition_count"} == {
        "0",
        "1",
        "2",
    }
    assert _sum(samples, "rafka_active_controller_count") == 1


def _ray_endpoints() -> list[str]:
    return [
        f"http://127.0.0.1:{node['MetricsExportPort']}/metrics"
        for node in ray.nodes()
        if node.get("Alive") and node.get("MetricsExportPort")
    ]


def test_ray_node_endpoints_show_the_brokers_metrics(produced: int) -> None:
    endpoints = _ray_endpoints()
    assert endpoints, "no Ray node reports a metrics export port"

    def exported() -> float:
        return sum(
            _sum(_parse(_get(url)), "ray_rafka_messages_in_total", topic=TOPIC) for url in endpoints
        )

    wait_until(lambda: exported() >= produced, 90, "Ray's endpoints to show messages in")
    assert exported() == produced


def test_under_replicated_partitions_rise_when_a_follower_broker_dies_and_clear_on_return(
    mcluster: LocalCluster, madmin: Admin, produced: int
) -> None:
    partition = madmin.describe_topic(TOPIC).partitions[0]
    follower = next(r for r in partition.replicas if r != partition.leader)
    assert total(_families(), "rafka_under_replicated_partitions") == 0
    mcluster.kill_broker(follower)
    try:
        wait_until(
            lambda: total(_families(), "rafka_under_replicated_partitions") > 0,
            60,
            "under-replicated partitions after a follower's broker died",
        )
    finally:
        mcluster.start_broker(follower)
    wait_until(
        lambda: total(_families(), "rafka_under_replicated_partitions") == 0,
        120,
        "no under-replicated partitions once the broker returned",
    )
    # The controller removed the dead broker from the ISRs; the leader added it back.
    assert total(_families(), "rafka_isr_expands_total") > 0
