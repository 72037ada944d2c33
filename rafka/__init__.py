"""rafka: Apache Kafka's design rebuilt in Python on Ray actors, ZooKeeper and local disks.

This is the package root and holds only it: each sub-package ``rafka.X`` lives in the top-level
folder ``X/`` (``log``, ``protocol``, ``groups``, ``actors``, ``clients``, ``cluster``, ``cli``,
``spark_bridge``); ARCHITECTURE.md draws the layers and what each may import. ``rafka.testing`` has
helpers for tests that wait on a cluster.

The public API (the clients, with the kafka-python names ``KafkaProducer``, ``KafkaConsumer`` and
``KafkaAdminClient`` beside ``Producer``, ``Consumer`` and ``Admin``; the shared types; the errors;
``LocalCluster``) is loaded on first use, so ``import rafka.log`` does not import Ray::

    import rafka
    with rafka.LocalCluster(brokers=3, data_dir="data") as cluster:
        rafka.Admin().create_topic("events", num_partitions=6, replication_factor=3)
        producer = rafka.Producer(acks="all")
        producer.send("events", b"hello").get(timeout=10)
"""

from __future__ import annotations

import importlib
from typing import Any

from rafka.clients import ray_address as _ray_address
from rafka.protocol import log_layout as _log_layout

__version__ = "0.1.0"

# A cluster on loopback must stay reachable through Ray's own ray.init(address="auto").
_ray_address.install()
# rafka's warnings reach a terminal as one line each, unless the application configured logging.
_log_layout.install_console()

_EXPORTS = {
    "Producer": "rafka.clients.producer",
    "Consumer": "rafka.clients.consumer",
    "Admin": "rafka.clients.admin",
    "KafkaProducer": "rafka.clients.producer",
    "KafkaConsumer": "rafka.clients.consumer",
    "KafkaAdminClient": "rafka.clients.admin",
    "NewTopic": "rafka.protocol.types",
    "NewPartitions": "rafka.protocol.types",
    "ElectionType": "rafka.protocol.types",
    "ReplicaPlacement": "rafka.protocol.types",
    "LocalCluster": "rafka.cluster.local_cluster",
    "TopicPartition": "rafka.protocol.types",
    "OffsetAndMetadata": "rafka.protocol.types",
    "ConsumerGroupMetadata": "rafka.protocol.types",
    "RecordMetadata": "rafka.clients.records",
    "ConsumerRecord": "rafka.clients.records",
    "OffsetAndTimestamp": "rafka.clients.records",
    "Errors": "rafka.protocol.errors",
    "RafkaError": "rafka.protocol.errors",
    "KafkaTimeoutError": "rafka.protocol.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rafka' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
