"""Failover benchmark: how long a partition is unavailable to an acks=all producer.

Three cases, each on a fresh 3-broker cluster with a 6 s ZooKeeper session timeout: kill -9 of the
leader's broker noticed through ZooKeeper only (the session must expire), the same noticed through
Ray (the broker's process is gone), and a controlled shutdown of the leader's broker. The figure is
the time from the fault to the first acknowledgement of a record sent right after it.
"""

from __future__ import annotations

import itertools
import tempfile
import threading
import time

from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster

SESSION_TIMEOUT_MS = 6000
NAMESPACE = "rafka-bench-failover"


def _measure(case: str) -> float:
    """The longest gap between two acknowledgements around the fault, in seconds."""
    config = {
        "zookeeper_session_timeout_ms": SESSION_TIMEOUT_MS,
        "ray_failure_detection_enable": case != "zookeeper",
    }
    with tempfile.TemporaryDirectory(prefix="rafka-failover-") as data_dir:
        with LocalCluster(
            brokers=3, data_dir=data_dir, namespace=NAMESPACE, broker_config=config
        ) as cluster:
            admin = cluster.admin()
            admin.create_topic("failover", 1, 3, config={"min.insync.replicas": "2"})
            leader = admin.describe_topic("failover").partitions[0].leader
            acks: list[float] = []
            stop = threading.Event()

            def produce() -> None:
                with Producer(
                    namespace=NAMESPACE, acks="all", retry_backoff_ms=20, request_timeout_ms=5000
                ) as producer:
                    while not stop.is_set():
                        producer.send("failover", b"x").get(timeout=60)
                        acks.append(time.monotonic())

            thread = threading.Thread(target=produce, daemon=True)
            thread.start()
            while len(acks) < 50:
                time.sleep(0.01)
            fault_at = time.monotonic()
            if case == "controlled":
                cluster.stop_broker(leader)
            else:
                cluster.kill_broker(leader)
            while not [t for t in acks if t > fault_at + 0.001] or time.monotonic() < fault_at + 2:
                time.sleep(0.01)
            stop.set()
            thread.join(timeout=60)
            return max(b - a for a, b in itertools.pairwise(acks))


def run() -> list[tuple[str, ...]]:
    """The three failover cases as table rows."""
    rows: list[tuple[str, ...]] = []
    targets = {
        "zookeeper": f"<= {SESSION_TIMEOUT_MS / 1000 + 1:.0f} s (session timeout + 1 s)",
        "ray": "<= 1.5 s",
        "controlled": "about 0",
    }
    labels = {
        "zookeeper": "kill -9 leader's broker, ZooKeeper path",
        "ray": "kill -9 leader's broker, Ray-death path",
        "controlled": "controlled shutdown of leader's broker",
    }
    for case in ("zookeeper", "ray", "controlled"):
        rows.append((labels[case], f"{_measure(case):.2f} s", targets[case]))
    return rows
