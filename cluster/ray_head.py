"""The single-machine Ray head that ``rafka up`` starts, and how ``rafka down`` stops only it.

``start`` runs ``ray start --head`` bound to 127.0.0.1 on the port asked for, else the data
directory's previous one or 6379 when free, else a free one (``choose_port``), so clusters of
different data directories run side by side; Ray's output goes to a log file in the data directory,
not the terminal. Ray's own ``ray stop`` would end every Ray instance on the machine: ``stop`` ends
only the processes of this head's session directory (``rafka up`` records it) and their children,
the workers that ran the brokers.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # Ray's own copy: importing Ray puts it on the path
import ray

from rafka.clients.ray_address import listening
from rafka.cluster import ray_token
from rafka.cluster.zookeeper_server import free_loopback_port

RAY_PORT = 6379
"""Ray's usual head port, taken when it is free."""

STOP_GRACE_S = 5.0
"""How long Ray's processes get to exit on SIGTERM before they are killed."""

RAY_ADDRESS_FILE = "ray_current_cluster"
"""Where, in Ray's temp dir, ``ray start`` records the latest head's address for "auto"."""

LOG_FILE = "ray-head.log"
"""Where, in the data directory, ``ray start`` writes what it prints."""

# Settings for a Ray instance rafka starts itself; a value already in the environment wins. Ray
# records every task's state changes for its dashboard, and a broker cluster makes thousands of
# actor calls a second, so the recording is off (bench/README.md has the latency it costs).
# `ray list tasks` then shows no tasks for this Ray instance.
RAY_ENV_DEFAULTS = {"RAY_task_events_report_interval_ms": "0"}


class PortInUseError(RuntimeError):
    """The port asked for with ``--port`` is taken (by another Ray or another rafka cluster)."""


def port_is_free(port: int) -> bool:
    """Whether a new Ray head could listen on 127.0.0.1:``port`` now."""
    if listening("127.0.0.1", port):
        return False
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", port))
    except OSError:
        return False
    return True


def choose_port(
    requested: int | None,
    previous: int | None,
    free: Callable[[int], bool] = port_is_free,
    pick: Callable[[], int] = free_loopback_port,
) -> int:
    """The port for a new head: ``requested`` (PortInUseError when taken), else the data
    directory's ``previous`` one or 6379, whichever is free first, else ``pick()``."""
    if requested is not None:
        if not free(requested):
            raise PortInUseError(
                f"port {requested} is in use (another Ray instance or rafka cluster listens "
                "there); choose another with --port, or leave --port out to pick a free one"
            )
        return requested
    for candidate in (previous, RAY_PORT):
        if candidate is not None and free(candidate):
            return candidate
    return pick()


def _ray_command() -> str:
    # Prefer the `ray` installed beside this interpreter (the project's venv) over one on PATH.
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.exists() else (shutil.which("ray") or "ray")


def start(
    port: int, log_dir: Path, num_cpus: int | None = None, token_file: str | None = None
) -> str:
    """Start a single-node Ray head on 127.0.0.1:``port`` as its own processes; return its
    address. What ``ray start`` prints goes to ``log_dir/ray-head.log``. With ``token_file``
    (``ray_token.create``), every Ray RPC must carry the token in it."""
    # `ray start` is a process of its own that never imports rafka: the variable keeps its
    # loopback --node-ip-address from being moved to the network address. Clients need nothing.
    env = {**RAY_ENV_DEFAULTS, **os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    if token_file is not None:
        # The raylet passes its environment on to the workers, so the brokers find the token too.
        env = ray_token.environment(env, token_file)
    # A lone loopback-only head needs no token; a user who set RAY_AUTH_MODE keeps their choice.
    env.setdefault("RAY_AUTH_MODE", "disabled")
    command = [
        _ray_command(),
        "start",
        "--head",
        f"--port={port}",
        "--node-ip-address=127.0.0.1",
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]
    if num_cpus:
        command.append(f"--num-cpus={num_cpus}")
    log_file = log_dir / LOG_FILE
    with log_file.open("a") as log:
        result = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise RuntimeError(f"`ray start` on port {port} failed; its output is in {log_file}")
    os.environ.setdefault("RAY_AUTH_MODE", env["RAY_AUTH_MODE"])
    return f"127.0.0.1:{port}"


def session_dir() -> str:
    """The session directory of the Ray instance this process is connected to."""
    node: Any = ray._private.worker._global_node
    if node is None:
        raise RuntimeError("this process is not connected to Ray")
    return str(node.get_session_dir_path())


def _session_processes(session: str) -> list[psutil.Process]:
    """The processes whose command line names ``session`` (Ray's own), with their children."""
    mention = re.compile(re.escape(session) + r"(?=/|\s|$)")
    found: dict[int, psutil.Process] = {}
    for process in psutil.process_iter(["cmdline"]):
        try:
            if mention.search(" ".join(process.info["cmdline"] or ())):
                found[process.pid] = process
                found.update((child.pid, child) for child in process.children(recursive=True))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    found.pop(os.getpid(), None)
    return list(found.values())


def stop(session: str, address: str, grace_s: float = STOP_GRACE_S) -> bool:
    """End the processes of the Ray head at ``address`` whose session directory is ``session``:
    SIGTERM, then SIGKILL after ``grace_s``. Whether any was running."""
    processes = _session_processes(session)
    for process in processes:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            continue
    _, alive = psutil.wait_procs(processes, timeout=grace_s)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(alive, timeout=grace_s)
    # Ray's "auto" goes to the address `ray start` recorded in its temp dir even when that head is
    # gone; forget it with the head.
    recorded = Path(session).parent / RAY_ADDRESS_FILE
    with contextlib.suppress(OSError):
        if recorded.read_text().strip() == address:
            recorded.unlink()
    return bool(processes)
