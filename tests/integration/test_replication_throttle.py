"""Replication throttles (KIP-73) and DescribeLogDirs on a live cluster: a replica catching up after
its broker was down moves at the throttled rate while an unthrottled partition on the same broker
and a consumer of the throttled leader run at full speed; removing the config lifts the throttle at
once; ``describe_log_dirs`` and ``rafka log-dirs`` report the sizes of the files on disk and a lag
that reaches 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import ray
from kazoo.client import KazooClient

from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.log.files import partition_dir_name
from rafka.protocol.configs import AlterConfigOp, AlterConfigOpType, ConfigResource
from rafka.protocol.configs import ConfigResourceType as Kind
from rafka.protocol.messages.admin import ReplicaLogDirInfo
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NS = "rafka-throttle"
CLUSTER = "throttle"
RATE = 200_000
"""The throttled rate, bytes/s."""
DATA = 3_000_000
"""Bytes produced while the catching-up replica's broker is down."""
RECORD = 1000


@pytest.fixture(scope="module")
def tcluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """Three brokers of a cluster of this module's own."""
    local = LocalCluster(
        brokers=3,
        data_dir=session_dir / CLUSTER,
        zookeeper=zookeeper.connect_string,
        cluster_name=CLUSTER,
        namespace=NS,
        node_ids=ray_nodes,
        broker_config={
            "zookeeper_session_timeout_ms": 4000,
            "replica_fetch_backoff_ms": 100,
            "auto_create_topics_enable": False,
        },
    )
    with local:
        yield local


@pytest.fixture(scope="module")
def tadmin(tcluster: LocalCluster) -> Admin:
    return tcluster.admin()


def rafka(*args: str) -> subprocess.CompletedProcess[str]:
    """The ``rafka`` command in a subprocess, as a user runs it."""
    address = ray.get_runtime_context().gcs_address
    return subprocess.run(
        [sys.executable, "-m", "rafka", "--namespace", NS, "--address", address, *args],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )


def produce(topic: str, nbytes: int = DATA) -> None:
    with Producer(namespace=NS, acks=1, linger_ms=5) as producer:
        for _ in range(nbytes // RECORD):
            producer.send(topic, b"x" * RECORD, partition=0)
        producer.flush()


def replica_info(admin: Admin, broker: int, topic: str) -> ReplicaLogDirInfo | None:
    """Partition 0 of ``topic`` as ``broker`` describes it (None if it does not host it yet)."""
    (log_dir,) = admin.describe_log_dirs([broker])[broker]
    return log_dir.replicas.get(TopicPartition(topic, 0))


def leader_size(admin: Admin, topic: str) -> int:
    """Bytes of partition 0 of ``topic`` on broker 0, its leader."""
    info = replica_info(admin, 0, topic)
    assert info is not None
    return info.size


@dataclass(frozen=True)
class Sample:
    """A follower's size and lag at one moment (monotonic seconds)."""

    at: float
    size: int
    lag: int


def watch(
    admin: Admin, broker: int, topics: list[str], until: dict[str, int]
) -> dict[str, list[Sample]]:
    """Samples of each topic's replica on ``broker`` until each reaches its ``until`` size."""
    samples: dict[str, list[Sample]] = {t: [] for t in topics}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        (log_dir,) = admin.describe_log_dirs([broker])[broker]
        now = time.monotonic()
        for topic in topics:
            info = log_dir.replicas.get(TopicPartition(topic, 0))
            if info is not None:
                samples[topic].append(Sample(now, info.size, info.offset_lag))
        if all(samples[t] and samples[t][-1].size >= until[t] for t in until):
            return samples
        time.sleep(0.1)
    raise AssertionError(f"replicas on broker {broker} did not reach {until}: {samples}")


def first_at(samples: list[Sample], size: float) -> Sample:
    return next(s for s in samples if s.size >= size)


def rate_between(samples: list[Sample], low: float, high: float) -> float:
    """Bytes/s the replica moved between reaching sizes ``low`` and ``high``."""
    start, end = first_at(samples, low), first_at(samples, high)
    return (end.size - start.size) / (end.at - start.at)


def broker_rate(admin: Admin, broker: int, name: str, rate: int | None) -> None:
    op = (
        AlterConfigOp(AlterConfigOpType.DELETE)
        if rate is None
        else AlterConfigOp(AlterConfigOpType.SET, str(rate))
    )
    admin.incremental_alter_configs([ConfigResource(Kind.BROKER, str(broker), {name: op})])


def test_a_follower_throttle_holds_catch_up_to_its_rate_and_lifts_when_removed(
    tcluster: LocalCluster, tadmin: Admin, topic_name: str
) -> None:
    slow, fast = f"{topic_name}-slow", f"{topic_name}-fast"
    for topic in (slow, fast):
        tadmin.create_topic(topic, replica_assignments={0: [0, 1]})
    throttled = rafka(
        "configs",
        *("--entity-type", "topics", "--entity-name", slow),
        *("--alter", "--add-config", "follower.replication.throttled.replicas=[0:1]"),
    )
    assert throttled.returncode == 0, throttled.stderr
    rated = rafka(
        "configs",
        *("--entity-type", "brokers", "--entity-name", "1"),
        *("--alter", "--add-config", f"follower.replication.throttled.rate={RATE}"),
    )
    assert rated.returncode == 0, rated.stderr
    try:
        tcluster.stop_broker(1)
        produce(slow)
        produce(fast)
        target = {t: leader_size(tadmin, t) for t in (slow, fast)}
        tcluster.start_broker(1)
        samples = watch(tadmin, 1, [slow, fast], {slow: target[slow] // 2, fast: target[fast]})
        assert RATE * 0.9 <= rate_between(samples[slow], 0.15 * DATA, 0.5 * DATA) <= RATE * 1.1
        assert first_at(samples[fast], target[fast]).at < first_at(samples[slow], 0.3 * DATA).at
        assert max(s.lag for s in samples[slow]) > 0
        lifted_at, remaining = time.monotonic(), target[slow] - samples[slow][-1].size
        lifted = rafka(
            "configs",
            *("--entity-type", "brokers", "--entity-name", "1"),
            *("--alter", "--delete-config", "follower.replication.throttled.rate"),
        )
        assert lifted.returncode == 0, lifted.stderr
        wait_until(
            lambda: replica_info(tadmin, 1, slow) == ReplicaLogDirInfo(target[slow], 0),
            60,
            "the slow replica to catch up once the throttle is lifted",
        )
        assert time.monotonic() - lifted_at < remaining / RATE / 2
    finally:
        broker_rate(tadmin, 1, "follower.replication.throttled.rate", None)


def consume_all(topic: str, count: int) -> float:
    """Seconds a consumer takes to read ``count`` records of partition 0 from the start."""
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest", max_poll_records=10_000)
    started = time.monotonic()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        seen = 0
        while seen < count:
            seen += sum(len(r) for r in consumer.poll(timeout_ms=10_000).values())
        return time.monotonic() - started
    finally:
        consumer.close()


def test_a_leader_throttle_slows_out_of_sync_followers_but_never_consumers(
    tcluster: LocalCluster, tadmin: Admin, topic_name: str
) -> None:
    tadmin.create_topic(topic_name, replica_assignments={0: [0, 2]})
    tadmin.incremental_alter_configs(
        [
            ConfigResource(
                Kind.TOPIC,
                topic_name,
                {
                    "leader.replication.throttled.replicas": AlterConfigOp(
                        AlterConfigOpType.SET, "0:0"
                    )
                },
            )
        ]
    )
    broker_rate(tadmin, 0, "leader.replication.throttled.rate", RATE)
    try:
        tcluster.stop_broker(2)
        produce(topic_name)
        target = leader_size(tadmin, topic_name)
        tcluster.start_broker(2)
        consumed: list[float] = []
        consumer = threading.Thread(
            target=lambda: consumed.append(consume_all(topic_name, DATA // RECORD))
        )
        consumer.start()
        samples = watch(tadmin, 2, [topic_name], {topic_name: int(target * 0.8)})[topic_name]
        consumer.join(timeout=60)
        assert RATE * 0.9 <= rate_between(samples, 0.2 * DATA, 0.8 * DATA) <= RATE * 1.1
        assert consumed and DATA / consumed[0] > 5 * RATE
    finally:
        broker_rate(tadmin, 0, "leader.replication.throttled.rate", None)
    wait_until(
        lambda: replica_info(tadmin, 2, topic_name) == ReplicaLogDirInfo(target, 0),
        60,
        "the follower to catch up once the leader's throttle is lifted",
    )


def on_disk(log_dir: str, topic: str, partition: int) -> int:
    """Bytes of the partition's segment files in ``log_dir``."""
    directory = Path(log_dir) / partition_dir_name(topic, partition)
    return sum(f.stat().st_size for f in directory.glob("*.log"))


def test_log_dirs_report_the_sizes_on_disk_and_a_lag_that_reaches_zero(
    tadmin: Admin, topic_name: str
) -> None:
    tadmin.create_topic(topic_name, 2, 3)
    with Producer(namespace=NS, acks="all") as producer:
        for i in range(200):
            producer.send(topic_name, b"y" * 500, partition=i % 2)
        producer.flush()
    partitions = [TopicPartition(topic_name, p) for p in range(2)]

    def settled() -> dict[int, dict[TopicPartition, ReplicaLogDirInfo]] | None:
        found = {
            broker: {tp: dirs[0].replicas[tp] for tp in partitions}
            for broker, dirs in tadmin.describe_log_dirs().items()
        }
        lags = [info.offset_lag for replicas in found.values() for info in replicas.values()]
        return found if all(lag == 0 for lag in lags) else None

    found = wait_until(settled, 60, "every replica's offset lag to reach 0")
    described = tadmin.describe_log_dirs()
    assert sorted(described) == [0, 1, 2]
    for (log_dir,) in described.values():
        for tp in partitions:
            assert log_dir.replicas[tp].size == on_disk(log_dir.path, *tp) > 100 * 500
    assert {found[b][tp].size for b in found for tp in partitions} == {
        on_disk(described[0][0].path, *tp) for tp in partitions
    }

    printed = rafka("log-dirs", "--describe", "--broker-list", "0,2", "--topic-list", topic_name)
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 0,2",
    ]
    report = json.loads(lines[2])
    assert report["version"] == 1
    assert [b["broker"] for b in report["brokers"]] == [0, 2]
    for entry in report["brokers"]:
        (log_dir,) = entry["logDirs"]
        assert (log_dir["logDir"], log_dir["error"]) == (described[entry["broker"]][0].path, None)
        assert log_dir["partitions"] == [
            {
                "partition": f"{topic_name}-{p}",
                "size": on_disk(log_dir["logDir"], topic_name, p),
                "offsetLag": 0,
                "isFuture": False,
            }
            for p in range(2)
        ]
    missing = rafka("log-dirs", "--describe", "--broker-list", "0,7")
    assert missing.returncode == 1
    assert "BROKER_NOT_AVAILABLE" in missing.stderr and "[7]" in missing.stderr


def test_a_bad_throttled_replicas_value_is_refused_naming_it_and_nothing_is_written(
    tadmin: Admin, zk: KazooClient, topic_name: str
) -> None:
    tadmin.create_topic(topic_name, 1, 1, config={"retention.ms": "60000"})
    before = zk.get(f"/config/topics/{topic_name}")[0], sorted(zk.get_children("/config/changes"))
    refused = rafka(
        "configs",
        *("--entity-type", "topics", "--entity-name", topic_name),
        *("--alter", "--add-config", "leader.replication.throttled.replicas=[0-1]"),
    )
    assert refused.returncode == 1
    assert "INVALID_CONFIG" in refused.stderr
    assert "leader.replication.throttled.replicas='0-1'" in refused.stderr
    after = zk.get(f"/config/topics/{topic_name}")[0], sorted(zk.get_children("/config/changes"))
    assert after == before
