"""acks=all waits coalesced per partition: one replica call at a time, every waiter answered by
the high watermark the call reached, each by its own deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from rafka.actors.broker.high_watermark_waits import HighWatermarkWaits
from rafka.protocol.errors import Errors
from rafka.protocol.messages.produce import HighWatermarkReached, HighWatermarkWait

pytestmark = pytest.mark.timeout(30)


class FakeReplicas:
    """Holds each replica call until the test answers it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, HighWatermarkWait]] = []
        self.answers: asyncio.Queue[HighWatermarkReached | Exception] = asyncio.Queue()

    async def ask(self, topic: str, partition: int, request: HighWatermarkWait) -> Any:
        self.calls.append((topic, partition, request))
        answer = await self.answers.get()
        if isinstance(answer, Exception):
            raise answer
        return answer


def run(scenario: Callable[[FakeReplicas, HighWatermarkWaits], Awaitable[None]]) -> None:
    async def main() -> None:
        replicas = FakeReplicas()
        await scenario(replicas, HighWatermarkWaits(replicas.ask))

    asyncio.run(main())


async def settle() -> None:
    """Let every ready task run until each blocks again."""
    for _ in range(5):
        await asyncio.sleep(0)


def test_the_waits_of_a_partition_share_one_call_for_the_highest_offset() -> None:
    async def scenario(replicas: FakeReplicas, waits: HighWatermarkWaits) -> None:
        waiting = [
            asyncio.ensure_future(waits.wait("t", 0, offset, 30_000)) for offset in (5, 9, 7)
        ]
        await settle()
        assert [(c[0], c[1], c[2].required_offset) for c in replicas.calls] == [("t", 0, 9)]
        await replicas.answers.put(HighWatermarkReached(Errors.NONE, 9, Errors.NONE))
        assert await asyncio.gather(*waiting) == [Errors.NONE] * 3
        assert len(replicas.calls) == 1 and len(waits) == 0

    run(scenario)


def test_waiters_that_join_during_a_call_wait_for_the_next_round_unless_already_passed() -> None:
    async def scenario(replicas: FakeReplicas, waits: HighWatermarkWaits) -> None:
        first = asyncio.ensure_future(waits.wait("t", 0, 5, 30_000))
        await settle()
        passed = asyncio.ensure_future(waits.wait("t", 0, 6, 30_000))
        later = asyncio.ensure_future(waits.wait("t", 0, 12, 30_000))
        await settle()
        await replicas.answers.put(HighWatermarkReached(Errors.NONE, 8, Errors.NONE))
        assert await first == Errors.NONE and await passed == Errors.NONE
        await settle()
        assert not later.done()
        assert [c[2].required_offset for c in replicas.calls] == [5, 12]
        await replicas.answers.put(HighWatermarkReached(Errors.NONE, 12, Errors.NONE))
        assert await later == Errors.NONE

    run(scenario)


def test_partitions_wait_independently() -> None:
    async def scenario(replicas: FakeReplicas, waits: HighWatermarkWaits) -> None:
        zero = asyncio.ensure_future(waits.wait("t", 0, 3, 30_000))
        one = asyncio.ensure_future(waits.wait("t", 1, 4, 30_000))
        await settle()
        assert sorted((c[1], c[2].required_offset) for c in replicas.calls) == [(0, 3), (1, 4)]
        await replicas.answers.put(HighWatermarkReached(Errors.NONE, 4, Errors.NONE))
        await replicas.answers.put(HighWatermarkReached(Errors.NONE, 4, Errors.NONE))
        assert await asyncio.gather(zero, one) == [Errors.NONE, Errors.NONE]

    run(scenario)


def test_a_timed_out_round_answers_the_expired_and_keeps_the_rest_waiting() -> None:
    async def scenario(replicas: FakeReplicas, waits: HighWatermarkWaits) -> None:
        short = asyncio.ensure_future(waits.wait("t", 0, 10, 0))
        below = asyncio.ensure_future(waits.wait("t", 0, 3, 0))
        patient = asyncio.ensure_future(waits.wait("t", 0, 11, 30_000))
        await settle()
        assert replicas.calls[0][2] == HighWatermarkWait(11, 0)
        await replicas.answers.put(HighWatermarkReached(Errors.REQUEST_TIMED_OUT, 4, Errors.NONE))
        assert await short == Errors.REQUEST_TIMED_OUT
        assert await below == Errors.NONE
        await settle()
        assert not patient.done()
        assert replicas.calls[1][2].required_offset == 11
        assert 29_000 < replicas.calls[1][2].timeout_ms <= 30_000
        await replicas.answers.put(HighWatermarkReached(Errors.NONE, 11, Errors.NONE))
        assert await patient == Errors.NONE

    run(scenario)


def test_too_few_in_sync_replicas_fails_the_waiters_the_high_watermark_passed() -> None:
    async def scenario(replicas: FakeReplicas, waits: HighWatermarkWaits) -> None:
        waiting = [asyncio.ensure_future(waits.wait("t", 0, offset, 30_000)) for offset in (2, 4)]
        await settle()
        short = Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        await replicas.answers.put(HighWatermarkReached(short, 4, short))
        assert await asyncio.gather(*waiting) == [short, short]

    run(scenario)


def test_a_lost_leadership_fails_every_waiter() -> None:
    async def scenario(replicas: FakeReplicas, waits: HighWatermarkWaits) -> None:
        waiting = [asyncio.ensure_future(waits.wait("t", 0, offset, 30_000)) for offset in (2, 9)]
        await settle()
        lost = Errors.NOT_LEADER_OR_FOLLOWER
        await replicas.answers.put(HighWatermarkReached(lost, 1, lost))
        assert await asyncio.gather(*waiting) == [lost, lost]
        assert len(waits) == 0

    run(scenario)


def test_a_failed_call_fails_its_waiters_and_the_next_wait_calls_again() -> None:
    async def scenario(replicas: FakeReplicas, waits: HighWatermarkWaits) -> None:
        doomed = asyncio.ensure_future(waits.wait("t", 0, 2, 30_000))
        await settle()
        await replicas.answers.put(RuntimeError("replica gone"))
        with pytest.raises(RuntimeError, match="replica gone"):
            await doomed
        fresh = asyncio.ensure_future(waits.wait("t", 0, 3, 30_000))
        await settle()
        assert len(replicas.calls) == 2
        await replicas.answers.put(HighWatermarkReached(Errors.NONE, 3, Errors.NONE))
        assert await fresh == Errors.NONE

    run(scenario)


def test_a_cancelled_waiter_does_not_hold_up_the_others() -> None:
    async def scenario(replicas: FakeReplicas, waits: HighWatermarkWaits) -> None:
        gone = asyncio.ensure_future(waits.wait("t", 0, 50, 30_000))
        kept = asyncio.ensure_future(waits.wait("t", 0, 5, 30_000))
        await settle()
        gone.cancel()
        await replicas.answers.put(HighWatermarkReached(Errors.NONE, 5, Errors.NONE))
        assert await kept == Errors.NONE
        await settle()
        assert len(replicas.calls) == 1 and len(waits) == 0

    run(scenario)
