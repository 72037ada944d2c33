"""The launcher's checks for a previous Ray head, on loopback sockets (no Ray, no ZooKeeper)."""

from __future__ import annotations

import socket
from pathlib import Path

from rafka.cluster.launcher import ClusterState, _listening, down, start_failure


def test_a_listening_port_counts_as_a_running_head() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert _listening(f"127.0.0.1:{server.getsockname()[1]}")


def test_a_closed_port_means_the_previous_head_is_gone() -> None:
    # Bind without listening: the port is ours and refuses
    # connections, as a stopped Ray head's does.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        assert not _listening(f"127.0.0.1:{holder.getsockname()[1]}")


def test_an_address_without_a_port_is_not_listening() -> None:
    assert not _listening("127.0.0.1")


def test_down_after_down_reports_ray_gone_without_waiting_for_it(tmp_path: Path) -> None:
    # Ray's own connect retries a dead head for minutes: a second `rafka down` must not.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{holder.getsockname()[1]}"
        ClusterState(
            "rafka",
            "rafka",
            "127.0.0.1:2181",
            [0],
            address,
            started_ray=False,
            embedded_zookeeper=False,
        ).save(tmp_path)
        assert down(tmp_path) == [f"Ray at {address} is not running"]


def test_a_broker_start_failure_is_the_error_its_constructor_raised() -> None:
    report = (
        "The actor died because of an error raised in its creation task, ray::Broker.__init__()\n"
        "Traceback (most recent call last):\n"
        '  File "broker.py", line 148, in __init__\n'
        "    ssl_contexts = listener_ssl_contexts(config)\n"
        "OSError: [Errno 2] No such file or directory: '/x.pem'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "rafka.protocol.errors.InvalidConfigError: INVALID_CONFIG (40): ssl_keystore_location: "
        "cannot read /x.pem\n"
    )
    assert start_failure(report) == (
        "rafka.protocol.errors.InvalidConfigError: INVALID_CONFIG (40): ssl_keystore_location: "
        "cannot read /x.pem"
    )


def test_a_start_failure_without_a_traceback_is_the_reports_first_line() -> None:
    assert start_failure("The actor died unexpectedly.\nWorker exit type: SYSTEM_ERROR") == (
        "The actor died unexpectedly."
    )
