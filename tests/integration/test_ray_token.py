"""`rafka up --secure` as a user runs it: a Ray head that refuses every process without the
cluster's token, and the `rafka` commands and clients that find the token through the data
directory.

Every command and driver is a subprocess with a user's environment (``rafka.testing.user_env``: no
RAY_AUTH_MODE, no RAY_AUTH_TOKEN); the cluster has one broker on the session's ZooKeeper.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rafka.clients.ray_address import listening, split_address
from rafka.cluster.launcher import STATE_FILE
from rafka.cluster.ray_token import TOKEN_FILE
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.testing import user_env, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

VENV_BIN = Path(sys.executable).parent
# A user's driver that joins the cluster with Ray's own API and calls a broker actor; it prints how
# far it got and, on failure, the chain of exceptions.
DRIVER = """
import json, sys
import rafka, ray
stage = "init"
try:
    ray.init(address=sys.argv[1], namespace="rafka", log_to_driver=False)
    stage = "get_actor"
    broker = ray.get_actor("broker-0", namespace="rafka")
    stage = "call"
    ray.get(broker.ping.remote(), timeout=30)
    print(json.dumps({"stage": "called", "error": []}))
except Exception as exc:
    chain = []
    while exc is not None:
        chain.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__
    print(json.dumps({"stage": stage, "error": chain}))
"""
CLIENT = """
import sys
import rafka
try:
    rafka.Admin(ray_address=sys.argv[1]).list_topics()
except rafka.RafkaError as exc:
    print(exc)
"""


@dataclass
class Secure:
    """The cluster `rafka up --secure` started, and what `up` printed."""

    data_dir: Path
    address: str
    up: subprocess.CompletedProcess[str]

    @property
    def token_file(self) -> Path:
        return self.data_dir / TOKEN_FILE


def run(
    command: list[str], cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """A command as a user runs it, with ``env`` added to a user's environment."""
    return subprocess.run(
        command,
        env={**user_env(), **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )


def rafka(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run([str(VENV_BIN / "rafka"), *args], cwd)


def start_driver(script: str, address: str, **env: str) -> subprocess.Popen[str]:
    """A user's Python process running ``script`` against ``address``, started, not waited on."""
    return subprocess.Popen(
        [str(VENV_BIN / "python"), "-c", script, address],
        env={**user_env(), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def outcome(process: subprocess.Popen[str]) -> dict[str, Any]:
    """What a DRIVER process printed last."""
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return found


@pytest.fixture(scope="module")
def secure(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[Secure]:
    # Named as `rafka up`'s default, so commands run from its parent find it without --data-dir.
    data_dir = tmp_path_factory.mktemp("secure") / "rafka-data"
    up = rafka(
        "up",
        "--secure",
        "--brokers",
        "1",
        "--data-dir",
        str(data_dir),
        "--zookeeper",
        zookeeper.connect_string + "/rafka/secure",
    )
    try:
        assert up.returncode == 0, up.stderr
        state = json.loads((data_dir / STATE_FILE).read_text())
        yield Secure(data_dir, state["ray_address"], up)
    finally:
        rafka("down", "--data-dir", str(data_dir))


@pytest.fixture(scope="module")
def refused(secure: Secure) -> dict[str, dict[str, Any]]:
    """Drivers without the token, run side by side: Ray's connect retries for about 20 s before
    it gives up on a refused token."""
    drivers = {
        "no token": start_driver(DRIVER, secure.address),
        "wrong token": start_driver(
            DRIVER, secure.address, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 64
        ),
        "rafka client": start_driver(CLIENT, secure.address),
    }
    found = {name: outcome(process) for name, process in drivers.items() if name != "rafka client"}
    client_out, client_err = drivers["rafka client"].communicate(timeout=180)
    found["rafka client"] = {"out": client_out, "err": client_err}
    return found


def test_up_secure_records_the_token_file_owner_only_and_never_prints_the_token(
    secure: Secure,
) -> None:
    assert "is up: brokers [0]" in secure.up.stdout
    assert stat.S_IMODE(secure.token_file.stat().st_mode) == 0o600
    token = secure.token_file.read_text().strip()
    state = (secure.data_dir / STATE_FILE).read_text()
    assert json.loads(state)["ray_token_file"] == str(secure.token_file)
    assert token not in secure.up.stdout + secure.up.stderr + state


def test_status_with_the_data_dir_finds_the_token(secure: Secure) -> None:
    status = rafka("status", "--data-dir", str(secure.data_dir))
    assert status.returncode == 0, status.stderr
    assert [b["id"] for b in json.loads(status.stdout)["brokers"]] == [0]
    assert secure.token_file.read_text().strip() not in status.stdout + status.stderr


def test_a_command_run_beside_the_default_data_dir_finds_the_token(secure: Secure) -> None:
    listed = rafka("topics", "--list", cwd=secure.data_dir.parent)
    assert listed.returncode == 0, listed.stderr


@pytest.mark.parametrize("driver", ["no token", "wrong token"])
def test_a_driver_without_the_token_cannot_join_let_alone_call_a_broker(
    refused: dict[str, dict[str, Any]], driver: str
) -> None:
    found = refused[driver]
    # ray.init itself fails: the process never gets a handle on a rafka actor.
    assert found["stage"] == "init"
    assert found["error"][0].startswith("ConnectionError: Failed to connect to Ray cluster")
    assert "InvalidAuthToken" in " ".join(found["error"])


def test_a_rafka_client_without_the_token_says_what_to_set(
    refused: dict[str, dict[str, Any]],
) -> None:
    message = refused["rafka client"]["out"]
    assert message.startswith("SASL_AUTHENTICATION_FAILED (58): the Ray cluster at"), refused[
        "rafka client"
    ]["err"]
    assert "RAY_AUTH_MODE=token" in message and "RAY_AUTH_TOKEN_PATH=" in message


def test_a_driver_with_the_token_calls_a_broker(secure: Secure) -> None:
    found = outcome(
        start_driver(
            DRIVER,
            secure.address,
            RAY_AUTH_MODE="token",
            RAY_AUTH_TOKEN_PATH=str(secure.token_file),
        )
    )
    assert found == {"stage": "called", "error": []}


def test_a_client_given_cluster_address_needs_no_variables(secure: Secure) -> None:
    script = (
        "import sys, rafka\n"
        "from rafka.cluster.launcher import cluster_address\n"
        "admin = rafka.Admin(ray_address=cluster_address(sys.argv[1]))\n"
        "print([b.broker_id for b in admin.describe_cluster().brokers])\n"
    )
    result = run([str(VENV_BIN / "python"), "-c", script, str(secure.data_dir)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[0]"


def test_down_stops_the_secure_cluster(secure: Secure, refused: dict[str, Any]) -> None:
    # Last in the module: the other tests use the running cluster.
    down = rafka("down", "--data-dir", str(secure.data_dir))
    assert down.returncode == 0, down.stderr
    assert down.stdout.splitlines()[0] == "stopped broker 0"
    assert f"stopped Ray at {secure.address}" in down.stdout
    parsed = split_address(secure.address)
    assert parsed is not None
    wait_until(lambda: not listening(*parsed), 30, f"Ray at {secure.address} to stop listening")
