"""Brokers, replicas and the controller on a three-node Ray cluster with a real ZooKeeper."""

from __future__ import annotations

from pathlib import Path

import pytest
import ray
from kazoo.client import KazooClient

from rafka.actors import names
from rafka.actors.zk.data import decode_assignment, partition_state_path, topic_path
from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.types import ReplicaPlacement
from rafka.testing import serving_replica

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

# Kafka's placement with start index 0: partition 0's preferred leader is broker 0, as these tests
# read it.
LEADS_ON_BROKER_0 = ReplicaPlacement(start_index=0)


def test_each_broker_runs_on_its_own_ray_node(cluster: LocalCluster, ray_nodes: list[str]) -> None:
    described = [ray.get(cluster.brokers[b].describe.remote(), timeout=30) for b in range(3)]
    assert [d["node_id"] for d in described] == ray_nodes
    assert len({d["pid"] for d in described}) == 3
    assert all(d["host"] == "127.0.0.1" for d in described)


def test_describe_cluster_shows_live_brokers_and_an_elected_controller(admin: Admin) -> None:
    description = admin.describe_cluster()
    assert [b.broker_id for b in description.brokers] == [0, 1, 2]
    assert description.controller_id in (0, 1, 2)
    controller = ray.get_actor(
        names.controller_actor_name(description.controller_id), namespace="rafka-test"
    )
    state = ray.get(controller.describe.remote(), timeout=30)
    assert state["active"] is True and state["epoch"] >= 1 and state["live_brokers"] == [0, 1, 2]


def test_new_topic_at_start_index_0_gets_kafkas_layout_and_first_replica_leads(
    admin: Admin, topic_name: str
) -> None:
    description = admin.create_topic(
        topic_name, num_partitions=6, replication_factor=3, placement=LEADS_ON_BROKER_0
    )
    # Replica j of partition p on broker p + j; from partition 3 on, the walk has wrapped around
    # the brokers once and the followers shift by one more.
    expected = {0: (0, 1, 2), 1: (1, 2, 0), 2: (2, 0, 1), 3: (0, 2, 1), 4: (1, 0, 2), 5: (2, 1, 0)}
    for p in description.partitions:
        assert p.replicas == expected[p.partition]
        assert p.leader == p.replicas[0]
        assert set(p.isr) == {0, 1, 2}


def test_zookeeper_holds_kafkas_layout_under_the_cluster_chroot(
    admin: Admin, zookeeper: ZooKeeperServer, topic_name: str
) -> None:
    admin.create_topic(
        topic_name, num_partitions=2, replication_factor=2, placement=LEADS_ON_BROKER_0
    )
    zk = KazooClient(hosts=zookeeper.connect_string + "/rafka/it")
    zk.start(timeout=15)
    try:
        assert sorted(zk.get_children("/brokers/ids")) == ["0", "1", "2"]
        assert decode_assignment(zk.get(topic_path(topic_name))[0]) == {0: (0, 1), 1: (1, 2)}
        data, stat = zk.get(partition_state_path(topic_name, 1))
        assert b'"leader":1' in data and b'"leader_epoch":0' in data and stat.version == 0
        assert int(zk.get("/controller_epoch")[0]) >= 1
        assert zk.exists("/controller") is not None
    finally:
        zk.stop()


def test_each_replica_log_lives_under_its_brokers_directory_on_its_node(
    cluster: LocalCluster, admin: Admin, topic_name: str, ray_nodes: list[str]
) -> None:
    admin.create_topic(topic_name, num_partitions=1, replication_factor=3)
    for broker_id in range(3):
        replica = serving_replica(topic_name, 0, broker_id, "rafka-test")
        state = ray.get(replica.describe.remote(), timeout=30)
        assert (
            Path(state["log_dir"]) == cluster.data_dir / f"broker-{broker_id}" / f"{topic_name}-0"
        )
        assert Path(state["log_dir"]).is_dir()
        pid_nodes = ray.get(cluster.brokers[broker_id].describe.remote(), timeout=30)["node_id"]
        assert pid_nodes == ray_nodes[broker_id]
