"""The clients' transport over Ray: endpoints are named actors in the cluster's namespace.

A client needs no broker address list. If Ray is not initialised in this process, it connects to the
running Ray cluster (``RAY_ADDRESS`` or ``"auto"``, as ``rafka.clients.ray_address`` resolves it)
or fails within ``connect_timeout_ms`` naming the address it tried. Brokers are the named actors
``broker-<id>`` in the cluster's namespace (default ``rafka``), and every partition replica is
``replica-<t>-<p>@<id>``. A call is a Ray ObjectRef, so waiting on many fetches at once is one
``ray.wait``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import ray

from rafka.actors import names
from rafka.clients.config import CONNECT_TIMEOUT_MS
from rafka.clients.ray_address import listening, ray_address, split_address
from rafka.clients.transport import (
    Call,
    Endpoint,
    NoAnswerError,
    RemoteError,
    Transport,
    UnreachableError,
)
from rafka.protocol.errors import Errors, KafkaTimeoutError

RAY_ACTOR_ERRORS = (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError, ValueError)
"""What a Ray call to an actor raises when the actor is missing, dead or silent."""


START_HINT = (
    "start one with `rafka up --data-dir DIR`, or name a running one with ray_address=HOST:PORT "
    "(or RAY_ADDRESS)"
)
CONNECT_POLL_S = 0.2
TOKEN_HINT = (
    "set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH=DATA_DIR/ray-auth-token (the file `rafka up "
    "--secure` made) or RAY_AUTH_TOKEN=<token> before the process imports Ray, or pass "
    "ray_address=rafka.cluster.launcher.cluster_address(DATA_DIR), which uses the file; "
    "see docs/security.md"
)


def _refused_for_token(exc: BaseException) -> bool:
    """Whether Ray's failure to connect came from the cluster refusing this process's token (or
    its lack of one). Ray's ConnectionError is caused by a RuntimeError that carries the
    AuthenticationError of its last attempt only as text, a formatted traceback."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ray.exceptions.AuthenticationError) or (
            ray.exceptions.AuthenticationError.__name__ in str(seen)
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def ensure_ray(
    address: str | None = None,
    namespace: str = names.DEFAULT_NAMESPACE,
    connect_timeout_ms: int = CONNECT_TIMEOUT_MS,
) -> None:
    """Connect this process to the running Ray cluster unless it already is connected.

    Waits up to ``connect_timeout_ms`` for the cluster's address to answer, then raises
    KafkaTimeoutError naming the address and what to run; no Ray instance found at all, or a dead
    one that Ray's "auto" found recorded, fails at once.
    """
    if ray.is_initialized():
        return
    given = address or os.environ.get("RAY_ADDRESS") or "auto"
    deadline = time.monotonic() + connect_timeout_ms / 1000
    try:
        target = ray_address(given)
    except (ConnectionError, ValueError) as exc:
        raise KafkaTimeoutError(
            f"no rafka cluster found at {given!r} ({exc}); {START_HINT}"
        ) from exc
    parsed = split_address(target)
    while parsed is not None and not listening(*parsed):
        # An address Ray found on its own is a record of a head that is gone: no use waiting.
        if given == "auto" or time.monotonic() >= deadline:
            raise KafkaTimeoutError(
                f"cannot reach a rafka cluster at {target}: nothing answered within "
                f"{connect_timeout_ms / 1000:g} s; {START_HINT}"
            )
        time.sleep(CONNECT_POLL_S)
    try:
        ray.init(
            address=target, namespace=namespace, log_to_driver=False, logging_level=logging.ERROR
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        if _refused_for_token(exc):
            raise Errors.SASL_AUTHENTICATION_FAILED.exception(
                f"the Ray cluster at {target} requires a Ray authentication token and refused "
                f"this process's (RAY_AUTH_MODE is {os.environ.get('RAY_AUTH_MODE', 'unset')}): "
                f"{TOKEN_HINT}"
            ) from exc
        raise KafkaTimeoutError(
            f"cannot join the Ray cluster at {target} ({exc}); {START_HINT}"
        ) from exc


class RayTransport(Transport):
    """Requests as Ray actor method calls; endpoints are cached actor handles."""

    def __init__(
        self,
        namespace: str = names.DEFAULT_NAMESPACE,
        ray_address: str | None = None,
        connect_timeout_ms: int = CONNECT_TIMEOUT_MS,
    ) -> None:
        ensure_ray(ray_address, namespace, connect_timeout_ms)
        self.namespace = namespace
        self._lock = threading.Lock()
        self._handles: dict[str, Any] = {}

    def broker_ids(self) -> list[int]:
        """Ids of the brokers that exist as actors in the namespace."""
        found = []
        for entry in ray.util.list_named_actors(all_namespaces=True):
            if entry["namespace"] == self.namespace:
                broker_id = names.broker_id_of(entry["name"])
                if broker_id is not None:
                    found.append(broker_id)
        return sorted(found)

    def endpoint(self, name: str) -> Endpoint:
        """A named actor's handle in the cluster's namespace (cached)."""
        with self._lock:
            handle = self._handles.get(name)
        if handle is None:
            try:
                handle = ray.get_actor(name, namespace=self.namespace)
            except ValueError as exc:
                raise UnreachableError(
                    f"no actor {name!r} in namespace {self.namespace!r}"
                ) from exc
            with self._lock:
                self._handles[name] = handle
        return handle

    def forget(self, name: str) -> None:
        """Drop a cached handle."""
        with self._lock:
            self._handles.pop(name, None)

    def request(self, endpoint: Endpoint, method: str, *args: Any, timeout_s: float) -> Any:
        """One blocking request; a dead actor's cached handle is dropped, so that the next lookup
        of its name finds the actor that replaced it (a restarted broker's, say)."""
        try:
            return super().request(endpoint, method, *args, timeout_s=timeout_s)
        except UnreachableError:
            with self._lock:
                for name in [n for n, handle in self._handles.items() if handle is endpoint]:
                    del self._handles[name]
            raise

    def send(self, endpoint: Endpoint, method: str, *args: Any) -> Call:
        """``handle.method.remote(*args)``: the ObjectRef is the call."""
        return getattr(endpoint, method).remote(*args)

    def ready(self, calls: Sequence[Call], num_returns: int, timeout_s: float) -> list[Call]:
        """``ray.wait`` over the calls."""
        if not calls:
            return []
        done, _ = ray.wait(list(calls), num_returns=min(num_returns, len(calls)), timeout=timeout_s)
        return list(done)

    def result(self, call: Call, timeout_s: float | None) -> Any:
        """``ray.get``: a dead actor raises UnreachableError, a silent one NoAnswerError; an
        exception the actor raised comes through as Ray raises it (an instance of the actor's
        exception class)."""
        try:
            return ray.get(call, timeout=timeout_s)
        except ray.exceptions.RayActorError as exc:
            raise UnreachableError(f"the actor is gone: {type(exc).__name__}") from exc
        except ray.exceptions.GetTimeoutError as exc:
            raise NoAnswerError(f"no answer within {timeout_s}s") from exc

    def on_done(self, call: Call, callback: Callable[[Future[Any]], None]) -> None:
        """The ObjectRef's future calls back on Ray's callback thread."""
        call.future().add_done_callback(callback)

    def answer(self, done: Future[Any]) -> Any:
        """A completed ObjectRef future's value; a lost actor is UnreachableError, any other failure
        RemoteError."""
        try:
            return done.result()
        except ray.exceptions.RayActorError as exc:
            raise UnreachableError(f"the actor is gone: {type(exc).__name__}") from exc
        except ray.exceptions.RayError as exc:
            raise RemoteError(str(exc)) from exc
