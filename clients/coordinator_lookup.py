"""Where a consumer group's coordinator is, and requests to it that survive its moving.

A group's coordinator is the group coordinator actor on the broker that leads the group's
``__consumer_offsets`` partition. ``CoordinatorLookup`` asks one live broker after another
(FindCoordinator), keeps the answer until a request to it fails or answers a coordinator error
(NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS), and then looks again.
A FindCoordinator request outlives one call, so a consumer polling with a short timeout returns on
time and its next poll goes on waiting for the same answer.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from rafka.actors import names
from rafka.clients.cluster import COORDINATOR_MOVING, ClusterConnection
from rafka.clients.transport import Call, Endpoint, TransportError, UnreachableError
from rafka.protocol.errors import Errors, KafkaTimeoutError

logger = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1


def pause(deadline: float, backoff_s: float = RETRY_BACKOFF_S) -> bool:
    """Back off ``backoff_s`` before a retry, never past ``deadline``; False if the deadline has
    passed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return False
    time.sleep(min(backoff_s, remaining))
    return True


class CoordinatorLookup:
    """The known coordinator of one group, found again whenever it moves or dies."""

    def __init__(self, cluster: ClusterConnection, group_id: str) -> None:
        self.cluster = cluster
        self.transport = cluster.transport
        self.group_id = group_id
        self._endpoint: Endpoint | None = None
        self._coordinator_id = -1
        self._lookup: Call | None = None
        self._lookup_broker = -1
        self._lock = threading.RLock()

    @property
    def endpoint(self) -> Endpoint | None:
        """The coordinator last found, or None while none is known."""
        return self._endpoint

    def find(self, deadline: float) -> Endpoint | None:
        """The coordinator's endpoint, or None if it is not known by ``deadline``. The
        FindCoordinator request stays in flight past the deadline, so the next call goes on waiting
        for the same one."""
        while True:
            with self._lock:
                if self._endpoint is not None:
                    return self._endpoint
                if self._lookup is None:
                    self._lookup = self._send_lookup()
                lookup = self._lookup
            remaining = max(0.0, deadline - time.monotonic())
            if lookup is not None:
                if not self.transport.ready([lookup], 1, remaining):
                    return None
                self._answered(lookup)
                if self._endpoint is not None:
                    continue
            if not pause(deadline):
                return None

    def _send_lookup(self) -> Call | None:
        """FindCoordinator to the next live broker (each attempt asks another one)."""
        ids = self.cluster.broker_ids()
        if not ids:
            return None
        later = [b for b in ids if b > self._lookup_broker]
        self._lookup_broker = later[0] if later else ids[0]
        try:
            return self.transport.send(
                self.cluster.broker(self._lookup_broker), "find_coordinator", self.group_id
            )
        except UnreachableError:
            self.cluster.forget(names.broker_actor_name(self._lookup_broker))
            return None

    def _answered(self, lookup: Call) -> None:
        with self._lock:
            if self._lookup is lookup:
                self._lookup = None
            try:
                response = self.transport.result(lookup, 0)
            except TransportError:
                self.cluster.forget(names.broker_actor_name(self._lookup_broker))
                return
            if response.error is Errors.NONE:
                try:
                    self._endpoint = self.transport.coordinator(response.coordinator_id)
                    self._coordinator_id = response.coordinator_id
                except UnreachableError:
                    pass  # its broker is starting or dying: the next lookup may name another one
                return
            if response.error not in COORDINATOR_MOVING:
                raise response.error.exception(
                    f"group {self.group_id!r}: {response.error_message or response.error.message}"
                )

    def mark_dead(self) -> None:
        """Forget the coordinator (it failed or moved); the next ``find`` looks it up again."""
        with self._lock:
            if self._coordinator_id >= 0:
                self.cluster.forget(names.coordinator_actor_name(self._coordinator_id))
            self._endpoint, self._coordinator_id = None, -1

    def request(self, method: str, request: Any, deadline: float) -> Any:
        """One request to the coordinator, rediscovering it on coordinator errors until ``deadline``
        (KafkaTimeoutError then)."""
        while True:
            coordinator = self.find(deadline)
            if coordinator is not None:
                try:
                    call = self.transport.send(coordinator, method, request)
                    response = self.transport.result(call, max(0.0, deadline - time.monotonic()))
                except TransportError as exc:
                    logger.info(
                        "group %s: coordinator %d did not answer %s (%s); looking it up again",
                        self.group_id,
                        self._coordinator_id,
                        method,
                        exc,
                    )
                    self.mark_dead()
                else:
                    if response.error not in COORDINATOR_MOVING:
                        return response
                    self.mark_dead()
            if not pause(deadline):
                raise KafkaTimeoutError(
                    f"group {self.group_id!r}: {method} got no answer from a coordinator in time"
                )
