"""Reassignment benchmark: moving 1 GiB between brokers, without and with a replication throttle.

Two brokers; the topic ``moving`` (4 partitions, RF 1) is filled with 1 GiB on broker 0, then every
partition moves to broker 1 unthrottled and back to broker 0 under a throttle, set as
``rafka reassign-partitions --throttle`` sets it (the rate on both brokers, the moving replicas in
the topic's throttled-replica lists). Each move runs from ``alter_partition_reassignments`` until
no reassignment is listed; the copy rate is the bytes on disk moved over that time. Meanwhile a
producer sends 100-byte records with acks=1 to another topic on broker 0, and its throughput during
each move is printed beside the throughput it had before either.

Run alone: ``.venv/bin/python bench/reassignment.py [--mib N] [--throttle-mib-per-s R]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

from rafka.cli.reassignment_throttle import partition_moves, plan_throttle
from rafka.clients.admin import Admin
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.types import TopicPartition

NAMESPACE = "rafka-bench-reassignment"
TOPIC = "moving"
TRAFFIC = "traffic"
PARTITIONS = 4
MIB = 1024
THROTTLE_MIB_PER_S = 20
VALUE = b"x" * 10_000
HEADER = ("what", "time", "copy rate", "produce during / before")
MOVE_TIMEOUT_S = 1800.0


class TrafficProducer:
    """Sends 100-byte records with acks=1 as fast as they are acknowledged; counts acks."""

    def __init__(self) -> None:
        self.acked = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="traffic", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def rate_over(self, seconds: float) -> float:
        """Records acknowledged per second over the next ``seconds``."""
        before, started = self.acked, time.monotonic()
        time.sleep(seconds)
        return (self.acked - before) / (time.monotonic() - started)

    def _count(self, _metadata: object) -> None:
        self.acked += 1

    def _run(self) -> None:
        with Producer(namespace=NAMESPACE, acks=1, linger_ms=5) as producer:
            value = b"v" * 100
            while not self._stop.is_set():
                for _ in range(1000):
                    producer.send(TRAFFIC, value, partition=0).add_callback(self._count)
                producer.flush()


def _fill(mib: int) -> None:
    """Write ``mib`` MiB of 10 kB records round-robin over the partitions of ``TOPIC``."""
    with Producer(namespace=NAMESPACE, acks=1, batch_size=1 << 20, linger_ms=20) as producer:
        for i in range(mib * (1 << 20) // len(VALUE)):
            producer.send(TOPIC, VALUE, partition=i % PARTITIONS)
        producer.flush()


def _bytes_on(data_dir: Path, broker: int) -> int:
    """Bytes of ``TOPIC``'s segment files in broker ``broker``'s log directory."""
    return sum(p.stat().st_size for p in data_dir.glob(f"broker-{broker}/{TOPIC}-*/*.log"))


def _move(
    admin: Admin, traffic: TrafficProducer, to_broker: int, throttle: int | None
) -> tuple[float, float]:
    """Move every partition of ``TOPIC`` to ``to_broker``: seconds taken and the producer's rate
    during the move (records/s)."""
    target = {TopicPartition(TOPIC, p): (to_broker,) for p in range(PARTITIONS)}
    current = {p.partition: p.replicas for p in admin.describe_topic(TOPIC).partitions}
    plan = None
    if throttle is not None:
        moves = partition_moves({tp: current[tp.partition] for tp in target}, target)
        plan = plan_throttle(moves, throttle)
        admin.incremental_alter_configs(plan.resources())
    acked_before = traffic.acked
    started = time.monotonic()
    admin.alter_partition_reassignments(target)
    while admin.list_partition_reassignments():
        if time.monotonic() - started > MOVE_TIMEOUT_S:
            raise TimeoutError(f"the move to broker {to_broker} did not finish")
        time.sleep(0.1)
    took = time.monotonic() - started
    produced = (traffic.acked - acked_before) / took
    if plan is not None:
        admin.incremental_alter_configs(plan.removals())
    return took, produced


def run(mib: int = MIB, throttle_mib_per_s: int = THROTTLE_MIB_PER_S) -> list[tuple[str, ...]]:
    """Fill, move unthrottled, move back throttled; two table rows."""
    throttle = throttle_mib_per_s << 20
    with tempfile.TemporaryDirectory(prefix="rafka-bench-reassignment-") as directory:
        data_dir = Path(directory)
        with LocalCluster(brokers=2, data_dir=data_dir, namespace=NAMESPACE) as cluster:
            admin = cluster.admin(request_timeout_ms=120_000)
            admin.create_topic(TOPIC, replica_assignments={p: [0] for p in range(PARTITIONS)})
            admin.create_topic(TRAFFIC, replica_assignments={0: [0]})
            _fill(mib)
            moved = _bytes_on(data_dir, 0)
            traffic = TrafficProducer()
            traffic.start()
            try:
                before = traffic.rate_over(10.0)
                free_s, free_rate = _move(admin, traffic, 1, None)
                held_s, held_rate = _move(admin, traffic, 0, throttle)
            finally:
                traffic.stop()
    mb = moved / 1e6
    return [
        (
            f"move {mb:,.0f} MB (4 partitions) from broker 0 to 1, no throttle",
            f"{free_s:.1f} s",
            f"{mb / free_s:,.1f} MB/s",
            f"{free_rate:,.0f} / {before:,.0f} records/s",
        ),
        (
            f"move it back with --throttle {throttle:,} B/s ({throttle / 1e6:.1f} MB/s)",
            f"{held_s:.1f} s",
            f"{mb / held_s:,.1f} MB/s ({moved / held_s / throttle:.2f} x the throttle)",
            f"{held_rate:,.0f} / {before:,.0f} records/s",
        ),
    ]


def main() -> None:
    """Print the rows as a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=MIB, help="MiB to move")
    parser.add_argument(
        "--throttle-mib-per-s", type=int, default=THROTTLE_MIB_PER_S, help="throttle, MiB/s"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    print_table(
        f"Reassignment ({args.mib} MiB, 2 brokers)",
        HEADER,
        run(args.mib, args.throttle_mib_per_s),
    )


if __name__ == "__main__":
    main()
