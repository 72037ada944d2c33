"""Topic deletion benchmark: how long deleting a topic of 100 partitions × RF 3 takes on 3 brokers.

The figure runs from the ``delete_topics`` call until no broker's metadata knows the topic and every
one of its 300 partition directories has been renamed for deletion (``<topic>-<p>.<uuid>-delete``);
the note adds when the controller had removed the topic's znodes too. Run it alone:
``.venv/bin/python bench/topic_deletion.py``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from rafka.actors.zk import data as zd
from rafka.actors.zk.client import ZkClient
from rafka.cluster.local_cluster import LocalCluster
from rafka.testing import wait_until

NAMESPACE = "rafka-bench-deletion"
CLUSTER = "bench-deletion"
TOPIC = "doomed"
PARTITIONS = 100
REPLICATION = 3
TIMEOUT_MS = 1_800_000
"""Starting 300 replica processes on a 2-core machine takes minutes: creation gets this long."""
HEADER = ("what", "time", "note")


def _live_directories(data_dir: Path) -> list[Path]:
    """The topic's partition directories not yet renamed for deletion, on every broker."""
    return [p for p in data_dir.glob(f"broker-*/{TOPIC}-*") if p.name.rsplit("-", 1)[1].isdigit()]


def run(partitions: int = PARTITIONS) -> list[tuple[str, ...]]:
    """Create the topic, delete it, time both milestones; one table row."""
    with tempfile.TemporaryDirectory(prefix="rafka-bench-deletion-") as directory:
        data_dir = Path(directory)
        with LocalCluster(
            brokers=3, data_dir=data_dir, namespace=NAMESPACE, cluster_name=CLUSTER
        ) as cluster:
            admin = cluster.admin(request_timeout_ms=TIMEOUT_MS)
            admin.create_topic(TOPIC, partitions, REPLICATION)
            assert len(_live_directories(data_dir)) == partitions * REPLICATION
            zk = ZkClient(cluster.zookeeper_connect, CLUSTER, 10_000)
            started = time.monotonic()
            admin.delete_topics([TOPIC], timeout_ms=TIMEOUT_MS)
            wait_until(lambda: not _live_directories(data_dir), 600, "every directory renamed")
            renamed_s = time.monotonic() - started
            wait_until(
                lambda: zk.zk.exists(zd.topic_path(TOPIC)) is None, 600, "the topic's znodes to go"
            )
            gone_s = time.monotonic() - started
            zk.close()
    return [
        (
            f"delete a topic of {partitions} partitions × RF {REPLICATION} (3 brokers)",
            f"{renamed_s:.2f} s",
            f"gone from metadata, {partitions * REPLICATION} directories renamed; "
            f"znodes removed after {gone_s:.2f} s",
        )
    ]


def main() -> None:
    """Print the row as a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=PARTITIONS, help="partitions to delete")
    partitions = parser.parse_args().partitions
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    print_table(
        f"Topic deletion ({partitions} partitions, RF {REPLICATION})", HEADER, run(partitions)
    )


if __name__ == "__main__":
    main()
