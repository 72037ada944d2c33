"""Client configuration: each client's settings under kafka-python's names, with their defaults, and
the check of a client's config against them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rafka.protocol.errors import InvalidConfigError

CONNECT_TIMEOUT_MS = 30_000
"""Default ``connect_timeout_ms``: how long a client waits for the cluster's address to answer."""

METRICS_CONFIG: dict[str, Any] = {
    "metrics_enabled": True,
    "metrics_num_samples": 2,
    "metrics_sample_window_ms": 30_000,
}
"""kafka-python's metrics settings, the producer's and the consumer's alike: whether the client
records metrics, and the windows its rates and maxima span (``rafka.clients.client_metrics``)."""

PRODUCER_CONFIG: dict[str, Any] = {
    "client_id": "rafka-producer",
    "acks": "all",
    "enable_idempotence": True,
    "max_in_flight_requests_per_connection": 5,
    "batch_size": 16384,
    "linger_ms": 0,
    "buffer_memory": 32 * 1024 * 1024,
    "max_block_ms": 60_000,
    "retries": 2_147_483_647,
    "retry_backoff_ms": 100,
    "metadata_max_age_ms": 300_000,
    "request_timeout_ms": 30_000,
    "connect_timeout_ms": CONNECT_TIMEOUT_MS,
    "delivery_timeout_ms": 120_000,
    "max_request_size": 1_048_576,
    "compression_type": None,
    "key_serializer": None,
    "value_serializer": None,
    "partitioner": None,
    "bootstrap_servers": None,
    **METRICS_CONFIG,
}
"""The producer's settings and their defaults."""

TRANSACTION_CONFIG: dict[str, Any] = {"transactional_id": None, "transaction_timeout_ms": 60_000}
"""A transactional producer's settings, apart from PRODUCER_CONFIG: the Spark sink offers
PRODUCER_CONFIG as its options, and a transactional id is not one of them."""

CONSUMER_CONFIG: dict[str, Any] = {
    "client_id": "rafka-consumer",
    "group_id": None,
    "key_deserializer": None,
    "value_deserializer": None,
    "auto_offset_reset": "latest",
    "fetch_min_bytes": 1,
    "fetch_max_wait_ms": 500,
    "max_partition_fetch_bytes": 1 << 20,
    "max_poll_records": 500,
    "request_timeout_ms": 30_000,
    "connect_timeout_ms": CONNECT_TIMEOUT_MS,
    "consumer_timeout_ms": float("inf"),
    "check_crcs": True,
    "bootstrap_servers": None,
    "enable_auto_commit": True,
    "auto_commit_interval_ms": 5000,
    "session_timeout_ms": 10_000,
    "heartbeat_interval_ms": 3000,
    "max_poll_interval_ms": 300_000,
    "partition_assignment_strategy": ("range", "roundrobin"),
    "metadata_max_age_ms": 300_000,
    "exclude_internal_topics": True,
    "isolation_level": "read_uncommitted",
    **METRICS_CONFIG,
}
"""The consumer's settings and their defaults."""


def merge_config(
    kind: str, defaults: Mapping[str, Any], configs: Mapping[str, Any]
) -> dict[str, Any]:
    """The client's defaults overridden by ``configs``; an unknown name raises INVALID_CONFIG naming
    it and listing the known ones (``kind`` names the client, e.g. "producer")."""
    unknown = set(configs) - set(defaults)
    if unknown:
        raise InvalidConfigError(
            f"unknown {kind} config {sorted(unknown)}; known: {', '.join(sorted(defaults))}"
        )
    return {**defaults, **configs}
