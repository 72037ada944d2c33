"""Preferred-replica election on a real 8-broker cluster: seed 000's walk with the tool, the admin
node, the automatic leader balance, and bad input to the tool; no acknowledged record is lost."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from kazoo.client import KazooClient

from rafka.actors.zk.data import PREFERRED_REPLICA_ELECTION, encode_preferred_replica_election
from rafka.cli.main import main
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.errors import Errors
from rafka.protocol.types import ElectionType, TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
NS = "rafka-preferred"
CLUSTER = "preferred"
BROKERS = 8
TOPIC = "topic1"
PARTITIONS = 8
ASSIGNMENT = {p: [p, (p + 1) % BROKERS, (p + 2) % BROKERS] for p in range(PARTITIONS)}
"""Seed 000's topic: 8 partitions of 3 replicas, partition p's preferred replica on broker p."""


@pytest.fixture(scope="module")
def pcluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """Eight light brokers (long-polling idle followers, no automatic balance to begin with)."""
    local = LocalCluster(
        brokers=BROKERS,
        data_dir=session_dir / CLUSTER,
        zookeeper=zookeeper.connect_string,
        cluster_name=CLUSTER,
        namespace=NS,
        node_ids=ray_nodes,
        start_timeout_s=240,
        broker_config={
            "zookeeper_session_timeout_ms": 4000,
            "replica_fetch_backoff_ms": 100,
            "replica_fetch_wait_max_ms": 500,
            "auto_create_topics_enable": False,
            "auto_leader_rebalance_enable": False,
        },
    )
    with local:
        local.admin().create_topic(TOPIC, replica_assignments=ASSIGNMENT)
        yield local


@pytest.fixture
def padmin(pcluster: LocalCluster) -> Admin:
    return pcluster.admin()


class AckedProducer:
    """A producer thread sending to every partition in turn with acks=all, keeping what was
    acknowledged."""

    def __init__(self) -> None:
        self.acked: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> AckedProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=180)

    def _run(self) -> None:
        with Producer(namespace=NS, acks="all", linger_ms=5, delivery_timeout_ms=60_000) as p:
            seq = 0
            while not self._stop.is_set():
                value = f"r{seq:06d}".encode()
                p.send(TOPIC, value, partition=seq % PARTITIONS).add_callback(
                    self._ack, seq % PARTITIONS, value
                )
                seq += 1
                self._stop.wait(0.02)

    def _ack(self, partition: int, value: bytes, _metadata: object) -> None:
        with self._lock:
            self.acked[partition].append(value)


def assert_nothing_acked_was_lost(acked: dict[int, list[bytes]]) -> None:
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest", max_poll_records=100_000)
    consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    found: dict[int, set[bytes | None]] = {p: set() for p in range(PARTITIONS)}
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and any(
        not set(acked[p]) <= found[p] for p in range(PARTITIONS)
    ):
        for tp, records in consumer.poll(timeout_ms=1000).items():
            found[tp.partition].update(r.value for r in records)
    consumer.close()
    assert sum(map(len, acked.values())) > 0
    for p in range(PARTITIONS):
        assert set(acked[p]) <= found[p], f"partition {p} lost acknowledged records"


def leaders(admin: Admin) -> list[int]:
    return [p.leader for p in admin.describe_topic(TOPIC).partitions]


def wait_leaders(admin: Admin, expected: list[int], what: str, timeout_s: float = 60) -> None:
    wait_until(lambda: leaders(admin) == expected, timeout_s, f"{what}: leaders {expected}")


def wait_in_sync(cluster: LocalCluster, admin: Admin, brokers: set[int]) -> None:
    """Until every replica on ``brokers`` is back in its partition's ISR; on a timeout, the
    partitions and the brokers' last log lines about the topic are printed first."""

    def in_sync() -> bool:
        return all(
            brokers.intersection(p.replicas) <= set(p.isr)
            for p in admin.describe_topic(TOPIC).partitions
        )

    try:
        wait_until(in_sync, 180, f"brokers {sorted(brokers)} to rejoin the ISRs")
    except AssertionError:
        print(admin.describe_topic(TOPIC).partitions)
        for log in sorted(cluster.data_dir.glob("broker-*/*.log")):
            lines = [line for line in log.read_text().splitlines() if TOPIC in line]
            print(f"--- {log} ---", *lines[-40:], sep="\n")
        raise


def run_tool(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["--namespace", NS, "preferred-replica-election", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_seed_walk_leaders_return_to_the_preferred_replicas_that_are_in_sync(
    pcluster: LocalCluster, padmin: Admin, capsys: pytest.CaptureFixture[str]
) -> None:
    wait_leaders(padmin, list(range(8)), "the new topic")
    with AckedProducer() as producer:
        for broker in (1, 2, 4):
            pcluster.stop_broker(broker)
        # Partition 1 (1,2,3) and 2 (2,3,4) move to 3, partition 4 (4,5,6) to 5.
        wait_leaders(padmin, [0, 3, 3, 3, 5, 5, 6, 7], "brokers 1, 2 and 4 stopped")
        pcluster.start_broker(1)
        wait_in_sync(pcluster, padmin, {1})
        assert leaders(padmin) == [0, 3, 3, 3, 5, 5, 6, 7], "a restarted broker leads nothing"

        code, out = run_tool(capsys)
        assert "Successfully started preferred replica election for partitions topic1-1\n" in out
        for p in (2, 4):
            assert (
                f"Preferred replica election for partition topic1-{p} not done: "
                f"PREFERRED_LEADER_NOT_AVAILABLE: preferred replica {p} of topic1-{p} is down"
            ) in out
        assert code == 1, "as Kafka's tool, some preferred replicas could not be elected"
        wait_leaders(padmin, [0, 1, 3, 3, 5, 5, 6, 7], "the first election")

        pcluster.start_broker(2)
        pcluster.start_broker(4)
        wait_in_sync(pcluster, padmin, {2, 4})
        assert leaders(padmin) == [0, 1, 3, 3, 5, 5, 6, 7], "restarted brokers lead nothing"

        code, out = run_tool(capsys)
        assert code == 0, out
        assert (
            "Successfully started preferred replica election for partitions topic1-2, topic1-4\n"
        ) in out
        wait_leaders(padmin, list(range(8)), "the second election")
    assert_nothing_acked_was_lost(producer.acked)


def test_the_admin_node_elects_its_partitions_and_is_deleted(
    pcluster: LocalCluster, padmin: Admin, zk: KazooClient
) -> None:
    pcluster.stop_broker(3)
    wait_leaders(padmin, [0, 1, 2, 4, 4, 5, 6, 7], "broker 3 stopped")
    pcluster.start_broker(3)
    wait_in_sync(pcluster, padmin, {3})
    request = encode_preferred_replica_election([TopicPartition(TOPIC, 3)])

    def elected_through_the_node() -> bool:
        # The node is deleted once its election ran; a replica that fell out of the ISR meanwhile
        # (a loaded machine) is not elected, and the operator writes the node again.
        if zk.exists(PREFERRED_REPLICA_ELECTION) is not None:
            return False
        if leaders(padmin) == list(range(8)):
            return True
        zk.create(PREFERRED_REPLICA_ELECTION, request)
        return False

    wait_until(elected_through_the_node, 90, "the election the admin node asked for")


def test_elect_leaders_reports_each_partition(padmin: Admin) -> None:
    wanted = [TopicPartition(TOPIC, 0), TopicPartition("no-such-topic", 0)]
    results = padmin.elect_leaders(ElectionType.PREFERRED, wanted)
    assert results[TopicPartition(TOPIC, 0)].error is Errors.ELECTION_NOT_NEEDED
    assert results[TopicPartition("no-such-topic", 0)].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    unclean = padmin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(TOPIC, 1)])
    assert unclean[TopicPartition(TOPIC, 1)].error is Errors.ELECTION_NOT_NEEDED


BAD_FILES = [
    ('{"partitions": [{"topic": "topic1", "partition": 5}', "not valid JSON"),
    (
        '{"partitions": [{"topic": "topic1", "partition": 5}, '
        '{"topic": "topic1", "partition": 5}]}',
        "duplicate partitions: topic1-5",
    ),
    (
        '{"partitions": [{"topic": "topic1", "partition": 5}, {"topic": "nope", "partition": 0}]}',
        "topic 'nope' does not exist",
    ),
    (
        '{"partitions": [{"topic": "topic1", "partition": 5}, '
        '{"topic": "topic1", "partition": 8}]}',
        "partition topic1-8 does not exist (topic 'topic1' has 8 partitions)",
    ),
]


def test_bad_input_names_the_problem_exits_non_zero_and_moves_nothing(
    pcluster: LocalCluster, padmin: Admin, zk: KazooClient, tmp_path: Path
) -> None:
    pcluster.stop_broker(5)
    pcluster.start_broker(5)
    wait_in_sync(pcluster, padmin, {5})
    before = leaders(padmin)
    assert before[5] == 6, "partition 5 (5,6,7) is led away from its preferred replica"
    address = ray.get_runtime_context().gcs_address
    command = [sys.executable, "-m", "rafka", "--namespace", NS, "--address", address]
    for document, complaint in BAD_FILES:
        path = tmp_path / "partitions.json"
        path.write_text(document)
        done = subprocess.run(
            [*command, "preferred-replica-election", "--path-to-json-file", str(path)],
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode != 0, document
        assert complaint in done.stderr, done.stderr
        assert "Successfully" not in done.stdout
        assert zk.exists(PREFERRED_REPLICA_ELECTION) is None
    assert leaders(padmin) == before
    results = padmin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 5)])
    assert results[TopicPartition(TOPIC, 5)].error is Errors.NONE
    wait_leaders(padmin, list(range(8)), "partition 5 back on broker 5")


def test_automatic_balance_returns_every_leader_without_the_tool(
    pcluster: LocalCluster, padmin: Admin
) -> None:
    pcluster.update_broker_config(
        auto_leader_rebalance_enable=True, leader_imbalance_check_interval_seconds=1
    )
    for broker in range(BROKERS):  # a rolling restart applies the new config
        pcluster.stop_broker(broker)
        pcluster.start_broker(broker)
        wait_in_sync(pcluster, padmin, {broker})
    wait_leaders(padmin, list(range(8)), "the automatic balance after the rolling restart", 120)
    with AckedProducer() as producer:
        for broker in (1, 2, 4):
            pcluster.stop_broker(broker)
        wait_leaders(padmin, [0, 3, 3, 3, 5, 5, 6, 7], "brokers 1, 2 and 4 stopped")
        for broker in (1, 2, 4):
            pcluster.start_broker(broker)
        wait_leaders(padmin, list(range(8)), "the automatic balance", timeout_s=120)
    assert_nothing_acked_was_lost(producer.acked)
