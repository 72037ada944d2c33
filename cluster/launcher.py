"""``rafka up`` / ``rafka down`` / ``rafka status``: a cluster of detached broker actors on Ray.

``up`` joins the Ray cluster named by ``--address`` (or ``RAY_ADDRESS``), or the data directory's
own head when it still runs, or starts a single-node one bound to 127.0.0.1 (``ray_head``, on
``--port`` or a free port); it starts an embedded ZooKeeper in the data directory unless
``--zookeeper`` names an ensemble, and one detached broker per Ray node (node affinity keeps each
broker's logs on its node's disk, and a broker comes back to the node whose disk holds its logs:
``rafka.cluster.placement``). What it started is recorded in ``<data_dir>/rafka-cluster.json``
so ``down`` stops exactly that and no other Ray instance, ``status`` finds the cluster by its data
directory, and a second ``up`` on the same data directory brings back every topic and record.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from rafka.actors import names, spawn
from rafka.actors.broker.config import LAUNCH_DEFAULTS, BrokerConfig
from rafka.clients.admin import Admin, ClusterDescription
from rafka.clients.config import CONNECT_TIMEOUT_MS
from rafka.clients.ray_address import listening, ray_address, split_address
from rafka.clients.ray_transport import RAY_ACTOR_ERRORS, ensure_ray
from rafka.cluster import actor_deaths, placement, ray_head, ray_token
from rafka.cluster.racks import racks_by_node
from rafka.cluster.zookeeper_identity import identity_config
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.errors import Errors

STATE_FILE = "rafka-cluster.json"

NODE_PROBE_TIMEOUT_S = 60.0
"""How long ``up`` waits for every node to say where its disk is (each starts a worker process)."""
# A traceback's line naming what was raised: "InvalidConfigError: ssl_keystore_location ...".
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception): ")


class ClusterNotRunningError(RuntimeError):
    """No rafka cluster runs where the command looked (a data directory, or this machine)."""


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
    ray_session_dir: str | None = None
    """The session directory of the Ray head ``up`` started (None when it joined one)."""
    metrics_url: str | None = None
    """rafka's Prometheus endpoint, when ``up`` was given a metrics port."""
    ray_token_file: str | None = None
    """The Ray token file of the head ``up --secure`` started (``ray_token``); None: no token."""

    def save(self, data_dir: Path) -> None:
        """Write the state file."""
        (data_dir / STATE_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, data_dir: Path) -> ClusterState | None:
        """Read the state file, or None if this data directory never ran ``up``."""
        path = data_dir / STATE_FILE
        return cls(**json.loads(path.read_text())) if path.exists() else None


def connect(
    address: str | None,
    namespace: str,
    connect_timeout_ms: int = CONNECT_TIMEOUT_MS,
    token_file: str | None = None,
) -> None:
    """Attach this process to a Ray cluster as a driver (as the clients do), with the Ray token in
    ``token_file`` when given; Ray's reports of its brokers' deaths become rafka's one-line
    notices."""
    ray_token.use(token_file)
    ensure_ray(address, namespace, connect_timeout_ms)
    actor_deaths.install()


def _listening(address: str) -> bool:
    """Whether anything accepts connections at ``host:port``.

    Ray's own connect retries a dead GCS for minutes, so ``up`` and ``down`` ask first.
    """
    parsed = split_address(address)
    return parsed is not None and listening(*parsed)


def _alive_nodes() -> list[dict[str, Any]]:
    """The live Ray nodes (items of ``ray.nodes()``), the head first, then by address."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    nodes.sort(
        key=lambda n: (
            not n.get("Resources", {}).get("node:__internal_head__"),
            n["NodeManagerAddress"],
            n["NodeID"],
        )
    )
    return nodes


@ray.remote(num_cpus=0, max_retries=0)
def _look_at_disk(default_data_dir: str) -> tuple[str, tuple[int, ...]]:
    """On a node: its data directory and the broker directories already in it."""
    data_dir = placement.node_data_dir(default_data_dir)
    return data_dir, placement.brokers_in(Path(data_dir))


def _node_disks(nodes: list[dict[str, Any]], default_data_dir: Path) -> list[placement.NodeDisk]:
    """Ask each node, on the node itself, where its disk is and what it holds."""
    pending = [
        _look_at_disk.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["NodeID"], soft=False)
        ).remote(str(default_data_dir))
        for n in nodes
    ]
    found = ray.get(pending, timeout=NODE_PROBE_TIMEOUT_S)
    return [
        placement.NodeDisk(n["NodeID"], n["NodeManagerAddress"], data_dir, broker_ids)
        for n, (data_dir, broker_ids) in zip(nodes, found, strict=True)
    ]


def up(
    data_dir: Path,
    brokers: int | None = None,
    zookeeper: str | None = None,
    address: str | None = None,
    namespace: str = names.DEFAULT_NAMESPACE,
    cluster_name: str = "rafka",
    broker_config: dict[str, Any] | None = None,
    timeout_s: float = 120.0,
    port: int | None = None,
    metrics_port: int | None = None,
    metrics_host: str = "127.0.0.1",
    secure: bool = False,
) -> ClusterDescription:
    """Start (or restart) a cluster; idempotent for brokers that are already running.

    Each broker gets the rack of the Ray node it runs on (the node's ``rafka.rack`` label or
    ``rack:<name>`` resource; see ``rafka.cluster.racks``) unless ``broker_config`` sets
    ``broker_rack``.

    A Ray head it starts itself listens on 127.0.0.1:``port``, or on a free port when ``port`` is
    None (6379 or the data directory's previous one first). With ``metrics_port``, rafka's own
    Prometheus endpoint serves every broker's metrics at ``http://metrics_host:metrics_port``.
    With ``secure``, that head requires the Ray token of ``data_dir`` (``rafka.cluster.ray_token``)
    on every RPC.
    ``broker_config`` ``zookeeper_set_acl=true`` puts ACLs on the cluster's znodes for an identity
    kept in ``data_dir`` (``rafka.cluster.zookeeper_identity``).
    """
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    # The ZooKeeper identity stays in its own 0600 file, out of the world-readable state file.
    broker_config = {**(broker_config or {}), **identity_config(data_dir, broker_config or {})}
    previous = ClusterState.load(data_dir)
    # Join only a Ray cluster named by --address or RAY_ADDRESS, or the one this data dir used
    # before: Ray's "auto" would also pick up any other Ray instance running on this machine.
    address = address or os.environ.get("RAY_ADDRESS")
    session_dir = None
    token_file = None
    if address is None and previous is not None and _listening(previous.ray_address):
        address = previous.ray_address
        if port is not None and address != f"127.0.0.1:{port}":
            raise ValueError(
                f"the cluster of {data_dir} already runs with Ray at {address}; "
                f"`rafka down --data-dir {data_dir}` first to move it to port {port}"
            )
        if secure and previous.ray_token_file is None:
            raise ValueError(
                f"the cluster of {data_dir} already runs without Ray token authentication; "
                f"`rafka down --data-dir {data_dir}` first to restart it with --secure"
            )
        session_dir = previous.ray_session_dir
        token_file = previous.ray_token_file
    elif address is not None and port is not None:
        raise ValueError("--port is for the Ray head `rafka up` starts; --address joins one")
    elif address is not None and secure:
        raise ValueError(
            "--secure is for the Ray head `rafka up` starts; to join a Ray cluster that requires "
            "a token, set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH (or RAY_AUTH_TOKEN)"
        )
    started_ray = address is None
    if address is None:
        previous_port = split_address(previous.ray_address) if previous else None
        chosen = ray_head.choose_port(port, previous_port[1] if previous_port else None)
        token_file = str(ray_token.create(data_dir)) if secure else None
        address = ray_head.start(chosen, data_dir, token_file=token_file)
    connect(address, namespace, token_file=token_file)
    if started_ray:
        session_dir = ray_head.session_dir()
        # Recorded at once, so `rafka down` can stop this head even if the rest of `up` fails.
        ClusterState(
            namespace,
            cluster_name,
            "",
            [],
            address,
            True,
            zookeeper is None,
            session_dir,
            ray_token_file=token_file,
        ).save(data_dir)
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
    node_racks = racks_by_node(nodes)
    started: dict[int, Any] = {}
    for placed in placement.place(_node_disks(nodes, data_dir), count):
        name = names.broker_actor_name(placed.broker_id)
        try:
            ray.get_actor(name, namespace=namespace)
            continue
        except ValueError:
            pass
        config = BrokerConfig.from_dict(
            {
                "zookeeper_connect": zookeeper,
                "cluster_name": cluster_name,
                "log_dirs": placed.log_dir,
                "broker_rack": node_racks.get(placed.node_id, ""),
                **LAUNCH_DEFAULTS,
                **(broker_config or {}),
            }
        ).with_broker_id(placed.broker_id)
        started[placed.broker_id] = spawn.spawn_broker(
            config, namespace, placed.node_id, detached=True
        )
    _wait_for_start(started, timeout_s)
    metrics_url = previous.metrics_url if previous else None
    if metrics_port is not None:
        metrics_url = _start_metrics_endpoint(namespace, metrics_host, metrics_port)
    ClusterState(
        namespace,
        cluster_name,
        zookeeper,
        list(range(count)),
        ray.get_runtime_context().gcs_address,
        session_dir is not None,
        embedded,
        session_dir,
        metrics_url,
        ray_token_file=token_file,
    ).save(data_dir)
    return Admin(namespace=namespace).wait_for_cluster(count, int(timeout_s * 1000))


def _wait_for_start(brokers: dict[int, Any], timeout_s: float) -> None:
    """Wait until every broker just spawned answers; one whose start failed (a bad setting read on
    its own node, such as a keystore) fails ``up`` with its error, rather than as a cluster that
    never forms."""
    for broker_id, handle in brokers.items():
        try:
            ray.get(handle.ping.remote(), timeout=timeout_s)
        except ray.exceptions.RayActorError as exc:
            raise Errors.BROKER_NOT_AVAILABLE.exception(
                f"broker {broker_id} failed to start: {start_failure(str(exc))}"
            ) from exc


def start_failure(report: str) -> str:
    """The error an actor's constructor raised, from Ray's report of its death (its last
    ``SomethingError: message`` line), or the report's first line if none is there."""
    raised = [line.strip() for line in report.splitlines() if _RAISED.match(line.strip())]
    return raised[-1] if raised else report.strip().splitlines()[0]


def _start_metrics_endpoint(namespace: str, host: str, port: int) -> str:
    """Start (or find) the cluster's Prometheus endpoint on this driver's node; its URL."""
    try:
        endpoint = ray.get_actor(names.METRICS_ENDPOINT, namespace=namespace)
    except ValueError:
        node_id = ray.get_runtime_context().get_node_id()
        endpoint = spawn.spawn_metrics_endpoint(namespace, host, port, node_id)
    try:
        return str(ray.get(endpoint.start.remote(), timeout=30))
    except RAY_ACTOR_ERRORS as exc:
        ray.kill(endpoint, no_restart=True)
        raise ValueError(f"the metrics endpoint cannot serve on {host}:{port}: {exc}") from exc


def down(data_dir: Path, timeout_s: float = 60.0) -> list[str]:
    """Shut the brokers down cleanly, then stop the ZooKeeper and the Ray head that ``up`` started
    (only those: any other Ray instance on the machine keeps running); what was done, line by
    line."""
    data_dir = data_dir.resolve()
    state = ClusterState.load(data_dir)
    if state is None:
        return [f"no rafka cluster was started with --data-dir {data_dir}: nothing to stop"]
    done: list[str] = []
    if not _listening(state.ray_address):
        done.append(f"Ray at {state.ray_address} is not running")
    else:
        connect(state.ray_address, state.namespace, token_file=state.ray_token_file)
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
        _await_companions_gone(state.namespace, set(state.brokers))
        try:
            ray.kill(ray.get_actor(names.METRICS_ENDPOINT, namespace=state.namespace))
            done.append(f"stopped the metrics endpoint {state.metrics_url}")
        except ValueError:
            pass
        ray.shutdown()
    if state.embedded_zookeeper:
        server = ZooKeeperServer.attach(data_dir / "zookeeper")
        if server is not None:
            server.stop()
            done.append("stopped ZooKeeper")
    if state.ray_session_dir is not None and ray_head.stop(
        state.ray_session_dir, state.ray_address
    ):
        done.append(f"stopped Ray at {state.ray_address}")
    return done


def _await_companions_gone(namespace: str, brokers: set[int], timeout_s: float = 10.0) -> None:
    """Wait until no actor of ``brokers`` (controllers, coordinators, replicas) is listed, so
    ``down`` on a Ray cluster that keeps running returns once the cluster is gone: Ray removes an
    owner's actors after the owner, asynchronously. Any still listed at the deadline are killed."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = [
            actor["name"]
            for actor in ray.util.list_named_actors(all_namespaces=True)
            if actor["namespace"] == namespace and names.hosting_broker(actor["name"]) in brokers
        ]
        if not left:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for name in left:
        try:
            ray.kill(ray.get_actor(name, namespace=namespace), no_restart=True)
        except ValueError:
            pass  # gone meanwhile


def running_state(data_dir: Path) -> ClusterState:
    """What ``rafka up --data-dir`` recorded, when its cluster is running; else
    ClusterNotRunningError saying how to start it."""
    state = ClusterState.load(data_dir.resolve())
    if state is None or not _listening(state.ray_address):
        raise ClusterNotRunningError(
            f"no rafka cluster is running with --data-dir {data_dir} "
            f"(start one with `rafka up --data-dir {data_dir}`)"
        )
    return state


def cluster_address(data_dir: str | os.PathLike[str]) -> str:
    """The Ray address of the running cluster of ``data_dir``, for a client's ``ray_address=``.
    For a cluster of ``rafka up --secure`` it also points this process, unless it is connected to
    Ray already, at the cluster's token file, as the client's connection needs."""
    state = running_state(Path(data_dir))
    ray_token.use(state.ray_token_file)
    return state.ray_address


def adopt_token(address: str | None, data_dir: Path) -> None:
    """For a command about to connect to ``address`` (None: RAY_ADDRESS, else the Ray instance
    running on this machine): when the cluster ``rafka up --secure`` started from ``data_dir``
    runs there, and this process has no RAY_AUTH_MODE of its own, use that cluster's token."""
    state = ClusterState.load(data_dir.resolve())
    if state is None or state.ray_token_file is None or ray_token.MODE_VARIABLE in os.environ:
        return
    try:
        target = ray_address(address)
    except (ConnectionError, ValueError):
        return
    if target == state.ray_address:
        ray_token.use(state.ray_token_file)


def status(
    namespace: str = names.DEFAULT_NAMESPACE,
    address: str | None = None,
    data_dir: Path | None = None,
    connect_timeout_ms: int = CONNECT_TIMEOUT_MS,
) -> dict[str, Any]:
    """Brokers, controller and topics of a running cluster: the one of ``data_dir`` when given,
    else the one at ``address`` (default: RAY_ADDRESS, else the one running on this machine)."""
    token_file = None
    if data_dir is not None:
        state = running_state(data_dir)
        address, namespace, token_file = state.ray_address, state.namespace, state.ray_token_file
    connect(address, namespace, connect_timeout_ms, token_file)
    admin = Admin(namespace=namespace)
    description = admin.describe_cluster()
    metrics_url = None
    try:
        endpoint = ray.get_actor(names.METRICS_ENDPOINT, namespace=namespace)
        metrics_url = ray.get(endpoint.url.remote(), timeout=connect_timeout_ms / 1000)
    except RAY_ACTOR_ERRORS:
        pass
    return {
        "cluster_id": description.cluster_id,
        "controller": description.controller_id,
        "brokers": [
            {"id": b.broker_id, "host": b.host, "node": b.node_id[:12], "rack": b.rack}
            for b in description.brokers
        ],
        "bootstrap_servers": description.bootstrap_servers,
        "listeners": {
            name: description.listener_bootstrap_servers(name)
            for name in description.listener_names
        },
        "topics": admin.list_topics(),
        "metrics": metrics_url,
        "ray_metrics": [
            f"http://{node['NodeManagerAddress']}:{node['MetricsExportPort']}/metrics"
            for node in ray.nodes()
            if node.get("Alive") and node.get("MetricsExportPort")
        ],
    }
