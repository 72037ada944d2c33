"""A transport to Python objects in this process, standing in for actors (unit tests, in-process
clusters).

Each endpoint is an object registered under an actor name; ``send`` calls its method at once. A
method answers with a value, or with a ``concurrent.futures.Future`` when the answer must wait (as a
group coordinator parks a JoinGroup until the rebalance completes), so a call may stay in flight
across client calls exactly as a Ray call does. A name in ``dead`` is an actor that died.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from rafka.actors import names
from rafka.clients.transport import (
    Call,
    Endpoint,
    NoAnswerError,
    RemoteError,
    Transport,
    TransportError,
    UnreachableError,
)


class LocalTransport(Transport):
    """Named Python objects as actors; calls are futures completed by the objects' answers."""

    def __init__(self, namespace: str = names.DEFAULT_NAMESPACE) -> None:
        self.namespace = namespace
        self.actors: dict[str, Any] = {}
        self.dead: set[str] = set()
        self.sent: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def broker_ids(self) -> list[int]:
        """Brokers among the live named objects."""
        found = (names.broker_id_of(name) for name in list(self.actors) if name not in self.dead)
        return sorted(b for b in found if b is not None)

    def endpoint(self, name: str) -> Endpoint:
        """The name itself, once checked to be a live object."""
        if name not in self.actors or name in self.dead:
            raise UnreachableError(f"no actor {name!r} in namespace {self.namespace!r}")
        return name

    def forget(self, name: str) -> None:
        """Nothing is cached."""

    def send(self, endpoint: Endpoint, method: str, *args: Any) -> Call:
        """Call the object's method now; a dead object's call fails with UnreachableError."""
        call: Future[Any] = Future()
        with self._lock:
            self.sent.append((endpoint, method))
        if endpoint in self.dead:
            call.set_exception(UnreachableError(f"actor {endpoint!r} died"))
            return call
        try:
            answer = getattr(self.actors[endpoint], method)(*args)
        except Exception as exc:  # the actor raised: the caller sees it when it reads the answer
            call.set_exception(exc)
            return call
        if isinstance(answer, Future):
            return answer
        call.set_result(answer)
        return call

    def ready(self, calls: Sequence[Call], num_returns: int, timeout_s: float) -> list[Call]:
        """The completed calls, waiting up to ``timeout_s`` for the first ``num_returns``."""
        done = [c for c in calls if c.done()]
        pending = [c for c in calls if not c.done()]
        if len(done) < num_returns and pending and timeout_s > 0:
            wait(pending, timeout=timeout_s, return_when=FIRST_COMPLETED)
            done = [c for c in calls if c.done()]
        return done

    def result(self, call: Call, timeout_s: float | None) -> Any:
        """The answer, or NoAnswerError after ``timeout_s``."""
        try:
            return call.result(timeout=timeout_s)
        except FutureTimeout as exc:
            raise NoAnswerError(f"no answer within {timeout_s}s") from exc

    def on_done(self, call: Call, callback: Callable[[Future[Any]], None]) -> None:
        """The callback runs when the future completes (at once if it has)."""
        call.add_done_callback(callback)

    def answer(self, done: Future[Any]) -> Any:
        """The answer; an exception the object raised becomes RemoteError."""
        try:
            return done.result()
        except TransportError:
            raise
        except Exception as exc:
            raise RemoteError(str(exc)) from exc
