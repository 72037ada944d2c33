"""acks=all produces from Kafka clients waiting for their partitions' high watermarks, one replica
call per partition at a time.

A Kafka producer keeps many requests in flight. Each one's records are appended at once; what is
left is waiting until the partition's high watermark passes them. Asking the replica once per
request costs a Ray call each and parks a replica thread each, so the waits of one partition share
a single call instead: it waits for the highest offset any of them needs, and when it returns every
waiter at or below the high watermark it reached is answered. Waiters that arrived meanwhile wait
for the next round. Each waiter keeps its own deadline (its request's ``timeout_ms``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rafka.protocol.errors import Errors
from rafka.protocol.messages.produce import HighWatermarkReached, HighWatermarkWait

Ask = Callable[[str, int, HighWatermarkWait], Awaitable[HighWatermarkReached]]
"""Asks the partition's replica to wait for its high watermark."""

# Outcomes of a round that leave the waiters above the high watermark still waiting.
_KEEP_WAITING = (Errors.NONE, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT)


@dataclass
class _Waiter:
    required_offset: int
    deadline: float
    answer: asyncio.Future[Errors]


class HighWatermarkWaits:
    """The acks=all waits of one broker's Kafka listener, coalesced per partition."""

    def __init__(self, ask: Ask) -> None:
        self._ask = ask
        self._waiting: dict[tuple[str, int], list[_Waiter]] = {}
        self._rounds: set[asyncio.Task[None]] = set()

    async def wait(
        self, topic: str, partition: int, required_offset: int, timeout_ms: int
    ) -> Errors:
        """NONE once the partition's HW reaches ``required_offset`` with enough in-sync replicas;
        else the error an acks=all produce gets (REQUEST_TIMED_OUT after ``timeout_ms``)."""
        loop = asyncio.get_running_loop()
        waiter = _Waiter(required_offset, loop.time() + timeout_ms / 1000, loop.create_future())
        key = (topic, partition)
        waiters = self._waiting.get(key)
        if waiters is not None:
            waiters.append(waiter)
        else:
            self._waiting[key] = [waiter]
            rounds = loop.create_task(self._run(key))
            self._rounds.add(rounds)
            rounds.add_done_callback(self._rounds.discard)
        return await waiter.answer

    def __len__(self) -> int:
        return sum(len(waiters) for waiters in self._waiting.values())

    async def _run(self, key: tuple[str, int]) -> None:
        """Rounds of one replica call each until no waiter of the partition is left."""
        loop = asyncio.get_running_loop()
        waiters = self._waiting[key]
        try:
            while waiters:
                target = max(w.required_offset for w in waiters)
                remaining = min(w.deadline for w in waiters) - loop.time()
                request = HighWatermarkWait(target, max(0, math.ceil(remaining * 1000)))
                reached = await self._ask(*key, request)
                now = loop.time()
                # Waiters that joined during the call are in ``waiters`` too.
                waiters[:] = [w for w in waiters if not _answered(w, reached, now)]
        except asyncio.CancelledError:
            for waiter in waiters:
                waiter.answer.cancel()
            raise
        except Exception as exc:  # the replica call failed: its waiters' requests fail with it
            for waiter in waiters:
                if not waiter.answer.done():
                    waiter.answer.set_exception(exc)
        finally:
            del self._waiting[key]


def _answered(waiter: _Waiter, reached: HighWatermarkReached, now: float) -> bool:
    """Answer ``waiter`` if the round's outcome settles it; whether it is done."""
    if waiter.answer.done():  # its request's connection closed
        return True
    if waiter.required_offset <= reached.high_watermark:
        waiter.answer.set_result(reached.below)
    elif reached.error not in _KEEP_WAITING:
        waiter.answer.set_result(reached.error)
    elif waiter.deadline <= now:
        waiter.answer.set_result(Errors.REQUEST_TIMED_OUT)
    else:
        return False
    return True
