"""The purgatory: requests parked until their partition changes enough to answer them.

Kafka's DelayedOperationPurgatory holds produce requests with acks=all until the high watermark
passes them (DelayedProduce) and fetches until enough bytes arrive (DelayedFetch). Here each replica
actor owns its purgatories and one lock that every handler holds while it runs. A parked request
waits on its own condition of that lock, which releases the lock while it waits;
``check_and_complete`` runs, under the lock, in the handler that changed the partition: it tests
each waiter's own completion condition and wakes only the waiters it completed. Expiry runs
``on_expire`` once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class _Waiter(Generic[T]):
    try_complete: Callable[[], T | None]
    wakeup: threading.Condition
    result: T | None = None
    done: bool = False


class Purgatory(Generic[T]):
    """Operations on one partition waiting for a condition, each with its own timeout.

    Every method must be called with ``lock`` held, the lock the replica's handlers hold.
    """

    def __init__(self, name: str, lock: threading.RLock) -> None:
        self.name = name
        self._lock = lock
        self._waiters: list[_Waiter[T]] = []
        self.completed = 0
        self.expired = 0

    def wait(
        self, try_complete: Callable[[], T | None], timeout_s: float, on_expire: Callable[[], T]
    ) -> T:
        """``try_complete()`` as soon as it is not None, or ``on_expire()`` after ``timeout_s``."""
        result = try_complete()
        if result is not None:
            return result
        if timeout_s <= 0:
            self.expired += 1
            return on_expire()
        waiter: _Waiter[T] = _Waiter(try_complete, threading.Condition(self._lock))
        self._waiters.append(waiter)
        deadline = time.monotonic() + timeout_s
        try:
            while not waiter.done:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                waiter.wakeup.wait(remaining)
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        if waiter.done:
            return waiter.result  # type: ignore[return-value]
        self.expired += 1
        return on_expire()

    def check_and_complete(self) -> int:
        """Complete every waiter whose condition now holds; return how many completed."""
        done = 0
        for waiter in list(self._waiters):
            result = waiter.try_complete()
            if result is not None:
                waiter.result, waiter.done = result, True
                self._waiters.remove(waiter)
                waiter.wakeup.notify()
                done += 1
        self.completed += done
        return done

    def __len__(self) -> int:
        return len(self._waiters)
