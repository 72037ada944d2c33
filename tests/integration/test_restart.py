"""A cluster restarted on the same data directory finds every topic and record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.types import TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def test_restart_on_the_same_data_dir_keeps_every_topic_and_record(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> None:
    namespace = "rafka-restart"
    settings: dict[str, Any] = dict(
        brokers=2,
        data_dir=session_dir / "restart",
        zookeeper=zookeeper.connect_string,
        cluster_name="restart",
        namespace=namespace,
        node_ids=ray_nodes[:2],
    )
    with LocalCluster(**settings) as cluster:
        cluster.admin().create_topic("kept", num_partitions=2, replication_factor=2)
        with Producer(namespace=namespace, acks="all") as producer:
            for i in range(1000):
                producer.send("kept", str(i).encode(), key=str(i).encode())
    with LocalCluster(**settings) as cluster:
        assert cluster.admin().list_topics() == ["kept"]
        consumer = Consumer(
            namespace=namespace, auto_offset_reset="earliest", max_poll_records=5000
        )
        consumer.assign([TopicPartition("kept", 0), TopicPartition("kept", 1)])
        values: set[bytes | None] = set()
        while len(values) < 1000:
            polled = consumer.poll(timeout_ms=15_000)
            assert polled, f"only {len(values)} of 1000 records came back"
            values.update(r.value for part in polled.values() for r in part)
        assert values == {str(i).encode() for i in range(1000)}
