"""``rafka logs --broker N [--follow] [--lines N]``: print a broker's ``server.log``.

The text comes from the file itself when this machine holds the broker's log directory,
``<data-dir>/broker-N`` (``--data-dir`` defaults to ``rafka-data``, as for ``rafka up``, so the
command works from the directory ``rafka up`` was run in). Otherwise the broker's actor reads the
file on its own node and sends the text (``Broker.server_log``): a broker on another machine of a
Ray cluster is read the same way, in the cluster that the data directory's ``rafka-cluster.json``
names, else the one at ``--address`` (or ``RAY_ADDRESS``).

Without options the live ``server.log`` is printed whole; ``--lines N`` (``-n``) prints its last N
lines, reaching into the rolled files when it holds fewer. ``--follow`` (``-f``) then keeps printing
the lines written after, every ``FOLLOW_INTERVAL_S``, across a roll of the file as ``tail -F``
does, until Ctrl-C. A broker the cluster does not have is one ``Error:`` line and exit 1.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

from rafka.actors import names
from rafka.actors.server_log import LogChunk, LogPosition, log_files, read_new, tail

FOLLOW_INTERVAL_S = 0.25
"""How often ``--follow`` looks for new lines."""

CALL_TIMEOUT_S = 30.0
"""How long a read through a broker's actor may take."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka logs``."""
    parser.add_argument("--broker", type=int, required=True, metavar="ID", help="the broker's id")
    parser.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep printing lines as they are written, until Ctrl-C",
    )
    parser.add_argument(
        "--lines",
        "-n",
        type=int,
        default=None,
        metavar="N",
        help="print only the last N lines first (default: the whole live server.log)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path("rafka-data"),
        help="the data directory given to rafka up (default: rafka-data)",
    )


class LogSource(Protocol):
    """Where a broker's log is read: ``read(None, lines)`` is its tail, ``read(position, None)``
    what came after ``position``."""

    def read(self, position: LogPosition | None, lines: int | None) -> LogChunk:
        """The tail of the log, or what was written after ``position``."""
        ...


@dataclass(frozen=True)
class LocalLog:
    """A broker's log directory on this machine."""

    log_dir: Path

    def read(self, position: LogPosition | None, lines: int | None) -> LogChunk:
        """The file read here."""
        return tail(self.log_dir, lines) if position is None else read_new(self.log_dir, position)


@dataclass(frozen=True)
class BrokerLog:
    """A broker's log read on its own node by its actor."""

    broker_id: int
    actor: Any

    def read(self, position: LogPosition | None, lines: int | None) -> LogChunk:
        """The text the broker's actor read; LookupError once the broker is gone."""
        import ray

        try:
            chunk: LogChunk = ray.get(
                self.actor.server_log.remote(position, lines), timeout=CALL_TIMEOUT_S
            )
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
            raise LookupError(
                f"broker {self.broker_id} stopped answering ({type(exc).__name__})"
            ) from exc
        return chunk


def broker_log_dir(data_dir: Path, broker_id: int) -> Path:
    """Where ``rafka up`` puts broker ``broker_id``'s logs in ``data_dir``."""
    return data_dir / f"broker-{broker_id}"


def check_broker(broker_id: int, brokers: list[int], where: str) -> None:
    """LookupError naming the brokers ``where`` has when ``broker_id`` is not one of them."""
    if broker_id not in brokers:
        known = ", ".join(map(str, sorted(brokers))) or "none"
        raise LookupError(f"no broker {broker_id} in {where} (its brokers: {known})")


def print_log(
    source: LogSource,
    lines: int | None,
    follow: bool,
    out: TextIO,
    stop: threading.Event | None = None,
) -> None:
    """Print the log's tail, then with ``follow`` what is written after it until ``stop`` is set
    (never, for the command: Ctrl-C ends it)."""
    chunk = source.read(None, lines)
    out.write(chunk.text)
    out.flush()
    stop = stop or threading.Event()
    while follow and not stop.wait(FOLLOW_INTERVAL_S):
        chunk = source.read(chunk.position, None)
        if chunk.text:
            out.write(chunk.text)
            out.flush()


def source_of(args: argparse.Namespace, connect_timeout_ms: int) -> LogSource:
    """The broker's log on this machine, else through its actor in the running cluster."""
    local = broker_log_dir(args.data_dir, args.broker)
    if log_files(local):
        return LocalLog(local)
    import ray

    from rafka.clients.ray_transport import RayTransport
    from rafka.cluster import launcher

    state = launcher.ClusterState.load(args.data_dir.resolve())
    if state is not None:
        check_broker(args.broker, state.brokers, f"the cluster of {args.data_dir}")
        state = launcher.running_state(args.data_dir)
        namespace = state.namespace
        launcher.connect(state.ray_address, namespace, connect_timeout_ms, state.ray_token_file)
    else:
        namespace = args.namespace
        launcher.connect(args.address, namespace, connect_timeout_ms)
    try:
        actor = ray.get_actor(names.broker_actor_name(args.broker), namespace=namespace)
    except ValueError:
        running = RayTransport(namespace).broker_ids()
        check_broker(args.broker, running, f"the cluster in namespace {namespace!r}")
        raise LookupError(f"broker {args.broker} is not running") from None
    return BrokerLog(args.broker, actor)


def run(args: argparse.Namespace, connect_timeout_ms: int) -> int:
    """``rafka logs``: print the broker's log (and follow it)."""
    if args.lines is not None and args.lines < 0:
        raise ValueError(f"--lines must be 0 or more, not {args.lines}")
    source = source_of(args, connect_timeout_ms)
    stop = threading.Event()
    if args.follow:
        # Ctrl-C ends the follow between two reads, never inside a write to stdout.
        signal.signal(signal.SIGINT, lambda _signum, _frame: stop.set())
    try:
        print_log(source, args.lines, args.follow, sys.stdout, stop)
    except BrokenPipeError:
        # The reader went away (`rafka logs ... | head`): stop quietly, as cat and tail do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 130 if stop.is_set() else 0
