"""Where rafka's actor classes are made remote and placed: the one place that knows Ray's options.

Every actor is named (``names.py``) in the cluster's namespace, asks for no CPU (they are mostly
idle and a 2-core machine must hold dozens), and is pinned to a node with hard node affinity so a
broker's logs stay on that node's disk.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from rafka.actors import names
from rafka.actors.broker.config import BrokerConfig
from rafka.log.config import LogConfig

# glibc gives each thread of a process its own malloc arena, and a thread's arena hands pages of a
# freed multi-megabyte fetch response back to the kernel, so the next response page-faults them in
# again. A replica actor serves requests from a pool of threads: with one arena, a leader's CPU per
# consumer fetch dropped to a third and the consumer beside the other topics went from 0.87-1.0 to
# 1.24-1.34 M records/s. It must be set before the process starts, hence the actor's environment.
# The folder's sitecustomize keeps what Ray imports but a replica never uses out of replica workers
# (an idle replica's USS 64 -> 40 MB).
LEAN_START = Path(__file__).resolve().parent / "replica" / "lean_start"
REPLICA_ENV = {
    "MALLOC_ARENA_MAX": "1",
    "PYTHONPATH": f"{LEAN_START}{os.pathsep}${{PYTHONPATH}}",
}


@functools.cache
def _remote_classes() -> dict[str, Any]:
    # Imported on first use: the broker module spawns controllers and replicas through this one.
    from rafka.actors.broker.broker import Broker
    from rafka.actors.controller.controller import Controller
    from rafka.actors.metrics_endpoint import MetricsEndpoint
    from rafka.actors.replica.replica import (
        CONCURRENCY_GROUPS,
        MAX_CONCURRENCY,
        PartitionReplica,
    )
    from rafka.groups.coordinator import GroupCoordinator
    from rafka.transactions.coordinator import TransactionCoordinator

    # Ray's typed overloads of ray.remote omit the actor-only concurrency options.
    replica = ray.remote(  # type: ignore[call-overload]
        max_concurrency=MAX_CONCURRENCY, concurrency_groups=CONCURRENCY_GROUPS
    )(PartitionReplica)
    return {
        "broker": ray.remote(Broker),
        "controller": ray.remote(Controller),
        "replica": replica,
        "coordinator": ray.remote(GroupCoordinator),
        "transaction_coordinator": ray.remote(TransactionCoordinator),
        "metrics_endpoint": ray.remote(MetricsEndpoint),
    }


def _options(name: str, namespace: str, node_id: str | None, detached: bool) -> dict[str, Any]:
    options: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "num_cpus": 0,
        "max_restarts": 0,
    }
    if node_id is not None:
        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
    if detached:
        options["lifetime"] = "detached"
    return options


def spawn_broker(
    config: BrokerConfig, namespace: str, node_id: str | None = None, detached: bool = False
) -> Any:
    """Start broker ``config.broker_id`` (detached brokers outlive the process that started
    them)."""
    name = names.broker_actor_name(config.broker_id)
    return (
        _remote_classes()["broker"]
        .options(**_options(name, namespace, node_id, detached))
        .remote(config, namespace)
    )


def spawn_controller(config: BrokerConfig, namespace: str, node_id: str) -> Any:
    """Start the controller actor of a broker, on the broker's node; it dies with its broker."""
    name = names.controller_actor_name(config.broker_id)
    return (
        _remote_classes()["controller"]
        .options(**_options(name, namespace, node_id, False))
        .remote(config, namespace)
    )


def spawn_coordinator(config: BrokerConfig, namespace: str, node_id: str) -> Any:
    """Start the group coordinator of a broker, on the broker's node; it dies with its broker."""
    name = names.coordinator_actor_name(config.broker_id)
    return (
        _remote_classes()["coordinator"]
        .options(**_options(name, namespace, node_id, False))
        .remote(config, namespace)
    )


def spawn_metrics_endpoint(namespace: str, host: str, port: int, node_id: str) -> Any:
    """Start the cluster's Prometheus endpoint on ``node_id`` (detached: it outlives ``rafka
    up``); call its ``start`` to bind."""
    return (
        _remote_classes()["metrics_endpoint"]
        .options(**_options(names.METRICS_ENDPOINT, namespace, node_id, True))
        .remote(namespace, host, port)
    )


def spawn_transaction_coordinator(config: BrokerConfig, namespace: str, node_id: str) -> Any:
    """Start the transaction coordinator of a broker, on the broker's node; it dies with its
    broker."""
    name = names.transaction_coordinator_actor_name(config.broker_id)
    return (
        _remote_classes()["transaction_coordinator"]
        .options(**_options(name, namespace, node_id, False))
        .remote(config, namespace)
    )


def spawn_replica(
    topic: str,
    partition: int,
    config: BrokerConfig,
    log_config: LogConfig,
    namespace: str,
    node_id: str,
) -> Any:
    """Start a partition replica of a broker, on the broker's node; it dies with its broker."""
    name = names.replica_actor_name(topic, partition, config.broker_id)
    options = {
        **_options(name, namespace, node_id, False),
        "runtime_env": {"env_vars": REPLICA_ENV},
    }
    return (
        _remote_classes()["replica"]
        .options(**options)
        .remote(topic, partition, config.broker_id, config, log_config, namespace)
    )
