"""The one boundary between the clients and a rafka cluster: send a request to an actor, get a call.

Every broker, partition replica, group coordinator and controller is an endpoint named as in
``rafka.actors.names``. A client sends a request (one of the frozen dataclasses of
``rafka.protocol.messages``) to an endpoint's method and gets back a *call*, an opaque handle on the
answer still to come, which it may wait for with a deadline (``ready``), take (``result``) or hand a
callback (``on_done``). Nothing here blocks longer than the timeout it is given.

``RayTransport`` (``rafka.clients.ray_transport``) implements this over Ray actor handles;
``LocalTransport`` (``rafka.clients.local_transport``) over Python objects in this process, for unit
tests. Finding leaders, coordinators and the controller from metadata is ``ClusterConnection``'s
work, above any transport.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from rafka.actors import names

Endpoint = Any
"""A transport's handle on one actor (a Ray actor handle, or a local object's name)."""

Call = Any
"""A request in flight: what ``Transport.send`` returns, to pass to ``ready`` and ``result``."""


class TransportError(Exception):
    """A request got no answer: its actor is unreachable, did not answer in time, or failed."""


class UnreachableError(TransportError):
    """The actor does not exist, died, or its process was lost: look it up again."""


class NoAnswerError(TransportError):
    """The actor did not answer within the timeout (it may still be working on the request)."""


class RemoteError(TransportError):
    """The actor raised while handling the request: a bug there, not a state a retry fixes."""


class Transport(ABC):
    """Requests to the actors of one rafka cluster, each answered through a call with a deadline."""

    namespace: str

    @abstractmethod
    def broker_ids(self) -> list[int]:
        """Ids of the brokers that exist now, sorted."""

    @abstractmethod
    def endpoint(self, name: str) -> Endpoint:
        """The endpoint of the actor called ``name`` (cached); UnreachableError if there is none."""

    @abstractmethod
    def forget(self, name: str) -> None:
        """Drop a cached endpoint (its actor died or moved), so the next look-up is fresh."""

    @abstractmethod
    def send(self, endpoint: Endpoint, method: str, *args: Any) -> Call:
        """Start ``method(*args)`` on the endpoint's actor; the answer comes through the call."""

    @abstractmethod
    def ready(self, calls: Sequence[Call], num_returns: int, timeout_s: float) -> list[Call]:
        """The calls answered (or failed) once ``num_returns`` of them are, or ``timeout_s``
        passed."""

    @abstractmethod
    def result(self, call: Call, timeout_s: float | None) -> Any:
        """The call's answer, waited for up to ``timeout_s`` (NoAnswerError after that)."""

    @abstractmethod
    def on_done(self, call: Call, callback: Callable[[Future[Any]], None]) -> None:
        """Run ``callback(done)`` on another thread when the call completes; ``answer(done)`` reads
        it."""

    @abstractmethod
    def answer(self, done: Future[Any]) -> Any:
        """The answer in a future handed to an ``on_done`` callback (TransportError if it
        failed)."""

    # ------------------------------------------------------------------ endpoints by role

    def broker(self, broker_id: int) -> Endpoint:
        """A broker: metadata, topic configs, FindCoordinator."""
        return self.endpoint(names.broker_actor_name(broker_id))

    def replica(self, topic: str, partition: int, broker_id: int) -> Endpoint:
        """A partition's replica on a broker: produce, fetch, ListOffsets."""
        return self.endpoint(names.replica_actor_name(topic, partition, broker_id))

    def coordinator(self, broker_id: int) -> Endpoint:
        """A broker's group coordinator."""
        return self.endpoint(names.coordinator_actor_name(broker_id))

    def controller(self, broker_id: int) -> Endpoint:
        """The controller on a broker."""
        return self.endpoint(names.controller_actor_name(broker_id))

    def request(self, endpoint: Endpoint, method: str, *args: Any, timeout_s: float) -> Any:
        """Send and wait for the answer up to ``timeout_s``: one blocking request."""
        return self.result(self.send(endpoint, method, *args), timeout_s)


_installed: dict[str, Transport] = {}


def install(transport: Transport) -> None:
    """Make clients created for ``transport.namespace`` without a transport of their own use this
    one (how an in-process cluster, such as the unit tests' fake, reaches clients made deep inside
    code)."""
    _installed[transport.namespace] = transport


def uninstall(transport: Transport) -> None:
    """Undo ``install``."""
    if _installed.get(transport.namespace) is transport:
        del _installed[transport.namespace]


def installed(namespace: str) -> Transport | None:
    """The transport installed for ``namespace``, if any."""
    return _installed.get(namespace)
