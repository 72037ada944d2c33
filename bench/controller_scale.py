"""Controller at scale: controller failover and a broker failure with 200 to 4,000 partitions.

Every partition replica of a real broker is a Ray actor process (about 60 MB each), so one machine
holds a few hundred replicas, not the thousands a controller benchmark needs. Here the controllers
are real (rafka's ``Controller`` actors, one per broker, competing for ``/controller`` in a real
ZooKeeper) while the brokers are stubs: a small actor per broker under the broker's actor name that
registers ``/brokers/ids/<id>``, starts the broker's controller as a real broker does, and answers
LeaderAndIsr, UpdateMetadata and StopReplica at once without starting replicas, recording what each
LeaderAndIsr said and when. What is measured is therefore the controller's own part: reading
ZooKeeper, deciding, writing ZooKeeper and sending the requests.

For each size: a topic of N partitions, replication factor 3, on 4 brokers; then

- **controller failover**: the active controller's actor is killed; the time until every broker
  has received a LeaderAndIsr of the new controller's epoch for every partition it hosts;
- **broker failure**: a broker (not the controller's) is killed; the time until every partition it
  hosted has, at a surviving broker, a LeaderAndIsr that neither names it leader nor keeps it in
  the ISR.

ZooKeeper requests of the controller that did the work are counted from the server's ``cons``
statistics of its session (packets received, pings included: one per 2 s).

Run standalone: ``.venv/bin/python bench/controller_scale.py [--partitions 200 1000 ...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import ray
from kazoo.client import KazooClient

from rafka.actors import names
from rafka.actors.broker.config import LAUNCH_DEFAULTS, BrokerConfig
from rafka.cluster.local_cluster import init_local_ray
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.types import NewTopic

NAMESPACE = "rafka-bench-controller"
BROKERS = 4
REPLICATION = 3
SIZES = (200, 1000, 4000)
TIMEOUT_S = 600.0
HEADER = ("partitions", "event", "until every broker was told", "controller's ZooKeeper requests")

_CONS_LINE = re.compile(r"recved=(\d+).*?sid=0x([0-9a-f]+)")


def _stub_broker_class() -> Any:
    """The stub broker actor class (built here so that cloudpickle sends it by value)."""

    class StubBroker:
        """Registers a broker, hosts its real controller, and answers control requests."""

        def __init__(self, config: BrokerConfig, namespace: str) -> None:
            from rafka.actors import spawn
            from rafka.actors.zk.client import ZkClient
            from rafka.actors.zk.data import BrokerRegistration

            node_id = ray.get_runtime_context().get_node_id()
            self.zk = ZkClient(config.zookeeper_connect, config.cluster_name)
            self.zk.register_broker(
                BrokerRegistration(config.broker_id, "127.0.0.1", node_id), timeout_s=30
            )
            self.states: dict[tuple[str, int], tuple[int, int, tuple[int, ...], float]] = {}
            self.controller = spawn.spawn_controller(config, namespace, node_id)
            self._stopped = asyncio.Event()

        async def leader_and_isr(self, request: Any) -> Any:
            from rafka.protocol.errors import Errors
            from rafka.protocol.messages.control import LeaderAndIsrResponse

            received = time.time()
            for p in request.partitions:
                self.states[(p.topic, p.partition)] = (
                    request.controller_epoch,
                    p.leader,
                    tuple(p.isr),
                    received,
                )
            return LeaderAndIsrResponse(Errors.NONE)

        async def update_metadata(self, request: Any) -> Any:
            from rafka.protocol.errors import Errors
            from rafka.protocol.messages.control import ControlResponse

            return ControlResponse(Errors.NONE)

        async def stop_replica(self, request: Any) -> Any:
            return await self.update_metadata(request)

        async def wait_until_stopped(self) -> int:
            await self._stopped.wait()
            return 0

        async def known(self) -> dict[tuple[str, int], tuple[int, int, tuple[int, ...], float]]:
            return self.states

    return ray.remote(num_cpus=0, max_restarts=0)(StubBroker)


class _Bench:
    """One ZooKeeper, one Ray, 4 stub brokers with real controllers, per size."""

    def __init__(self, zookeeper: ZooKeeperServer, data_dir: Path, partitions: int) -> None:
        self.zookeeper = zookeeper
        self.partitions = partitions
        self.cluster_name = f"scale{partitions}"
        self.chroot = f"/rafka/{self.cluster_name}"
        stub = _stub_broker_class()
        self.brokers: dict[int, Any] = {}
        for broker in range(BROKERS):
            config = BrokerConfig.from_dict(
                {
                    "zookeeper_connect": zookeeper.connect_string,
                    "cluster_name": self.cluster_name,
                    "log_dirs": str(data_dir / f"{self.cluster_name}-broker-{broker}"),
                    **LAUNCH_DEFAULTS,
                }
            ).with_broker_id(broker)
            self.brokers[broker] = stub.options(
                name=names.broker_actor_name(broker), namespace=NAMESPACE, lifetime="detached"
            ).remote(config, NAMESPACE)
        self.zk = KazooClient(hosts=zookeeper.connect_string + self.chroot)
        self.zk.start()

    def close(self) -> None:
        """Kill every stub and controller left, and wait until their names are free."""
        for broker in list(self.brokers):
            self._kill(broker)
        for broker in range(BROKERS):
            for name in (names.controller_actor_name(broker), names.broker_actor_name(broker)):
                while True:
                    try:
                        ray.get_actor(name, namespace=NAMESPACE)
                    except ValueError:
                        break
                    time.sleep(0.05)
        self.zk.stop()
        self.zk.close()

    def _kill(self, broker: int) -> None:
        for name in (names.controller_actor_name(broker), names.broker_actor_name(broker)):
            try:
                ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)
            except ValueError:
                continue
        self.brokers.pop(broker, None)

    def controller(self) -> tuple[int, int]:
        """(broker id, ZooKeeper session id) of the active controller, once there is one."""
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            if self.zk.exists("/controller"):
                data, stat = self.zk.get("/controller")
                broker = int(re.search(rb'"brokerid":(\d+)', data).group(1))  # type: ignore[union-attr]
                return broker, stat.ephemeralOwner
            time.sleep(0.05)
        raise TimeoutError("no controller elected")

    def received(self) -> dict[str, int]:
        """Packets received by ZooKeeper per session id (hex), from ``cons``."""
        counts: dict[str, int] = {}
        for line in self.zookeeper.four_letter_word("cons").splitlines():
            match = _CONS_LINE.search(line)
            if match:
                counts[match.group(2)] = int(match.group(1))
        return counts

    def create_topic(self) -> float:
        """Create the topic through the active controller; seconds until every broker knows."""
        broker, _ = self.controller()
        controller = ray.get_actor(names.controller_actor_name(broker), namespace=NAMESPACE)
        started = time.time()
        topic = NewTopic("t", self.partitions, REPLICATION)
        results = ray.get(controller.create_topics.remote([topic]), timeout=TIMEOUT_S)
        if results[0].error.name != "NONE":
            raise RuntimeError(f"create_topics: {results}")
        return self._wait(lambda state: True, started, expected=self.partitions * REPLICATION)

    def _wait(
        self, done: Any, since: float, brokers: list[int] | None = None, expected: int = 0
    ) -> float:
        """Seconds from ``since`` until ``done(state)`` holds for the latest LeaderAndIsr of every
        partition at every broker hosting it (the live ones unless named), and at least
        ``expected`` such (broker, partition) pairs are known; the latest receipt time counts."""
        deadline = time.monotonic() + TIMEOUT_S
        wanted = brokers if brokers is not None else list(self.brokers)
        while time.monotonic() < deadline:
            states = [
                state
                for broker in wanted
                for state in ray.get(self.brokers[broker].known.remote()).values()
            ]
            if len(states) >= expected and all(done(state) for state in states):
                return max(state[3] for state in states if state[3] >= since) - since
            time.sleep(0.1)
        raise TimeoutError("brokers were not told in time")

    def controller_failover(self) -> tuple[float, int]:
        """Kill the active controller: (seconds until every broker heard the new epoch of every
        partition, ZooKeeper requests of the new controller)."""
        old, _ = self.controller()
        old_epoch = int(self.zk.get("/controller_epoch")[0])
        before = self.received()
        started = time.time()
        ray.kill(
            ray.get_actor(names.controller_actor_name(old), namespace=NAMESPACE), no_restart=True
        )
        seconds = self._wait(lambda state: state[0] > old_epoch, started)
        _, session = self.controller()
        sid = f"{session:x}"
        return seconds, self.received().get(sid, 0) - before.get(sid, 0)

    def broker_failure(self) -> tuple[float, int]:
        """Kill a broker other than the controller's: (seconds until the survivors were told of
        every partition without it, ZooKeeper requests of the controller)."""
        controller, session = self.controller()
        victim = next(b for b in sorted(self.brokers) if b != controller)
        survivors = [b for b in self.brokers if b != victim]
        before = self.received()
        started = time.time()
        self._kill(victim)
        seconds = self._wait(
            lambda state: state[1] != victim and victim not in state[2], started, survivors
        )
        sid = f"{session:x}"
        return seconds, self.received().get(sid, 0) - before.get(sid, 0)


def run(sizes: tuple[int, ...] = SIZES) -> list[tuple[str, ...]]:
    """Per size: topic creation, controller failover and broker failure; the table rows."""
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory(prefix=f"{NAMESPACE}-") as data_dir:
        with ZooKeeperServer(Path(data_dir) / "zookeeper") as zookeeper:
            init_local_ray(NAMESPACE)
            try:
                for size in sizes:
                    bench = _Bench(zookeeper, Path(data_dir), size)
                    try:
                        created = bench.create_topic()
                        failover, failover_requests = bench.controller_failover()
                        failure, failure_requests = bench.broker_failure()
                    finally:
                        bench.close()
                    rows += [
                        (f"{size:,}", "create topic (RF 3)", f"{created:.2f} s", "-"),
                        (
                            f"{size:,}",
                            "controller failover",
                            f"{failover:.2f} s",
                            f"{failover_requests:,}",
                        ),
                        (
                            f"{size:,}",
                            "broker failure",
                            f"{failure:.2f} s",
                            f"{failure_requests:,}",
                        ),
                    ]
            finally:
                ray.shutdown()
    return rows


def title() -> str:
    """The table's heading."""
    return f"Controller at scale ({BROKERS} stub brokers, RF {REPLICATION}, real controllers)"


def main() -> None:
    """Print the table as Markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args()
    from run import print_table

    print_table(title(), HEADER, run(tuple(args.partitions)))


if __name__ == "__main__":
    main()
