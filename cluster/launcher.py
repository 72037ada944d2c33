"""``rafka up`` / ``rafka down`` / ``rafka status``: a cluster of detached broker actors on Ray.

``up`` joins the running Ray cluster (or starts a single-node one bound to 127.0.0.1), starts an
embedded ZooKeeper in the data directory unless ``--zookeeper`` names an ensemble, and starts
one detached broker per Ray node (node affinity keeps each broker's logs on its node's disk).
What it started is recorded in ``<data_dir>/rafka-cluster.json`` so ``down`` stops exactly that,
and a second ``up`` on the same data directory brings back every topic and record.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import ray

from rafka.actors import names, spawn
from rafka.actors.broker.config import LAUNCH_DEFAULTS, BrokerConfig
from rafka.clients.admin import Admin, ClusterDescription
from rafka.clients.ray_address import listening, split_address
from rafka.clients.ray_transport import RAY_ACTOR_ERRORS
from rafka.cluster.local_cluster import RAY_ENV_DEFAULTS
from rafka.cluster.zookeeper_server import ZooKeeperServer

STATE_FILE = "rafka-cluster.json"
RAY_PORT = 6379


@dataclass
class ClusterState:
    """What ``rafka up`` started, so ``rafka down`` stops exactly that."""

    namespace: str
    cluster_name: str
    zookeeper: str
    brokers: list[int]
    ray_address: str
    started_ray: bool
    embedded_zookeeper: bool

    def save(self, data_dir: Path) -> None:
        """Write the state file."""
        (data_dir / STATE_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, data_dir: Path) -> ClusterState | None:
        """Read the state file, or None if this data directory never ran ``up``."""
        path = data_dir / STATE_FILE
        return cls(**json.loads(path.read_text())) if path.exists() else None


def _ray_command() -> str:
    # Prefer the `ray` installed beside this interpreter (the project's venv) over one on PATH.
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.exists() else (shutil.which("ray") or "ray")


def start_local_ray(num_cpus: int | None = None) -> str:
    """Start a single-node Ray head on 127.0.0.1 as its own processes; return its address."""
    # `ray start` is a process of its own that never imports rafka: the variable keeps its
    # loopback --node-ip-address from being moved to the network address. Clients need nothing.
    env = {**RAY_ENV_DEFAULTS, **os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    # A lone loopback-only head needs no token; a user who set RAY_AUTH_MODE keeps their choice.
    env.setdefault("RAY_AUTH_MODE", "disabled")
    command = [
        _ray_command(),
        "start",
        "--head",
        f"--port={RAY_PORT}",
        "--node-ip-address=127.0.0.1",
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]
    if num_cpus:
        command.append(f"--num-cpus={num_cpus}")
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed:\n{result.stdout}\n{result.stderr}")
    os.environ.setdefault("RAY_AUTH_MODE", env["RAY_AUTH_MODE"])
    return f"127.0.0.1:{RAY_PORT}"


def connect(address: str | None, namespace: str) -> None:
    """Attach this process to a Ray cluster as a driver."""
    if not ray.is_initialized():
        ray.init(
            address=address or "auto",
            namespace=namespace,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )


def _listening(address: str) -> bool:
    """Whether anything accepts connections at ``host:port``.

    Ray's own connect retries a dead GCS for minutes, so ``up`` and ``down`` ask first.
    """
    parsed = split_address(address)
    return parsed is not None and listening(*parsed)


def _alive_nodes() -> list[str]:
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    nodes.sort(
        key=lambda n: (
            not n.get("Resources", {}).get("node:__internal_head__"),
            n["NodeManagerAddress"],
            n["NodeID"],
        )
    )
    return [n["NodeID"] for n in nodes]


def up(
    data_dir: Path,
    brokers: int | None = None,
    zookeeper: str | None = None,
    address: str | None = None,
    namespace: str = names.DEFAULT_NAMESPACE,
    cluster_name: str = "rafka",
    broker_config: dict[str, Any] | None = None,
    timeout_s: float = 120.0,
) -> ClusterDescription:
    """Start (or restart) a cluster; idempotent for brokers that are already running."""
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    previous = ClusterState.load(data_dir)
    started_ray = False
    # Join only a Ray cluster named by --address or RAY_ADDRESS, or the one this data dir used
    # before: Ray's "auto" would also pick up any other Ray instance running on this machine.
    address = address or os.environ.get("RAY_ADDRESS")
    if address is None and previous is not None and _listening(previous.ray_address):
        address = previous.ray_address
    try:
        if address is None:
            raise ConnectionError("no Ray address given")
        connect(address, namespace)
    except (ConnectionError, RuntimeError, ValueError):
        address = start_local_ray()
        started_ray = True
        connect(address, namespace)
    nodes = _alive_nodes()
    embedded = zookeeper is None
    if zookeeper is None:
        if len(nodes) > 1:
            raise ValueError(
                "the embedded ZooKeeper listens on 127.0.0.1 only; on a multi-node Ray cluster "
                "pass --zookeeper HOST:PORT of an ensemble every node can reach"
            )
        server = ZooKeeperServer.attach(data_dir / "zookeeper") or ZooKeeperServer(
            data_dir / "zookeeper"
        ).start(detach=True)
        zookeeper = server.connect_string
    # One broker per Ray node on a real cluster; three on a
    # single machine, enough for replication 3.
    count = brokers or (previous and len(previous.brokers)) or (len(nodes) if len(nodes) > 1 else 3)
    for broker_id in range(count):
        name = names.broker_actor_name(broker_id)
        try:
            ray.get_actor(name, namespace=namespace)
            continue
        except ValueError:
            pass
        config = BrokerConfig.from_dict(
            {
                "zookeeper_connect": zookeeper,
                "cluster_name": cluster_name,
                "log_dirs": str(data_dir / f"broker-{broker_id}"),
                **LAUNCH_DEFAULTS,
                **(broker_config or {}),
            }
        ).with_broker_id(broker_id)
        spawn.spawn_broker(config, namespace, nodes[broker_id % len(nodes)], detached=True)
    ClusterState(
        namespace,
        cluster_name,
        zookeeper,
        list(range(count)),
        ray.get_runtime_context().gcs_address,
        started_ray or bool(previous and previous.started_ray),
        embedded,
    ).save(data_dir)
    return Admin(namespace=namespace).wait_for_cluster(count, int(timeout_s * 1000))


def down(data_dir: Path, timeout_s: float = 60.0) -> list[str]:
    """Shut the brokers down cleanly, then stop the ZooKeeper and Ray that ``up`` started."""
    data_dir = data_dir.resolve()
    state = ClusterState.load(data_dir)
    if state is None:
        raise FileNotFoundError(
            f"{data_dir / STATE_FILE} not found: no cluster was started with this --data-dir"
        )
    done: list[str] = []
    try:
        if not _listening(state.ray_address):
            raise ConnectionError(state.ray_address)
        connect(state.ray_address, state.namespace)
    except (ConnectionError, RuntimeError, ValueError):
        done.append(f"Ray at {state.ray_address} is not running")
    else:
        for broker_id in state.brokers:
            try:
                handle = ray.get_actor(
                    names.broker_actor_name(broker_id), namespace=state.namespace
                )
            except ValueError:
                continue
            try:
                ray.get(handle.shutdown.remote(), timeout=timeout_s)
            except RAY_ACTOR_ERRORS:
                pass
            ray.kill(handle, no_restart=True)
            done.append(f"stopped broker {broker_id}")
        ray.shutdown()
    if state.embedded_zookeeper:
        server = ZooKeeperServer.attach(data_dir / "zookeeper")
        if server is not None:
            server.stop()
            done.append("stopped ZooKeeper")
    if state.started_ray:
        subprocess.run([_ray_command(), "stop"], capture_output=True, text=True)
        done.append("stopped Ray")
    return done


def status(namespace: str = names.DEFAULT_NAMESPACE, address: str | None = None) -> dict[str, Any]:
    """Brokers, controller and topics of a running cluster."""
    connect(address, namespace)
    admin = Admin(namespace=namespace)
    description = admin.describe_cluster()
    return {
        "cluster_id": description.cluster_id,
        "controller": description.controller_id,
        "brokers": [
            {"id": b.broker_id, "host": b.host, "node": b.node_id[:12]} for b in description.brokers
        ],
        "topics": admin.list_topics(),
    }
