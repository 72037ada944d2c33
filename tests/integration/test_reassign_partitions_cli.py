"""``rafka reassign-partitions`` on a real cluster whose brokers sit on racks, run in a subprocess
with a user's environment: ``--generate`` proposes a rack-aware plan in Kafka's shapes and changes
nothing, bad input is one error line, exit 1, and nothing written to ZooKeeper, and ``--execute``
then ``--verify`` move a topic under a throttle (removed when done) and move it back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from kazoo.client import KazooClient

from rafka.actors.zk.data import CONFIG_BROKERS, decode_assignment, topic_config_path, topic_path
from rafka.cli.reassignment_json import parse_reassignment
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

NAMESPACE = "rafka-reassign-cli"
CLUSTER = "reassign-cli"
RACKS = {0: "a", 1: "b", 2: "a"}
"""Broker 3 has no rack: a plan that includes it must be made rack-unaware."""
TOPIC = "moving"
ASSIGNMENT = {0: (0, 1), 1: (1, 0), 2: (0, 1), 3: (1, 0)}
"""Every partition of ``TOPIC`` on brokers 0 and 1, placed explicitly (the racks are mixed)."""
NOT_A_USERS = ("RAY_", "PYSPARK_", "SPARK_", "PYTEST_", "VIRTUAL_ENV", "PYTHONPATH")
REASSIGN_NODE = "/admin/reassign_partitions"
"""Where Kafka's admin writes reassignments: nothing may appear there for bad input."""


@pytest.fixture(scope="module")
def cluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """Four brokers (0 and 2 on rack a, 1 on rack b, 3 on none) with ``TOPIC`` on brokers 0, 1."""
    with LocalCluster(
        brokers=4,
        data_dir=session_dir / CLUSTER,
        zookeeper=zookeeper.connect_string,
        cluster_name=CLUSTER,
        namespace=NAMESPACE,
        node_ids=ray_nodes,
        racks=RACKS,
        broker_config={"replica_fetch_backoff_ms": 100},
    ) as local:
        local.admin().create_topic(
            TOPIC, replica_assignments={p: list(r) for p, r in ASSIGNMENT.items()}
        )
        yield local


def rafka(*argv: str) -> subprocess.CompletedProcess[str]:
    """``rafka reassign-partitions`` against this module's cluster, in a subprocess with the
    environment a user has (no ``RAY_*``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_A_USERS)}
    address = ray.get_runtime_context().gcs_address
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "rafka",
            "--namespace",
            NAMESPACE,
            "--address",
            address,
            "reassign-partitions",
            *argv,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def write(path: Path, document: object) -> Path:
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def generate(tmp_path: Path, brokers: str, *extra: str) -> subprocess.CompletedProcess[str]:
    topics = write(tmp_path / "topics.json", {"version": 1, "topics": [{"topic": TOPIC}]})
    return rafka(
        "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", brokers, *extra
    )


def unchanged(zk: KazooClient) -> None:
    """Assert the cluster holds what the fixture made: no reassignment, ``TOPIC`` where it was,
    and no throttle configured."""
    assert zk.exists(REASSIGN_NODE) is None
    assert decode_assignment(zk.get(topic_path(TOPIC))[0]) == ASSIGNMENT
    config = zk.get(topic_config_path(TOPIC))[0] if zk.exists(topic_config_path(TOPIC)) else b""
    assert b"throttled" not in config
    for broker in zk.get_children(CONFIG_BROKERS) if zk.exists(CONFIG_BROKERS) else []:
        assert b"throttled" not in zk.get(f"{CONFIG_BROKERS}/{broker}")[0]


def assert_refused(result: subprocess.CompletedProcess[str], message: str) -> None:
    """One error line saying ``message``, exit 1, nothing on stdout."""
    assert result.returncode == 1 and result.stdout == "", result.stdout
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr, result.stderr


def test_generate_proposes_a_rack_aware_plan_on_the_listed_brokers_in_kafkas_shapes(
    cluster: LocalCluster, zk: KazooClient, tmp_path: Path
) -> None:
    result = generate(tmp_path, "0,1,2")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[1] == json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": TOPIC, "partition": p, "replicas": list(r), "log_dirs": ["any", "any"]}
                for p, r in ASSIGNMENT.items()
            ],
        },
        separators=(",", ":"),
    )
    assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
    proposed = parse_reassignment(lines[4], "the proposal")
    assert set(proposed) == {TopicPartition(TOPIC, p) for p in ASSIGNMENT}
    for tp, replicas in proposed.items():
        assert len(replicas) == 2 and set(replicas) <= {0, 1, 2}, tp
        assert {RACKS[b] for b in replicas} == {"a", "b"}, (tp, replicas)
    unchanged(zk)


def test_generate_onto_a_broker_without_a_rack_must_be_rack_unaware(
    cluster: LocalCluster, zk: KazooClient, tmp_path: Path
) -> None:
    refused = generate(tmp_path, "2,3")
    assert_refused(refused, "--disable-rack-aware")
    assert refused.stderr.startswith("Error: INVALID_REPLICA_ASSIGNMENT (39): ")

    result = generate(tmp_path, "2,3", "--disable-rack-aware")

    assert result.returncode == 0, result.stderr
    proposed = parse_reassignment(result.stdout.splitlines()[4], "the proposal")
    assert all(sorted(replicas) == [2, 3] for replicas in proposed.values())
    unchanged(zk)


@pytest.mark.parametrize(
    ("topics", "brokers", "message"),
    [
        ({"version": 1, "topics": [{"topic": "nosuch"}]}, "0,1", "names a topic that does not "),
        ({"version": 1, "topics": [{"topic": TOPIC}]}, "0,7", "names unknown broker 7 (live "),
        ({"version": 1, "topics": [{"topic": TOPIC}, {"topic": TOPIC}]}, "0,1", "more than once"),
        ({"version": 1, "topics": [{"topic": TOPIC}]}, "0,0", "names broker 0 more than once"),
        ({"version": 1, "topics": [{"topic": TOPIC}]}, "0", "replication factor 2, more than"),
    ],
)
def test_generate_refuses_bad_input_with_one_line(
    cluster: LocalCluster, tmp_path: Path, topics: object, brokers: str, message: str
) -> None:
    path = write(tmp_path / "topics.json", topics)
    result = rafka("--generate", "--topics-to-move-json-file", str(path), "--broker-list", brokers)
    assert_refused(result, message)


def partitions(*entries: tuple[object, object, object]) -> dict[str, object]:
    """A reassignment file's document of (topic, partition, replicas) entries."""
    return {
        "version": 1,
        "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in entries],
    }


FILE_ERRORS = [
    ('{"version":1,"partitions":[{"topic":', "is not valid JSON: "),
    ({**partitions((TOPIC, 0, [2, 3])), "version": 2}, "has version 2; the only supported"),
    ({"version": 1}, "has no 'partitions' list"),
    ({"version": 1, "partitions": [{"topic": TOPIC, "replicas": [2]}]}, '"partition" number'),
    ({"version": 1, "partitions": [{"topic": TOPIC, "partition": 0}]}, '"replicas" list'),
    (partitions((TOPIC, 0, [2, 3, 2])), "names broker 2 more than once"),
    (partitions((TOPIC, 0, [2, 3]), (TOPIC, 0, [3, 2])), f"{TOPIC}-0 is listed more than once"),
    (partitions((TOPIC, 0, [])), f"({TOPIC}-0) has an empty replica list"),
]
"""Reassignment files that cannot be read, and what the error says."""

CLUSTER_ERRORS = [
    (partitions((TOPIC, 0, [2, 3]), ("nosuch", 0, [2])), "a topic that does not exist: nosuch"),
    (
        partitions((TOPIC, 0, [2, 3]), (TOPIC, 9, [2])),
        f"a partition that does not exist: {TOPIC}-9",
    ),
    (partitions((TOPIC, 0, [2, 9])), "names unknown broker 9 (live brokers: 0,1,2,3)"),
]
"""Reassignments of what the cluster does not have, and what the error says."""


@pytest.mark.parametrize(("document", "message"), FILE_ERRORS)
@pytest.mark.parametrize("action", ["--execute", "--verify"])
def test_a_bad_reassignment_file_is_one_error_line_and_changes_nothing(
    cluster: LocalCluster,
    zk: KazooClient,
    tmp_path: Path,
    document: object,
    message: str,
    action: str,
) -> None:
    path = write(tmp_path / "reassign.json", document)
    extra = ["--throttle", "1000000"] if action == "--execute" else []
    assert_refused(rafka(action, "--reassignment-json-file", str(path), *extra), message)
    unchanged(zk)


@pytest.mark.parametrize(("document", "message"), CLUSTER_ERRORS)
def test_executing_a_move_of_what_the_cluster_lacks_is_refused_and_changes_nothing(
    cluster: LocalCluster, zk: KazooClient, tmp_path: Path, document: object, message: str
) -> None:
    path = write(tmp_path / "reassign.json", document)
    result = rafka("--execute", "--reassignment-json-file", str(path), "--throttle", "1000000")
    assert_refused(result, message)
    unchanged(zk)


def test_execute_then_verify_moves_a_topic_and_the_rollback_json_moves_it_back(
    cluster: LocalCluster, zk: KazooClient, tmp_path: Path
) -> None:
    """Kafka's round trip: execute prints the rollback JSON, verify --wait reports each partition
    complete, the records are all on the new replicas, and executing the rollback restores the
    first assignment."""
    topic, before = "roundtrip", {0: [0, 1], 1: [1, 0]}
    admin = cluster.admin()
    admin.create_topic(topic, replica_assignments=before)
    with Producer(namespace=NAMESPACE, acks="all") as producer:
        for i in range(200):
            producer.send(topic, str(i).encode(), partition=i % 2)
        producer.flush()
    moved = {0: [2, 3], 1: [3, 2]}
    plan = write(
        tmp_path / "plan.json",
        {
            "version": 1,
            "partitions": [
                {"topic": topic, "partition": p, "replicas": r} for p, r in moved.items()
            ],
        },
    )

    executed = rafka("--execute", "--reassignment-json-file", str(plan), "--throttle", "100000000")
    assert executed.returncode == 0, executed.stderr
    assert "The inter-broker throttle limit was set to 100000000 B/s" in executed.stdout
    lines = executed.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    rollback = write(tmp_path / "rollback.json", lines[2])
    assert {(tp.partition, r) for tp, r in parse_reassignment(lines[2], "rollback").items()} == {
        (p, tuple(r)) for p, r in before.items()
    }
    assert "Successfully started partition reassignment" in executed.stdout

    verified = rafka("--verify", "--reassignment-json-file", str(plan), "--wait")
    assert verified.returncode == 0, verified.stderr
    for p in moved:
        assert f"Reassignment of partition {topic}-{p} is complete." in verified.stdout
    assert "Throttle was removed." in verified.stdout
    assert b"throttled" not in zk.get(topic_config_path(topic))[0]
    for broker in zk.get_children(CONFIG_BROKERS):
        assert b"throttled" not in zk.get(f"{CONFIG_BROKERS}/{broker}")[0]
    assert {p.partition: list(p.replicas) for p in admin.describe_topic(topic).partitions} == moved
    consumer = Consumer(namespace=NAMESPACE, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    values: list[int] = []

    def read_all() -> bool:
        values.extend(int(r.value or b"") for recs in consumer.poll(500).values() for r in recs)
        return len(values) >= 200

    wait_until(read_all, 60, "every record from the new replicas")
    consumer.close()
    assert sorted(values) == list(range(200))

    assert rafka("--execute", "--reassignment-json-file", str(rollback)).returncode == 0
    back = rafka("--verify", "--reassignment-json-file", str(rollback), "--wait")
    assert back.returncode == 0, back.stderr
    assert {p.partition: list(p.replicas) for p in admin.describe_topic(topic).partitions} == before
    assert zk.exists(REASSIGN_NODE) is None
