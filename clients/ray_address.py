"""The Ray address rafka hands Ray, and the one rule that keeps a loopback cluster on loopback.

``rafka up`` and ``LocalCluster`` run a single-machine Ray head bound to 127.0.0.1, so its GCS
answers on loopback only. When a process joins a cluster through a loopback address, Ray swaps the
host for the machine's network address (so that Ray nodes on other machines could call back); for a
loopback-only head nothing listens there, and ``ray.init`` retries for ever. The rule
(``keeps_loopback``): a loopback address is handed to Ray unchanged exactly when the machine's
network address does not answer on the same port. A multi-node cluster's head answers there, so it
keeps Ray's own behaviour.

``install`` applies the rule inside Ray's own address resolution, so plain
``ray.init(address="auto")`` works too: ``import rafka`` installs it, at once when Ray is already
imported, else as Ray is imported (``rafka`` itself does not import Ray). Joining a loopback cluster
switches the process to Ray's loopback mode, the one ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
selects when it is set before Ray is imported; joining any other cluster switches it back.
``ray_address`` returns the address rafka hands Ray, with the rule applied.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import ipaddress
import socket
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

RAY_SERVICES = "ray._private.services"
"""Ray's module that resolves a driver's bootstrap address (``canonicalize_bootstrap_address``)."""

RAY_CONSTANTS = "ray._private.ray_constants"
"""Ray's module whose ``ENABLE_RAY_CLUSTER`` flag decides whether a loopback host is rewritten."""

PROBE_TIMEOUT_S = 1.0

_ray_default: bool | None = None
"""``ENABLE_RAY_CLUSTER`` as Ray set it at import (None until the rule is applied)."""


def split_address(address: str) -> tuple[str, int] | None:
    """``host:port`` (``[v6]:port`` too) as a pair, or None if it is not one."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback interface."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listening(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether anything accepts TCP connections at ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def keeps_loopback(
    address: str, network_host: str, answers: Callable[[str, int], bool] = listening
) -> bool:
    """Whether Ray must be handed ``address`` as it is: its host is loopback, and the machine's
    network address (``network_host``, where Ray would move it) does not answer on its port, so
    the Ray head behind it is a single-machine one bound to loopback."""
    parsed = split_address(address)
    if parsed is None or not is_loopback(parsed[0]) or is_loopback(network_host):
        return False
    return not answers(network_host, parsed[1])


def _set_loopback(on: bool) -> None:
    # Ray reads the flag each time it resolves a loopback host, not only when it is imported.
    constants: Any = sys.modules[RAY_CONSTANTS]
    constants.ENABLE_RAY_CLUSTER = bool(_ray_default) and not on


def _resolve(services: Any, original: Callable[..., str | None]) -> Callable[..., Any]:
    """Ray's ``canonicalize_bootstrap_address`` with the loopback rule applied first."""

    def canonicalize_bootstrap_address(addr: str | None, temp_dir: str | None = None) -> Any:
        found = addr
        if addr is None or addr == "auto":
            found = services.get_ray_address_from_environment(addr, temp_dir)
        if found is not None and found != "local":
            # Joining a cluster; starting a new instance keeps the mode set by loopback_mode.
            _set_loopback(keeps_loopback(found, services.node_ip_address_from_perspective()))
        # Ray looks for a running instance only once (it warns when it finds several).
        return original(addr if found is None else found, temp_dir)

    canonicalize_bootstrap_address.__wrapped__ = original  # type: ignore[attr-defined]
    return canonicalize_bootstrap_address


def _apply(services: Any) -> None:
    global _ray_default
    current = services.canonicalize_bootstrap_address
    if not hasattr(current, "__wrapped__"):
        constants: Any = sys.modules[RAY_CONSTANTS]
        _ray_default = bool(constants.ENABLE_RAY_CLUSTER)
        services.canonicalize_bootstrap_address = _resolve(services, current)


def loopback_mode(on: bool) -> None:
    """Switch this process to Ray's loopback mode (``on``) or back to Ray's own choice.

    For a process about to start a single-machine Ray itself: it imports Ray.
    """
    _apply(importlib.import_module(RAY_SERVICES))
    _set_loopback(on)


class _AfterRayImport(importlib.abc.MetaPathFinder):
    """Applies the rule the moment Ray's services module is imported."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != RAY_SERVICES:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_module(module)
            _apply(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Apply the loopback rule to Ray in this process: now if Ray is imported, else as it is."""
    services = sys.modules.get(RAY_SERVICES)
    if services is not None:
        _apply(services)
    elif not any(isinstance(finder, _AfterRayImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterRayImport())


def ray_address(address: str | None = None) -> str:
    """The ``host:port`` rafka hands Ray for ``address`` (None or ``"auto"``: ``RAY_ADDRESS``, else
    the Ray instance running on this machine, found as Ray finds it). A single-machine cluster's
    address stays loopback. Raises ConnectionError when no running Ray instance is found."""
    from ray._private import services

    install()
    resolved = services.canonicalize_bootstrap_address(address or "auto")
    if resolved is None:
        raise ConnectionError("no running Ray instance was found on this machine")
    return str(resolved)
