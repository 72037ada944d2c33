"""Logs a person reads, as a user meets them: subprocesses with a user's environment (the venv on
PATH, nothing the suite sets). A notebook-style script that kills processes of its LocalCluster
sees one rafka line per death and none of Ray's crash paragraphs; a cluster that `rafka up` started
in a scratch directory writes each broker's server.log in Kafka's layout, and `rafka logs` prints
it, through the file or the broker's actor, and follows it."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rafka.testing import user_env, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

VENV_BIN = Path(sys.executable).parent
KAFKA_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] [A-Z]+ .* \([\w.]+\)$")
# What Ray prints about a dead worker: its report, its prefix, and the causes it guesses at.
RAY_CRASH_REPORT = re.compile(r"A worker died|\(raylet\)|Worker exit|OOM|Traceback|SIGSEGV")

NOTEBOOK = """
import logging, os, signal
import rafka
from rafka.cluster import faults
from rafka.testing import wait_until

class Seen(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())

def said(text):
    return any(text in message for message in seen.messages)

seen = Seen()
deaths = logging.getLogger("rafka.cluster.actor_deaths")
deaths.setLevel(logging.DEBUG)
deaths.addHandler(seen)
with rafka.LocalCluster(brokers=1, data_dir=DATA_DIR) as cluster:
    processes = cluster.broker_processes(0)
    os.kill(processes["group-coordinator-0"], signal.SIGKILL)  # a crash rafka did not cause
    wait_until(lambda: said("group coordinator of broker 0 died unexpectedly"), 60, "the crash")
    faults.kill_broker(cluster, 0)
    broker = processes["broker-0"]
    wait_until(lambda: said(f"pid {broker}'s death left out"), 60, "Ray's report of the kill")
print("done")
"""


def rafka(cwd: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run the `rafka` command as a user would, in ``cwd``."""
    return subprocess.run(
        [str(VENV_BIN / "rafka"), *args],
        cwd=cwd,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_notebook_sees_one_rafka_line_per_death_and_none_of_rays_reports(
    tmp_path: Path,
) -> None:
    # First in the module: its LocalCluster runs before the module's `rafka up` cluster exists.
    script = f"DATA_DIR = {str(tmp_path / 'notebook-data')!r}\n" + NOTEBOOK
    result = subprocess.run(
        [str(VENV_BIN / "python"), "-c", script],
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    printed = (result.stdout + result.stderr).splitlines()
    assert result.returncode == 0, result.stderr
    assert "done" in printed
    assert [line for line in printed if RAY_CRASH_REPORT.search(line)] == []
    killed = [line for line in printed if "broker 0 stopped: killed by the operator" in line]
    crashed = [
        line for line in printed if "group coordinator of broker 0 died unexpectedly" in line
    ]
    assert len(killed) == 1 and len(crashed) == 1, printed
    assert all(KAFKA_LINE.match(line) and "] WARN " in line for line in killed + crashed)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The directory a user ran `rafka up --brokers 2` in (the cluster's data in rafka-data)."""
    directory = tmp_path_factory.mktemp("home")
    up = rafka(directory, "up", "--brokers", "2")
    try:
        assert up.returncode == 0, up.stderr
        yield directory
    finally:
        rafka(directory, "down")


def test_each_broker_writes_its_server_log_in_kafkas_layout(home: Path) -> None:
    for broker in (0, 1):
        text = (home / "rafka-data" / f"broker-{broker}" / "server.log").read_text()
        lines = text.splitlines()
        assert lines and all(KAFKA_LINE.match(line) for line in lines), text
        assert any(f"] INFO broker {broker} registered on node" in line for line in lines), text
        assert "[Broker id=" not in text  # state-change lines stay in state-change.log


def test_rafka_logs_prints_a_brokers_server_log(home: Path) -> None:
    printed = rafka(home, "logs", "--broker", "0")
    last = rafka(home, "logs", "--broker", "0", "-n", "1")
    text = (home / "rafka-data" / "broker-0" / "server.log").read_text()
    assert (printed.returncode, printed.stderr, last.returncode) == (0, "", 0)
    assert printed.stdout and text.startswith(printed.stdout)
    assert len(last.stdout.splitlines()) == 1 and last.stdout in text


def test_a_broker_on_no_local_disk_is_read_through_its_actor(home: Path, tmp_path: Path) -> None:
    # No rafka-data here: the text comes from broker 1's actor, as from another machine.
    address = (home / "rafka-data" / "rafka-cluster.json").read_text()
    ray_address = re.search(r'"ray_address": "([^"]+)"', address)
    assert ray_address is not None
    printed = rafka(tmp_path, "--address", ray_address.group(1), "logs", "--broker", "1")
    assert printed.returncode == 0, printed.stderr
    text = (home / "rafka-data" / "broker-1" / "server.log").read_text()
    assert printed.stdout and text.startswith(printed.stdout)


def test_a_broker_the_cluster_does_not_have_is_one_error_line(home: Path) -> None:
    refused = rafka(home, "logs", "--broker", "7")
    assert refused.returncode == 1
    assert refused.stderr == "Error: no broker 7 in the cluster of rafka-data (its brokers: 0, 1)\n"


def test_follow_prints_a_line_written_after_it_started(home: Path) -> None:
    follower = subprocess.Popen(
        [str(VENV_BIN / "rafka"), "logs", "--broker", "0", "--follow", "--lines", "1"],
        cwd=home,
        env=user_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    arrived: queue.Queue[str] = queue.Queue()
    printed: list[str] = []

    def read() -> None:
        assert follower.stdout is not None
        for line in follower.stdout:
            arrived.put(line.rstrip("\n"))

    def drained() -> list[str]:
        while not arrived.empty():
            printed.append(arrived.get())
        return printed

    threading.Thread(target=read, daemon=True).start()
    try:
        wait_until(lambda: drained() or None, 60, "the log's last line")
        created = rafka(
            home, "topics", "--create", "--topic", "followed", "--replication-factor", "2"
        )
        assert created.returncode == 0, created.stderr
        wait_until(
            lambda: any("Created log for partition followed-0" in line for line in drained()),
            60,
            "the line the new replica wrote",
        )
    finally:
        follower.send_signal(signal.SIGINT)  # Ctrl-C
        follower.wait(timeout=30)
    assert follower.returncode == 130  # ended by Ctrl-C, as tail -f is
    assert follower.stderr is not None and follower.stderr.read() == ""
    assert all(KAFKA_LINE.match(line) for line in printed), printed
