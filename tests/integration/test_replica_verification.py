"""``rafka replica-verification`` on a real cluster: replicas that agree, and one that does not.

The command runs in a subprocess with a user's environment. The diverged replica is made as a disk
fault would make it: with its broker down, one batch of its segment file gets other payload bytes
and a CRC that matches them, so the log still opens cleanly, and the batch lies below the high
watermark, where a restarted follower keeps what it has (it truncates only past the leader's end
offset for its epoch).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import crc32c
import pytest
import ray

from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.log.files import LOG_SUFFIX, partition_dir_name, segment_path
from rafka.protocol.records.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, iter_batches
from rafka.testing import serving_replica, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

NAMESPACE = "rafka-verify"
TOPIC = "verified"
PARTITIONS = 2
BATCHES = 10
PER_BATCH = 10
RECORDS = BATCHES * PER_BATCH
NOT_A_USERS = ("RAY_", "PYSPARK_", "SPARK_", "PYTEST_", "VIRTUAL_ENV", "PYTHONPATH")


@pytest.fixture(scope="module")
def cluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """Three brokers of this module's own, with one RF 3 topic holding ``RECORDS`` records in
    each partition, every replica caught up."""
    with LocalCluster(
        brokers=3,
        data_dir=session_dir / "verify",
        zookeeper=zookeeper.connect_string,
        cluster_name="verify",
        namespace=NAMESPACE,
        node_ids=ray_nodes,
        broker_config={"zookeeper_session_timeout_ms": 4000, "replica_fetch_backoff_ms": 100},
    ) as local:
        local.admin().create_topic(TOPIC, PARTITIONS, 3)
        with local.producer(acks="all") as producer:
            for batch in range(BATCHES):
                for partition in range(PARTITIONS):
                    for i in range(PER_BATCH):
                        value = f"value-{partition}-{batch * PER_BATCH + i:04d}".encode()
                        producer.send(TOPIC, value, partition=partition)
                producer.flush()
        for partition in range(PARTITIONS):
            wait_caught_up(partition)
        yield local


def replica_state(partition: int, broker_id: int) -> dict[str, object]:
    """What the replica actor of ``partition`` on ``broker_id`` says of itself."""
    replica = serving_replica(TOPIC, partition, broker_id, NAMESPACE)
    state: dict[str, object] = ray.get(replica.describe.remote(), timeout=30)
    return state


def wait_caught_up(partition: int) -> None:
    """Until every replica of ``partition`` has every record below its high watermark."""
    wait_until(
        lambda: all(replica_state(partition, b)["high_watermark"] == RECORDS for b in range(3)),
        60,
        f"every replica of {TOPIC}-{partition} to reach high watermark {RECORDS}",
    )


def run_rafka(*argv: str) -> subprocess.CompletedProcess[str]:
    """The ``rafka`` command in a subprocess, in the environment a user has (no ``RAY_*``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_A_USERS)}
    return subprocess.run(
        [sys.executable, "-m", "rafka", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def verify(*options: str) -> subprocess.CompletedProcess[str]:
    """``rafka replica-verification`` against this module's cluster."""
    address = ray.get_runtime_context().gcs_address
    return run_rafka(
        "--namespace", NAMESPACE, "--address", address, "replica-verification", *options
    )


def damage_batch_holding(segment: Path, marker: bytes) -> int:
    """Give the batch holding ``marker`` other payload bytes of the same length and a CRC that
    matches them; return the batch's base offset."""
    data = bytearray(segment.read_bytes())
    for position, header in iter_batches(data):
        end = position + header.size_in_bytes
        found = data.find(marker, position, end)
        if found >= 0:
            data[found : found + len(marker)] = marker.upper()
            crc = crc32c.crc32c(bytes(data[position + ATTRIBUTES_OFFSET : end]))
            data[position + CRC_OFFSET : position + CRC_OFFSET + 4] = crc.to_bytes(4, "big")
            segment.write_bytes(bytes(data))
            return header.base_offset
    raise AssertionError(f"no batch of {segment} holds {marker!r}")


def test_replicas_that_agree_report_their_lag_and_exit_0(cluster: LocalCluster) -> None:
    result = verify("--topic-white-list", "verif.*")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith(": verification process is started.")
    assert lines[1].endswith(
        f": max lag is 0 for partition [{TOPIC},0] at offset {RECORDS} among {PARTITIONS} "
        "partitions"
    ), result.stdout


def test_a_topic_pattern_matching_nothing_exits_1_with_one_error_line(
    cluster: LocalCluster,
) -> None:
    result = verify("--topic-white-list", "verif")
    assert result.returncode == 1
    assert result.stderr == "Error: no topic matches --topic-white-list 'verif'\n"


def test_an_unreachable_cluster_exits_1_with_one_error_line() -> None:
    result = run_rafka(
        "--address", "127.0.0.1:1", "replica-verification", "--topic-white-list", TOPIC
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")
    assert "127.0.0.1:1" in result.stderr


def test_a_replica_damaged_on_disk_is_reported_at_its_partition_and_offset_and_exits_1(
    cluster: LocalCluster,
) -> None:
    leader = cluster.admin().describe_topic(TOPIC).partitions[1].leader
    follower = next(b for b in range(3) if b != leader)
    cluster.stop_broker(follower)
    log_dir = cluster.data_dir / f"broker-{follower}" / partition_dir_name(TOPIC, 1)
    offset = damage_batch_holding(segment_path(log_dir, 0, LOG_SUFFIX), b"value-1-0055")
    assert 0 < offset <= 55
    cluster.start_broker(follower)
    wait_caught_up(1)

    result = verify("--topic-white-list", TOPIC)

    assert result.returncode == 1, result.stdout + result.stderr
    last = result.stdout.splitlines()[-1]
    assert last.startswith(f"Partition [{TOPIC},1] has unmatched checksum at offset {offset}; ")
    assert f"replica {follower}'s checksum" in last
