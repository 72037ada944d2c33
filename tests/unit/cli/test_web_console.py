"""``rafka console`` (rafka.cli.web_console): its options, the loopback default and the warning
when it is exposed."""

from __future__ import annotations

import pytest

from rafka.cli.main import build_parser, main
from rafka.cli.web_console import check, exposure_warning, is_loopback


def test_defaults_bind_loopback_port_9021_with_operations_on() -> None:
    args = build_parser().parse_args(["console"])
    assert (args.host, args.port, args.read_only, args.refresh_ms) == (
        "127.0.0.1",
        9021,
        False,
        5000,
    )
    assert exposure_warning(args.host, args.port, args.read_only) is None


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_addresses_are_not_exposed(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::", "console.example.com"])
def test_any_other_host_is_exposed_and_warned_about_once(host: str) -> None:
    assert not is_loopback(host)
    warning = exposure_warning(host, 9021, read_only=False)
    assert warning is not None and warning.startswith(f"Warning: the console is exposed on {host}")
    assert "--read-only" in warning
    read_only = exposure_warning(host, 9021, read_only=True)
    assert read_only is not None and "can only look" in read_only


def test_bad_port_and_refresh_are_refused_before_connecting() -> None:
    with pytest.raises(SystemExit, match="--port must be between 1 and 65535, not 70000"):
        check(build_parser().parse_args(["console", "--port", "70000"]))
    with pytest.raises(SystemExit, match=r"^Error: --refresh-ms must be at least 500, not 10$"):
        main(["console", "--refresh-ms", "10"])
