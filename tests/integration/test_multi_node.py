"""`rafka up` on a multi-node Ray cluster as a user runs it: three Ray nodes on this machine
(``ray.cluster_utils.Cluster``, all on 127.0.0.1), each started with a directory of its own in
``RAFKA_DATA_DIR`` as examples/ray-cluster.yaml starts each machine's Ray. One broker per node, each
writing its logs in its node's directory, and after the workers restart under new node ids each
broker comes back to the node holding its logs.

The `rafka` commands run as subprocesses with a user's environment; the Ray nodes are this
process's children, and this process never joins them (in a full run it is a driver of the
session's own cluster)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # Ray depends on PyYAML
from ray._common.utils import get_ray_address_file
from ray.cluster_utils import Cluster

from rafka.cluster.placement import DATA_DIR_VARIABLE
from rafka.cluster.ray_head import RAY_ENV_DEFAULTS
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.testing import user_env

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

VENV_BIN = Path(sys.executable).parent
RAY_UP_CONFIG = Path(__file__).resolve().parents[2] / "examples" / "ray-cluster.yaml"
TOPIC = "spread"
RECORDS = [f"record-{i}" for i in range(30)]
WORKERS = 2


def worker_node_id(number: int) -> str:
    """A worker's Ray node id, chosen so the test decides the order Ray lists the workers in."""
    return f"{number:02x}" * 28


@dataclass
class MultiNode:
    """A Ray cluster of a head and two workers on this machine, each node with its own directory."""

    cluster: Cluster
    base: Path
    head: Any = None
    workers: list[Any] = field(default_factory=list)
    node_dirs: dict[str, Path] = field(default_factory=dict)
    """Ray node id -> the node's own directory (its Ray temp dir and rafka data dir are inside)."""

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    @property
    def data_dir(self) -> Path:
        """`rafka up --data-dir`: where the state file goes (no node has its logs there)."""
        return self.base / "driver"

    def add(self, number: int, node_id: str | None = None) -> Any:
        """Start node ``number`` (0: the head) in ``base/n<number>``, with ``node_id`` if given."""
        directory = self.base / f"n{number}"
        (directory / "ray").mkdir(parents=True, exist_ok=True)
        env = {**RAY_ENV_DEFAULTS, DATA_DIR_VARIABLE: str(directory / "data")}
        if node_id is not None:
            env["RAY_OVERRIDE_NODE_ID_FOR_TESTING"] = node_id
        node = self.cluster.add_node(
            num_cpus=1,
            node_ip_address="127.0.0.1",
            temp_dir=str(directory / "ray"),
            include_dashboard=False,
            object_store_memory=100 * 1024 * 1024,
            env_vars=env,
        )
        self.node_dirs[node.node_id] = directory
        return node

    def log_dir(self, node_id: str, broker_id: int) -> Path:
        """Where broker ``broker_id`` keeps its logs when it runs on ``node_id``."""
        return self.node_dirs[node_id] / "data" / f"broker-{broker_id}"

    def node_of(self, prefix: str) -> str:
        """The full id of the node `rafka status` names by its first characters."""
        (found,) = [n for n in self.node_dirs if n.startswith(prefix)]
        return found


def run(*command: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command of the venv as a user would; it must succeed."""
    result = subprocess.run(
        [str(VENV_BIN / command[0]), *command[1:]],
        env=user_env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def nodes() -> Iterator[MultiNode]:
    """The three-node Ray cluster, shared by the module's tests."""
    # Short: Ray's socket paths inside each node's temp dir must fit in 107 characters.
    multi = MultiNode(Cluster(), Path(tempfile.mkdtemp(prefix="rmn-")))
    # The head overwrites Ray's record of the latest head (what "auto" finds): put it back after.
    record = Path(get_ray_address_file(None))
    recorded = record.read_text() if record.exists() else None
    try:
        multi.head = multi.add(0)
        multi.workers = [multi.add(n, worker_node_id(n)) for n in range(1, WORKERS + 1)]
        multi.cluster.wait_for_nodes()
        yield multi
    finally:
        # Node by node, not Cluster.shutdown(): that also drops the Ray client state of this
        # process, which in a full run is a driver of the session's cluster.
        for node in [*multi.cluster.worker_nodes, multi.head]:
            if node is not None:
                multi.cluster.remove_node(node)
        if recorded is None:
            record.unlink(missing_ok=True)
        else:
            record.write_text(recorded)
        shutil.rmtree(multi.base, ignore_errors=True)


@pytest.fixture(scope="module")
def up(nodes: MultiNode, zookeeper: ZooKeeperServer) -> Iterator[list[str]]:
    """`rafka up` against the cluster: the arguments that start it again."""
    arguments = [
        "rafka",
        "--address",
        nodes.address,
        "up",
        "--data-dir",
        str(nodes.data_dir),
        "--zookeeper",
        zookeeper.connect_string,
        "--cluster-name",
        "multi-node",
    ]
    started = run(*arguments)
    assert "is up: brokers [0, 1, 2]" in started.stdout
    try:
        yield arguments
    finally:
        subprocess.run(
            [str(VENV_BIN / "rafka"), "down", "--data-dir", str(nodes.data_dir)],
            env=user_env(),
            capture_output=True,
            timeout=240,
        )


def broker_nodes(nodes: MultiNode) -> dict[int, str]:
    """Broker id -> Ray node id, as `rafka status` reports them."""
    status = json.loads(run("rafka", "status", "--data-dir", str(nodes.data_dir)).stdout)
    return {broker["id"]: nodes.node_of(broker["node"]) for broker in status["brokers"]}


def consumed(nodes: MultiNode) -> list[str]:
    """Every record of the topic, read from the beginning with the console consumer."""
    result = run(
        "rafka",
        "--address",
        nodes.address,
        "consume",
        "--topic",
        TOPIC,
        "--from-beginning",
        "--max-messages",
        str(len(RECORDS)),
        "--timeout-ms",
        "60000",
    )
    return result.stdout.splitlines()


def test_up_starts_one_broker_on_each_ray_node(nodes: MultiNode, up: list[str]) -> None:
    placed = broker_nodes(nodes)
    assert sorted(placed) == [0, 1, 2]
    assert set(placed.values()) == set(nodes.node_dirs)
    assert placed[0] == nodes.head.node_id


def test_each_brokers_log_directory_is_in_its_nodes_directory(
    nodes: MultiNode, up: list[str]
) -> None:
    described = run("rafka", "--address", nodes.address, "log-dirs", "--describe")
    reported = json.loads(described.stdout.splitlines()[-1])
    log_dirs = {b["broker"]: [d["logDir"] for d in b["logDirs"]] for b in reported["brokers"]}
    placed = broker_nodes(nodes)
    assert log_dirs == {b: [str(nodes.log_dir(node, b))] for b, node in placed.items()}
    for broker_id, node in placed.items():
        elsewhere = [n for n in nodes.node_dirs if n != node]
        assert nodes.log_dir(node, broker_id).is_dir()
        assert not any(nodes.log_dir(n, broker_id).exists() for n in elsewhere)


def test_records_round_trip_and_every_broker_holds_its_partitions_segments(
    nodes: MultiNode, up: list[str]
) -> None:
    run(
        "rafka",
        "--address",
        nodes.address,
        "topics",
        "--create",
        "--topic",
        TOPIC,
        "--partitions",
        "3",
        "--replication-factor",
        "3",
    )
    run(
        "rafka",
        "--address",
        nodes.address,
        "produce",
        "--topic",
        TOPIC,
        "--acks",
        "all",
        stdin="\n".join(RECORDS) + "\n",
    )
    assert sorted(consumed(nodes)) == sorted(RECORDS)
    # Replication factor 3: every broker has a replica of each partition, in its node's directory,
    # and holds every record (the console producer may put them all in one partition).
    for broker_id, node in broker_nodes(nodes).items():
        partitions = [nodes.log_dir(node, broker_id) / f"{TOPIC}-{p}" for p in range(3)]
        segments = [segment for p in partitions for segment in p.glob("*.log")]
        assert {segment.parent for segment in segments} == set(partitions)
        written = b"".join(segment.read_bytes() for segment in segments)
        assert all(record.encode() in written for record in RECORDS), broker_id


def test_down_stops_every_broker_and_leaves_the_logs(nodes: MultiNode, up: list[str]) -> None:
    placed = broker_nodes(nodes)
    down = run("rafka", "down", "--data-dir", str(nodes.data_dir))
    assert down.stdout.splitlines() == [f"stopped broker {b}" for b in range(3)]
    listing = run(
        "python",
        "-c",
        "import json, rafka, ray\n"
        f"ray.init(address={nodes.address!r}, log_to_driver=False)\n"
        "named = ray.util.list_named_actors(all_namespaces=True)\n"
        "print(json.dumps([a for a in named if a['namespace'] == 'rafka']))\n",
    )
    assert json.loads(listing.stdout.splitlines()[-1]) == []
    assert all(nodes.log_dir(node, b).is_dir() for b, node in placed.items())


def test_after_the_workers_restart_in_another_order_each_broker_returns_to_its_logs(
    nodes: MultiNode, up: list[str]
) -> None:
    before = broker_nodes_on_disk(nodes)
    for worker in nodes.workers:
        nodes.cluster.remove_node(worker)
        del nodes.node_dirs[worker.node_id]
    # New ids in the opposite order: Ray now lists worker 2 before worker 1.
    nodes.workers = [nodes.add(n, worker_node_id(2 * WORKERS + 1 - n)) for n in (1, 2)]
    nodes.cluster.wait_for_nodes()
    started = run(*up)
    assert "is up: brokers [0, 1, 2]" in started.stdout
    after = {b: nodes.node_dirs[node].name for b, node in broker_nodes(nodes).items()}
    assert after == before
    assert sorted(consumed(nodes)) == sorted(RECORDS)


def test_the_ray_up_config_starts_every_node_as_this_module_does() -> None:
    config = yaml.safe_load(RAY_UP_CONFIG.read_text())
    commands = config["head_start_ray_commands"] + config["worker_start_ray_commands"]
    starts = [command for command in commands if "/ray start" in command]
    assert len(starts) == 2
    for command in starts:
        settings = command.split(" ~/rafka-venv/bin/ray start")[0].split()
        assert f"{DATA_DIR_VARIABLE}=/var/lib/rafka" in settings
        assert {f"{k}={v}" for k, v in RAY_ENV_DEFAULTS.items()} <= set(settings)


def broker_nodes_on_disk(nodes: MultiNode) -> dict[int, str]:
    """Broker id -> the name of the node directory holding its logs (n0, n1, n2)."""
    found = {
        int(path.name.removeprefix("broker-")): path.parent.parent.name
        for path in nodes.base.glob("n*/data/broker-*")
    }
    assert sorted(found) == [0, 1, 2]
    return found
