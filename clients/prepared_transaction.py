"""The second phase of a two-phase commit over Kafka transactions (as Flink's Kafka sink does it).

A transactional producer's ``prepare_transaction()`` flushes its transaction and checks that it can
commit, but sends no EndTxn: it returns a ``PreparedTransaction`` naming the transaction (its
transactional id, producer id and epoch), which may travel to another process (a Spark task hands
it to the driver in its commit message). Once every participant prepared, that process ends each
transaction with ``end_prepared_transaction``: EndTxn to the transactional id's coordinator, on
behalf of a producer that may be closed by then. Until then the transaction stays open, and the
coordinator aborts it once it is older than the producer's ``transaction_timeout_ms``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rafka.clients.cluster import ClusterConnection
from rafka.clients.transactional_requests import TransactionalRequests
from rafka.protocol.errors import Errors
from rafka.protocol.messages.transactions import EndTxnRequest, EndTxnResponse


@dataclass(frozen=True)
class PreparedTransaction:
    """A flushed transaction whose EndTxn is still to be sent; ``started`` says whether any
    partition or group offsets reached the coordinator (an empty transaction needs no EndTxn)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    started: bool


def end_prepared_transaction(
    prepared: PreparedTransaction,
    committed: bool,
    namespace: str,
    ray_address: str | None = None,
    timeout_ms: int = 60_000,
) -> None:
    """Commit (``committed``) or abort the prepared transaction with EndTxn to its transactional
    id's coordinator, retrying what a later attempt fixes for at most ``timeout_ms``; raise the
    coordinator's error (PRODUCER_FENCED once a newer producer took the transactional id, or the
    epoch moved on after the coordinator aborted the transaction on timeout). A retried commit of a
    committed transaction succeeds."""
    if not prepared.started:
        return
    deadline = time.monotonic() + timeout_ms / 1000
    cluster = ClusterConnection(namespace, ray_address, request_timeout_ms=timeout_ms)
    request = EndTxnRequest(
        prepared.transactional_id, prepared.producer_id, prepared.producer_epoch, committed
    )
    response: EndTxnResponse = TransactionalRequests(
        cluster, prepared.transactional_id
    ).coordinator_request("end_txn", request, deadline)
    if response.error is not Errors.NONE:
        raise response.error.exception(
            f"EndTxn ({'commit' if committed else 'abort'}) for transactional id "
            f"{prepared.transactional_id!r}, producer id {prepared.producer_id} epoch "
            f"{prepared.producer_epoch}: {response.error_message or response.error.message}"
        )
