"""The address rafka hands Ray: the loopback rule, its place in Ray, the connect bound."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from rafka.clients.ray_address import (
    is_loopback,
    keeps_loopback,
    listening,
    loopback_mode,
    ray_address,
    split_address,
)
from rafka.protocol.errors import KafkaTimeoutError


def answers_only(*open_addresses: str) -> Callable[[str, int], bool]:
    """A fake probe: only the given ``host:port`` addresses accept connections."""
    return lambda host, port: f"{host}:{port}" in open_addresses


@pytest.fixture
def loopback_listener() -> Iterator[str]:
    """A TCP server on 127.0.0.1 only, as a single-machine Ray head's GCS listens."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield f"127.0.0.1:{server.getsockname()[1]}"


@pytest.fixture
def ray_default_mode() -> Iterator[None]:
    """Put Ray's loopback flag back to Ray's own choice after the test."""
    yield
    loopback_mode(False)


def test_split_address_reads_host_and_port_and_rejects_the_rest() -> None:
    assert split_address("127.0.0.1:6379") == ("127.0.0.1", 6379)
    assert split_address("[::1]:6379") == ("::1", 6379)
    assert split_address("auto") is None
    assert split_address("127.0.0.1") is None
    assert split_address("host:port") is None


def test_loopback_hosts_are_the_loopback_interface_and_localhost() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("192.0.2.7") and not is_loopback("example.com")


def test_a_loopback_head_that_does_not_answer_on_the_network_address_keeps_loopback() -> None:
    answers = answers_only("127.0.0.1:6379")
    assert keeps_loopback("127.0.0.1:6379", "192.0.2.7", answers)


def test_a_head_that_answers_on_the_network_address_keeps_rays_rewrite() -> None:
    # A multi-node cluster's head listens on the network address: Ray's behaviour stands.
    answers = answers_only("127.0.0.1:6379", "192.0.2.7:6379")
    assert not keeps_loopback("127.0.0.1:6379", "192.0.2.7", answers)


def test_a_non_loopback_address_or_a_machine_without_network_is_left_to_ray() -> None:
    nothing = answers_only()
    assert not keeps_loopback("192.0.2.7:6379", "192.0.2.7", nothing)
    assert not keeps_loopback("127.0.0.1:6379", "127.0.0.1", nothing)
    assert not keeps_loopback("auto", "192.0.2.7", nothing)


def test_listening_tells_an_open_port_from_a_closed_one(loopback_listener: str) -> None:
    host, port = loopback_listener.split(":")
    assert listening(host, int(port))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))  # bound, not listening: refuses connections
        assert not listening("127.0.0.1", holder.getsockname()[1])


def test_the_address_handed_to_ray_for_a_loopback_only_head_stays_loopback(
    loopback_listener: str, ray_default_mode: None
) -> None:
    assert ray_address(loopback_listener) == loopback_listener


def test_rays_own_resolution_keeps_a_loopback_only_head_on_loopback(
    loopback_listener: str, ray_default_mode: None
) -> None:
    from ray._private import services

    ray_address(loopback_listener)  # installs the rule, as `import rafka` does
    assert services.canonicalize_bootstrap_address(loopback_listener) == loopback_listener


@pytest.mark.parametrize("imports", ["import rafka, ray", "import ray, rafka"])
def test_the_rule_is_in_ray_whichever_of_ray_and_rafka_is_imported_first(imports: str) -> None:
    script = (
        f"{imports}\nfrom ray._private import services\n"
        "print(hasattr(services.canonicalize_bootstrap_address, '__wrapped__'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "True", result.stderr


def test_importing_rafka_does_not_import_ray() -> None:
    script = "import sys, rafka\nprint('ray' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "False", result.stderr


def test_a_client_gives_up_on_a_silent_address_within_its_connect_timeout(
    ray_default_mode: None,
) -> None:
    from rafka.clients.ray_transport import ensure_ray

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{holder.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError) as raised:
            ensure_ray(address, connect_timeout_ms=500)
    assert time.monotonic() - started < 5
    message = str(raised.value)
    assert address in message and "rafka up" in message and "\n" not in message
