"""The broker's metrics: its Kafka listener's request times, and one snapshot of all it hosts.

``snapshot`` asks the broker's replicas, group coordinator and controller for their reports (each
is a process of its own) and derives the broker's families with ``rafka.metrics.broker_view``.
Consumer lag needs the high watermark of every partition a group committed, and other brokers lead
some of them: each broker keeps the high watermarks its leaders reported in its last snapshot, and
answers peers from that (``high_watermarks``) rather than asking its replicas again. ``export``
runs every ``metrics.export.interval.ms``: it takes a snapshot and hands it to Ray's metrics system
from the broker's own process, so each Ray node's endpoint shows the brokers it runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import ray

from rafka.actors import names
from rafka.metrics import catalog
from rafka.metrics.broker_view import (
    CoordinatorReport,
    ReplicaReport,
    broker_families,
    consumer_lag,
    leader_high_watermarks,
)
from rafka.metrics.ray_export import RayExporter
from rafka.metrics.registry import Counter, Histogram, MetricFamily, MetricsRegistry
from rafka.protocol.types import TopicPartition

logger = logging.getLogger(__name__)

REPORT_TIMEOUT_S = 2.0
"""How long a snapshot waits for one process's report; a silent one is left out of it."""

T = TypeVar("T")


async def _answer(call: Awaitable[T]) -> T | None:
    """The call's answer, or None when its actor is dead, restarting or slow."""
    try:
        return await asyncio.wait_for(call, REPORT_TIMEOUT_S)
    except (ray.exceptions.RayError, asyncio.TimeoutError, ValueError):
        return None


class BrokerMetrics:
    """One broker's metric recording, snapshot and export."""

    def __init__(
        self,
        broker_id: int,
        namespace: str,
        enabled: bool,
        hosted: Callable[[], Iterable[Any]],
        peers: Callable[[], Iterable[int]],
    ) -> None:
        self.broker_id = broker_id
        self.namespace = namespace
        self.enabled = enabled
        self.registry = MetricsRegistry(enabled)
        self._hosted = hosted
        self._peers = peers
        self._high_watermarks: dict[TopicPartition, int] = {}
        self._exporter: RayExporter | None = None
        self._by_request: dict[str, tuple[Counter, Histogram]] = {}

    def request_done(self, request: str, elapsed_ms: float) -> None:
        """The Kafka listener answered a request of type ``request`` after ``elapsed_ms``."""
        instruments = self._by_request.get(request)
        if instruments is None:
            labels = {"broker": self.broker_id, "request": request}
            instruments = self._by_request[request] = (
                self.registry.counter(catalog.REQUESTS, **labels),
                self.registry.histogram(catalog.REQUEST_TOTAL_TIME, **labels),
            )
        instruments[0].inc()
        instruments[1].observe(elapsed_ms)

    def high_watermarks(self) -> dict[TopicPartition, int]:
        """The high watermarks of the partitions this broker led at its last snapshot."""
        return self._high_watermarks

    async def snapshot(self, coordinator: Any, controller: Any) -> list[MetricFamily]:
        """Every family of this broker: its replicas', coordinator's and controller's, the
        counts over its replicas, and the lag of the groups it coordinates."""
        replicas = list(self._hosted())
        answers = await asyncio.gather(
            *(_answer(replica.metrics_report.remote()) for replica in replicas),
            _answer(coordinator.metrics_report.remote()),
            _answer(controller.metrics_report.remote()),
        )
        reports: list[ReplicaReport] = [a for a in answers[: len(replicas)] if a is not None]
        coordinated: CoordinatorReport | None = answers[len(replicas)]
        controlled: list[MetricFamily] | None = answers[len(replicas) + 1]
        self._high_watermarks = leader_high_watermarks(reports)
        others: list[Iterable[MetricFamily]] = [self.registry.collect(), controlled or ()]
        if coordinated is not None:
            known = await self._all_high_watermarks(
                {entry.partition for entry in coordinated.committed}
            )
            others += [
                coordinated.families,
                consumer_lag(self.broker_id, coordinated.committed, known),
            ]
        return broker_families(self.broker_id, reports, others)

    async def _all_high_watermarks(
        self, partitions: set[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """This broker's leaders' high watermarks, and the peers' for partitions led elsewhere."""
        known = dict(self._high_watermarks)
        if not partitions - known.keys():
            return known
        peers = [p for p in self._peers() if p != self.broker_id]

        async def ask(peer: int) -> dict[TopicPartition, int] | None:
            try:
                handle = ray.get_actor(names.broker_actor_name(peer), namespace=self.namespace)
            except ValueError:
                return None
            return await _answer(handle.high_watermarks.remote())

        for answer in await asyncio.gather(*(ask(peer) for peer in peers)):
            known.update(answer or {})
        return known

    async def export(self, coordinator: Any, controller: Any) -> None:
        """Hand a fresh snapshot to Ray's metrics system."""
        if self._exporter is None:
            self._exporter = RayExporter()
        self._exporter.export(await self.snapshot(coordinator, controller))
