"""One queue of control requests per broker, and when to send its head again: the policy half
of Kafka's ControllerChannelManager, with no Ray and no event loop.

Requests to one broker are delivered in order, one at a time: the head of the queue is sent until
the broker answers it (then the next one goes) or the broker leaves ``/brokers/ids`` (then the
channel is closed and whatever it still holds is dropped: a broker that comes back is briefed
afresh by the controller's startup steps). A failed send waits an exponential backoff before it is
tried again.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

from typing_extensions import assert_never

from rafka.protocol.messages.control import (
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: ``initial_s`` after the first failure, times ``multiplier`` after each
    further one, never more than ``max_s``."""

    initial_s: float = 0.1
    max_s: float = 5.0
    multiplier: float = 2.0

    def delay_s(self, failures: int) -> float:
        """How long to wait after ``failures`` consecutive failures (0 before any)."""
        if failures <= 0:
            return 0.0
        return float(min(self.max_s, self.initial_s * self.multiplier ** (failures - 1)))


class BrokerChannel(Generic[T]):
    """The control requests waiting for one broker, oldest first."""

    def __init__(self, broker_id: int, backoff: Backoff | None = None) -> None:
        self.broker_id = broker_id
        self.backoff = backoff or Backoff()
        self.failures = 0
        self.answered_total = 0
        self.failed_total = 0
        self.closed = False
        self._queue: deque[T] = deque()

    def __len__(self) -> int:
        return len(self._queue)

    def enqueue(self, item: T) -> bool:
        """Queue a request behind the others; False if the broker already left."""
        if self.closed:
            return False
        self._queue.append(item)
        return True

    def head(self) -> T | None:
        """The request to send now, or None if there is none (or the channel is closed)."""
        return self._queue[0] if self._queue else None

    def answered(self) -> T:
        """The broker answered the head: drop it, so the next request goes."""
        self.failures = 0
        self.answered_total += 1
        return self._queue.popleft()

    def failed(self) -> float:
        """Sending the head failed (no such actor, actor died, timeout): keep it; return the seconds
        to wait before sending it again."""
        self.failures += 1
        self.failed_total += 1
        return self.backoff.delay_s(self.failures)

    def close(self) -> list[T]:
        """The broker left ``/brokers/ids``: stop; return the requests that will never be sent."""
        self.closed = True
        dropped = list(self._queue)
        self._queue.clear()
        return dropped


def api_name(request: LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest) -> str:
    """The broker method (and Kafka API) that handles a control request."""
    match request:
        case LeaderAndIsrRequest():
            return "leader_and_isr"
        case UpdateMetadataRequest():
            return "update_metadata"
        case StopReplicaRequest():
            return "stop_replica"
        case _:
            assert_never(request)
