"""Topic growth benchmark: how long adding 100 partitions to a topic on 3 brokers takes.

A topic of one partition on 3 brokers grows to 101 partitions, of replication factor 1 unless
``--replication-factor`` says otherwise (300 idle replica processes alone need more than 2
cores). The figure runs from the ``create_partitions`` call until the leader replica of every new
partition has taken the leader role; the time ``create_partitions`` itself took (it returns once
every broker's metadata names a leader for each new partition) is shown beside it. Every replica is
a process, so this is mostly the time to start that many replica actors on the machine.

Run standalone: ``.venv/bin/python bench/topic_partitions.py [--partitions N]
[--replication-factor R]`` (defaults 100 and 1).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import ray

from rafka.actors import names
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.types import NewPartitions

NAMESPACE = "rafka-bench-partitions"
ADDED = 100
REPLICATION_FACTOR = 1
TOPIC = "grown"


def _leaders_acting(leaders: dict[int, int], timeout_s: float = 1800.0) -> None:
    """Wait until each partition's leader replica actor answers that it leads."""
    pending = dict(leaders)
    deadline = time.monotonic() + timeout_s
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} new partitions have no acting leader")
        for partition, broker in list(pending.items()):
            try:
                replica = ray.get_actor(
                    names.replica_actor_name(TOPIC, partition, broker), namespace=NAMESPACE
                )
                if ray.get(replica.ping.remote(), timeout=10) == "leader":
                    del pending[partition]
            except (ValueError, ray.exceptions.RayError):
                continue
        time.sleep(0.05)


def run(added: int = ADDED, replication: int = REPLICATION_FACTOR) -> list[tuple[str, ...]]:
    """One row: what, time until every new leader acts, time create_partitions took."""
    with tempfile.TemporaryDirectory(prefix="rafka-bench-partitions-") as data_dir:
        with LocalCluster(brokers=3, data_dir=data_dir, namespace=NAMESPACE) as cluster:
            admin = cluster.admin(request_timeout_ms=1_800_000)
            admin.create_topic(TOPIC, 1, replication)
            started = time.monotonic()
            admin.create_partitions({TOPIC: NewPartitions(1 + added)})
            returned = time.monotonic() - started
            partitions = admin.describe_topic(TOPIC).partitions
            _leaders_acting({p.partition: p.leader for p in partitions if p.partition >= 1})
            acting = time.monotonic() - started
    return [
        (
            f"add {added} partitions (RF {replication}) to a topic on 3 brokers",
            f"{acting:.1f} s",
            f"{returned:.1f} s",
        )
    ]


HEADER = ("what", "until every new leader acts", "create_partitions returned after")


def main() -> None:
    """Print the row as a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=ADDED, help="partitions to add")
    parser.add_argument(
        "--replication-factor", type=int, default=REPLICATION_FACTOR, help="of the topic"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    print_table(
        f"Adding partitions ({args.partitions}, RF {args.replication_factor})",
        HEADER,
        run(args.partitions, args.replication_factor),
    )


if __name__ == "__main__":
    main()
