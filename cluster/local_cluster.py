"""A whole rafka cluster in one Python process's reach: for notebooks, tests and the demo.

``with LocalCluster(brokers=3, data_dir=...) as cluster:`` starts what is not running yet: an
embedded ZooKeeper server (its data under ``data_dir/zookeeper``), a local Ray instance bound to
127.0.0.1, and the brokers (logs under ``data_dir/broker-<id>``); on exit it stops what it started.
Entering it again on the same data directory is a restart that finds every topic and record.
``racks={0: "a", 1: "b", 2: "a"}`` (or ``racks=["a", "b", "a"]``) puts brokers on racks, for
rack-aware replica placement. ``zookeeper_set_acl=True`` (or the broker config of that name) puts
ACLs on the cluster's znodes for an identity kept in the data directory
(``rafka.cluster.zookeeper_identity``).
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

import ray

from rafka.actors import names, spawn
from rafka.actors.broker.config import LAUNCH_DEFAULTS, BrokerConfig
from rafka.actors.broker.tls import listener_ssl_contexts
from rafka.clients import ray_address
from rafka.clients.admin import Admin
from rafka.clients.ray_transport import RAY_ACTOR_ERRORS
from rafka.cluster import actor_deaths, ray_token
from rafka.cluster.racks import Racks, broker_rack
from rafka.cluster.ray_head import RAY_ENV_DEFAULTS
from rafka.cluster.zookeeper_identity import identity_config
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.errors import KafkaTimeoutError

logger = logging.getLogger(__name__)


def init_local_ray(namespace: str, num_cpus: int | None = None) -> None:
    """Start a single-node Ray that binds and advertises 127.0.0.1 only.

    Ray would move a loopback ``_node_ip_address`` to the machine's network address, so this
    process switches to Ray's loopback mode first; Ray's own processes inherit ``RAY_ENV_DEFAULTS``
    from here.
    """
    ray_address.loopback_mode(True)
    for name, value in RAY_ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)
    ray.init(
        address="local",
        _node_ip_address="127.0.0.1",
        namespace=namespace,
        num_cpus=num_cpus or max(2, os.cpu_count() or 2),
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
    )


class LocalCluster:
    """Brokers, ZooKeeper and (if needed) Ray for one cluster, as a context manager. With
    ``secure=True`` the Ray it starts requires the token of ``data_dir/ray-auth-token``."""

    def __init__(
        self,
        brokers: int = 3,
        data_dir: str | os.PathLike[str] = "rafka-data",
        zookeeper: str | None = None,
        cluster_name: str = "rafka",
        namespace: str = names.DEFAULT_NAMESPACE,
        broker_config: dict[str, Any] | None = None,
        node_ids: list[str] | None = None,
        start_timeout_s: float = 120.0,
        racks: Racks | None = None,
        zookeeper_set_acl: bool = False,
        secure: bool = False,
    ) -> None:
        self.num_brokers = brokers
        self.data_dir = Path(data_dir).resolve()
        self.namespace = namespace
        self.cluster_name = cluster_name
        self.node_ids = node_ids
        self.start_timeout_s = start_timeout_s
        self.racks = racks
        self._zookeeper_connect = zookeeper
        self._overrides = dict(broker_config or {})
        if zookeeper_set_acl:
            self._overrides["zookeeper_set_acl"] = True
        self._zk_server: ZooKeeperServer | None = None
        self._started_ray = False
        # The Ray it starts requires the token of data_dir on every call (rafka.cluster.ray_token).
        self.secure = secure
        self.brokers: dict[int, Any] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def zookeeper_connect(self) -> str:
        """The ZooKeeper connect string the brokers use."""
        if self._zookeeper_connect is None:
            raise RuntimeError("the cluster is not started")
        return self._zookeeper_connect

    def broker_config(self, broker_id: int) -> BrokerConfig:
        """The config broker ``broker_id`` runs with."""
        base = BrokerConfig.from_dict(
            {
                "zookeeper_connect": self.zookeeper_connect,
                "cluster_name": self.cluster_name,
                "log_dirs": str(self.data_dir / f"broker-{broker_id}"),
                "broker_rack": broker_rack(self.racks, broker_id) or "",
                **LAUNCH_DEFAULTS,
                **self._overrides,
            }
        )
        return base.with_broker_id(broker_id)

    def start(self) -> LocalCluster:
        """Start ZooKeeper, Ray and the brokers as needed; wait until a controller is elected."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._overrides.update(identity_config(self.data_dir, self._overrides))
        if self._zookeeper_connect is None:
            self._zk_server = ZooKeeperServer(self.data_dir / "zookeeper").start()
            self._zookeeper_connect = self._zk_server.connect_string
        if not ray.is_initialized():
            if self.secure:
                ray_token.use(ray_token.create(self.data_dir))
            init_local_ray(self.namespace)
            self._started_ray = True
        elif self.secure:
            raise ValueError(
                "secure=True is for the Ray instance LocalCluster starts, but this process is "
                "connected to Ray already"
            )
        # This process owns the brokers, so Ray reports their deaths here: in rafka's words.
        actor_deaths.install()
        for broker_id in range(self.num_brokers):
            self.start_broker(broker_id, wait=False)
        self.admin().wait_for_cluster(self.num_brokers, int(self.start_timeout_s * 1000))
        return self

    def stop(self) -> None:
        """Shut every broker down cleanly, then stop what this object started."""
        for broker_id in list(self.brokers):
            self.stop_broker(broker_id)
        if self._zk_server is not None:
            self._zk_server.stop()
            self._zk_server = None
            self._zookeeper_connect = None
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ brokers

    def update_broker_config(self, **overrides: Any) -> None:
        """Start brokers with these settings from now on (a rolling restart applies them)."""
        self._overrides.update(overrides)

    def start_broker(self, broker_id: int, wait: bool = True) -> Any:
        """Start (or restart) one broker; with ``wait``, until it answers."""
        node_id = self.node_ids[broker_id % len(self.node_ids)] if self.node_ids else None
        config = self.broker_config(broker_id)
        # Its listeners' TLS settings are loaded here first (the brokers share this machine's
        # files): a bad one fails this call with its INVALID_CONFIG, where a broker actor that
        # fails to start would only show as a broker that never registers.
        listener_ssl_contexts(config)
        # Detached, so a killed broker's name is free at once for its restart (Ray keeps a dead
        # actor's name while its owner holds a handle); stop() kills them explicitly.
        handle = spawn.spawn_broker(config, self.namespace, node_id, detached=True)
        self.brokers[broker_id] = handle
        if wait:
            ray.get(handle.ping.remote(), timeout=self.start_timeout_s)
        return handle

    def stop_broker(self, broker_id: int, timeout_s: float = 30.0) -> None:
        """Shut a broker down cleanly (logs closed, ZooKeeper session ended); remove its actor."""
        handle = self.brokers.pop(broker_id)
        try:
            ray.get(handle.shutdown.remote(), timeout=timeout_s)
        except RAY_ACTOR_ERRORS as exc:
            # The class names what went wrong; Ray's text of it is a paragraph.
            logger.warning(
                "broker %d did not shut down cleanly (%s); killing it",
                broker_id,
                type(exc).__name__,
            )
        ray.kill(handle, no_restart=True)
        self._wait_gone(names.broker_actor_name(broker_id), timeout_s)
        logger.info("broker %d stopped: shut down by the operator", broker_id)

    def kill_broker(self, broker_id: int, processes: dict[str, int] | None = None) -> int:
        """SIGKILL every process of a broker at once (its broker, controller, group and transaction
        coordinators and replica actors), as a node crash would; return the broker's pid once all
        of them are gone.

        Killing only the broker's process would leave its replica actors running until Ray reaps
        them, and a leader replica that outlives its broker could still serve fetches. A caller
        timing the crash passes ``processes`` (``broker_processes``) looked up beforehand.
        """
        processes = processes or self.broker_processes(broker_id)
        del self.brokers[broker_id]
        actor_deaths.expect_deaths(processes.values())
        for pid in set(processes.values()):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        for name in processes:
            self._wait_gone(name, 30.0)
        logger.warning("broker %d stopped: killed by the operator (SIGKILL)", broker_id)
        return processes[names.broker_actor_name(broker_id)]

    def broker_pids(self, broker_id: int) -> list[int]:
        """Process ids of a broker and its controller, coordinators and replica actors."""
        return list(self.broker_processes(broker_id).values())

    def broker_processes(self, broker_id: int) -> dict[str, int]:
        """Actor name -> pid for every actor a broker runs; actors already gone are left out."""
        handle = self.brokers[broker_id]
        processes = {
            names.broker_actor_name(broker_id): ray.get(handle.describe.remote(), timeout=30)["pid"]
        }
        companions = [
            names.controller_actor_name(broker_id),
            names.coordinator_actor_name(broker_id),
            names.transaction_coordinator_actor_name(broker_id),
        ]
        replicas = ray.get(handle.replica_handles.remote(), timeout=30)
        for name in companions + [names.replica_actor_name(t, p, broker_id) for t, p in replicas]:
            try:
                actor = ray.get_actor(name, namespace=self.namespace)
                processes[name] = ray.get(actor.describe.remote(), timeout=30)["pid"]
            except RAY_ACTOR_ERRORS:
                continue
        return processes

    def _wait_gone(self, name: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                ray.get_actor(name, namespace=self.namespace)
            except ValueError:
                return
            time.sleep(0.05)
        raise KafkaTimeoutError(f"actor {name} still exists {timeout_s}s after it was stopped")

    # ------------------------------------------------------------------ clients

    def bootstrap_servers(self) -> str:
        """``host:port`` of every live broker's Kafka listener: a Kafka client's
        ``bootstrap_servers``."""
        return self.admin().describe_cluster().bootstrap_servers

    def admin(self, **config: Any) -> Admin:
        """An admin client for this cluster."""
        return Admin(namespace=self.namespace, **config)

    def producer(self, **config: Any) -> Any:
        """A producer for this cluster (kafka-python style config)."""
        from rafka.clients.producer import Producer

        return Producer(namespace=self.namespace, **config)

    def consumer(self, *topics: str, **config: Any) -> Any:
        """A consumer for this cluster (kafka-python style config)."""
        from rafka.clients.consumer import Consumer

        return Consumer(*topics, namespace=self.namespace, **config)
