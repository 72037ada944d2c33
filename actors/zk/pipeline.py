"""Many ZooKeeper requests in flight at once over one kazoo session.

A ZooKeeper session answers its requests in the order they were sent, and kazoo sends a request as
soon as it is made: issuing a batch with kazoo's ``*_async`` calls and then waiting for every
answer costs about one round trip for the whole batch instead of one per request. Kafka's
controller does the same (its ZooKeeper client keeps up to ``zookeeper.max.in.flight.requests``
requests outstanding); rafka's uses it to read every topic and partition state when it becomes
controller, and to write the partition states an election or an ISR change decides.

Requests still apply one at a time, in the order given, with their own conditions: only the waiting
is shared. ``window`` bounds how many are outstanding at once (ZooKeeper's server throttles a
connection beyond ``globalOutstandingLimit``, 1,000 by default).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kazoo.exceptions import NoNodeError

WINDOW = 500
"""Requests outstanding at once on the session."""


class AsyncResult(Protocol):
    """What kazoo's ``*_async`` calls return (``kazoo.interfaces.IAsyncResult``)."""

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        """The answer, or raise the request's error."""


class AsyncReader(Protocol):
    """The part of ``KazooClient`` that ``get_many`` uses."""

    def get_async(self, path: str, watch: Callable[..., Any] | None = None) -> AsyncResult:
        """Start reading a znode's data and stat."""


def pipelined(calls: Sequence[Callable[[], AsyncResult]], window: int = WINDOW) -> list[Any]:
    """Start the calls ``window`` at a time and wait for every answer; per call, in order, its
    result or the exception it raised."""
    results: list[Any] = []
    for start in range(0, len(calls), window):
        started = [call() for call in calls[start : start + window]]
        for outstanding in started:
            try:
                results.append(outstanding.get())
            except Exception as exc:
                results.append(exc)
    return results


def get_many(zk: AsyncReader, paths: Sequence[str], window: int = WINDOW) -> dict[str, Any]:
    """Read every path in one pipeline: path -> (data, stat), or None for a znode that does not
    exist. Any other failure (the session lost, say) is raised, as a single read would."""
    answers = pipelined([_reader(zk, path) for path in paths], window)
    read: dict[str, Any] = {}
    for path, answer in zip(paths, answers, strict=True):
        if isinstance(answer, NoNodeError):
            read[path] = None
        elif isinstance(answer, Exception):
            raise answer
        else:
            read[path] = answer
    return read


def _reader(zk: AsyncReader, path: str) -> Callable[[], AsyncResult]:
    return lambda: zk.get_async(path)
