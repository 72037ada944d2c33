"""How a Spark Python process reaches a rafka cluster: one Ray connection per process, on first use.

PySpark forks its Python workers from a daemon, and Ray (like kazoo) does not survive a fork, so
nothing here runs at import time: the first task that needs the cluster calls ``ray.init`` (as a Ray
driver of its own) and every later task of that reused worker finds the connection, the cluster
metadata, the offset-lookup consumer and the producers already there. Producers stay alive for the
worker's life, so a task pays neither a connect nor a producer start-up.

Authentication: a Ray cluster in token mode needs ``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN`` in
the environment of every process that connects; Spark carries them to its Python workers as
``spark.executorEnv.RAY_AUTH_MODE`` / ``spark.executorEnv.RAY_AUTH_TOKEN`` (redacted in Spark's UI).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Mapping
from typing import Any

import ray

from rafka.clients.cluster import ClusterConnection
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.clients.ray_transport import ensure_ray
from rafka.protocol.errors import KafkaTimeoutError
from rafka.protocol.messages.fetch import READ_COMMITTED, READ_UNCOMMITTED
from rafka.protocol.types import TopicPartition
from rafka.spark_bridge.offset_ranges import PartitionOffsets
from rafka.spark_bridge.options import ClusterSettings, option_error

PROBE_TIMEOUT_S = 5.0
AUTH_HINT = (
    "Spark tasks connect with the option 'rafka.ray.address' (else RAY_ADDRESS, else 'auto'); "
    "if the Ray cluster uses token authentication, pass spark.executorEnv.RAY_AUTH_MODE=token and "
    "spark.executorEnv.RAY_AUTH_TOKEN=<token> (see `ray get-auth-token`)"
)

_lock = threading.Lock()
_joined: list[str] = []  # the address this process passed to ray.init, as the option spelled it
_clusters: dict[ClusterSettings, ClusterConnection] = {}
_consumers: dict[tuple[ClusterSettings, int], Consumer] = {}
_producers: dict[tuple[ClusterSettings, tuple[tuple[str, Any], ...]], Producer] = {}


def _target(settings: ClusterSettings) -> str:
    return settings.ray_address or os.environ.get("RAY_ADDRESS") or "auto"


def _probe(address: str) -> None:
    """Fail fast on an explicit host:port nobody listens on; ``ray.init`` would retry for
    minutes."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise KafkaTimeoutError(
            f"cannot reach the Ray cluster at {address!r} from pid {os.getpid()} "
            f"({type(exc).__name__}: {exc}). {AUTH_HINT}"
        ) from exc


def connect(settings: ClusterSettings) -> None:
    """Join the Ray cluster unless this process already has; a different explicit address is an
    error."""
    target = _target(settings)
    if ray.is_initialized():
        current = ray.get_runtime_context().gcs_address
        if settings.ray_address and settings.ray_address not in ("auto", current, *_joined):
            raise option_error(
                "rafka.ray.address",
                f"asks for the Ray cluster at {settings.ray_address!r}, but this Python "
                f"process is connected to {current!r} (one Ray cluster per process)",
            )
        return
    if "RAY_AUTH_TOKEN" in os.environ:
        # A token alone still fails with a misleading ConnectionError unless token mode is switched
        # on.
        os.environ.setdefault("RAY_AUTH_MODE", "token")
    _probe(target)
    try:
        ensure_ray(target, settings.namespace)
    except KafkaTimeoutError as exc:
        raise KafkaTimeoutError(f"{exc}. {AUTH_HINT}") from exc
    _joined.append(target)


def cluster(settings: ClusterSettings) -> ClusterConnection:
    """The process's metadata cache and actor handles for a cluster (created on first use)."""
    with _lock:
        found = _clusters.get(settings)
    if found is not None:
        return found
    connect(settings)
    created = ClusterConnection(
        settings.namespace, settings.ray_address, settings.request_timeout_ms
    )
    if settings.cluster_id is not None:
        actual = created.refresh_metadata([]).cluster_id
        if actual != settings.cluster_id:
            raise option_error(
                "rafka.cluster.id",
                f"the cluster in Ray namespace {settings.namespace!r} at "
                f"{_target(settings)!r} has id {actual!r}, not {settings.cluster_id!r}",
            )
    with _lock:
        return _clusters.setdefault(settings, created)


def producer(settings: ClusterSettings, config: tuple[tuple[str, Any], ...]) -> Producer:
    """The process's producer for this cluster and config: it lives as long as the Python worker."""
    key = (settings, config)
    with _lock:
        found = _producers.get(key)
    if found is not None:
        return found
    cluster(settings)  # connects, and checks rafka.cluster.id
    created = Producer(
        namespace=settings.namespace, ray_address=settings.ray_address, **dict(config)
    )
    with _lock:
        kept = _producers.setdefault(key, created)
    if kept is not created:
        created.close()
    return kept


def transactional_producer(
    settings: ClusterSettings, config: tuple[tuple[str, Any], ...], transactional_id: str
) -> Producer:
    """A new producer with ``transactional_id`` for one task's transaction. Not kept for later
    tasks: a retried attempt of the task elsewhere fences it, after which it is of no use."""
    cluster(settings)  # connects, and checks rafka.cluster.id
    return Producer(
        namespace=settings.namespace,
        ray_address=settings.ray_address,
        transactional_id=transactional_id,
        **dict(config),
    )


class ConsumerOffsets:
    """``OffsetLookup`` over a consumer's ListOffsets requests at each partition's leader."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer

    def earliest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        """Log start offset of each partition."""
        found = self.consumer.beginning_offsets([TopicPartition(*tp) for tp in partitions])
        return {TopicPartition(*tp): offset for tp, offset in found.items()}

    def latest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        """High watermark (or, read_committed, last stable offset) of each partition."""
        found = self.consumer.end_offsets([TopicPartition(*tp) for tp in partitions])
        return {TopicPartition(*tp): offset for tp, offset in found.items()}

    def for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        """First offset at or after each timestamp (None where no record is that new)."""
        found = self.consumer.offsets_for_times(
            {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        )
        return {
            TopicPartition(*tp): (None if hit is None else hit.offset) for tp, hit in found.items()
        }


class ConsumerOffsetLookup(ConsumerOffsets):
    """``ConsumerOffsets`` over the process's consumer for the cluster; with ``isolation_level``
    READ_COMMITTED, latest is the last stable offset."""

    def __init__(self, settings: ClusterSettings, isolation_level: int = READ_UNCOMMITTED) -> None:
        self.settings = settings
        key = (settings, isolation_level)
        with _lock:
            found = _consumers.get(key)
        if found is None:
            cluster(settings)
            found = Consumer(
                namespace=settings.namespace,
                ray_address=settings.ray_address,
                request_timeout_ms=settings.request_timeout_ms,
                isolation_level="read_committed"
                if isolation_level == READ_COMMITTED
                else "read_uncommitted",
            )
            with _lock:
                found = _consumers.setdefault(key, found)
        super().__init__(found)
