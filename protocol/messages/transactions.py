"""Idempotence and transactions: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
TxnOffsetCommit, EndTxn and WriteTxnMarkers (KIP-98).

A non-transactional producer asks any broker actor for a producer id (``init_producer_id``); a
transactional one asks the transaction coordinator actor of the broker that leads its
``__transaction_state`` partition, found with FindCoordinator and ``COORDINATOR_TYPE_TRANSACTION``.
The coordinator writes the markers that end a transaction through WriteTxnMarkers, one request per
partition, sent to that partition's leader replica actor (or, for a group's offsets, to the group
coordinator that owns the group). Field names follow Kafka's message definitions. Frozen dataclasses
without slots, so they pickle the same for Ray calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import NO_GENERATION, NO_MEMBER, OffsetCommitEntry
from rafka.protocol.types import TopicPartition

COORDINATOR_TYPE_GROUP = 0
COORDINATOR_TYPE_TRANSACTION = 1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_TRANSACTIONAL_ID_LENGTH = 32_767
"""Kafka's bound: a transactional id is a STRING, whose length is an int16."""


@dataclass(frozen=True)
class InitProducerIdRequest:
    """Get a producer id and epoch. With a ``transactional_id`` the coordinator bumps the epoch of
    the id's producer (fencing an older instance) and finishes its open transaction first;
    ``producer_id``/``producer_epoch`` name the caller's current ones when it asks for a bump
    (KIP-360), else -1."""

    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class InitProducerIdResponse:
    """The producer id and epoch to stamp on every batch."""

    error: Errors
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    error_message: str | None = None


@dataclass(frozen=True)
class AddPartitionsToTxnRequest:
    """Add partitions to the producer's ongoing transaction before its first send to each."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class AddPartitionsToTxnResponse:
    """One error per partition asked for (all the same when the request as a whole failed)."""

    error: Errors
    results: tuple[tuple[TopicPartition, Errors], ...] = ()
    error_message: str | None = None


@dataclass(frozen=True)
class AddOffsetsToTxnRequest:
    """Add ``group_id``'s offsets partition to the transaction (before TxnOffsetCommit)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@dataclass(frozen=True)
class AddOffsetsToTxnResponse:
    """Whether the group's offsets partition joined the transaction."""

    error: Errors
    error_message: str | None = None


@dataclass(frozen=True)
class TxnOffsetCommitRequest:
    """Commit offsets inside a transaction, sent to the group's coordinator: they stay pending,
    invisible to OffsetFetch, until the transaction's marker commits (or drops) them."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    offsets: tuple[OffsetCommitEntry, ...]
    generation_id: int = NO_GENERATION
    member_id: str = NO_MEMBER
    group_instance_id: str | None = None


@dataclass(frozen=True)
class TxnOffsetCommitResponse:
    """One error per partition committed (all the same when the request as a whole failed)."""

    error: Errors
    results: tuple[tuple[TopicPartition, Errors], ...] = ()
    error_message: str | None = None


@dataclass(frozen=True)
class EndTxnRequest:
    """Commit (``committed``) or abort the producer's ongoing transaction."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


@dataclass(frozen=True)
class EndTxnResponse:
    """Answered once the decision is durable in ``__transaction_state`` (PrepareCommit or
    PrepareAbort written); the markers follow."""

    error: Errors
    error_message: str | None = None


@dataclass(frozen=True)
class WriteTxnMarkersRequest:
    """Append one COMMIT or ABORT control batch for ``producer_id`` to a partition.

    Sent by the transaction coordinator to the partition's leader replica actor
    (``write_txn_markers``), or for a group's offsets to the group coordinator
    (``write_txn_markers(offsets_partition, request)``). Answered once the marker is below the
    high watermark; ``coordinator_epoch`` fences markers from a deposed coordinator.
    """

    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    timeout_ms: int = 30_000


@dataclass(frozen=True)
class WriteTxnMarkersResponse:
    """Whether the marker was written and replicated."""

    error: Errors
    error_message: str | None = None
