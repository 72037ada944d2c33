"""The Ray head `rafka up` starts: the port it takes, and stopping it spares other processes."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rafka.cluster.launcher import down
from rafka.cluster.ray_head import RAY_PORT, PortInUseError, choose_port, port_is_free, stop


def free_except(*taken: int) -> Callable[[int], bool]:
    return lambda port: port not in taken


def test_a_requested_free_port_is_taken_as_asked() -> None:
    assert choose_port(7000, 6500, free_except(), lambda: 1) == 7000


def test_a_requested_port_in_use_is_an_error_naming_it_and_the_way_out() -> None:
    with pytest.raises(PortInUseError, match=r"port 7000 is in use.*--port"):
        choose_port(7000, None, free_except(7000), lambda: 1)


def test_without_a_request_the_data_dirs_previous_port_comes_first() -> None:
    assert choose_port(None, 6500, free_except(), lambda: 1) == 6500


def test_without_a_request_or_a_free_previous_port_rays_usual_port_is_next() -> None:
    assert choose_port(None, 6500, free_except(6500), lambda: 1) == RAY_PORT


def test_when_rays_usual_port_is_taken_a_free_one_is_picked() -> None:
    assert choose_port(None, None, free_except(RAY_PORT), lambda: 41000) == 41000


def test_a_listening_port_is_not_free_and_a_closed_one_is() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert not port_is_free(port)
    assert port_is_free(port)


def test_stopping_a_session_ends_its_processes_and_no_other(tmp_path: Path) -> None:
    session = tmp_path / "session_2026-01-01_00-00-00_000000_1"
    other = tmp_path / "session_2026-01-01_00-00-00_000000_12"  # its name extends the first's
    sleeper = "import sys, time; time.sleep(600)"
    ours = subprocess.Popen([sys.executable, "-c", sleeper, f"--log-dir={session}/logs"])
    theirs = subprocess.Popen([sys.executable, "-c", sleeper, f"--session-dir={other}"])
    try:
        (tmp_path / "ray_current_cluster").write_text("127.0.0.1:7000")
        assert stop(str(session), "127.0.0.1:7000", grace_s=10)
        assert ours.wait(timeout=10) is not None
        assert theirs.poll() is None
        assert not (tmp_path / "ray_current_cluster").exists()
        assert not stop(str(session), "127.0.0.1:7000", grace_s=10)
    finally:
        theirs.kill()
        ours.kill()
        theirs.wait()
        ours.wait()


def test_down_on_a_data_dir_that_never_ran_up_says_so(tmp_path: Path) -> None:
    assert down(tmp_path) == [
        f"no rafka cluster was started with --data-dir {tmp_path}: nothing to stop"
    ]
