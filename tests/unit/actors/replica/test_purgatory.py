"""Tests for rafka.actors.replica.purgatory: parked operations complete on a state change or expire
on a deadline.

Each parked operation runs in its own thread holding the replica lock, as a replica actor's handler
does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rafka.actors.replica.purgatory import Purgatory
from rafka.protocol.errors import Errors

TIMEOUT_S = 0.05
LONG_TIMEOUT_S = 30.0
DEADLINE_S = 10.0


class Expiry:
    """An ``on_expire`` that counts its calls."""

    def __init__(self, value: object = "expired") -> None:
        self.value = value
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


class Parked:
    """A handler thread that takes the lock and waits in the purgatory."""

    def __init__(
        self,
        purgatory: Purgatory,
        lock: threading.RLock,
        try_complete: Callable[[], object],
        timeout_s: float,
        on_expire: Callable[[], object],
    ) -> None:
        self.result: object = None
        self.elapsed = 0.0

        def run() -> None:
            started = time.monotonic()
            with lock:
                self.result = purgatory.wait(try_complete, timeout_s, on_expire)
            self.elapsed = time.monotonic() - started

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def done(self) -> bool:
        """Whether the handler has returned."""
        return not self._thread.is_alive()

    def join(self) -> object:
        """The handler's result, once it returned (bounded by a deadline)."""
        self._thread.join(DEADLINE_S)
        assert not self._thread.is_alive(), "the parked handler did not return"
        return self.result


def parked(purgatory: Purgatory, lock: threading.RLock, count: int) -> None:
    """Wait, with a deadline, until ``count`` waiters are parked."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        with lock:
            if len(purgatory) == count:
                return
        time.sleep(0.001)
    raise AssertionError(f"{len(purgatory)} waiters parked, expected {count}")


def complete(purgatory: Purgatory, lock: threading.RLock) -> int:
    """Run ``check_and_complete`` as a handler that changed the partition does: under the lock."""
    with lock:
        return purgatory.check_and_complete()


def at_least(threshold: int, state: dict[str, int]) -> Callable[[], str | None]:
    return lambda: f"hw={state['hw']}" if state["hw"] >= threshold else None


def new_purgatory(name: str) -> tuple[Purgatory, threading.RLock]:
    lock = threading.RLock()
    return Purgatory(name, lock), lock


def test_completes_immediately_when_condition_already_holds() -> None:
    purgatory, lock = new_purgatory("produce")
    expiry = Expiry()
    waiter = Parked(purgatory, lock, lambda: "done", LONG_TIMEOUT_S, expiry)
    assert waiter.join() == "done"
    assert waiter.elapsed < LONG_TIMEOUT_S / 2
    assert expiry.calls == 0
    assert len(purgatory) == 0
    assert purgatory.expired == 0


def test_falsy_result_counts_as_completion() -> None:
    # DelayedProduce completes with Errors.NONE, whose int value is 0: only None means "not yet".
    purgatory, lock = new_purgatory("produce")
    state = {"done": False}
    expiry = Expiry(Errors.REQUEST_TIMED_OUT)
    assert (
        Parked(purgatory, lock, lambda: Errors.NONE, LONG_TIMEOUT_S, expiry).join() is Errors.NONE
    )
    waiter = Parked(
        purgatory, lock, lambda: Errors.NONE if state["done"] else None, LONG_TIMEOUT_S, expiry
    )
    parked(purgatory, lock, 1)
    with lock:
        state["done"] = True
        assert purgatory.check_and_complete() == 1
    assert waiter.join() is Errors.NONE
    assert expiry.calls == 0


def test_completes_on_check_and_complete_after_state_change() -> None:
    purgatory, lock = new_purgatory("produce")
    state = {"hw": 0}
    expiry = Expiry()
    waiter = Parked(purgatory, lock, at_least(3, state), LONG_TIMEOUT_S, expiry)
    parked(purgatory, lock, 1)
    assert complete(purgatory, lock) == 0  # nothing changed yet
    assert not waiter.done()
    with lock:
        state["hw"] = 3
        assert purgatory.check_and_complete() == 1
    assert waiter.join() == "hw=3"
    assert expiry.calls == 0
    assert (purgatory.completed, purgatory.expired, len(purgatory)) == (1, 0, 0)


def test_check_and_complete_completes_only_satisfied_waiters() -> None:
    purgatory, lock = new_purgatory("produce")
    state = {"hw": 0}
    waiters = [
        Parked(purgatory, lock, at_least(n, state), LONG_TIMEOUT_S, Expiry()) for n in (1, 2, 5)
    ]
    parked(purgatory, lock, 3)
    with lock:
        state["hw"] = 2
        assert purgatory.check_and_complete() == 2
    assert [waiters[0].join(), waiters[1].join()] == ["hw=2", "hw=2"]
    with lock:
        assert len(purgatory) == 1
        assert not waiters[2].done()
        state["hw"] = 5
        assert purgatory.check_and_complete() == 1
    assert waiters[2].join() == "hw=5"
    assert purgatory.completed == 3


def test_expires_with_on_expire_after_timeout() -> None:
    purgatory, lock = new_purgatory("fetch")
    expiry = Expiry("timed out")
    waiter = Parked(purgatory, lock, lambda: None, TIMEOUT_S, expiry)
    assert waiter.join() == "timed out"
    assert waiter.elapsed >= TIMEOUT_S * 0.9
    assert expiry.calls == 1
    assert (purgatory.completed, purgatory.expired, len(purgatory)) == (0, 1, 0)


def test_expired_waiter_is_not_completed_later() -> None:
    purgatory, lock = new_purgatory("fetch")
    state = {"hw": 0}
    expiry = Expiry()
    assert Parked(purgatory, lock, at_least(1, state), TIMEOUT_S, expiry).join() == "expired"
    with lock:
        state["hw"] = 1
        assert purgatory.check_and_complete() == 0
    assert expiry.calls == 1
    assert purgatory.completed == 0


def test_counts_completed_and_expired_separately() -> None:
    purgatory, lock = new_purgatory("produce")
    state = {"hw": 0}
    fast = [Parked(purgatory, lock, at_least(1, state), LONG_TIMEOUT_S, Expiry()) for _ in range(3)]
    parked(purgatory, lock, 3)
    slow = [Parked(purgatory, lock, at_least(99, state), TIMEOUT_S, Expiry()) for _ in range(2)]
    with lock:
        state["hw"] = 1
        purgatory.check_and_complete()
    assert [w.join() for w in fast + slow] == ["hw=1"] * 3 + ["expired"] * 2
    assert (purgatory.completed, purgatory.expired, len(purgatory)) == (3, 2, 0)


def test_zero_timeout_expires_at_once_without_parking() -> None:
    purgatory, lock = new_purgatory("fetch")
    expiry = Expiry("empty")
    checks = []

    def never() -> None:
        checks.append(1)
        return None

    with lock:
        assert purgatory.wait(never, 0, expiry) == "empty"
        assert len(purgatory) == 0
    assert expiry.calls == 1
    assert len(checks) == 1  # the condition was tried once before giving up


def test_zero_timeout_still_returns_a_result_that_is_ready() -> None:
    purgatory, lock = new_purgatory("fetch")
    expiry = Expiry()
    with lock:
        assert purgatory.wait(lambda: "ready", 0, expiry) == "ready"
    assert expiry.calls == 0


def test_a_parked_waiter_releases_the_lock_for_other_handlers() -> None:
    # A long poll must not block the replica: the produce that completes it needs the same lock.
    purgatory, lock = new_purgatory("fetch")
    state = {"hw": 0}
    waiter = Parked(purgatory, lock, at_least(1, state), LONG_TIMEOUT_S, Expiry())
    parked(purgatory, lock, 1)
    assert lock.acquire(timeout=DEADLINE_S), "the parked waiter kept the lock"
    try:
        state["hw"] = 1
        assert purgatory.check_and_complete() == 1
        assert not waiter.done()  # it cannot return before the lock is free again
    finally:
        lock.release()
    assert waiter.join() == "hw=1"
