"""Real parts for integration tests, started once per session: a ZooKeeper server, a three-node Ray
cluster on this machine (``ray.cluster_utils.Cluster``) and a three-broker rafka cluster, one broker
pinned to each Ray node with its logs under that node's own directory."""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
from kazoo.client import KazooClient
from ray.cluster_utils import Cluster

from rafka.clients import ray_address
from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.ray_head import RAY_ENV_DEFAULTS
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.types import TopicPartition

NAMESPACE = "rafka-test"
BROKERS = 3


@pytest.fixture(scope="session")
def session_dir() -> Iterator[Path]:
    """A directory for everything the session's real parts write."""
    with tempfile.TemporaryDirectory(prefix="rafka-it-") as directory:
        yield Path(directory)


@pytest.fixture(scope="session")
def zookeeper(session_dir: Path) -> Iterator[ZooKeeperServer]:
    """A standalone ZooKeeper server on 127.0.0.1."""
    with ZooKeeperServer(session_dir / "zookeeper") as server:
        yield server


@pytest.fixture(scope="session")
def ray_nodes(session_dir: Path) -> Iterator[list[str]]:
    """A head node plus one Ray node per broker; yields the broker nodes' ids."""
    ray_tmp = session_dir / "ray"
    (ray_tmp / "ray").mkdir(parents=True)
    os.environ["RAY_TMPDIR"] = str(ray_tmp)
    for name, value in RAY_ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)  # as LocalCluster's own Ray gets them
    ray_address.loopback_mode(True)  # the nodes share this machine's loopback, as LocalCluster's
    cluster = Cluster(
        initialize_head=True,
        connect=False,
        head_node_args={"num_cpus": 2, "include_dashboard": False, "temp_dir": str(ray_tmp)},
    )
    nodes = [
        cluster.add_node(
            num_cpus=1, resources={f"broker-node-{i}": 1}, object_store_memory=128 * 1024 * 1024
        )
        for i in range(BROKERS)
    ]
    cluster.wait_for_nodes()
    ray.init(
        address=cluster.address,
        namespace=NAMESPACE,
        log_to_driver=False,
        logging_level=logging.ERROR,
    )
    yield [node.node_id for node in nodes]
    ray.shutdown()
    cluster.shutdown()


OWN_CLUSTER_CONFIG: dict[str, Any] = {
    "zookeeper_session_timeout_ms": 4000,
    "replica_fetch_backoff_ms": 100,
    "offsets_topic_num_partitions": 1,
}
"""What a module's own cluster runs with unless it says otherwise: a dead broker noticed in 4 s, a
failed follower fetch retried in 0.1 s, and one offsets partition (24 replica processes fewer on a
group's first use)."""
OwnCluster = Callable[..., LocalCluster]


@pytest.fixture(scope="session")
def own_cluster(session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]) -> OwnCluster:
    """Build (not start) a module's own three-broker cluster on the session's ZooKeeper and Ray
    nodes: ``own_cluster(name, namespace, **broker_config)``, its logs under ``name``."""

    def make(name: str, namespace: str, **broker_config: Any) -> LocalCluster:
        return LocalCluster(
            brokers=BROKERS,
            data_dir=session_dir / name,
            zookeeper=zookeeper.connect_string,
            cluster_name=name,
            namespace=namespace,
            node_ids=ray_nodes,
            broker_config={**OWN_CLUSTER_CONFIG, **broker_config},
        )

    return make


@pytest.fixture(scope="session")
def cluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """Three brokers, one per Ray node, sharing the session's ZooKeeper (chroot /rafka/it)."""
    local = LocalCluster(
        brokers=BROKERS,
        data_dir=session_dir / "data",
        zookeeper=zookeeper.connect_string,
        cluster_name="it",
        namespace=NAMESPACE,
        node_ids=ray_nodes,
        # Topic auto-creation off: tests create their topics, and test_bad_input and the Spark
        # tests assert the errors a missing topic gives.
        broker_config={
            "zookeeper_session_timeout_ms": 4000,
            "replica_fetch_backoff_ms": 100,
            "auto_create_topics_enable": False,
        },
    )
    with local:
        _shared.append(local)
        yield local
        _shared.clear()


_shared: list[LocalCluster] = []
"""The session's shared cluster while it runs (it starts with the first module that asks for it)."""


def _user_topics() -> set[str]:
    """The shared cluster's topics other than the internal ones; none before it started."""
    if not _shared:
        return set()
    return {name for name in _shared[0].admin().list_topics() if not name.startswith("__")}


@pytest.fixture(scope="module", autouse=True)
def _module_topics_deleted() -> Iterator[None]:
    """Delete the topics a module created on the shared cluster when the module ends: every
    replica is a process with its own idle cost, and a session's worth of them would keep a
    2-core machine busy under the tests that follow."""
    before = _user_topics()
    yield
    created = sorted(_user_topics() - before)
    if created:
        _shared[0].admin().delete_topics(created, timeout_ms=120_000)


@pytest.fixture(scope="session")
def admin(cluster: LocalCluster) -> Admin:
    """An admin client of the session's cluster."""
    return cluster.admin()


ReadTopic = Callable[[str, int, int], list[Any]]


@pytest.fixture(scope="session")
def read_topic(cluster: LocalCluster) -> ReadTopic:
    """``read_topic(topic, partitions, count)``: the shared cluster's records of ``topic`` read
    by rafka's Consumer from the start of each partition, until ``count`` came or 60 s passed."""

    def read(topic: str, partitions: int, count: int) -> list[Any]:
        assigned = [TopicPartition(topic, p) for p in range(partitions)]
        records: list[Any] = []
        with cluster.consumer(group_id=None, auto_offset_reset="earliest") as consumer:
            consumer.assign(assigned)
            consumer.seek_to_beginning(*assigned)
            deadline = time.monotonic() + 60
            while len(records) < count and time.monotonic() < deadline:
                for batch in consumer.poll(timeout_ms=500).values():
                    records.extend(batch)
        return records

    return read


@pytest.fixture
def zk(zookeeper: ZooKeeperServer, request: pytest.FixtureRequest) -> Iterator[KazooClient]:
    """A ZooKeeper session in the chroot of the test module's own cluster (named by its
    ``CLUSTER``), to look at what the cluster wrote."""
    client = KazooClient(hosts=f"{zookeeper.connect_string}/rafka/{request.module.CLUSTER}")
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


_topic_counter = [0]


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name unique to the test."""
    _topic_counter[0] += 1
    return (
        f"{request.node.name[:40].replace('[', '.').replace(']', '')}-{_topic_counter[0]}".replace(
            "_", "-"
        )
    )


# Modules that start clusters of their own run first, before the shared session cluster exists, and
# the Spark tests run last: on a 2-core machine every idle replica actor costs CPU, so the fewer
# clusters are alive at once, the steadier the timing-sensitive failover tests are.
_MODULE_ORDER = (
    "test_zookeeper_server",
    "test_multi_node",
    "test_ray_token",
    "test_failover",
    "test_fault_injection",
    "test_restart",
    "test_replica_verification",
    "test_preferred_election",
    "test_consumer_groups",
    "test_consumer_deadlines",
    "test_topic_partitions",
    "test_topic_configs",
    "test_partition_reassignment",
    "test_reassign_partitions_cli",
    "test_replication_throttle",
    "test_topic_deletion",
    "test_zookeeper_acl",
    "test_kafka_acl_store",
    "test_idempotent_replica",
    "test_idempotent_producer",
    "test_transaction_coordinator",
    "test_read_committed",
    "test_exactly_once",
    "test_kafka_client_failover",
    "test_kafka_tls",
    "test_kafka_quotas",
    "test_kafka_sasl",
    "test_kafka_authorizer",
    "test_readme",
    "test_examples",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order integration modules: own-cluster modules, then shared-cluster ones, then Spark."""

    def rank(item: pytest.Item) -> int:
        path = item.path
        if "integration" not in path.parts:
            return 0
        if "spark" in path.parts:
            return 3
        return 1 if path.stem in _MODULE_ORDER else 2

    items.sort(
        key=lambda item: (
            rank(item),
            _MODULE_ORDER.index(item.path.stem) if item.path.stem in _MODULE_ORDER else 0,
        )
    )
