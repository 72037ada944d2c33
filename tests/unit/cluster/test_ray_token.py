"""The Ray token of a secure cluster: its file, and the environment a joining process gets from the
cluster's state (no Ray: ``use`` is run against stand-ins for Ray's modules)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rafka.cluster import ray_token
from rafka.cluster.launcher import STATE_FILE, ClusterState, adopt_token
from rafka.cluster.secret_file import SecretFileError


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def state(token_file: str | None, address: str = "127.0.0.1:6379") -> ClusterState:
    return ClusterState(
        "rafka", "rafka", "127.0.0.1:2181", [0], address, True, True, ray_token_file=token_file
    )


def test_the_token_file_is_made_owner_only_even_under_a_permissive_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        path = ray_token.create(tmp_path)
    finally:
        os.umask(previous)
    assert path == tmp_path / ray_token.TOKEN_FILE
    assert mode_of(path) == 0o600
    token = path.read_text()
    assert len(token) == 64 and int(token, 16) >= 0


def test_a_second_start_keeps_the_token_a_new_data_directory_gets_another(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = ray_token.create(tmp_path / "a")
    again = ray_token.create(tmp_path / "a")
    other = ray_token.create(tmp_path / "b")
    assert again.read_text() == first.read_text() != other.read_text()


def test_a_token_file_others_can_read_is_refused_naming_the_fix(tmp_path: Path) -> None:
    path = ray_token.create(tmp_path)
    path.chmod(0o644)
    with pytest.raises(SecretFileError, match="chmod 600") as raised:
        ray_token.create(tmp_path)
    assert path.read_text() not in str(raised.value)


def test_an_empty_token_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / ray_token.TOKEN_FILE).touch(mode=0o600)
    with pytest.raises(SecretFileError, match="empty"):
        ray_token.create(tmp_path)


def test_a_joining_process_gets_token_mode_and_the_recorded_file(tmp_path: Path) -> None:
    token_file = str(ray_token.create(tmp_path))
    state(token_file).save(tmp_path)
    loaded = ClusterState.load(tmp_path)
    assert loaded is not None and loaded.ray_token_file == token_file
    base = {"HOME": "/home/u", "RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "another-clusters"}
    assert ray_token.environment(base, loaded.ray_token_file) == {
        "HOME": "/home/u",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": token_file,
    }
    # The state file, which anyone on the machine may read, names the file and not the token.
    assert Path(token_file).read_text() not in (tmp_path / STATE_FILE).read_text()


def test_a_state_file_from_before_secure_clusters_loads_as_one_without_a_token(
    tmp_path: Path,
) -> None:
    state(None).save(tmp_path)
    recorded = json.loads((tmp_path / STATE_FILE).read_text())
    del recorded["ray_token_file"]
    (tmp_path / STATE_FILE).write_text(json.dumps(recorded))
    loaded = ClusterState.load(tmp_path)
    assert loaded is not None and loaded.ray_token_file is None


class FakeRaylet:
    """What ``use`` touches of ``ray._raylet``: it records the re-reads."""

    def __init__(self) -> None:
        self.reads: list[str] = []
        self.Config = SimpleNamespace(initialize=lambda _: self.reads.append("config"))
        loader = SimpleNamespace(reset_cache=lambda: self.reads.append("token"))
        self.AuthenticationTokenLoader = SimpleNamespace(instance=lambda: loader)


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> Any:
    raylet = FakeRaylet()
    ray = SimpleNamespace(connected=False)
    ray.is_initialized = lambda: ray.connected
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "ray._raylet", raylet)
    for name in (ray_token.MODE_VARIABLE, ray_token.PATH_VARIABLE, ray_token.TOKEN_VARIABLE):
        # Set first, so monkeypatch records the variable and undoes whatever ``use`` writes:
        # left behind, token mode would reach every later test's Ray in this process.
        monkeypatch.setenv(name, "recorded")
        monkeypatch.delenv(name)
    return SimpleNamespace(ray=ray, raylet=raylet)


def test_use_sets_this_process_up_and_makes_ray_read_it_again(fake_ray: Any) -> None:
    os.environ[ray_token.TOKEN_VARIABLE] = "stale"
    ray_token.use("/data/ray-auth-token")
    assert os.environ[ray_token.MODE_VARIABLE] == "token"
    assert os.environ[ray_token.PATH_VARIABLE] == "/data/ray-auth-token"
    assert ray_token.TOKEN_VARIABLE not in os.environ
    assert fake_ray.raylet.reads == ["config", "token"]


def test_use_leaves_a_connected_process_and_a_cluster_without_token_alone(fake_ray: Any) -> None:
    ray_token.use(None)
    fake_ray.ray.connected = True
    ray_token.use("/data/ray-auth-token")
    assert ray_token.MODE_VARIABLE not in os.environ and fake_ray.raylet.reads == []


def test_a_command_adopts_the_default_data_dirs_token_only_for_that_clusters_address(
    tmp_path: Path, fake_ray: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = str(ray_token.create(tmp_path))
    state(token_file, "127.0.0.1:7000").save(tmp_path)
    resolved = {"127.0.0.1:7001": "127.0.0.1:7001", None: "127.0.0.1:7000"}
    monkeypatch.setattr("rafka.cluster.launcher.ray_address", lambda a: resolved[a])
    adopt_token("127.0.0.1:7001", tmp_path)
    assert ray_token.MODE_VARIABLE not in os.environ
    adopt_token(None, tmp_path)
    assert os.environ[ray_token.PATH_VARIABLE] == token_file


def test_a_users_own_auth_mode_wins_over_the_default_data_dir(
    tmp_path: Path, fake_ray: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    state(str(ray_token.create(tmp_path))).save(tmp_path)
    monkeypatch.setattr("rafka.cluster.launcher.ray_address", lambda a: "127.0.0.1:6379")
    monkeypatch.setenv(ray_token.MODE_VARIABLE, "disabled")
    adopt_token(None, tmp_path)
    assert os.environ[ray_token.MODE_VARIABLE] == "disabled"
    assert ray_token.PATH_VARIABLE not in os.environ
