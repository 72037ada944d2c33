"""Kafka clients' produce appends, queued per partition in the order they came and sent to the
replica together.

A Kafka producer sends a small request every few milliseconds and keeps many in flight. Each
append is a Ray call to the partition's leader replica, and a partition's appends must reach the
log in the order the client sent them, so they cannot be sent concurrently (a threaded actor runs
calls in any order). Instead each partition has one call in flight at a time, and the appends that
queue up behind it go in the next call as one payload: the log appends a payload's batches in
order, so each request's base offset follows from the record offsets taken by those before it.

Only plain batches are put together: a batch with a producer id has its sequence checked, and a
duplicate or out-of-order one must fail alone, so such an append goes in a call of its own. If a
combined append fails, each of its requests is appended again on its own, so each gets its own
answer.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from rafka.protocol.errors import Errors
from rafka.protocol.messages.produce import ProduceAppended, ProduceRequest, ProduceResponse
from rafka.protocol.records.batch import BatchHeader

Ask = Callable[[str, int, ProduceRequest], Awaitable[ProduceAppended]]
"""Asks the partition's leader replica to append a payload."""

# The most bytes one combined append carries; a request larger than this still goes alone.
MAX_COMBINED_BYTES = 8 << 20


@dataclass
class _Append:
    request: ProduceRequest
    offsets: int  # record offsets its batches take
    plain: bool  # no batch has a producer id
    answer: asyncio.Future[ProduceAppended]


class ProduceAppends:
    """The appends a broker's Kafka listener has taken and not yet answered, per partition."""

    def __init__(self, ask: Ask) -> None:
        self._ask = ask
        self._queues: dict[tuple[str, int], deque[_Append]] = {}
        self._queued = 0  # kept, not summed: every produce request reads it
        self._runs: set[asyncio.Task[None]] = set()

    def append(
        self, topic: str, partition: int, request: ProduceRequest, headers: Sequence[BatchHeader]
    ) -> asyncio.Future[ProduceAppended]:
        """Queue ``request`` (whose batches have ``headers``) behind the partition's earlier
        appends; the future gets the replica's answer for it alone."""
        loop = asyncio.get_running_loop()
        append = _Append(
            request,
            sum(h.last_offset_delta + 1 for h in headers),
            all(h.producer_id < 0 for h in headers),
            loop.create_future(),
        )
        self._queued += 1
        key = (topic, partition)
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(append)
        else:
            self._queues[key] = deque([append])
            run = loop.create_task(self._run(key))
            self._runs.add(run)
            run.add_done_callback(self._runs.discard)
        return append.answer

    def __len__(self) -> int:
        return self._queued

    async def _run(self, key: tuple[str, int]) -> None:
        """Send the partition's queued appends, as many together as may be, until none is left."""
        queue = self._queues[key]
        try:
            while queue:
                group = _next_group(queue)
                self._queued -= len(group)
                try:
                    await self._send(key, group)
                except asyncio.CancelledError:
                    for append in group:
                        append.answer.cancel()
                    raise
                except Exception as exc:  # the call failed: so do its requests
                    for append in group:
                        if not append.answer.done():
                            append.answer.set_exception(exc)
        finally:
            self._queued -= len(queue)
            for append in queue:
                append.answer.cancel()
            del self._queues[key]

    async def _send(self, key: tuple[str, int], group: list[_Append]) -> None:
        if len(group) == 1:
            _settle(group[0], await self._ask(*key, group[0].request))
            return
        first = group[0].request
        combined = ProduceRequest(
            b"".join(a.request.records for a in group), first.acks, first.timeout_ms, first.origin
        )
        answer = await self._ask(*key, combined)
        if answer.response.error is not Errors.NONE:
            for append in group:
                _settle(append, await self._ask(*key, append.request))
            return
        base = answer.response.base_offset
        for append in group:
            response = ProduceResponse(
                Errors.NONE,
                base,
                answer.response.log_append_time,
                answer.response.log_start_offset,
            )
            base += append.offsets
            required = None if answer.required_offset is None else base
            _settle(append, ProduceAppended(response, required))


def _next_group(queue: deque[_Append]) -> list[_Append]:
    """Take the appends at the head of the queue that may go in one call: the first, and while it
    is plain, the plain ones after it with the same acks, up to MAX_COMBINED_BYTES."""
    group = [queue.popleft()]
    head = group[0]
    size = len(head.request.records)
    while head.plain and queue:
        after = queue[0]
        size += len(after.request.records)
        if not after.plain or after.request.acks != head.request.acks or size > MAX_COMBINED_BYTES:
            break
        group.append(queue.popleft())
    return group


def _settle(append: _Append, answer: ProduceAppended) -> None:
    if not append.answer.done():  # not if its connection closed meanwhile
        append.answer.set_result(answer)
