"""The controller's Ray death watch tells a dead actor from one Ray cannot reach for a moment."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import ray

from rafka.actors.controller import death_watch
from rafka.actors.controller.death_watch import await_death


class _Call:
    """Stands in for ``handle.wait_until_stopped``: each call answers with the next outcome."""

    def __init__(self, outcomes: Iterator[BaseException | None]) -> None:
        self.outcomes = outcomes
        self.calls = 0

    async def _answer(self) -> int:
        self.calls += 1
        outcome = next(self.outcomes)
        if outcome is not None:
            raise outcome
        return 0

    def remote(self) -> Any:
        return self._answer()


class _Handle:
    def __init__(self, *outcomes: BaseException | None) -> None:
        self.wait_until_stopped = _Call(iter(outcomes))


def _watch(resolve: Any) -> list[str]:
    died: list[str] = []
    asyncio.run(await_death(resolve, lambda: died.append("died")))
    return died


@pytest.fixture(autouse=True)
def _no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(death_watch, "UNAVAILABLE_RETRY_S", 0.0)


def test_a_dead_actor_is_reported_once() -> None:
    handle = _Handle(ray.exceptions.ActorDiedError())
    assert _watch(lambda: handle) == ["died"]


def test_an_actor_that_stops_cleanly_is_not_reported() -> None:
    handle = _Handle(None)
    assert _watch(lambda: handle) == []


def test_a_name_no_actor_holds_means_the_process_is_gone() -> None:
    def resolve() -> Any:
        raise ValueError("Failed to look up actor with name 'broker-0'")

    assert _watch(resolve) == ["died"]


def test_an_unavailable_actor_is_asked_again_instead_of_reported() -> None:
    unavailable = ray.exceptions.ActorUnavailableError("connection reset", None)
    handle = _Handle(unavailable, unavailable, None)
    assert _watch(lambda: handle) == []
    assert handle.wait_until_stopped.calls == 3


def test_an_unavailable_actor_that_then_dies_is_reported() -> None:
    unavailable = ray.exceptions.ActorUnavailableError("connection reset", None)
    handle = _Handle(unavailable, ray.exceptions.ActorDiedError())
    assert _watch(lambda: handle) == ["died"]
    assert handle.wait_until_stopped.calls == 2
