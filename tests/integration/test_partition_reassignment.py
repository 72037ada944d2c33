"""Partition reassignment on a real cluster of six brokers (ids 1-6, as in seed 000's worked
example): ZooKeeper walks the seed's table, an acks=all producer and a consumer keep working, the
old replicas leave the disk, a new controller finishes a reassignment its predecessor died in, and
bad requests change nothing."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from rafka.actors.zk.data import (
    REASSIGN_PARTITIONS,
    decode_assignment,
    partition_state_path,
    topic_path,
)
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.log.files import partition_dir_name
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.admin import PartitionReassignment
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
NS = "rafka-reassign"
CLUSTER = "reassign"
BROKERS = (1, 2, 3, 4, 5, 6)
OAR, RAR = (1, 2, 3), (4, 5, 6)

# Seed 000's table: AR and leader/ISR in ZooKeeper at each step of OAR {1,2,3} -> RAR {4,5,6}.
SEED_TABLE = [
    ((1, 2, 3), 1, (1, 2, 3)),  # initial state
    ((1, 2, 3, 4, 5, 6), 1, (1, 2, 3)),  # step 2
    ((1, 2, 3, 4, 5, 6), 1, (1, 2, 3, 4, 5, 6)),  # step 4
    ((1, 2, 3, 4, 5, 6), 4, (1, 2, 3, 4, 5, 6)),  # step 7
    ((1, 2, 3, 4, 5, 6), 4, (4, 5, 6)),  # step 8
    ((4, 5, 6), 4, (4, 5, 6)),  # step 10
]
# What the controller logs for each step, in order, to the state-change log.
STEP_LINES = [
    "reassignment begins: OAR [1, 2, 3] RAR [4, 5, 6]",
    "AR := OAR + RAR: AR [1, 2, 3, 4, 5, 6] written",
    "epoch bumped",
    "replicas [4, 5, 6] -> NewReplica",
    "RAR [4, 5, 6] in the ISR; [4, 5, 6] -> OnlineReplica",
    "cached AR := RAR [4, 5, 6]",
    "leader 4 of RAR",
    "OAR - RAR [1, 2, 3] -> OfflineReplica",
    "[1, 2, 3] -> NonExistentReplica",
    "AR := RAR: AR [4, 5, 6] written",
    "reassignment to [4, 5, 6] completed",
]


@pytest.fixture(scope="module")
def rcluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """Brokers 1 to 6 (no broker 0), light: short fetch waits, deleted logs removed at once."""
    local = LocalCluster(
        brokers=len(BROKERS),
        data_dir=session_dir / CLUSTER,
        zookeeper=zookeeper.connect_string,
        cluster_name=CLUSTER,
        namespace=NS,
        node_ids=ray_nodes,
        broker_config={
            "zookeeper_session_timeout_ms": 4000,
            "replica_fetch_backoff_ms": 100,
            "replica_fetch_wait_max_ms": 200,
            "log_segment_delete_delay_ms": 200,
            "auto_create_topics_enable": False,
            "offsets_topic_num_partitions": 1,
            # Followers copy a backlog in many small fetches, so a reassignment's wait (step 4)
            # lasts long enough to kill a controller in it.
            "replica_fetch_max_bytes": 64 * 1024,
        },
    )
    local.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        for broker in BROKERS:
            local.start_broker(broker, wait=False)
        local.admin().wait_for_cluster(len(BROKERS), 180_000)
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="module")
def radmin(rcluster: LocalCluster) -> Admin:
    return rcluster.admin()


class ZkRecorder:
    """Every version of a partition's state znode and its topic's znode, as watches deliver them
    (in ZooKeeper's order), and the (AR, leader, ISR) seen after each."""

    def __init__(self, zk: KazooClient, topic: str) -> None:
        self.views: list[tuple[tuple[int, ...], int, tuple[int, ...]]] = []
        self.versions: dict[str, list[int]] = {"topic": [], "state": []}
        self._ar: tuple[int, ...] | None = None
        self._state: dict[str, Any] | None = None
        self._lock = threading.Lock()
        zk.DataWatch(topic_path(topic), self._on_topic)
        zk.DataWatch(partition_state_path(topic, 0), self._on_state)

    def _on_topic(self, data: bytes | None, stat: Any) -> None:
        if data is not None:
            with self._lock:
                self.versions["topic"].append(stat.version)
                self._ar = decode_assignment(data)[0]
                self._record()

    def _on_state(self, data: bytes | None, stat: Any) -> None:
        if data is not None:
            with self._lock:
                self.versions["state"].append(stat.version)
                self._state = json.loads(data)
                self._record()

    def _record(self) -> None:
        if self._ar is None or self._state is None:
            return
        view = (self._ar, self._state["leader"], tuple(self._state["isr"]))
        if not self.views or self.views[-1] != view:
            self.views.append(view)

    def skipped(self) -> int:
        """Versions written but overwritten before a watch read them."""
        return sum(
            b - a - 1
            for versions in self.versions.values()
            for a, b in itertools.pairwise(versions)
        )


def ar_in_zk(zk: KazooClient, topic: str) -> tuple[int, ...]:
    return decode_assignment(zk.get(topic_path(topic))[0])[0]


def state_in_zk(zk: KazooClient, topic: str) -> tuple[int, tuple[int, ...]]:
    state = json.loads(zk.get(partition_state_path(topic, 0))[0])
    return state["leader"], tuple(state["isr"])


def completed(zk: KazooClient, topic: str, target: tuple[int, ...]) -> bool:
    node = zk.exists(REASSIGN_PARTITIONS)
    return ar_in_zk(zk, topic) == target and (
        node is None or topic not in zk.get(REASSIGN_PARTITIONS)[0].decode()
    )


def controller_lines(cluster: LocalCluster, broker: int, partition: str) -> list[str]:
    path = cluster.data_dir / f"broker-{broker}" / "state-change.log"
    return [
        line
        for line in path.read_text().splitlines()
        if "[Controller id=" in line and partition in line
    ]


def in_order(lines: list[str], wanted: list[str]) -> list[str]:
    """The wanted fragments not found in order in ``lines`` (empty: all found in order)."""
    position = 0
    missing = []
    for fragment in wanted:
        found = next((i for i in range(position, len(lines)) if fragment in lines[i]), None)
        if found is None:
            missing.append(fragment)
        else:
            position = found + 1
    return missing


class Traffic:
    """An acks=all producer sending numbered values until stopped, keeping what was acked."""

    def __init__(self, cluster: LocalCluster, topic: str) -> None:
        self.producer = cluster.producer(acks="all", linger_ms=0)
        self.topic = topic
        self.acked: list[int] = []
        self.failed: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            try:
                self.producer.send(self.topic, str(i).encode(), partition=0).get(timeout=60)
                self.acked.append(i)
            except Exception as exc:  # an acked=all send that failed is reported, not fatal
                self.failed.append(exc)
            i += 1
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=90)
        self.producer.close()


def read_partition(topic: str) -> list[tuple[int, int]]:
    """Every record of partition 0 from the beginning, as (offset, value)."""
    tp = TopicPartition(topic, 0)
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest", max_poll_records=100_000)
    consumer.assign([tp])
    end = consumer.end_offsets([tp])[tp]
    found: list[tuple[int, int]] = []
    deadline = time.monotonic() + 60
    while (not found or found[-1][0] < end - 1) and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            found += [(r.offset, int(bytes(r.value or b"-1").decode())) for r in records]
    consumer.close(autocommit=False)
    return found


def test_seed_example_walks_the_seed_table_while_clients_keep_working(
    rcluster: LocalCluster, radmin: Admin, zk: KazooClient
) -> None:
    topic = "seed-example"
    radmin.create_topic(
        topic,
        replica_assignments={0: list(OAR)},
        config={"min.insync.replicas": "2", "file.delete.delay.ms": "200"},
    )
    wait_until(lambda: state_in_zk(zk, topic) == (1, OAR), 60, "leader 1 with ISR 1, 2, 3")
    recorder = ZkRecorder(zk, topic)
    traffic = Traffic(rcluster, topic)
    wait_until(lambda: len(traffic.acked) >= 20 or None, 60, "acked records before the move")
    controller = radmin.describe_cluster().controller_id

    radmin.alter_partition_reassignments({TopicPartition(topic, 0): list(RAR)})
    wait_until(lambda: completed(zk, topic, RAR), 180, "the reassignment to complete")
    assert radmin.list_partition_reassignments() == {}
    acked_during = len(traffic.acked)
    wait_until(lambda: len(traffic.acked) >= acked_during + 20 or None, 60, "acks after it")
    traffic.stop()
    assert traffic.failed == []

    # ZooKeeper, step by step: every (AR, leader, ISR) seen is a row of the seed's table, in its
    # order, or the ISR growing row by row in step 4; a row is missing only where a watch read
    # a later version than it.
    seen = [
        v
        for v in recorder.views
        if v in SEED_TABLE or not (v[0] == OAR + RAR and v[1] == 1 and set(OAR) < set(v[2]))
    ]
    assert all(v in SEED_TABLE for v in seen), seen
    rows = [SEED_TABLE.index(v) for v in seen]
    assert rows == sorted(rows) and rows[0] == 0 and rows[-1] == len(SEED_TABLE) - 1, seen
    assert len(SEED_TABLE) - len(rows) <= recorder.skipped(), (seen, recorder.versions)
    # ... and the controller took the steps in the seed's order.
    lines = controller_lines(rcluster, controller, f"{topic}-0")
    assert in_order(lines, STEP_LINES) == [], "\n".join(lines)

    # No acked record lost; every record read once, in order.
    records = read_partition(topic)
    assert [offset for offset, _ in records] == list(range(len(records)))
    values = [value for _, value in records]
    assert set(traffic.acked) <= set(values)
    firsts = list(dict.fromkeys(values))
    assert firsts == sorted(firsts)

    # The old replicas' logs are gone from the disk; the new ones hold the data.
    name = partition_dir_name(topic, 0)

    def old_dirs() -> list[Path]:
        return [
            p
            for b in OAR
            for p in (rcluster.data_dir / f"broker-{b}").iterdir()
            if p.name.startswith(f"{name}.") or p.name == name
        ]

    wait_until(lambda: old_dirs() == [], 60, "the old replicas' directories to be deleted")
    assert all((rcluster.data_dir / f"broker-{b}" / name).is_dir() for b in RAR)


def test_a_new_controller_finishes_a_reassignment_its_predecessor_died_in(
    rcluster: LocalCluster, radmin: Admin, zk: KazooClient
) -> None:
    controller = radmin.describe_cluster().controller_id
    others = [b for b in BROKERS if b != controller]
    original, target = tuple(others[:2]), tuple(others[2:5])
    topic = "controller-dies"
    radmin.create_topic(topic, replica_assignments={0: list(original)})
    producer = rcluster.producer(acks=1)
    for _ in range(300):
        producer.send(topic, bytes(10_000), partition=0)
    producer.flush()
    producer.close()
    processes = rcluster.broker_processes(controller)

    radmin.alter_partition_reassignments({TopicPartition(topic, 0): list(target)})
    wait_until(lambda: ar_in_zk(zk, topic) == original + target or None, 60, "AR := OAR + RAR")
    rcluster.kill_broker(controller, processes)
    assert not completed(zk, topic, target), "the reassignment finished before the kill"
    assert zk.exists(REASSIGN_PARTITIONS) is not None

    new = wait_until(
        lambda: (c := radmin.describe_cluster().controller_id) not in (-1, controller) and c,
        90,
        "a new controller",
    )
    wait_until(lambda: completed(zk, topic, target), 180, "the new controller to finish it")
    leader, isr = state_in_zk(zk, topic)
    assert leader in target and set(isr) == set(target)
    resumed = controller_lines(rcluster, new, f"{topic}-0")
    wanted = ["reassignment begins", "-> NonExistentReplica", "completed"]
    assert in_order(resumed, wanted) == [], "\n".join(resumed)
    rcluster.start_broker(controller)
    radmin.wait_for_cluster(len(BROKERS), 120_000)


@pytest.mark.parametrize(
    ("replicas", "partition", "error", "words"),
    [
        ([4, 5, 9], 0, Errors.INVALID_REPLICA_ASSIGNMENT, "brokers [9] are not live"),
        ([4, 4, 5], 0, Errors.INVALID_REPLICA_ASSIGNMENT, "appear more than once"),
        ([], 0, Errors.INVALID_REPLICA_ASSIGNMENT, "the replica list is empty"),
        ([4, 5, 6], 7, Errors.UNKNOWN_TOPIC_OR_PARTITION, "has no partition 7"),
    ],
)
def test_a_bad_reassignment_is_refused_and_changes_nothing(
    radmin: Admin,
    zk: KazooClient,
    replicas: list[int],
    partition: int,
    error: Errors,
    words: str,
) -> None:
    topic = "refused"
    if topic not in radmin.list_topics():
        radmin.create_topic(topic, replica_assignments={0: [1, 2, 3], 1: [2, 3, 4]})
    before = zk.get(topic_path(topic))[1].version
    request = {
        TopicPartition(topic, 1): [3, 4, 5],
        TopicPartition(topic, partition): replicas,
        TopicPartition("no-such-topic", 0): [1, 2, 3],
    }
    with pytest.raises(RafkaError) as raised:
        radmin.alter_partition_reassignments(request)
    assert raised.value.error is error
    assert raised.value.message.startswith(f"{topic}-{partition}: ") and words in str(raised.value)
    assert zk.get(topic_path(topic))[1].version == before
    assert zk.exists(REASSIGN_PARTITIONS) is None
    assert radmin.list_partition_reassignments() == {}
    assert ar_in_zk(zk, topic) == (1, 2, 3)


def test_an_unknown_topic_is_refused(radmin: Admin, zk: KazooClient) -> None:
    with pytest.raises(RafkaError) as raised:
        radmin.alter_partition_reassignments({TopicPartition("no-such-topic", 0): [1, 2]})
    assert raised.value.error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert "no-such-topic-0: topic 'no-such-topic' does not exist" in str(raised.value)
    assert zk.exists(REASSIGN_PARTITIONS) is None


def test_list_shows_a_reassignment_while_it_runs(radmin: Admin, zk: KazooClient) -> None:
    """A reassignment whose new replica is still catching up is listed with its whole replica
    list and what it adds and removes."""
    topic = "listed"
    radmin.create_topic(topic, replica_assignments={0: [1, 2]})
    tp = TopicPartition(topic, 0)
    radmin.alter_partition_reassignments({tp: [2, 3]})
    listed = radmin.list_partition_reassignments([tp])
    # It may already be over on a fast machine; while listed, it is described exactly.
    assert listed in ({}, {tp: PartitionReassignment((1, 2, 3), (3,), (1,))})
    wait_until(lambda: completed(zk, topic, (2, 3)), 120, "the reassignment to complete")
    assert radmin.list_partition_reassignments([tp]) == {}


def test_a_zookeeper_era_tool_writing_the_admin_node_moves_the_partition(
    radmin: Admin, zk: KazooClient
) -> None:
    """The controller watches ``/admin/reassign_partitions``: Kafka's JSON written there by an old
    ``kafka-reassign-partitions --zookeeper`` starts the move, and the node goes once it is done."""
    topic = "tool-written"
    radmin.create_topic(topic, replica_assignments={0: [5, 6]})
    plan = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2]}]}
    zk.create(REASSIGN_PARTITIONS, json.dumps(plan).encode())
    wait_until(lambda: completed(zk, topic, (1, 2)), 120, "the tool's reassignment to complete")
    wait_until(lambda: zk.exists(REASSIGN_PARTITIONS) is None, 30, "the admin node to go")
    leader, isr = state_in_zk(zk, topic)
    assert leader in (1, 2) and set(isr) == {1, 2}
