"""Integration tests for rafka.cluster.zookeeper_server: a real JVM and a real kazoo client."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.retry import KazooRetry

from rafka.cluster import zookeeper_server
from rafka.cluster.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.integration

# The directory holding the `rafka` package, so child interpreters import the same code.
_SOURCE_ROOT = Path(zookeeper_server.__file__).resolve().parents[2]


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds, failing the test with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


@contextmanager
def kazoo(connect_string: str, session_timeout: float = 10.0) -> Iterator[KazooClient]:
    """A connected kazoo client, closed afterwards."""
    client = KazooClient(hosts=connect_string, timeout=session_timeout)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def listening_sockets(pid: int) -> list[tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]]:
    """(address, port) of every TCP socket in LISTEN state owned by ``pid``, read from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A is TCP_LISTEN
                continue
            hex_addr, hex_port = local.split(":")
            # The kernel prints the address as 32-bit words in host (little-endian) order.
            words = (hex_addr[i : i + 8] for i in range(0, len(hex_addr), 8))
            raw = b"".join(bytes.fromhex(word)[::-1] for word in words)
            found.append((ipaddress.ip_address(raw), int(hex_port, 16)))
    return found


def is_loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def refuses_connections(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.timeout(60)
def test_start_serves_kazoo_sessions(tmp_path: Path) -> None:
    with ZooKeeperServer(tmp_path) as server:
        assert server.is_running()
        assert server.connect_string == f"127.0.0.1:{server.port}"
        assert server.four_letter_word("ruok") == "imok"
        assert "Mode: standalone" in server.four_letter_word("srvr")
        with kazoo(server.connect_string) as client:
            client.create("/rafka/brokers/0", b"broker-0", makepath=True)
            data, stat = client.get("/rafka/brokers/0")
            assert data == b"broker-0"
            assert stat.version == 0
    assert (tmp_path / "zookeeper.log").stat().st_size > 0


@pytest.mark.timeout(60)
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")
def test_listens_only_on_loopback(tmp_path: Path) -> None:
    with ZooKeeperServer(tmp_path) as server:
        assert server.pid is not None
        sockets = listening_sockets(server.pid)
        assert server.port in {port for _, port in sockets}
        assert all(is_loopback(address) for address, _ in sockets), sockets


@pytest.mark.timeout(60)
def test_restart_on_same_data_dir_keeps_znodes(tmp_path: Path) -> None:
    with ZooKeeperServer(tmp_path) as first:
        port = first.port
        with kazoo(first.connect_string) as client:
            client.create("/rafka/cluster_id", b"c-1", makepath=True)
    with ZooKeeperServer(tmp_path, port=port) as second:
        with kazoo(second.connect_string) as client:
            assert client.get("/rafka/cluster_id")[0] == b"c-1"


@pytest.mark.timeout(60)
def test_stop_is_idempotent_and_frees_the_port(tmp_path: Path) -> None:
    server = ZooKeeperServer(tmp_path).start()
    pid = server.pid
    server.stop()
    server.stop()
    assert not server.is_running()
    assert server.pid is None
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert server.four_letter_word("ruok", timeout=0.5) == ""
    assert refuses_connections(server.port)


@pytest.mark.timeout(60)
def test_detached_server_outlives_its_starter_and_attach_stops_it(tmp_path: Path) -> None:
    starter = textwrap.dedent(
        f"""
        from rafka.cluster.zookeeper_server import ZooKeeperServer
        print(ZooKeeperServer({str(tmp_path)!r}).start(detach=True).pid)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(_SOURCE_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", starter], env=env, capture_output=True, text=True, timeout=45
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.strip())
    attached = ZooKeeperServer.attach(tmp_path)
    try:
        assert attached is not None
        assert attached.pid == pid
        assert os.getsid(pid) == pid  # its own session: a closing terminal cannot take it down
        assert (tmp_path / "zookeeper.pid").read_text().strip() == str(pid)
        # A new handle on the same data_dir reuses the recorded port but refuses a second server.
        sibling = ZooKeeperServer(tmp_path)
        assert sibling.port == attached.port
        with pytest.raises(RuntimeError, match="already uses"):
            sibling.start()
        with kazoo(attached.connect_string) as client:
            client.ensure_path("/rafka/alive")
    finally:
        if attached is not None:
            attached.stop()
        elif zookeeper_server._pid_alive(pid):  # never leak a detached JVM past the test
            os.kill(pid, signal.SIGKILL)
    assert not attached.is_running()
    assert not (tmp_path / "zookeeper.pid").exists()
    assert ZooKeeperServer.attach(tmp_path) is None
    assert refuses_connections(attached.port)


@pytest.mark.timeout(60)
def test_non_detached_server_dies_with_its_starter(tmp_path: Path) -> None:
    starter = textwrap.dedent(
        f"""
        import sys
        from rafka.cluster.zookeeper_server import ZooKeeperServer
        server = ZooKeeperServer({str(tmp_path)!r}).start()
        print(server.pid, server.port, flush=True)
        sys.stdin.read()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(_SOURCE_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", starter],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        pid, port = map(int, proc.stdout.readline().split())
        # SIGKILL leaves no chance for atexit: only the kernel's parent-death signal can help.
        proc.kill()
        proc.wait(timeout=10)
        wait_for(lambda: not zookeeper_server._pid_alive(pid), 15, f"ZooKeeper pid {pid} to die")
        assert refuses_connections(port)
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.timeout(60)
def test_pause_suspends_kazoo_and_resume_recovers(tmp_path: Path) -> None:
    with ZooKeeperServer(tmp_path) as server:
        states: list[str] = []
        with kazoo(server.connect_string, session_timeout=2.0) as client:
            client.add_listener(states.append)
            client.create("/rafka/paused", b"before", makepath=True)
            server.pause()
            try:
                wait_for(lambda: KazooState.SUSPENDED in states, 20, "kazoo to notice the pause")
                assert server.four_letter_word("ruok", timeout=0.5) == ""
            finally:
                server.resume()
            retry = KazooRetry(max_tries=-1, delay=0.05, max_delay=0.5, deadline=20)
            assert retry(client.get, "/rafka/paused")[0] == b"before"
            wait_for(lambda: client.state == KazooState.CONNECTED, 20, "kazoo to reconnect")
        assert server.four_letter_word("ruok") == "imok"


@pytest.mark.timeout(60)
def test_missing_java_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    monkeypatch.setenv("PATH", "")
    server = ZooKeeperServer(tmp_path / "zk")
    with pytest.raises(FileNotFoundError, match=r"JAVA_HOME.*PATH"):
        server.start()
    assert server.pid is None
    assert not server.is_running()


@pytest.mark.timeout(60)
def test_port_taken_by_a_listener_is_refused(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        server = ZooKeeperServer(tmp_path, port=squatter.getsockname()[1])
        with pytest.raises(RuntimeError, match="already in use"):
            server.start()
        assert server.pid is None


@pytest.mark.timeout(60)
def test_early_exit_reports_the_log_tail(tmp_path: Path) -> None:
    # Bound but not listening: the probe is refused, yet the JVM's own bind fails and it exits.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", 0))
        server = ZooKeeperServer(tmp_path, port=squatter.getsockname()[1])
        with pytest.raises(RuntimeError, match=r"(?s)exited during startup.*BindException"):
            server.start()
    assert not server.is_running()


@pytest.mark.timeout(60)
def test_not_ready_before_the_deadline_is_a_timeout(tmp_path: Path) -> None:
    server = ZooKeeperServer(tmp_path)
    with pytest.raises(TimeoutError, match=f"port {server.port}.*zookeeper.log"):
        server.start(timeout=0.0)
    assert server.pid is None
    assert ZooKeeperServer.attach(tmp_path) is None


@pytest.mark.timeout(60)
def test_free_loopback_port_is_bindable() -> None:
    port = zookeeper_server.free_loopback_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
