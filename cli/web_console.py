"""``rafka console``: serve the web console (``rafka.console``) for a running cluster.

    rafka console [--host 127.0.0.1] [--port 9021] [--read-only] [--refresh-ms 5000]

It binds the loopback interface unless ``--host`` names another address, which exposes the
console to whoever can reach that address (said once on stderr); ``--read-only`` removes every
operation that changes the cluster.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

from rafka.console.history import DEFAULT_REFRESH_MS

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9021
MIN_REFRESH_MS = 500
"""Sampling faster than this would keep the brokers busy answering the console."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka console``."""
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to bind (default {DEFAULT_HOST}); any other exposes the console",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to bind")
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="hide and refuse every operation that changes the cluster",
    )
    parser.add_argument(
        "--refresh-ms",
        type=int,
        default=DEFAULT_REFRESH_MS,
        help=f"how often metrics and lag are sampled and charts redrawn (ms, default "
        f"{DEFAULT_REFRESH_MS})",
    )


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the console on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost may resolve anywhere
        return False


def check(args: argparse.Namespace) -> None:
    """Refuse options that cannot run, before the command connects to a cluster."""
    if not 0 < args.port < 65536:
        raise SystemExit(f"--port must be between 1 and 65535, not {args.port}")
    if args.refresh_ms < MIN_REFRESH_MS:
        raise SystemExit(f"--refresh-ms must be at least {MIN_REFRESH_MS}, not {args.refresh_ms}")


def exposure_warning(host: str, port: int, read_only: bool) -> str | None:
    """The one warning printed when the console is bound beyond the loopback interface."""
    if is_loopback(host):
        return None
    changes = "can only look" if read_only else "can change the cluster (--read-only stops that)"
    return (
        f"Warning: the console is exposed on {host}:{port}; anyone who reaches it {changes}, "
        "and it has no login"
    )


def run(args: argparse.Namespace, connect_timeout_ms: int) -> int:
    """Serve the console until interrupted; a cluster that does not answer within
    ``connect_timeout_ms`` is an error."""
    from aiohttp import web

    from rafka.console.app import Settings, create_app
    from rafka.console.source import ray_source

    check(args)
    warning = exposure_warning(args.host, args.port, args.read_only)
    if warning:
        print(warning, file=sys.stderr)
    source = ray_source(args.namespace, connect_timeout_ms)
    app = create_app(source, Settings(args.read_only, args.refresh_ms))
    mode = " (read-only)" if args.read_only else ""
    web.run_app(
        app,
        host=args.host,
        port=args.port,
        print=lambda _: print(f"rafka console on http://{args.host}:{args.port}{mode}", flush=True),
        access_log=None,
    )
    return 0
