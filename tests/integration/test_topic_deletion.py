"""Topic deletion on a real cluster: under load, with a broker down, disabled, and from the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import ray

from rafka.actors import names
from rafka.actors.zk import data as zd
from rafka.actors.zk.client import ZkClient
from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.errors import Errors, RafkaError, UnknownTopicOrPartitionError
from rafka.protocol.messages.control import StopReplicaRequest
from rafka.protocol.messages.offsets import LATEST_TIMESTAMP
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]
NS = "rafka-deletion"
CLUSTER = "deletion"


@pytest.fixture(scope="module")
def dcluster(own_cluster: Callable[..., LocalCluster]) -> Iterator[LocalCluster]:
    """Three brokers that remove deleted directories half a second after renaming them, and do
    not create topics on a client's metadata request (a producer still sending to a deleted topic
    would create it again, as in Kafka)."""
    with own_cluster(
        CLUSTER,
        NS,
        log_segment_delete_delay_ms=500,
        auto_create_topics_enable=False,
    ) as local:
        yield local


@pytest.fixture(scope="module")
def zk(dcluster: LocalCluster) -> Iterator[ZkClient]:
    client = ZkClient(dcluster.zookeeper_connect, CLUSTER, 10_000)
    yield client
    client.close()


@pytest.fixture
def dadmin(dcluster: LocalCluster) -> Admin:
    return dcluster.admin()


def znodes_left(zk: ZkClient, topic: str) -> list[str]:
    """Which of the topic's znodes still exist."""
    paths = (zd.topic_path(topic), zd.topic_config_path(topic), zd.delete_topic_path(topic))
    return [p for p in paths if zk.zk.exists(p) is not None]


def partition_dirs(cluster: LocalCluster, topic: str) -> list[Path]:
    """Every directory of the topic's partitions on every broker, renamed for deletion or not."""
    return sorted(
        p
        for broker in range(cluster.num_brokers)
        for p in (cluster.data_dir / f"broker-{broker}").glob(f"{topic}-*")
        if p.name.split(".")[0].rsplit("-", 1)[0] == topic
    )


def wait_deleted(cluster: LocalCluster, zk: ZkClient, topic: str) -> None:
    """Until the topic's znodes and every one of its directories are gone."""
    wait_until(lambda: not znodes_left(zk, topic), 60, f"the znodes of {topic} to go")
    wait_until(lambda: not partition_dirs(cluster, topic), 30, f"the directories of {topic} to go")


def test_deleting_a_topic_under_load_then_recreating_it_gives_an_empty_topic(
    dcluster: LocalCluster, dadmin: Admin, zk: ZkClient
) -> None:
    topic, group = "orders", "billing"
    dadmin.create_topic(topic, 3, 3)
    producer = dcluster.producer(acks="all", linger_ms=5)
    failures: list[RafkaError] = []
    stop = threading.Event()

    def produce() -> None:
        i = 0
        while not stop.is_set():
            try:
                producer.send(topic, f"v{i}".encode(), key=str(i).encode()).get(timeout=30)
            except RafkaError as exc:
                failures.append(exc)
                if isinstance(exc, UnknownTopicOrPartitionError):
                    return
            i += 1

    sender = threading.Thread(target=produce, daemon=True)
    sender.start()
    try:
        consumer = dcluster.consumer(
            topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False
        )
        seen = 0
        deadline = time.monotonic() + 120
        while seen < 50 and time.monotonic() < deadline:
            seen += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
        assert seen >= 50
        consumer.commit()
        assert any(tp.topic == topic for tp in dadmin.list_group_offsets(group))
        assert len(partition_dirs(dcluster, topic)) == 9

        started = time.monotonic()
        dadmin.delete_topics([topic])
        assert topic not in dadmin.list_topics()
        # The producer learns the topic is gone: UNKNOWN_TOPIC_OR_PARTITION, not a hang.
        sender.join(timeout=60)
        assert not sender.is_alive()
        assert isinstance(failures[-1], UnknownTopicOrPartitionError)
    finally:
        # A sender left running would outlive the cluster and reconnect to Ray after shutdown.
        stop.set()
        sender.join(timeout=60)
    with pytest.raises(UnknownTopicOrPartitionError):
        producer.send(topic, b"late").get(timeout=30)
    # A consumer still subscribed keeps polling without blocking past its timeout.
    polled = time.monotonic()
    consumer.poll(timeout_ms=500)
    assert time.monotonic() - polled < 10
    consumer.close(autocommit=False)
    wait_deleted(dcluster, zk, topic)
    assert time.monotonic() - started < 60
    wait_until(
        lambda: not any(tp.topic == topic for tp in dadmin.list_group_offsets(group)),
        30,
        "the group's offsets of the deleted topic to go",
    )

    dadmin.create_topic(topic, 2, 3)
    partitions = [TopicPartition(topic, p) for p in range(2)]
    assert {
        tp: o.offset for tp, o in dadmin.list_offsets(partitions, LATEST_TIMESTAMP).items()
    } == {tp: 0 for tp in partitions}
    assert producer.send(topic, b"first", partition=0).get(timeout=30).offset == 0
    producer.close()
    fresh = dcluster.consumer(group_id=group, auto_offset_reset="earliest")
    fresh.assign(partitions)
    assert fresh.committed(partitions[0]) is None
    values: list[bytes | None] = []
    deadline = time.monotonic() + 30
    while not values and time.monotonic() < deadline:
        values += [r.value for rs in fresh.poll(timeout_ms=500).values() for r in rs]
    fresh.close(autocommit=False)
    assert values == [b"first"]


def test_a_deletion_waits_for_a_stopped_broker_and_finishes_when_it_returns(
    dcluster: LocalCluster, dadmin: Admin, zk: ZkClient
) -> None:
    topic = "paused"
    dadmin.create_topic(topic, 2, 3)
    producer = dcluster.producer(acks="all")
    for i in range(10):
        producer.send(topic, f"r{i}".encode(), partition=i % 2)
    producer.flush(timeout=30)
    producer.close()
    dcluster.stop_broker(2)
    try:
        dadmin.delete_topics([topic])
        # Paused, not failed: the live brokers deleted their replicas, broker 2's stays on disk.
        wait_until(
            lambda: not list((dcluster.data_dir / "broker-0").glob(f"{topic}-*")),
            30,
            "broker 0's directories to go",
        )
        assert zd.topic_path(topic) in znodes_left(zk, topic)
        assert zd.delete_topic_path(topic) in znodes_left(zk, topic)
        assert sorted(p.name for p in (dcluster.data_dir / "broker-2").glob(f"{topic}-*")) == [
            f"{topic}-0",
            f"{topic}-1",
        ]
    finally:
        dcluster.start_broker(2)
    dadmin.wait_for_cluster(3)
    wait_deleted(dcluster, zk, topic)


def test_a_new_controller_resumes_a_deletion_its_predecessor_began(
    dcluster: LocalCluster, dadmin: Admin, zk: ZkClient
) -> None:
    topic = "handover"
    dadmin.create_topic(topic, 1, 3)
    controller = dadmin.describe_cluster().controller_id
    follower = next(b for b in range(3) if b != controller)
    dcluster.stop_broker(follower)
    stopped = [follower]
    try:
        dadmin.delete_topics([topic])
        dcluster.stop_broker(controller)
        stopped.append(controller)
        wait_until(
            lambda: dadmin.describe_cluster().controller_id not in (-1, controller),
            60,
            "another controller",
        )
        assert zd.delete_topic_path(topic) in znodes_left(zk, topic)
    finally:
        for broker in stopped:
            dcluster.start_broker(broker)
    dadmin.wait_for_cluster(3)
    wait_deleted(dcluster, zk, topic)


def test_a_stop_replica_from_an_older_controller_epoch_is_refused(dcluster: LocalCluster) -> None:
    broker = ray.get_actor(names.broker_actor_name(0), namespace=NS)
    stale = StopReplicaRequest(0, 0, (("anything", 0),), delete=True)
    assert ray.get(broker.stop_replica.remote(stale), timeout=30).error is (
        Errors.STALE_CONTROLLER_EPOCH
    )


def test_the_cli_deletes_every_topic_its_pattern_matches(
    dcluster: LocalCluster, dadmin: Admin, zk: ZkClient
) -> None:
    for name in ("cli-del-a", "cli-del-b", "cli-keep"):
        dadmin.create_topic(name, 1, 2)
    address = ray.get_runtime_context().gcs_address
    command = [sys.executable, "-m", "rafka", "--namespace", NS, "--address", address]
    done = subprocess.run(
        [*command, "topics", "--delete", "--topic", "cli-del-.*"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Topic cli-del-a is marked for deletion.",
        "Topic cli-del-b is marked for deletion.",
    ]
    assert "cli-keep" in dadmin.list_topics()
    wait_deleted(dcluster, zk, "cli-del-a")
    wait_deleted(dcluster, zk, "cli-del-b")


def test_deletion_disabled_is_refused_with_topic_deletion_disabled(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str], dcluster: LocalCluster
) -> None:
    with LocalCluster(
        brokers=1,
        data_dir=session_dir / "no-deletion",
        zookeeper=zookeeper.connect_string,
        cluster_name="no-deletion",
        namespace="rafka-no-deletion",
        node_ids=ray_nodes,
        broker_config={"delete_topic_enable": False, "offsets_topic_replication_factor": 1},
    ) as local:
        admin = local.admin()
        admin.create_topic("kept", 1, 1)
        with pytest.raises(RafkaError) as refused:
            admin.delete_topics(["kept"])
        assert refused.value.error is Errors.TOPIC_DELETION_DISABLED
        assert admin.list_topics() == ["kept"]
