"""Tests for rafka.actors.zk.pipeline: many requests in flight, answers back in order."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss, NoNodeError

from rafka.actors.zk.pipeline import get_many, pipelined


class FakeResult:
    """An answered kazoo async result: its value, or the error it raises."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


class FakeSession:
    """Records when each request is sent and when its answer is waited for."""

    def __init__(self, znodes: dict[str, Any]) -> None:
        self.znodes = znodes
        self.events: list[tuple[str, str]] = []

    def get_async(self, path: str, watch: Callable[..., Any] | None = None) -> FakeResult:
        self.events.append(("sent", path))
        session = self

        class Waited(FakeResult):
            def get(self, block: bool = True, timeout: float | None = None) -> Any:
                session.events.append(("waited", path))
                return super().get(block, timeout)

        return Waited(self.znodes.get(path, NoNodeError()))


def test_pipelined_keeps_order_and_returns_errors_in_place() -> None:
    error = ConnectionLoss()
    answers = pipelined([lambda: FakeResult(1), lambda: FakeResult(error), lambda: FakeResult(3)])
    assert answers == [1, error, 3]


def test_pipelined_sends_a_window_before_waiting() -> None:
    session = FakeSession({f"/z{i}": (b"", i) for i in range(5)})
    pipelined([partial(session.get_async, f"/z{i}") for i in range(5)], window=2)
    assert [kind for kind, _ in session.events] == [
        "sent",
        "sent",
        "waited",
        "waited",
        "sent",
        "sent",
        "waited",
        "waited",
        "sent",
        "waited",
    ]


def test_pipelined_with_no_calls_sends_nothing() -> None:
    assert pipelined([]) == []


def test_get_many_reads_missing_znodes_as_none() -> None:
    session = FakeSession({"/a": (b"1", "stat-a"), "/c": (b"3", "stat-c")})
    read = get_many(session, ["/a", "/b", "/c"])
    assert read == {"/a": (b"1", "stat-a"), "/b": None, "/c": (b"3", "stat-c")}
    sent = [path for kind, path in session.events if kind == "sent"]
    assert sent == ["/a", "/b", "/c"]
    assert session.events.index(("sent", "/c")) < session.events.index(("waited", "/a"))


def test_get_many_raises_a_failure_other_than_a_missing_znode() -> None:
    session = FakeSession({"/a": (b"1", "stat"), "/lost": ConnectionLoss()})
    with pytest.raises(ConnectionLoss):
        get_many(session, ["/a", "/lost"])
