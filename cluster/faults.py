"""Fault injection into a running ``LocalCluster``: the faults the chaos test and the recovery
benchmark inject, in one place.

Each function injects one fault, returns once it has taken effect (processes killed and gone, a
session ended) and tells when it hit (``time.time()``, taken after any look-up it needed), so a
benchmark can time recovery from that moment; restarting what it broke is the caller's choice.
They are for tests and benchmarks on one machine: they signal processes by pid and open a
ZooKeeper client of their own.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable

import ray
from kazoo.client import KazooClient

from rafka.actors import names
from rafka.cluster.local_cluster import LocalCluster

logger = logging.getLogger(__name__)


def kill_broker(cluster: LocalCluster, broker_id: int) -> float:
    """kill -9 of every process of a broker (a node crash); return when the signals were sent
    (``time.time()``)."""
    processes = cluster.broker_processes(broker_id)
    at = time.time()
    cluster.kill_broker(broker_id, processes)
    return at


def kill_controller(cluster: LocalCluster) -> tuple[int, float]:
    """kill -9 of the active controller's broker; return its id and when it was killed."""
    victim = cluster.admin().describe_cluster().controller_id
    return victim, kill_broker(cluster, victim)


def pause_broker(
    cluster: LocalCluster,
    broker_id: int,
    seconds: float,
    on_paused: Callable[[float], None] | None = None,
) -> float:
    """SIGSTOP every process of a broker for ``seconds``, then SIGCONT them (a long GC pause);
    return when they were stopped, also handed to ``on_paused`` as soon as they are."""
    pids = cluster.broker_pids(broker_id)
    at = time.time()
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    if on_paused is not None:
        on_paused(at)
    try:
        time.sleep(seconds)  # the fault itself: how long the broker stays frozen
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    return at


def expire_session(cluster: LocalCluster, broker_id: int) -> float:
    """End a broker's ZooKeeper session server-side, as a session timeout would; return when."""
    session_id, password = ray.get(cluster.brokers[broker_id].describe.remote(), timeout=30)[
        "zk_session"
    ]
    # Opening and closing a second client on the same session id ends that session server-side.
    twin = KazooClient(
        hosts=cluster.zookeeper_connect, client_id=(session_id, bytes.fromhex(password))
    )
    twin.start(timeout=15)
    at = time.time()
    twin.stop()
    twin.close()
    return at


def kill_replica(cluster: LocalCluster, topic: str, partition: int, broker_id: int) -> float | None:
    """Kill one partition replica actor (its broker restarts it); return when, or None if it was
    already down."""
    try:
        replica = ray.get_actor(
            names.replica_actor_name(topic, partition, broker_id), namespace=cluster.namespace
        )
    except ValueError:
        return None
    at = time.time()
    ray.kill(replica, no_restart=True)
    logger.warning(
        "replica %s-%d of broker %d stopped: killed by the operator (its broker restarts it)",
        topic,
        partition,
        broker_id,
    )
    return at
