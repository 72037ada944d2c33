"""What a partition replica counts: Kafka's BrokerTopicMetrics, request times, ISR changes and log
gauges, recorded on the replica's own hot path and reported with its status.

Requests are timed where they enter the broker: a native client's produce and fetch at the replica
(``produce_answered``, ``fetch_answered``), a Kafka client's at the listener, which calls the
replica's ``append`` and region fetches that are not timed again here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sized

from rafka.actors.replica.partition import Partition, Role
from rafka.metrics import catalog
from rafka.metrics.broker_view import ReplicaReport, ReplicaStatus
from rafka.metrics.registry import MetricsRegistry
from rafka.protocol.errors import Errors
from rafka.protocol.messages.fetch import CONSUMER_REPLICA_ID, FetchRequest, FetchResponse

FETCH_CONSUMER = "FetchConsumer"
FETCH_FOLLOWER = "FetchFollower"
PRODUCE = "Produce"


class ReplicaMetrics:
    """The instruments of one partition replica."""

    def __init__(
        self,
        partition: Partition,
        purgatories: Mapping[str, Sized],
        enabled: bool = True,
    ) -> None:
        self.partition = partition
        self.registry = registry = MetricsRegistry(enabled)
        broker, topic = partition.broker_id, partition.topic
        self.messages_in = registry.counter(catalog.MESSAGES_IN, broker=broker, topic=topic)
        self.bytes_in = registry.counter(catalog.BYTES_IN, broker=broker, topic=topic)
        self.bytes_out = registry.counter(catalog.BYTES_OUT, broker=broker, topic=topic)
        self.replication_bytes_out = registry.counter(
            catalog.REPLICATION_BYTES_OUT, broker=broker, topic=topic
        )
        self.produce_requests = registry.counter(
            catalog.PRODUCE_REQUESTS, broker=broker, topic=topic
        )
        self.fetch_requests = registry.counter(catalog.FETCH_REQUESTS, broker=broker, topic=topic)
        self.failed_produce = registry.counter(
            catalog.FAILED_PRODUCE_REQUESTS, broker=broker, topic=topic
        )
        self.failed_fetch = registry.counter(
            catalog.FAILED_FETCH_REQUESTS, broker=broker, topic=topic
        )
        self.isr_shrinks = registry.counter(catalog.ISR_SHRINKS, broker=broker)
        self.isr_expands = registry.counter(catalog.ISR_EXPANDS, broker=broker)
        self._requests = {
            kind: registry.counter(catalog.REQUESTS, broker=broker, request=kind)
            for kind in (PRODUCE, FETCH_CONSUMER, FETCH_FOLLOWER)
        }
        self._times = {
            kind: registry.histogram(catalog.REQUEST_TOTAL_TIME, broker=broker, request=kind)
            for kind in (PRODUCE, FETCH_CONSUMER, FETCH_FOLLOWER)
        }
        for operation, purgatory in purgatories.items():
            registry.computed(
                catalog.PURGATORY_SIZE,
                purgatory.__len__,
                broker=broker,
                delayed_operation=operation,
            )
        labels = {"broker": broker, "topic": topic, "partition": partition.partition}
        log = partition.log
        registry.computed(catalog.LOG_SIZE, lambda: log.size_in_bytes, **labels)
        registry.computed(catalog.LOG_START_OFFSET, lambda: log.log_start_offset, **labels)
        registry.computed(catalog.LOG_END_OFFSET, lambda: log.log_end_offset, **labels)
        registry.computed(
            catalog.HIGH_WATERMARK,
            lambda: partition.high_watermark if partition.role is Role.LEADER else -1,
            **labels,
        )

    def appended(self, records: int, size_in_bytes: int) -> None:
        """A leader appended a producer's (or coordinator's) batches."""
        self.messages_in.inc(records)
        self.bytes_in.inc(size_in_bytes)

    def produce_answered(self, error: Errors, elapsed_ms: float) -> None:
        """A native produce request was answered after ``elapsed_ms``."""
        self.produce_requests.inc()
        self._requests[PRODUCE].inc()
        self._times[PRODUCE].observe(elapsed_ms)
        if error is not Errors.NONE:
            self.failed_produce.inc()

    def fetch_answered(
        self, request: FetchRequest, response: FetchResponse, elapsed_ms: float
    ) -> None:
        """A fetch was answered: its bytes count out (to a consumer or a follower); a native
        one is also counted and timed as a request of its kind."""
        consumer = request.replica_id == CONSUMER_REPLICA_ID
        (self.bytes_out if consumer else self.replication_bytes_out).inc(response.size)
        if response.error is not Errors.NONE:
            self.failed_fetch.inc()
        if request.file_regions:  # the Kafka listener times its own requests
            return
        kind = FETCH_CONSUMER if consumer else FETCH_FOLLOWER
        self.fetch_requests.inc()
        self._requests[kind].inc()
        self._times[kind].observe(elapsed_ms)

    def isr_changed(self, before: int, after: int) -> None:
        """The leader's ISR change was accepted."""
        if after < before:
            self.isr_shrinks.inc()
        elif after > before:
            self.isr_expands.inc()

    def report(self, min_insync_replicas: int) -> ReplicaReport:
        """The replica's families and status."""
        partition = self.partition
        status = ReplicaStatus(
            partition.topic,
            partition.partition,
            partition.role is Role.LEADER,
            len(partition.replicas),
            len(partition.isr),
            min_insync_replicas,
            partition.high_watermark,
        )
        return ReplicaReport(status, tuple(self.registry.collect()))
