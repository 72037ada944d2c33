"""The purgatory: requests parked until their partition changes enough to answer them.

Kafka's DelayedOperationPurgatory holds produce requests with acks=all until the high watermark
passes them (DelayedProduce) and fetches until enough bytes arrive (DelayedFetch). Here each replica
actor owns its purgatories, and everything runs on the actor's event loop, so completion needs no
locks: a waiter is a future, ``check_and_complete`` runs each waiter's own completion test after the
partition changed, and expiry runs ``on_expire`` once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


@dataclass
class _Waiter(Generic[T]):
    try_complete: Callable[[], T | None]
    future: asyncio.Future


class Purgatory(Generic[T]):
    """Operations on one partition waiting for a condition, each with its own timeout."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._waiters: list[_Waiter[T]] = []
        self.completed = 0
        self.expired = 0

    async def wait(self, try_complete: Callable[[], T | None], timeout_s: float, on_expire: Callable[[], T]) -> T:
        """Return ``try_complete()`` as soon as it is not None, or ``on_expire()`` after ``timeout_s``."""
        result = try_complete()
        if result is not None:
            return result
        if timeout_s <= 0:
            self.expired += 1
            return on_expire()
        waiter: _Waiter[T] = _Waiter(try_complete, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        try:
            return await asyncio.wait_for(asyncio.shield(waiter.future), timeout_s)
        except asyncio.TimeoutError:
            if waiter.future.done():
                return waiter.future.result()
            self.expired += 1
            return on_expire()
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def check_and_complete(self) -> int:
        """Complete every waiter whose condition now holds; return how many completed."""
        done = 0
        for waiter in list(self._waiters):
            if waiter.future.done():
                continue
            result = waiter.try_complete()
            if result is not None:
                waiter.future.set_result(result)
                self._waiters.remove(waiter)
                done += 1
        self.completed += done
        return done

    def __len__(self) -> int:
        return len(self._waiters)
