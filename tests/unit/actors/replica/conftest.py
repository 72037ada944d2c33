"""Shared fixtures for the partition replica tests: a clock moved by hand and logs on a temp dir."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rafka.log.log import Log

START_MS = 1_700_000_000_000


class FakeClock:
    """Milliseconds moved by hand."""

    def __init__(self, now: int = START_MS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def open_log(tmp_path: Path, clock: FakeClock) -> Iterator[Callable[..., Log]]:
    """Open a log under ``tmp_path`` on the fake clock; every log opened is abandoned at the end."""
    opened: list[Log] = []

    def _open(name: str = "events-0") -> Log:
        log = Log(tmp_path / name, clock=clock)
        opened.append(log)
        return log

    yield _open
    for log in opened:
        log.abandon()
