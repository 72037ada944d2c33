"""The transaction state manager: which ``__transaction_state`` partitions a coordinator leads, the
transactional ids they hold, and their log (Kafka's ``TransactionStateManager``).

A transactional id belongs to partition ``partition_for(id)``; the coordinator on the broker leading
that partition answers for it, in the partition's leader epoch (its *coordinator epoch*, carried on
every marker so a deposed coordinator's markers are refused). On gaining leadership the manager
replays the partition to rebuild its ids (COORDINATOR_LOAD_IN_PROGRESS meanwhile); on losing it, it
drops them (NOT_COORDINATOR). Transitions are appended to the local leader replica with acks=all
through the ``TransactionLog`` interface (Ray in production, ``replica_log``; in-memory in unit
tests), and applied only once written and only if the partition is still led in the same epoch.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol

from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.records.batch import decode_records, iter_batches
from rafka.protocol.records.builder import build_batch
from rafka.protocol.types import now_ms
from rafka.transactions.transaction_log import (
    TRANSACTION_STATE_TOPIC,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from rafka.transactions.transaction_metadata import TransactionMetadata, TxnTransitMetadata
from rafka.transactions.transaction_state import TransactionState

logger = logging.getLogger(__name__)

LOAD_CHUNK_BYTES = 4 << 20

# What a failed append to the transaction log means to a client (Kafka's mapping).
APPEND_ERRORS = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.FENCED_LEADER_EPOCH: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
}


class TransactionLogUnavailableError(Exception):
    """This broker's replica of a ``__transaction_state`` partition cannot be reached."""


class TransactionLog(Protocol):
    """This broker's replicas of ``__transaction_state``, as the manager reads and writes them."""

    async def bounds(self, partition: int) -> tuple[int, int]:
        """The replica's log start offset and log end offset."""
        ...

    async def read(self, partition: int, offset: int, max_bytes: int) -> bytes:
        """Whole batches of the replica's log from ``offset``, at most about ``max_bytes``."""
        ...

    async def append(self, partition: int, batch: bytes) -> Errors:
        """Append ``batch`` as the partition's leader with acks=all; the replica's error code."""
        ...


@dataclass(frozen=True)
class TimedOutTransaction:
    """An ONGOING transaction past its timeout, as found (the id may have moved on since)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


class TransactionStateManager:
    """The ``__transaction_state`` partitions one coordinator leads: loading, cache, log."""

    def __init__(
        self,
        broker_id: int,
        num_partitions: int,
        log: TransactionLog,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.broker_id = broker_id
        self.num_partitions = num_partitions
        self.log = log
        self.clock = clock
        self.owned: dict[int, int] = {}
        """Partition -> the coordinator epoch (leader epoch) it was loaded in."""
        self.loading: dict[int, int] = {}
        """Partition -> the coordinator epoch it is being loaded in."""
        self.transactions: dict[int, dict[str, TransactionMetadata]] = {}
        """Partition -> transactional id -> its metadata, for owned partitions."""
        # One append at a time per partition: a later transition of an id must land after its
        # earlier one, and a replica may run concurrent produce requests in either order.
        self._append_locks: defaultdict[int, asyncio.Lock] = defaultdict(asyncio.Lock)

    # ------------------------------------------------------------------ ownership

    def partition_for(self, transactional_id: str) -> int:
        """The ``__transaction_state`` partition that owns ``transactional_id``."""
        return partition_for(transactional_id, self.num_partitions)

    def ownership_error(self, transactional_id: str) -> tuple[Errors, str] | None:
        """Why this coordinator cannot answer for ``transactional_id`` now, or None."""
        partition = self.partition_for(transactional_id)
        if partition in self.loading:
            return (
                Errors.COORDINATOR_LOAD_IN_PROGRESS,
                f"broker {self.broker_id} is loading {TRANSACTION_STATE_TOPIC}-{partition}",
            )
        if partition not in self.owned:
            return (
                Errors.NOT_COORDINATOR,
                f"broker {self.broker_id} does not lead {TRANSACTION_STATE_TOPIC}-{partition}, "
                f"which owns transactional id {transactional_id}",
            )
        return None

    def coordinator_epoch(self, partition: int) -> int | None:
        """The epoch ``partition`` is owned in, or None if it is not (or still loading)."""
        return self.owned.get(partition)

    def is_current(self, partition: int, leader_epoch: int) -> bool:
        """Whether ``partition`` is already loaded, or being loaded, in ``leader_epoch``."""
        return leader_epoch in (self.owned.get(partition), self.loading.get(partition))

    def start_loading(self, partition: int, coordinator_epoch: int) -> None:
        """Mark ``partition`` as loading in ``coordinator_epoch``: its ids wait for ``load``."""
        self.loading[partition] = coordinator_epoch

    async def load(
        self, partition: int, coordinator_epoch: int
    ) -> list[TransactionMetadata] | None:
        """Replay ``partition``'s log and own it; its ids, or None if the load failed (the next
        LeaderAndIsr retries) or was overtaken by an unload or a newer epoch."""
        stored: dict[str, TxnTransitMetadata] = {}
        try:
            async for key, value in self._records(partition, coordinator_epoch):
                transactional_id = decode_key(key)
                if value is None:
                    stored.pop(transactional_id, None)
                else:
                    stored[transactional_id] = decode_value(value)
        except (TransactionLogUnavailableError, ValueError, RafkaError) as exc:
            if self.loading.get(partition) == coordinator_epoch:
                del self.loading[partition]
            logger.warning("%s-%d not loaded: %s", TRANSACTION_STATE_TOPIC, partition, exc)
            return None
        if self.loading.pop(partition, None) != coordinator_epoch:
            return None
        loaded = {t: TransactionMetadata.restore(t, value) for t, value in stored.items()}
        self.transactions[partition] = loaded
        self.owned[partition] = coordinator_epoch
        logger.info(
            "transaction coordinator %d: loaded %d transactional ids of %s-%d in epoch %d",
            self.broker_id,
            len(loaded),
            TRANSACTION_STATE_TOPIC,
            partition,
            coordinator_epoch,
        )
        return list(loaded.values())

    async def _records(
        self, partition: int, coordinator_epoch: int
    ) -> AsyncIterator[tuple[bytes, bytes | None]]:
        """Each keyed record of ``partition``'s log in order, while it loads in this epoch."""
        position, end = await self.log.bounds(partition)
        while position < end and self.loading.get(partition) == coordinator_epoch:
            chunk = await self.log.read(partition, position, LOAD_CHUNK_BYTES)
            if not chunk:
                return
            for batch_position, header in iter_batches(chunk):
                for record in decode_records(chunk, batch_position, header):
                    if record.key is not None:
                        yield record.key, record.value
                position = header.last_offset + 1

    def unload(self, partition: int) -> int:
        """Stop answering for ``partition`` and forget its ids; how many there were."""
        self.loading.pop(partition, None)
        self.owned.pop(partition, None)
        return len(self.transactions.pop(partition, {}))

    # ------------------------------------------------------------------ the cache

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        """The metadata of ``transactional_id`` if its (owned) partition holds it."""
        return self.transactions.get(self.partition_for(transactional_id), {}).get(transactional_id)

    def put_if_absent(self, metadata: TransactionMetadata) -> TransactionMetadata:
        """Cache ``metadata`` unless the id is cached already; the cached one. The id's partition
        must be owned (the caller checked ownership since its last ``await``)."""
        cached = self.transactions[self.partition_for(metadata.transactional_id)]
        return cached.setdefault(metadata.transactional_id, metadata)

    def all_transactions(self) -> list[TransactionMetadata]:
        """Every cached id of every owned partition."""
        return [m for partition in self.transactions.values() for m in partition.values()]

    def timed_out_transactions(self, now: int) -> list[TimedOutTransaction]:
        """ONGOING transactions past their timeout, with no transition in flight."""
        return [
            TimedOutTransaction(m.transactional_id, m.producer_id, m.producer_epoch)
            for m in self.all_transactions()
            if m.state is TransactionState.ONGOING
            and not m.pending_transition_in_progress
            and m.start_timestamp + m.timeout_ms < now
        ]

    def expired_transactional_ids(self, now: int, expiration_ms: int) -> list[TransactionMetadata]:
        """Ids with no open transaction, unused for ``expiration_ms``: Kafka forgets them."""
        return [
            m
            for m in self.all_transactions()
            if m.state.is_complete
            and not m.pending_transition_in_progress
            and m.last_update_timestamp <= now - expiration_ms
        ]

    # ------------------------------------------------------------------ the log

    async def append(
        self,
        metadata: TransactionMetadata,
        transit: TxnTransitMetadata,
        coordinator_epoch: int,
        abandon_on_error: bool = True,
    ) -> Errors:
        """Write ``metadata``'s pending ``transit`` (a tombstone for DEAD) and, once written in the
        same coordinator epoch, complete it; the error a client should see.

        On an error the transition is abandoned unless ``abandon_on_error`` is False (the caller
        retries the same write). NOT_COORDINATOR if the partition moved on meanwhile.
        """
        partition = self.partition_for(metadata.transactional_id)
        value = None if transit.state is TransactionState.DEAD else encode_value(transit)
        batch = build_batch([(encode_key(metadata.transactional_id), value, self.clock())])
        try:
            async with self._append_locks[partition]:
                written = await self.log.append(partition, batch)
        except TransactionLogUnavailableError as exc:
            logger.warning(
                "transaction coordinator %d: %s-%d unreachable: %s",
                self.broker_id,
                TRANSACTION_STATE_TOPIC,
                partition,
                exc,
            )
            written = Errors.NOT_LEADER_OR_FOLLOWER
        if (
            self.owned.get(partition) != coordinator_epoch
            or self.get(metadata.transactional_id) is not metadata
        ):
            return Errors.NOT_COORDINATOR
        if written is not Errors.NONE:
            if abandon_on_error:
                metadata.abandon_transition()
            return APPEND_ERRORS.get(written, Errors.UNKNOWN_SERVER_ERROR)
        metadata.complete_transition(transit)
        if transit.state is TransactionState.DEAD:
            del self.transactions[partition][metadata.transactional_id]
        return Errors.NONE
