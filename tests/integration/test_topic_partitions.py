"""Growing topics and placing replicas on a real cluster whose brokers sit on racks: keys keep their
partitions, producers and group consumers find new partitions by themselves, bad requests write
nothing to ZooKeeper, and replicas span the racks."""

from __future__ import annotations

import io
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from rafka.actors.zk.data import decode_assignment, topic_config_path, topic_path
from rafka.cli.main import main
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.partitioner import partition_for_key
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.errors import (
    Errors,
    InvalidPartitionsError,
    RafkaError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.types import NewPartitions, TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NS = "rafka-grow"
CLUSTER = "grow"
RACKS = ["east", "east", "west"]
FAST_METADATA_MS = 500


@pytest.fixture(scope="module")
def gcluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """Three brokers on two racks (brokers 0 and 1 on east, 2 on west), one per Ray node."""
    local = LocalCluster(
        brokers=3,
        data_dir=session_dir / CLUSTER,
        zookeeper=zookeeper.connect_string,
        cluster_name=CLUSTER,
        namespace=NS,
        node_ids=ray_nodes,
        racks=RACKS,
        broker_config={"replica_fetch_backoff_ms": 100, "group_initial_rebalance_delay_ms": 0},
    )
    with local:
        yield local


@pytest.fixture(scope="module")
def gadmin(gcluster: LocalCluster) -> Admin:
    return gcluster.admin()


def replicas_of(admin: Admin, topic: str) -> dict[int, tuple[int, ...]]:
    return {p.partition: p.replicas for p in admin.describe_topic(topic).partitions}


Records = list[tuple[bytes | None, bytes | None]]


def read_all(topic: str, partitions: int) -> dict[int, Records]:
    """Every record of each partition, from the beginning, as (key, value)."""
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest", max_poll_records=100_000)
    wanted = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(wanted)
    ends = consumer.end_offsets(wanted)
    found: dict[int, Records] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + 60
    while any(consumer.position(tp) < ends[tp] for tp in wanted) and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=1000).items():
            found[tp.partition] += [(r.key, r.value) for r in records]
    consumer.close(autocommit=False)
    return found


def test_describe_cluster_shows_each_brokers_rack(gadmin: Admin) -> None:
    brokers = gadmin.describe_cluster().brokers
    assert {b.broker_id: b.rack for b in brokers} == dict(enumerate(RACKS))


def test_replicas_of_every_partition_span_both_racks_and_leaders_spread(
    gadmin: Admin, topic_name: str
) -> None:
    gadmin.create_topic(topic_name, 6, 2)
    replicas = replicas_of(gadmin, topic_name)
    for partition, brokers in replicas.items():
        assert {RACKS[b] for b in brokers} == {"east", "west"}, partition
    leaders = Counter(brokers[0] for brokers in replicas.values())
    assert sorted(leaders.values()) == [2, 2, 2]


def test_growing_under_a_keyed_producer_keeps_old_keys_and_data_and_fills_new_partitions(
    gadmin: Admin, topic_name: str
) -> None:
    gadmin.create_topic(topic_name, 3, 2)
    producer = Producer(namespace=NS, acks="all", linger_ms=5, metadata_max_age_ms=FAST_METADATA_MS)
    keys = [f"key-{i}".encode() for i in range(60)]
    before = [producer.send(topic_name, b"before", key=k) for k in keys]
    placed_before = {k: f.get(timeout=30).partition for k, f in zip(keys, before, strict=True)}
    assert placed_before == {k: partition_for_key(k, 3) for k in keys}
    old_data = read_all(topic_name, 3)
    rounds: list[dict[bytes, int]] = []
    stop = threading.Event()

    def produce() -> None:
        while not stop.is_set():
            futures = {k: producer.send(topic_name, b"during", key=k) for k in keys}
            rounds.append({k: f.get(30).partition for k, f in futures.items()})

    grown = {k: partition_for_key(k, 6) for k in keys}
    thread = threading.Thread(target=produce)
    thread.start()
    try:
        gadmin.create_partitions({topic_name: NewPartitions(total_count=6)})
        wait_until(
            lambda: rounds and rounds[-1] == grown,
            60,
            "the producer to send each key to its partition among 6",
        )
    finally:
        stop.set()
        thread.join(60)
    producer.close()
    assert sorted(replicas_of(gadmin, topic_name)) == list(range(6))
    for placed in rounds:
        for k, p in placed.items():
            assert p in (partition_for_key(k, 3), grown[k])
    after = read_all(topic_name, 6)
    for p in range(3):
        assert after[p][: len(old_data[p])] == old_data[p]
        assert {k for k, v in after[p] if v == b"before"} == {
            k for k in keys if partition_for_key(k, 3) == p
        }
    assert all(after[p] for p in range(3, 6))


def test_a_subscribed_group_consumer_rebalances_onto_new_partitions(
    gadmin: Admin, topic_name: str
) -> None:
    gadmin.create_topic(topic_name, 2, 2)
    consumer = Consumer(
        topic_name,
        namespace=NS,
        group_id=f"{topic_name}-group",
        auto_offset_reset="earliest",
        metadata_max_age_ms=FAST_METADATA_MS,
    )
    try:
        wait_until(
            lambda: consumer.poll(timeout_ms=200) is not None and len(consumer.assignment()) == 2,
            60,
            "the consumer to be assigned both partitions",
        )
        gadmin.create_partitions({topic_name: NewPartitions(4)})
        producer = Producer(namespace=NS, metadata_max_age_ms=FAST_METADATA_MS)
        producer.send(topic_name, b"on-3", partition=3).get(timeout=30)
        producer.close()
        got: list[bytes | None] = []

        def received() -> bool:
            got.extend(r.value for rs in consumer.poll(timeout_ms=200).values() for r in rs)
            return b"on-3" in got and len(consumer.assignment()) == 4

        wait_until(received, 60, "the consumer to rebalance onto 4 partitions and read partition 3")
    finally:
        consumer.close()


def test_fewer_or_as_many_partitions_are_refused_and_nothing_changes(
    gadmin: Admin, topic_name: str, zk: KazooClient
) -> None:
    gadmin.create_topic(topic_name, 3, 1)
    written = zk.get(topic_path(topic_name))[0]
    with pytest.raises(InvalidPartitionsError, match="currently has 3 partitions"):
        gadmin.create_partitions({topic_name: NewPartitions(2)})
    with pytest.raises(InvalidPartitionsError, match="already has 3 partitions"):
        gadmin.create_partitions({topic_name: NewPartitions(3)})
    assert zk.get(topic_path(topic_name))[0] == written
    with pytest.raises(UnknownTopicOrPartitionError):
        gadmin.create_partitions({f"{topic_name}-absent": NewPartitions(4)})


@pytest.mark.parametrize(
    ("assignment", "named"),
    [
        ({0: [0, 0]}, "duplicate brokers"),
        ({0: [0, 9]}, "unknown broker(s) [9]"),
        ({0: [0, 1], 1: [2]}, "inconsistent replication factor"),
        ({0: [0], 2: [1]}, "consecutive"),
    ],
)
def test_bad_explicit_assignments_are_refused_with_nothing_in_zookeeper(
    gadmin: Admin,
    topic_name: str,
    zk: KazooClient,
    assignment: dict[int, list[int]],
    named: str,
) -> None:
    with pytest.raises(RafkaError) as raised:
        gadmin.create_topic(topic_name, replica_assignments=assignment)
    assert raised.value.error is Errors.INVALID_REPLICA_ASSIGNMENT
    assert named in str(raised.value)
    assert zk.exists(topic_path(topic_name)) is None
    assert zk.exists(topic_config_path(topic_name)) is None


def test_explicit_assignments_place_replicas_as_given_on_create_and_on_growth(
    gadmin: Admin, topic_name: str, zk: KazooClient
) -> None:
    gadmin.create_topic(topic_name, replica_assignments={0: [2, 0], 1: [1, 2]})
    assert replicas_of(gadmin, topic_name) == {0: (2, 0), 1: (1, 2)}
    with pytest.raises(RafkaError, match="duplicate brokers"):
        gadmin.create_partitions({topic_name: NewPartitions(3, [[0, 0]])})
    assert sorted(decode_assignment(zk.get(topic_path(topic_name))[0])) == [0, 1]
    gadmin.create_partitions({topic_name: NewPartitions(3, [[0, 2]])})
    assert replicas_of(gadmin, topic_name)[2] == (0, 2)
    assert gadmin.describe_topic(topic_name).partitions[2].leader == 0


def test_cli_alters_partitions_and_creates_with_an_assignment(
    gadmin: Admin, topic_name: str
) -> None:
    ns = ["--namespace", NS]
    create = ["topics", "--create", "--topic", topic_name, "--replica-assignment", "0:2,1:2"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([*ns, *create]) == 0
        assert main([*ns, "topics", "--alter", "--topic", topic_name, "--partitions", "4"]) == 0
        assert main([*ns, "topics", "--alter", "--topic", topic_name, "--partitions", "2"]) == 1
    assert f"Topic {topic_name} now has 4 partitions." in out.getvalue()
    replicas = replicas_of(gadmin, topic_name)
    assert replicas[0] == (0, 2) and replicas[1] == (1, 2) and len(replicas) == 4
