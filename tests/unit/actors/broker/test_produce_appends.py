"""Kafka clients' appends queued per partition: one replica call at a time, plain batches that
queued up sent together in order, each request answered with its own base offset."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from rafka.actors.broker import produce_appends
from rafka.actors.broker.produce_appends import ProduceAppends
from rafka.protocol.errors import Errors
from rafka.protocol.messages.produce import ProduceAppended, ProduceRequest, ProduceResponse
from rafka.protocol.records.batch import BatchHeader, read_header
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.kafka_records import native_to_kafka

pytestmark = pytest.mark.timeout(30)

PLAIN = native_to_kafka(build_batch([(b"k", b"v", 1), (None, b"w", 2)]))
PLAIN_HEADER = read_header(PLAIN)
IDEMPOTENT_HEADER = dataclasses.replace(PLAIN_HEADER, producer_id=7, base_sequence=0)


class FakeReplica:
    """Holds each append until the test answers it."""

    def __init__(self) -> None:
        self.calls: list[ProduceRequest] = []
        self.answers: asyncio.Queue[ProduceAppended | Exception] = asyncio.Queue()

    async def ask(self, _topic: str, _partition: int, request: ProduceRequest) -> Any:
        self.calls.append(request)
        answer = await self.answers.get()
        if isinstance(answer, Exception):
            raise answer
        return answer


def appended(base: int, required: int | None = None) -> ProduceAppended:
    return ProduceAppended(ProduceResponse(Errors.NONE, base, -1, 0), required)


def run(scenario: Callable[[FakeReplica, ProduceAppends], Awaitable[None]]) -> None:
    async def main() -> None:
        replica = FakeReplica()
        await scenario(replica, ProduceAppends(replica.ask))

    asyncio.run(main())


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def queue(
    appends: ProduceAppends,
    records: bytes = PLAIN,
    acks: int = 1,
    header: BatchHeader = PLAIN_HEADER,
) -> asyncio.Future[ProduceAppended]:
    return appends.append("t", 0, ProduceRequest(records, acks, 5000), [header])


def test_appends_that_queue_behind_a_call_go_together_with_their_own_base_offsets() -> None:
    async def scenario(replica: FakeReplica, appends: ProduceAppends) -> None:
        first = queue(appends, acks=-1)
        await settle()
        later = [queue(appends, acks=-1) for _ in range(3)]
        await replica.answers.put(appended(10, 12))
        assert (await first).response.base_offset == 10
        await settle()
        assert [c.records for c in replica.calls] == [PLAIN, PLAIN * 3]
        await replica.answers.put(appended(12, 18))
        answers = await asyncio.gather(*later)
        assert [(a.response.base_offset, a.required_offset) for a in answers] == [
            (12, 14),
            (14, 16),
            (16, 18),
        ]
        assert len(appends) == 0

    run(scenario)


def test_a_batch_with_a_producer_id_and_a_change_of_acks_each_start_a_call() -> None:
    async def scenario(replica: FakeReplica, appends: ProduceAppends) -> None:
        futures = [
            queue(appends),
            queue(appends),
            queue(appends, header=IDEMPOTENT_HEADER),
            queue(appends),
            queue(appends, acks=-1),
        ]
        for base in (0, 4, 6, 8):
            await settle()
            await replica.answers.put(appended(base))
        await asyncio.gather(*futures)
        assert [(len(c.records) // len(PLAIN), c.acks) for c in replica.calls] == [
            (2, 1),
            (1, 1),  # the idempotent batch alone: its sequence must fail or pass alone
            (1, 1),
            (1, -1),
        ]
        assert [f.result().response.base_offset for f in futures] == [0, 2, 4, 6, 8]

    run(scenario)


def test_a_failed_combined_append_is_retried_request_by_request() -> None:
    async def scenario(replica: FakeReplica, appends: ProduceAppends) -> None:
        futures = [queue(appends) for _ in range(2)]
        await settle()
        too_large = ProduceAppended(ProduceResponse(Errors.MESSAGE_TOO_LARGE))
        await replica.answers.put(too_large)
        await settle()
        await replica.answers.put(appended(0))
        await settle()
        await replica.answers.put(too_large)
        first, second = await asyncio.gather(*futures)
        assert [len(c.records) // len(PLAIN) for c in replica.calls] == [2, 1, 1]
        assert first.response.error is Errors.NONE and first.response.base_offset == 0
        assert second.response.error is Errors.MESSAGE_TOO_LARGE

    run(scenario)


def test_a_call_that_raises_fails_its_requests_and_the_queue_goes_on() -> None:
    async def scenario(replica: FakeReplica, appends: ProduceAppends) -> None:
        doomed = queue(appends)
        await settle()
        kept = queue(appends)
        await replica.answers.put(RuntimeError("replica gone"))
        with pytest.raises(RuntimeError, match="replica gone"):
            await doomed
        await settle()
        await replica.answers.put(appended(3))
        assert (await kept).response.base_offset == 3

    run(scenario)


def test_a_combined_call_stops_at_max_combined_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(produce_appends, "MAX_COMBINED_BYTES", 2 * len(PLAIN))

    async def scenario(replica: FakeReplica, appends: ProduceAppends) -> None:
        futures = [queue(appends) for _ in range(3)]
        await settle()
        await replica.answers.put(appended(0))
        await settle()
        await replica.answers.put(appended(4))
        await asyncio.gather(*futures)
        assert [len(c.records) // len(PLAIN) for c in replica.calls] == [2, 1]

    run(scenario)
