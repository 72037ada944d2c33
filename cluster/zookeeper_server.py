"""A standalone ZooKeeper server, bound to 127.0.0.1, run from the jars pyspark already ships.

rafka keeps its cluster metadata in ZooKeeper. ``rafka up`` and the tests need a real server with
nothing extra installed, and pyspark's ``jars/`` folder carries the ZooKeeper 3.9 server classes.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import importlib.util
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger(__name__)

_HOST = "127.0.0.1"
_MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
_PID_FILE, _PORT_FILE, _LOG_FILE = "zookeeper.pid", "zookeeper.port", "zookeeper.log"
_CONFIG_FILE, _LOG4J_FILE = "zoo.cfg", "log4j2.properties"
_POLL_INTERVAL = 0.05

# Without a config log4j2 prints its own status chatter and hides ZooKeeper's INFO lines, which are
# the ones worth reading when a server fails to come up.
_LOG4J_CONFIG = """\
status = error
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %p [%t] %c{1}: %m%n
"""


def free_loopback_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now, for a server to bind next."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        return int(sock.getsockname()[1])


def _find_java() -> str:
    """Locate the java launcher: ``$JAVA_HOME/bin/java`` first, then ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which("java")
    if on_path:
        return on_path
    raise FileNotFoundError(
        "Java not found: looked for $JAVA_HOME/bin/java "
        f"(JAVA_HOME={java_home!r}) and for 'java' on PATH; install a JRE >= 11 or set JAVA_HOME"
    )


def _pyspark_jars() -> Path:
    """Locate pyspark's jars folder without importing pyspark, which takes seconds."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("pyspark is not installed; its jars/ folder provides ZooKeeper")
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    if not any(jars.glob("zookeeper-[0-9]*.jar")):
        raise FileNotFoundError(f"no zookeeper-*.jar in {jars}")
    return jars


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process; a zombie counts as dead because it serves nothing."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A group leader turns zombie while its other threads are still exiting and holding the
    # sockets open, so the process is dead only once every thread is.
    try:
        stats = [(task / "stat").read_text() for task in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return True
    # The state letter follows the parenthesised command name, which may itself contain ")".
    return any(stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X") for stat in stats)


def _pid_runs_config(pid: int, config: Path) -> bool:
    """Guard against a recycled pid: is ``pid`` a ZooKeeper server started on ``config``?"""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return sys.platform != "linux"
    return _MAIN_CLASS in cmdline and str(config) in cmdline


def _read_int(path: Path) -> int | None:
    # Missing or garbled pid/port files just mean "no detached server recorded here".
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _write_atomically(path: Path, text: str) -> None:
    # A reader (attach from another process) must never see a half-written pid or port.
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A preexec_fn that makes the child die with this thread, or None where that is unsafe.

    PR_SET_PDEATHSIG fires when the *thread* that forked exits, so it is only used from the main
    thread; elsewhere the atexit hook is the fallback. libc is resolved here, in the parent, so the
    forked child only makes one plain system call.
    """
    if sys.platform != "linux" or threading.current_thread() is not threading.main_thread():
        return None
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return None
    prctl = ctypes.CDLL(libc_name, use_errno=True).prctl
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def hook() -> None:
        # SIGKILL rather than SIGTERM so a paused (SIGSTOPped) JVM dies too.
        prctl(pr_set_pdeathsig, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


class ZooKeeperServer:
    """A standalone ZooKeeper server process bound to 127.0.0.1."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int | None = None,
        tick_time_ms: int = 500,
        min_session_timeout_ms: int = 1000,
        max_session_timeout_ms: int = 60000,
    ) -> None:
        """Describe a server keeping its data, config and log in ``data_dir``; nothing starts yet.

        With ``port=None`` a port recorded by an earlier detached server of this data_dir is reused,
        so clients that remember the connect string keep working; otherwise a free port is picked.
        """
        self.data_dir = Path(data_dir).resolve()
        self._port = port or _read_int(self.data_dir / _PORT_FILE) or free_loopback_port()
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self._log_file = self.data_dir / _LOG_FILE
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid: int | None = None

    @property
    def port(self) -> int:
        """The loopback TCP port clients connect to."""
        return self._port

    @property
    def connect_string(self) -> str:
        """The kazoo/ZooKeeper connect string, ``127.0.0.1:<port>``."""
        return f"{_HOST}:{self._port}"

    @property
    def pid(self) -> int | None:
        """The server's process id while started or attached, else None."""
        return self._pid

    def is_running(self) -> bool:
        """Whether the server process is alive (it may still be starting, or paused)."""
        if self._proc is not None:
            return self._proc.poll() is None
        return self._pid is not None and _pid_alive(self._pid)

    def four_letter_word(self, word: str, timeout: float = 2.0) -> str:
        """Send a four-letter command such as ``ruok``; return the reply, or '' on failure."""
        deadline = time.monotonic() + timeout
        chunks: list[bytes] = []
        try:
            with socket.create_connection((_HOST, self._port), timeout=timeout) as sock:
                sock.sendall(word.encode("ascii"))
                sock.shutdown(socket.SHUT_WR)
                while (remaining := deadline - time.monotonic()) > 0:
                    sock.settimeout(remaining)
                    chunk = sock.recv(65536)
                    if not chunk:
                        return b"".join(chunks).decode(errors="replace")
                    chunks.append(chunk)
        except OSError:
            pass
        return ""

    def start(self, timeout: float = 30.0, detach: bool = False) -> ZooKeeperServer:
        """Spawn the server and return once it serves sessions.

        ``detach=True`` puts it in its own session so it outlives this Python process, and records
        its pid and port in data_dir for :meth:`attach`. Otherwise it dies with this process.
        """
        if self.is_running():
            raise RuntimeError(f"ZooKeeper server {self.connect_string} is already running")
        # Two servers writing one data_dir would corrupt its transaction log.
        other = ZooKeeperServer.attach(self.data_dir)
        if other is not None:
            raise RuntimeError(
                f"a detached ZooKeeper server (pid {other.pid}, {other.connect_string}) already "
                f"uses {self.data_dir}; use ZooKeeperServer.attach() to reach it"
            )
        java = _find_java()
        jars = _pyspark_jars()
        # Whatever already answers on the port would pass the readiness probe in our JVM's place.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            if probe.connect_ex((_HOST, self._port)) == 0:
                raise RuntimeError(f"port {self._port} on {_HOST} is already in use")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        command = [
            java, f"-Dlog4j2.configurationFile={self.data_dir / _LOG4J_FILE}",
            "-Dzookeeper.jmx.log4j.disable=true",
            # A small metadata server: quicker JVM startup and a bounded heap beside Ray workers.
            "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m",
            "-cp", str(jars / "*"), _MAIN_CLASS, str(config),
        ]  # fmt: skip
        started = time.monotonic()
        with open(self._log_file, "wb") as log:
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
                start_new_session=detach,
                preexec_fn=None if detach else _die_with_parent_hook(),
            )
        self._pid = self._proc.pid
        if detach:
            # Recorded before the wait, so the JVM stays findable if this starter dies meanwhile.
            _write_atomically(self.data_dir / _PID_FILE, f"{self._pid}\n")
            _write_atomically(self.data_dir / _PORT_FILE, f"{self._port}\n")
        else:
            atexit.register(self.stop)
        try:
            self._wait_ready(started + timeout)
        except BaseException:
            self.stop()
            raise
        logger.info(
            "ZooKeeper %s ready in %.2fs (pid %d, data %s)",
            self.connect_string,
            time.monotonic() - started,
            self._pid,
            self.data_dir,
        )
        return self

    @classmethod
    def attach(cls, data_dir: str | os.PathLike[str]) -> ZooKeeperServer | None:
        """Find a running detached server of ``data_dir`` by its pid and port files, else None."""
        root = Path(data_dir).resolve()
        pid = _read_int(root / _PID_FILE)
        port = _read_int(root / _PORT_FILE)
        if pid is None or port is None or not _pid_alive(pid):
            return None
        if not _pid_runs_config(pid, root / _CONFIG_FILE):
            return None
        server = cls(root, port=port)
        if server.four_letter_word("ruok") != "imok":
            return None
        server._pid = pid
        return server

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the server, wait up to ``timeout``, then SIGKILL. Safe to call repeatedly."""
        atexit.unregister(self.stop)
        pid = self._pid
        if pid is not None and self.is_running():
            # SIGCONT too, because a paused JVM would hold the SIGTERM pending forever.
            self._signal_quietly(pid, signal.SIGTERM, signal.SIGCONT)
            if not self._wait_exit(timeout):
                logger.warning("ZooKeeper pid %d ignored SIGTERM for %.1fs; killing", pid, timeout)
                self._signal_quietly(pid, signal.SIGKILL)
                self._wait_exit(timeout)
        if self._proc is not None:
            self._proc.wait()
        if pid is not None and _read_int(self.data_dir / _PID_FILE) == pid:
            (self.data_dir / _PID_FILE).unlink(missing_ok=True)
        self._proc = None
        self._pid = None

    def pause(self) -> None:
        """Freeze the JVM with SIGSTOP, so clients see a hung server (for fault tests)."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Thaw a paused JVM with SIGCONT."""
        self._signal(signal.SIGCONT)

    def __enter__(self) -> ZooKeeperServer:
        """Start the server unless it already runs (e.g. it was attached)."""
        if not self.is_running():
            self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Stop the server, whether or not the block raised."""
        self.stop()

    def __repr__(self) -> str:
        return f"ZooKeeperServer({self.connect_string}, pid={self._pid}, {self.data_dir})"

    def _write_config(self) -> Path:
        config = self.data_dir / _CONFIG_FILE
        config.write_text(
            f"tickTime={self.tick_time_ms}\n"
            f"minSessionTimeout={self.min_session_timeout_ms}\n"
            f"maxSessionTimeout={self.max_session_timeout_ms}\n"
            f"dataDir={self.data_dir}\n"
            f"clientPort={self._port}\n"
            f"clientPortAddress={_HOST}\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=*\n"
            # A long-lived `rafka up` server would otherwise keep every snapshot and log forever.
            "autopurge.snapRetainCount=3\n"
            "autopurge.purgeInterval=1\n"
        )
        (self.data_dir / _LOG4J_FILE).write_text(_LOG4J_CONFIG)
        return config

    def _wait_ready(self, deadline: float) -> None:
        # ruok answers once the port is bound; srvr shows a Mode only once sessions are served.
        while True:
            if not self.is_running():
                raise RuntimeError(
                    f"ZooKeeper on {self.connect_string} exited during startup; "
                    f"{self._log_file} ends with:\n{self._log_tail()}"
                )
            if self.four_letter_word("ruok", 1.0) == "imok" and (
                "Mode: standalone" in self.four_letter_word("srvr", 1.0)
            ):
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"ZooKeeper on port {self._port} was not serving before the deadline; "
                    f"{self._log_file} ends with:\n{self._log_tail()}"
                )
            time.sleep(_POLL_INTERVAL)

    def _wait_exit(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.is_running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_INTERVAL)
        return True

    def _signal(self, signum: int) -> None:
        if self._pid is None or not self.is_running():
            raise RuntimeError(f"ZooKeeper server {self.connect_string} is not running")
        os.kill(self._pid, signum)

    @staticmethod
    def _signal_quietly(pid: int, *signums: int) -> None:
        # The process may exit on its own between the liveness check and the signal.
        try:
            for signum in signums:
                os.kill(pid, signum)
        except ProcessLookupError:
            pass

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self._log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
