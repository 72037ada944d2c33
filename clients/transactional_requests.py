"""An idempotent or transactional producer's requests other than produce, each retried until a
deadline.

An idempotent producer gets its producer id from any broker (``init_producer_id``). A transactional
one talks to its transaction coordinator: the transaction coordinator actor of the broker that
FindCoordinator (``COORDINATOR_TYPE_TRANSACTION``) names for its transactional id. Coordinator
errors that a later attempt fixes (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS) are retried after a back-off, looking the
coordinator up again when it moved; offsets go to the group's coordinator through CoordinatorLookup.
"""

from __future__ import annotations

import time
from typing import Any

from rafka.actors import names
from rafka.clients.cluster import COORDINATOR_MOVING, ClusterConnection
from rafka.clients.coordinator_lookup import RETRY_BACKOFF_S, CoordinatorLookup, pause
from rafka.clients.transport import Call, Endpoint, TransportError, UnreachableError
from rafka.protocol.errors import Errors, KafkaTimeoutError
from rafka.protocol.messages.transactions import (
    COORDINATOR_TYPE_TRANSACTION,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

CONCURRENT_TRANSACTIONS_BACKOFF_S = 0.02
"""The retry pause while the previous transaction's markers are being written: they take a few
replication round trips, and the next transaction waits on them (Kafka's client uses 20 ms too)."""
HEDGE_AFTER_S = 1.0
"""How long a broker may keep an InitProducerId unanswered before another broker is asked too."""


class TransactionalRequests:
    """InitProducerId to brokers; the transaction coordinator's requests for one transactional id;
    TxnOffsetCommit to group coordinators."""

    def __init__(self, cluster: ClusterConnection, transactional_id: str | None) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self._coordinator: Endpoint | None = None
        self._coordinator_id = -1
        self._groups: dict[str, CoordinatorLookup] = {}

    def producer_id_from_broker(
        self, request: InitProducerIdRequest, deadline: float
    ) -> InitProducerIdResponse:
        """InitProducerId for an idempotent producer from the first broker that answers without a
        retriable error, by ``deadline`` (KafkaTimeoutError then).

        A broker that stays silent for HEDGE_AFTER_S (a paused process) is not waited for: the next
        one is asked too, and whichever answers first wins (a lost answer costs one unused id).
        """
        pending: dict[Call, int] = {}
        last = ["no broker was asked"]
        while True:
            for broker_id in self.cluster.broker_ids():
                if broker_id in pending.values():
                    continue
                try:
                    call = self.cluster.transport.send(
                        self.cluster.broker(broker_id), "init_producer_id", request
                    )
                except UnreachableError as exc:
                    self.cluster.forget(names.broker_actor_name(broker_id))
                    last[0] = f"broker {broker_id}: {exc}"
                    continue
                pending[call] = broker_id
                until = min(deadline, time.monotonic() + HEDGE_AFTER_S)
                found = self._first_answer(pending, until, last)
                if found is not None:
                    return found
            if pending:
                until = min(deadline, time.monotonic() + RETRY_BACKOFF_S)
                found = self._first_answer(pending, until, last)
                if found is not None:
                    return found
            else:
                pause(deadline)
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(f"no producer id within max_block_ms (last: {last[0]})")

    def _first_answer(
        self, pending: dict[Call, int], until: float, last: list[str]
    ) -> InitProducerIdResponse | None:
        """The first answer of ``pending`` brokers that is not a retriable error, waited for until
        ``until``; answered calls leave ``pending``, and ``last`` describes the latest failure."""
        transport = self.cluster.transport
        while pending:
            ready = transport.ready(list(pending), 1, max(0.0, until - time.monotonic()))
            if not ready:
                return None
            for call in ready:
                broker_id = pending.pop(call)
                try:
                    response: InitProducerIdResponse = transport.result(call, 0)
                except TransportError as exc:
                    self.cluster.forget(names.broker_actor_name(broker_id))
                    last[0] = f"broker {broker_id}: {type(exc).__name__} {exc}"
                    continue
                if not response.error.retriable:
                    return response
                last[0] = f"broker {broker_id}: {response.error.name} {response.error_message}"
        return None

    def coordinator_request(self, method: str, request: Any, deadline: float) -> Any:
        """``method(request)`` on the transaction coordinator, retrying the answers a later attempt
        fixes until ``deadline`` (KafkaTimeoutError then)."""
        last = "no coordinator found"
        while True:
            backoff_s = RETRY_BACKOFF_S
            coordinator = self._find(deadline)
            if coordinator is not None:
                try:
                    response = self.cluster.request(
                        coordinator,
                        method,
                        request,
                        timeout_s=min(
                            self.cluster.request_timeout_s, max(0.0, deadline - time.monotonic())
                        ),
                    )
                except TransportError as exc:
                    last = f"coordinator {self._coordinator_id}: {type(exc).__name__}"
                    self._forget()
                else:
                    if response.error in COORDINATOR_MOVING:
                        last = f"{response.error.name} from coordinator {self._coordinator_id}"
                        self._forget()
                    elif response.error is Errors.CONCURRENT_TRANSACTIONS:
                        last = "CONCURRENT_TRANSACTIONS: the previous transaction is completing"
                        backoff_s = CONCURRENT_TRANSACTIONS_BACKOFF_S
                    else:
                        return response
            else:
                last = "FindCoordinator found no transaction coordinator"
            if not pause(deadline, backoff_s):
                raise KafkaTimeoutError(
                    f"transactional id {self.transactional_id!r}: {method} did not complete "
                    f"within max_block_ms ({last})"
                )

    def _find(self, deadline: float) -> Endpoint | None:
        """The transaction coordinator, looked up once and kept until it fails or moves."""
        if self._coordinator is not None:
            return self._coordinator
        assert self.transactional_id is not None
        found = self.cluster.find_coordinator(
            self.transactional_id,
            max(0.0, deadline - time.monotonic()),
            key_type=COORDINATOR_TYPE_TRANSACTION,
        )
        if found.error in COORDINATOR_MOVING:
            return None
        if found.error is not Errors.NONE:
            raise found.error.exception(
                f"FindCoordinator for transactional id {self.transactional_id!r}: "
                f"{found.error_message or found.error.message}"
            )
        try:
            self._coordinator = self.cluster.actor(
                names.transaction_coordinator_actor_name(found.coordinator_id)
            )
        except UnreachableError:
            return None  # its broker is starting or dying: the next lookup may name another
        self._coordinator_id = found.coordinator_id
        return self._coordinator

    def _forget(self) -> None:
        if self._coordinator_id >= 0:
            self.cluster.forget(names.transaction_coordinator_actor_name(self._coordinator_id))
        self._coordinator, self._coordinator_id = None, -1

    def txn_offset_commit(
        self, request: TxnOffsetCommitRequest, deadline: float
    ) -> TxnOffsetCommitResponse:
        """TxnOffsetCommit to the group's coordinator, found again whenever it moves."""
        lookup = self._groups.get(request.group_id)
        if lookup is None:
            lookup = self._groups[request.group_id] = CoordinatorLookup(
                self.cluster, request.group_id
            )
        response: TxnOffsetCommitResponse = lookup.request("txn_offset_commit", request, deadline)
        return response
