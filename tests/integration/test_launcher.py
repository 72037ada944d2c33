"""`rafka up` / `down` / `status` and the clients as a user runs them: subprocesses whose
environment is a user's shell (the venv on PATH, none of RAY_ADDRESS,
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER, PYSPARK_PYTHON), against clusters that `rafka up` starts with
Ray heads of their own."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rafka.clients.ray_address import listening, split_address
from rafka.cluster import ray_head
from rafka.testing import user_env

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

VENV_BIN = Path(sys.executable).parent
# Ray's Python log lines, what the raylet publishes to drivers, its C++ log lines ("[date ...").
RAY_NOISE = re.compile(r"WARNING|INFO|\(raylet\)|worker processes|Traceback|^\[\d{4}-\d\d-\d\d ")
TOPIC = "connect"

LOOPBACK_FIRST = (
    "import ipaddress\n"
    "from rafka.clients.ray_address import ray_address\n"
    "host = ray_address().rpartition(':')[0]\n"
    "assert ipaddress.ip_address(host).is_loopback, f'rafka hands Ray {host}'\n"
)
ROUND_TRIP = (
    "producer = rafka.Producer()\n"
    "producer.send('connect', VALUE).get(timeout=60)\n"
    "producer.close()\n"
    "consumer = rafka.Consumer(\n"
    "    'connect', auto_offset_reset='earliest', consumer_timeout_ms=10000\n"
    ")\n"
    "assert VALUE in [record.value for record in consumer], 'the record was not consumed'\n"
    "print('round trip ok')\n"
)
CONNECT_STYLES = {
    "ray_imported_first": "import ray, rafka\n"
    + LOOPBACK_FIRST
    + "ray.init(address='auto', namespace='rafka')\n",
    "rafka_imported_first": "import rafka, ray\n"
    + LOOPBACK_FIRST
    + "ray.init(address='auto', namespace='rafka')\n",
    "no_ray_init": "import rafka\n" + LOOPBACK_FIRST,
}


def rafka(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run the `rafka` command as a user would."""
    return subprocess.run(
        [str(VENV_BIN / "rafka"), *args],
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def python(script: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run a Python script in the venv's interpreter as a user would."""
    return subprocess.run(
        [str(VENV_BIN / "python"), "-c", script],
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_quiet(result: subprocess.CompletedProcess[str]) -> None:
    """A successful command printed none of Ray's log or warning lines."""
    assert result.returncode == 0, result.stderr
    noise = [
        line for line in (result.stderr + result.stdout).splitlines() if RAY_NOISE.search(line)
    ]
    assert noise == []


def assert_one_error_line(result: subprocess.CompletedProcess[str], starts: str) -> None:
    """A failed command printed exactly one `Error:` line on stderr and exited non-zero."""
    assert result.returncode != 0
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr
    assert result.stderr.startswith(starts), result.stderr


def ray_address_of(data_dir: Path) -> str:
    """The Ray address `rafka up` recorded for a data directory."""
    return str(json.loads((data_dir / "rafka-cluster.json").read_text())["ray_address"])


def answers(address: str) -> bool:
    """Whether a Ray head's GCS accepts connections at ``address``."""
    parsed = split_address(address)
    return parsed is not None and listening(*parsed)


@dataclass
class Started:
    """A cluster `rafka up` started, and what `up` printed."""

    data_dir: Path
    up: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    """A one-broker cluster started by `rafka up`, with the topic the clients use."""
    data_dir = tmp_path_factory.mktemp("first")
    metrics_port = str(ray_head.free_loopback_port())
    up = rafka("up", "--brokers", "1", "--data-dir", str(data_dir), "--metrics-port", metrics_port)
    try:
        assert up.returncode == 0, up.stderr
        yield Started(data_dir, up)
    finally:
        rafka("down", "--data-dir", str(data_dir))


@pytest.fixture(scope="module")
def topic(first: Started) -> str:
    created = rafka("topics", "--create", "--topic", TOPIC, "--replication-factor", "1")
    assert_quiet(created)
    return TOPIC


def test_up_and_topic_creation_print_no_ray_warnings(first: Started, topic: str) -> None:
    assert_quiet(first.up)
    assert "is up: brokers [0]" in first.up.stdout


@pytest.mark.parametrize("style", sorted(CONNECT_STYLES))
def test_a_user_process_reaches_the_cluster_with_the_readmes_code_and_no_settings(
    first: Started, topic: str, style: str
) -> None:
    script = CONNECT_STYLES[style] + f"VALUE = {style.encode()!r}\n" + ROUND_TRIP
    result = python(script)
    assert result.returncode == 0, result.stderr
    assert "round trip ok" in result.stdout


def test_a_client_without_a_cluster_fails_within_its_connect_timeout_naming_the_address() -> None:
    script = (
        "import time, rafka\n"
        "started = time.monotonic()\n"
        "try:\n"
        "    rafka.Producer(ray_address='127.0.0.1:9', connect_timeout_ms=2000)\n"
        "except rafka.KafkaTimeoutError as exc:\n"
        "    print(f'{time.monotonic() - started:.1f}', exc)\n"
    )
    result = python(script, timeout=60)
    seconds, _, message = result.stdout.strip().partition(" ")
    assert float(seconds) < 10, result.stdout
    assert "127.0.0.1:9" in message and "rafka up" in message


def test_status_finds_the_cluster_by_its_data_directory(first: Started) -> None:
    status = rafka("status", "--data-dir", str(first.data_dir))
    assert_quiet(status)
    assert [broker["id"] for broker in json.loads(status.stdout)["brokers"]] == [0]


def test_up_with_a_metrics_port_serves_the_brokers_metrics_and_status_names_it(
    first: Started, topic: str
) -> None:
    url = re.search(r"Prometheus metrics: (\S+)", first.up.stdout)
    assert url is not None, first.up.stdout
    status = json.loads(rafka("status", "--data-dir", str(first.data_dir)).stdout)
    assert status["metrics"] == url[1]
    assert status["ray_metrics"] and all("127.0.0.1" in u for u in status["ray_metrics"])
    with urllib.request.urlopen(url[1], timeout=30) as answer:
        text = answer.read().decode()
    assert 'rafka_partition_count{broker="0"}' in text
    assert 'rafka_active_controller_count{broker="0"} 1' in text


def test_a_missing_topic_is_one_kafka_error_line(first: Started) -> None:
    described = rafka("topics", "--describe", "--topic", "no-such-topic")
    assert_one_error_line(described, "Error: UNKNOWN_TOPIC_OR_PARTITION (3): ")


def test_a_missing_group_is_one_error_line(first: Started) -> None:
    described = rafka("groups", "--describe", "--group", "no-such-group")
    assert_one_error_line(
        described, "Error: GROUP_ID_NOT_FOUND (69): consumer group 'no-such-group' does not exist"
    )


def test_bad_options_are_one_error_line() -> None:
    assert_one_error_line(rafka("topics", "--create"), "Error: --create needs --topic")
    assert_one_error_line(rafka("up", "--brokers", "x"), "Error: argument --brokers: invalid int")


def test_status_of_a_data_directory_without_a_cluster_is_one_error_line(tmp_path: Path) -> None:
    status = rafka("status", "--data-dir", str(tmp_path))
    assert_one_error_line(status, f"Error: no rafka cluster is running with --data-dir {tmp_path}")


def test_status_without_a_running_cluster_is_one_error_line_naming_the_address() -> None:
    status = rafka("--address", "127.0.0.1:9", "status", timeout=60)
    assert_one_error_line(status, "Error: REQUEST_TIMED_OUT (7): cannot reach a rafka cluster at")
    assert "127.0.0.1:9" in status.stderr and "rafka up" in status.stderr


def test_up_on_a_port_in_use_is_one_error_line(first: Started, tmp_path: Path) -> None:
    port = ray_address_of(first.data_dir).rpartition(":")[2]
    up = rafka("up", "--brokers", "1", "--data-dir", str(tmp_path), "--port", port)
    assert_one_error_line(up, f"Error: port {port} is in use")


def test_a_second_data_directory_runs_a_second_cluster_beside_the_first(
    first: Started, tmp_path: Path
) -> None:
    second = tmp_path / "second"
    up = rafka("up", "--brokers", "1", "--data-dir", str(second))
    try:
        assert_quiet(up)
        assert ray_address_of(second) != ray_address_of(first.data_dir)
        ids = {
            json.loads(rafka("status", "--data-dir", str(d)).stdout)["cluster_id"]
            for d in (first.data_dir, second)
        }
        assert len(ids) == 2
    finally:
        down = rafka("down", "--data-dir", str(second))
    assert_quiet(down)
    assert f"stopped Ray at {ray_address_of(second)}" in down.stdout
    assert not answers(ray_address_of(second))
    assert answers(ray_address_of(first.data_dir))


def test_down_stops_only_its_own_cluster_and_says_so_when_nothing_runs(first: Started) -> None:
    # Runs last: it stops the module's cluster.
    port = ray_head.free_loopback_port()
    other_address = f"127.0.0.1:{port}"
    temp_dir = tempfile.mkdtemp(prefix="rafka-other-ray-")  # short: Ray's socket paths are
    other = subprocess.run(
        [
            str(VENV_BIN / "ray"),
            "start",
            "--head",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            f"--temp-dir={temp_dir}",
            "--include-dashboard=false",
            "--disable-usage-stats",
            "--num-cpus=1",
        ],
        env={**user_env(), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 0, other.stderr
    try:
        down = rafka("down", "--data-dir", str(first.data_dir))
        assert_quiet(down)
        metrics_url = re.search(r"Prometheus metrics: (\S+)", first.up.stdout)
        assert metrics_url is not None
        assert down.stdout.splitlines() == [
            "stopped broker 0",
            f"stopped the metrics endpoint {metrics_url[1]}",
            "stopped ZooKeeper",
            f"stopped Ray at {ray_address_of(first.data_dir)}",
        ]
        assert answers(other_address)
        again = rafka("down", "--data-dir", str(first.data_dir))
        assert_quiet(again)
        assert again.stdout.splitlines() == [
            f"Ray at {ray_address_of(first.data_dir)} is not running"
        ]
    finally:
        ray_head.stop(str(Path(temp_dir, "session_latest").resolve()), other_address)
    assert not answers(other_address)
