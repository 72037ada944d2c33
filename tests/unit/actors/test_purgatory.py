"""Tests for rafka.actors.purgatory: parked operations complete on a state change or expire on a deadline."""

from __future__ import annotations

import asyncio
import time
from typing import Callable

from rafka.actors.purgatory import Purgatory
from rafka.protocol.errors import Errors

TIMEOUT_S = 0.05
LONG_TIMEOUT_S = 30.0


class Expiry:
    """An ``on_expire`` that counts its calls."""

    def __init__(self, value: object = "expired") -> None:
        self.value = value
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


async def parked(purgatory: Purgatory, count: int) -> None:
    """Yield to the loop until ``count`` waiters are parked (no timing involved)."""
    for _ in range(100):
        if len(purgatory) == count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{len(purgatory)} waiters parked, expected {count}")


def at_least(threshold: int, state: dict[str, int]) -> Callable[[], str | None]:
    return lambda: f"hw={state['hw']}" if state["hw"] >= threshold else None


def test_completes_immediately_when_condition_already_holds() -> None:
    purgatory: Purgatory[str] = Purgatory("produce")
    expiry = Expiry()

    async def scenario() -> str:
        return await purgatory.wait(lambda: "done", LONG_TIMEOUT_S, expiry)

    started = time.monotonic()
    assert asyncio.run(scenario()) == "done"
    assert time.monotonic() - started < LONG_TIMEOUT_S / 2
    assert expiry.calls == 0
    assert len(purgatory) == 0
    assert purgatory.expired == 0


def test_falsy_result_counts_as_completion() -> None:
    # DelayedProduce completes with Errors.NONE, whose int value is 0: only None means "not yet".
    purgatory: Purgatory[Errors] = Purgatory("produce")
    state = {"done": False}
    expiry = Expiry(Errors.REQUEST_TIMED_OUT)

    async def scenario() -> tuple[Errors, Errors]:
        first = await purgatory.wait(lambda: Errors.NONE, LONG_TIMEOUT_S, expiry)
        task = asyncio.create_task(purgatory.wait(lambda: Errors.NONE if state["done"] else None, LONG_TIMEOUT_S, expiry))
        await parked(purgatory, 1)
        state["done"] = True
        assert purgatory.check_and_complete() == 1
        return first, await task

    assert asyncio.run(scenario()) == (Errors.NONE, Errors.NONE)
    assert expiry.calls == 0


def test_completes_on_check_and_complete_after_state_change() -> None:
    purgatory: Purgatory[str] = Purgatory("produce")
    state = {"hw": 0}
    expiry = Expiry()

    async def scenario() -> str:
        task = asyncio.create_task(purgatory.wait(at_least(3, state), LONG_TIMEOUT_S, expiry))
        await parked(purgatory, 1)
        assert purgatory.check_and_complete() == 0  # nothing changed yet
        assert not task.done()
        state["hw"] = 3
        assert purgatory.check_and_complete() == 1
        return await task

    assert asyncio.run(scenario()) == "hw=3"
    assert expiry.calls == 0
    assert (purgatory.completed, purgatory.expired, len(purgatory)) == (1, 0, 0)


def test_check_and_complete_completes_only_satisfied_waiters() -> None:
    purgatory: Purgatory[str] = Purgatory("produce")
    state = {"hw": 0}

    async def scenario() -> tuple[list[str], int]:
        tasks = [asyncio.create_task(purgatory.wait(at_least(n, state), LONG_TIMEOUT_S, Expiry())) for n in (1, 2, 5)]
        await parked(purgatory, 3)
        state["hw"] = 2
        assert purgatory.check_and_complete() == 2
        await asyncio.gather(*tasks[:2])
        still_parked = len(purgatory)
        state["hw"] = 5
        assert purgatory.check_and_complete() == 1
        return list(await asyncio.gather(*tasks)), still_parked

    results, still_parked = asyncio.run(scenario())
    assert results == ["hw=2", "hw=2", "hw=5"]
    assert still_parked == 1
    assert purgatory.completed == 3


def test_expires_with_on_expire_after_timeout() -> None:
    purgatory: Purgatory[str] = Purgatory("fetch")
    expiry = Expiry("timed out")

    async def scenario() -> tuple[str, float]:
        started = time.monotonic()
        result = await purgatory.wait(lambda: None, TIMEOUT_S, expiry)
        return result, time.monotonic() - started

    result, elapsed = asyncio.run(scenario())
    assert result == "timed out"
    assert elapsed >= TIMEOUT_S * 0.9
    assert expiry.calls == 1
    assert (purgatory.completed, purgatory.expired, len(purgatory)) == (0, 1, 0)


def test_expired_waiter_is_not_completed_later() -> None:
    purgatory: Purgatory[str] = Purgatory("fetch")
    state = {"hw": 0}
    expiry = Expiry()

    async def scenario() -> tuple[str, int]:
        result = await purgatory.wait(at_least(1, state), TIMEOUT_S, expiry)
        state["hw"] = 1
        return result, purgatory.check_and_complete()

    assert asyncio.run(scenario()) == ("expired", 0)
    assert expiry.calls == 1
    assert purgatory.completed == 0


def test_counts_completed_and_expired_separately() -> None:
    purgatory: Purgatory[str] = Purgatory("produce")
    state = {"hw": 0}

    async def scenario() -> list[str]:
        fast = [asyncio.create_task(purgatory.wait(at_least(1, state), LONG_TIMEOUT_S, Expiry())) for _ in range(3)]
        slow = [asyncio.create_task(purgatory.wait(at_least(99, state), TIMEOUT_S, Expiry())) for _ in range(2)]
        await parked(purgatory, 5)
        state["hw"] = 1
        purgatory.check_and_complete()
        return list(await asyncio.gather(*fast, *slow))

    assert asyncio.run(scenario()) == ["hw=1"] * 3 + ["expired"] * 2
    assert (purgatory.completed, purgatory.expired, len(purgatory)) == (3, 2, 0)


def test_zero_timeout_expires_at_once_without_parking() -> None:
    purgatory: Purgatory[str] = Purgatory("fetch")
    expiry = Expiry("empty")
    checks = []

    def never() -> None:
        checks.append(1)
        return None

    async def scenario() -> tuple[str, int]:
        result = await purgatory.wait(never, 0, expiry)
        return result, len(purgatory)

    assert asyncio.run(scenario()) == ("empty", 0)
    assert expiry.calls == 1
    assert len(checks) == 1  # the condition was tried once before giving up


def test_zero_timeout_still_returns_a_result_that_is_ready() -> None:
    purgatory: Purgatory[str] = Purgatory("fetch")
    expiry = Expiry()
    assert asyncio.run(purgatory.wait(lambda: "ready", 0, expiry)) == "ready"
    assert expiry.calls == 0


def test_cancelled_waiter_leaves_the_purgatory() -> None:
    purgatory: Purgatory[str] = Purgatory("fetch")

    async def scenario() -> int:
        task = asyncio.create_task(purgatory.wait(lambda: None, LONG_TIMEOUT_S, Expiry()))
        await parked(purgatory, 1)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return len(purgatory)

    assert asyncio.run(scenario()) == 0
    assert purgatory.expired == 0
