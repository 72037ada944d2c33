"""Client metrics: Kafka's windowed rates, averages and maxima, kafka-python's names for the
producer's and consumer's ``metrics()``, consumer lag, what goes to Prometheus, and the reporter
that exports the clients of a process together."""

from __future__ import annotations

import math
from typing import Any

import pytest

from rafka.actors import names
from rafka.clients.client_metrics import (
    FETCH_GROUP,
    PRODUCER_GROUP,
    ConsumerSensors,
    MetricsConfig,
    ProducerSensors,
    WindowedStat,
    consumer_sensors,
    producer_sensors,
)
from rafka.clients.consumer import Consumer
from rafka.clients.metrics_reporter import MetricsReporter
from rafka.clients.producer import Producer
from rafka.metrics import catalog
from rafka.metrics.registry import MetricFamily, MetricsRegistry, total
from rafka.protocol.errors import Errors, InvalidConfigError
from rafka.protocol.messages.produce import ProduceRequest, ProduceResponse
from rafka.protocol.records.batch import read_header
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

TP = TopicPartition("txn", 0)
CONFIG = MetricsConfig(enabled=True, num_samples=2, window_s=30.0)


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# ---------------------------------------------------------------------------- windowed stats


def test_a_rate_counts_at_least_one_whole_window_besides_the_current_one() -> None:
    stat = WindowedStat(2, 30.0)
    stat.record(300, 0.0)
    # One second in: Kafka divides by the first window's second plus one whole window (31 s), so a
    # young stat does not read as a burst.
    assert stat.rate(1.0) == pytest.approx(300 / 31)
    stat.record(600, 45.0)
    assert stat.rate(50.0) == pytest.approx(900 / 50)


def test_windows_older_than_all_samples_are_dropped_but_totals_stay() -> None:
    stat = WindowedStat(2, 10.0)
    stat.record(5, 0.0)
    stat.record(1, 11.0)
    assert (stat.avg(12.0), stat.max(12.0)) == (3.0, 5.0)
    # At 20 s the window started at 0 s is two windows old and leaves; the one from 11 s stays.
    assert (stat.avg(20.0), stat.max(20.0)) == (1.0, 1.0)
    assert stat.rate(40.0) == 0.0 and stat.avg(40.0) == 0.0 and stat.max(40.0) == -math.inf
    assert (stat.count, stat.total) == (2, 6.0)


def test_a_full_window_gives_way_to_a_new_one_starting_at_its_first_observation() -> None:
    stat = WindowedStat(2, 10.0)
    for when, value in ((0.0, 1), (9.0, 2), (10.0, 7), (19.0, 3), (20.0, 4)):
        stat.record(value, when)
    # Windows start at 0, 10 and 20 s; two are kept, so the 0 s window's 1 and 2 are gone.
    assert stat.max(20.0) == 7.0
    assert stat.avg(20.0) == pytest.approx((7 + 3 + 4) / 3)
    assert stat.count_rate(20.0) == pytest.approx(3 / 10)


# ---------------------------------------------------------------------------- sensors


def test_producer_metrics_use_kafka_pythons_names_and_count_per_batch() -> None:
    clock = Clock()
    sensors = ProducerSensors("p1", CONFIG, clock)
    sensors.sent(100, 4000)
    sensors.sent(50, 2000)
    clock.now += 0.5
    sensors.answered(0.010)
    sensors.answered(0.030)
    sensors.retried(50)
    sensors.failed(50)
    view = sensors.view(in_flight=1)[PRODUCER_GROUP]
    assert view["record-send-total"] == 150
    assert view["record-send-rate"] == pytest.approx(150 / 30.5)
    assert view["records-per-request-avg"] == 75
    assert (view["batch-size-avg"], view["batch-size-max"]) == (3000, 4000)
    assert view["byte-rate"] == pytest.approx(6000 / 30.5)
    assert view["request-latency-avg"] == pytest.approx(20.0)
    assert view["request-latency-max"] == pytest.approx(30.0)
    assert (view["record-retry-total"], view["record-error-total"]) == (50, 50)
    assert view["record-retry-rate"] == pytest.approx(50 / 30.0)
    assert view["requests-in-flight"] == 1


def test_producer_counters_and_histograms_reach_the_registry_labelled_by_client_id() -> None:
    sensors = ProducerSensors("p1", CONFIG, Clock())
    sensors.sent(100, 4000)
    sensors.answered(0.002)
    sensors.retried(3)
    sensors.failed(2)
    families = sensors.registry.collect()
    assert total(families, catalog.CLIENT_RECORDS_SENT.name, client_id="p1") == 100
    assert total(families, catalog.CLIENT_RETRIES.name, client_id="p1") == 3
    assert total(families, catalog.CLIENT_RECORD_ERRORS.name, client_id="p1") == 2
    histograms = {f.name: f.histograms for f in families if f.histograms}
    (sizes,) = histograms[catalog.CLIENT_BATCH_SIZE.name]
    (latencies,) = histograms[catalog.CLIENT_REQUEST_LATENCY.name]
    assert (sizes.count, sizes.sum, sizes.labels) == (1, 4000, (("client_id", "p1"),))
    assert (latencies.count, latencies.sum) == (1, pytest.approx(2.0))


def test_consumer_lag_is_the_partitions_end_minus_its_position() -> None:
    sensors = ConsumerSensors("c1", CONFIG, Clock())
    other = TopicPartition("txn", 1)
    sensors.fetched(TP, 100, 5000, 0.020)
    sensors.fetched(other, 10, 0, 0.500)
    sensors.position(TP, 40)
    sensors.position(other, 10)
    sensors.consumed(40)
    view = sensors.view()
    assert view[f"{FETCH_GROUP}.txn-0"] == {"records-lag": 60}
    assert view[f"{FETCH_GROUP}.txn-1"] == {"records-lag": 0}
    fetch = view[FETCH_GROUP]
    assert fetch["records-lag-max"] == 60
    assert (fetch["records-consumed-total"], fetch["bytes-consumed-total"]) == (40, 5000)
    assert (fetch["fetch-size-avg"], fetch["fetch-size-max"]) == (2500, 5000)
    assert fetch["fetch-latency-avg"] == pytest.approx(260.0)
    assert fetch["fetch-latency-max"] == pytest.approx(500.0)
    assert fetch["fetch-total"] == 2
    assert fetch["fetch-rate"] == pytest.approx(2 / 30.0)
    lags = {
        dict(s.labels)["partition"]: s.value
        for f in sensors.registry.collect()
        if f.name == catalog.CLIENT_RECORDS_LAG.name
        for s in f.samples
    }
    assert lags == {"0": 60, "1": 0}


def test_a_forgotten_partition_leaves_the_view_and_its_exported_lag_drops_to_zero() -> None:
    sensors = ConsumerSensors("c1", CONFIG, Clock())
    sensors.fetched(TP, 100, 10, 0.001)
    sensors.position(TP, 40)
    sensors.forget([TP])
    assert f"{FETCH_GROUP}.txn-0" not in sensors.view()
    assert total(sensors.registry.collect(), catalog.CLIENT_RECORDS_LAG.name, partition=0) == 0
    sensors.position(TP, 50)  # an answer for the partition still in flight records nothing
    assert f"{FETCH_GROUP}.txn-0" not in sensors.view()


def test_metrics_disabled_record_nothing() -> None:
    off = MetricsConfig(enabled=False)
    producer = producer_sensors("p", off)
    producer.sent(10, 100)
    producer.answered(0.1)
    consumer = consumer_sensors("c", off)
    consumer.fetched(TP, 10, 100, 0.1)
    consumer.position(TP, 5)
    consumer.consumed(5)
    assert producer.view(0) == {} and consumer.view() == {}
    assert producer.registry.collect() == [] and consumer.registry.collect() == []


@pytest.mark.parametrize(
    "setting",
    [
        {"metrics_enabled": "false"},
        {"metrics_num_samples": 0},
        {"metrics_sample_window_ms": True},
        {"metrics_sample_window_ms": 1.5},
    ],
)
def test_bad_metrics_settings_are_refused(setting: dict[str, Any]) -> None:
    config = {
        "metrics_enabled": True,
        "metrics_num_samples": 2,
        "metrics_sample_window_ms": 30_000,
        **setting,
    }
    with pytest.raises(InvalidConfigError, match=next(iter(setting))):
        MetricsConfig.of(config)


# ---------------------------------------------------------------------------- the clients


class FlakyLeader:
    """A leader replica that refuses the first ``refusals`` produce requests, then appends."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.appended = 0

    def produce(self, request: ProduceRequest) -> ProduceResponse:
        if self.refusals:
            self.refusals -= 1
            return ProduceResponse(Errors.NOT_LEADER_OR_FOLLOWER, error_message="moving")
        base = self.appended
        self.appended += read_header(request.records).record_count
        return ProduceResponse(Errors.NONE, base_offset=base)


def test_a_producer_counts_every_attempt_of_a_batch_and_its_retries(fake_cluster: Any) -> None:
    fake_cluster.add_brokers(1)
    fake_cluster.add_topic("events", [(0, 0)])
    fake_cluster.actors[names.replica_actor_name("events", 0, 0)] = FlakyLeader(1)
    with Producer(
        transport=fake_cluster.transport, client_id="flaky", linger_ms=50, retry_backoff_ms=1
    ) as producer:
        for i in range(5):
            producer.send("events", b"%d" % i, partition=0)
        producer.flush(5)
        view = producer.metrics()[PRODUCER_GROUP]
    # As Kafka's producer counts them: records are counted as each attempt is sent.
    assert view["record-send-total"] == 10
    assert view["record-retry-total"] == 5
    assert view["record-error-total"] == 0
    assert view["request-latency-max"] >= 0.0
    with Producer(transport=fake_cluster.transport, metrics_enabled=False) as quiet:
        assert quiet.metrics() == {}


def test_a_consumer_lags_while_records_wait_and_not_once_it_caught_up(
    fake_cluster: Any, txn_log: Any
) -> None:
    for i in range(10):
        txn_log.records(b"%d" % i)
    consumer = Consumer(
        transport=fake_cluster.transport,
        fetch_max_wait_ms=10,
        max_poll_records=3,
        metrics_sample_window_ms=100,
    )
    consumer.assign([TP])
    consumer.seek(TP, 0)

    def polled(count: int) -> bool:
        consumer.poll(timeout_ms=20)
        return consumer.position(TP) >= count

    wait_until(lambda: polled(3), 5, "three records")
    lagging = consumer.metrics()
    assert lagging[f"{FETCH_GROUP}.txn-0"]["records-lag"] == 7
    assert lagging[FETCH_GROUP]["records-lag-max"] == 7
    wait_until(lambda: polled(10), 5, "every record")
    caught_up = consumer.metrics()
    assert caught_up[FETCH_GROUP]["records-consumed-total"] == 10
    assert caught_up[f"{FETCH_GROUP}.txn-0"]["records-lag"] == 0
    # Fetches that bring nothing keep recording a lag of 0; the lagging windows age out.
    wait_until(
        lambda: polled(10) and consumer.metrics()[FETCH_GROUP]["records-lag-max"] == 0,
        5,
        "records-lag-max to come down to 0",
    )
    consumer.close()


def test_read_committed_lag_is_counted_to_the_last_stable_offset(
    fake_cluster: Any, txn_log: Any
) -> None:
    txn_log.records(b"plain")
    txn_log.records(b"open", producer_id=1000, transactional=True)
    txn_log.records(b"after")
    with Consumer(
        transport=fake_cluster.transport, fetch_max_wait_ms=10, isolation_level="read_committed"
    ) as consumer:
        consumer.assign([TP])
        consumer.seek(TP, 0)
        wait_until(lambda: consumer.poll(timeout_ms=20) or None, 5, "the committed record")
        assert consumer.metrics()[f"{FETCH_GROUP}.txn-0"]["records-lag"] == 0


# ---------------------------------------------------------------------------- the reporter


def _registry(records: int) -> MetricsRegistry:
    registry = MetricsRegistry()
    registry.counter(catalog.CLIENT_RECORDS_SENT, client_id="p").inc(records)
    registry.gauge(catalog.CLIENT_RECORDS_LAG, client_id="c", topic="t", partition=0).set(records)
    return registry


def test_the_reporter_sums_clients_and_keeps_a_closed_clients_counts_but_not_its_gauges() -> None:
    exported: list[list[MetricFamily]] = []
    reporter = MetricsReporter(exported.append)
    first, second = _registry(5), _registry(7)
    reporter.add(first)
    reporter.add(second)
    reporter.export()
    assert total(exported[-1], catalog.CLIENT_RECORDS_SENT.name) == 12
    reporter.remove(first)  # exported once more as it stood, gauges included
    assert total(exported[-1], catalog.CLIENT_RECORDS_LAG.name) == 12
    reporter.export()
    assert total(exported[-1], catalog.CLIENT_RECORDS_SENT.name) == 12
    assert total(exported[-1], catalog.CLIENT_RECORDS_LAG.name) == 7
    reporter.remove(first)  # a second close changes nothing
    assert len(exported) == 3


class ChangingRegistry(MetricsRegistry):
    """A registry whose instruments change while a snapshot is taken."""

    def collect(self) -> list[MetricFamily]:
        raise RuntimeError("dictionary changed size during iteration")


def test_the_reporter_skips_a_round_rather_than_export_part_of_the_sum() -> None:
    exported: list[list[MetricFamily]] = []
    reporter = MetricsReporter(exported.append)
    reporter.add(_registry(5))
    reporter.add(ChangingRegistry())
    reporter.export()
    assert exported == []


def test_a_failing_export_does_not_reach_the_client() -> None:
    def refuse(_families: list[MetricFamily]) -> None:
        raise RuntimeError("Ray is gone")

    reporter = MetricsReporter(refuse)
    registry = _registry(1)
    reporter.add(registry)
    reporter.remove(registry)
