"""The controller's mailbox: one queue of typed events handled one at a time (Kafka's
ControllerEventThread).

Remote calls and ZooKeeper watch callbacks only ``put`` events; a single task takes them in arrival
order and runs the processor's synchronous ``process``, so controller state is touched by one flow
of control and needs no locks. Kazoo calls watches on its own thread, hence ``put_threadsafe``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

E = TypeVar("E")


@dataclass
class MailboxStats:
    """Queue statistics, as Kafka's EventQueueSize and EventQueueTimeMs metrics."""

    processed: int = 0
    failed: int = 0
    max_queue_time_ms: float = 0.0
    queue_size: int = 0
    by_type: dict[str, int] = field(default_factory=dict)


class Mailbox(Generic[E]):
    """An asyncio queue drained by one task that calls ``process(event)`` for each event."""

    def __init__(self, process: Callable[[E], None], name: str) -> None:
        self._process = process
        self._name = name
        self._queue: asyncio.Queue[tuple[float, E]] = asyncio.Queue()
        self._loop = asyncio.get_event_loop()
        self.stats = MailboxStats()
        self._task = self._loop.create_task(self._run())

    def put(self, event: E) -> None:
        """Enqueue from the actor's own event loop."""
        self._queue.put_nowait((time.monotonic(), event))

    def put_threadsafe(self, event: E) -> None:
        """Enqueue from another thread (kazoo's watch and listener callbacks)."""
        self._loop.call_soon_threadsafe(self.put, event)

    async def _run(self) -> None:
        while True:
            enqueued, event = await self._queue.get()
            kind = type(event).__name__
            waited_ms = (time.monotonic() - enqueued) * 1000
            self.stats.max_queue_time_ms = max(self.stats.max_queue_time_ms, waited_ms)
            try:
                self._process(event)
            except Exception:
                # One bad event must not stop the controller: log it and keep draining, as Kafka
                # does.
                self.stats.failed += 1
                logger.exception("%s: processing %s failed", self._name, kind)
            self.stats.processed += 1
            self.stats.by_type[kind] = self.stats.by_type.get(kind, 0) + 1
            self.stats.queue_size = self._queue.qsize()
            # Let remote calls that enqueue events run between two events.
            await asyncio.sleep(0)

    def close(self) -> None:
        """Stop draining."""
        self._task.cancel()
