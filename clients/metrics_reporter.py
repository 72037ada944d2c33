"""Hand the metrics of this process's clients to Ray's metrics system every few seconds.

A producer or consumer made in a process connected to Ray registers its ``MetricsRegistry`` here.
One daemon thread per process merges the snapshots of every registered client (samples with the
same labels, as clients sharing a ``client_id``, are summed) and exports them every
``EXPORT_INTERVAL_S`` through ``rafka.metrics.ray_export.RayExporter``, so the Prometheus endpoint
of the Ray node the process runs on shows them (``ray_rafka_producer_record_send_total``).
Exporting never runs on a client's own threads, whose sends and polls it would slow down.

A client that closes is exported once more as it unregisters, and its counters and histograms stay
in every later export: Ray is handed the growth of each count since the previous export, and a
closed client's counts leaving the sum would read as a restart from zero (``RayExporter`` would add
the whole sum again). Its gauges go out once more as they stand, then leave with it (a closed
consumer's lag reads 0: it let go of its partitions first).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable

from rafka.metrics.registry import MetricFamily, MetricKind, MetricsRegistry, merge

logger = logging.getLogger(__name__)

EXPORT_INTERVAL_S = 5.0
"""How often the clients' metrics go to Ray."""

Export = Callable[[list[MetricFamily]], None]


class MetricsReporter:
    """The registries of live clients and the counts of closed ones, exported together."""

    def __init__(self, export: Export, interval_s: float = EXPORT_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._export = export
        # Held while a snapshot is exported too: an exporter keeps what it last exported of each
        # sample, so exports must not interleave.
        self._lock = threading.Lock()
        self._live: list[MetricsRegistry] = []
        self._closed: list[MetricFamily] = []

    def add(self, registry: MetricsRegistry) -> None:
        """Export ``registry`` from now on."""
        with self._lock:
            self._live.append(registry)

    def remove(self, registry: MetricsRegistry) -> None:
        """A client closed: export it once more, and keep its counts in every later export."""
        with self._lock:
            if registry not in self._live:
                return
            self._export_locked()
            self._live.remove(registry)
            kept = [item for item in registry.collect() if item.spec.kind is not MetricKind.GAUGE]
            self._closed = merge([self._closed, kept])

    def export(self) -> None:
        """Export every client's metrics now."""
        with self._lock:
            self._export_locked()

    def _export_locked(self) -> None:
        try:
            snapshots = [registry.collect() for registry in self._live]
        except RuntimeError:
            # A client added an instrument (a newly assigned partition's lag) during the snapshot.
            # The whole round is skipped: exporting the other clients alone would make the sums
            # shrink, which reads as a restart.
            logger.debug("a client's metrics changed during the snapshot; exporting next round")
            return
        try:
            self._export(merge([self._closed, *snapshots]))
        except Exception:  # Ray shut down, or a bug: the client must go on either way
            logger.warning("exporting the clients' metrics to Ray failed", exc_info=True)

    def start(self) -> None:
        """Export every ``interval_s`` from a daemon thread, for as long as the process lives."""
        threading.Thread(target=self._run, name="rafka-client-metrics", daemon=True).start()

    def _run(self) -> None:
        while True:
            time.sleep(self.interval_s)
            self.export()


_reporter: MetricsReporter | None = None
"""The process's reporter to Ray, made when the first client registers."""
_reporter_lock = threading.Lock()


def _ray_connected() -> bool:
    # Only a process that imported Ray can be connected to it; a client on an in-process transport
    # must not pay for importing Ray.
    ray = sys.modules.get("ray")
    return ray is not None and bool(ray.is_initialized())


def _ray_reporter() -> MetricsReporter:
    global _reporter
    with _reporter_lock:
        if _reporter is None:
            from rafka.metrics.ray_export import RayExporter  # imports Ray, already imported here

            _reporter = MetricsReporter(RayExporter().export)
            _reporter.start()
        return _reporter


def register(registry: MetricsRegistry) -> None:
    """Export a client's registry to Ray from now on, if this process is connected to Ray and the
    registry records."""
    if registry.enabled and _ray_connected():
        _ray_reporter().add(registry)


def unregister(registry: MetricsRegistry) -> None:
    """A client closed: export its registry once more and stop following it."""
    if _reporter is not None:
        _reporter.remove(registry)
