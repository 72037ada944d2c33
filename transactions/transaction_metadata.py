"""What the coordinator knows about one transactional id, and how it changes (Kafka's
``TransactionMetadata`` and ``TxnTransitMetadata``).

Every change goes in three steps, as in Kafka: ``prepare_*`` checks the transition against the state
machine and marks it pending (so a concurrent request sees CONCURRENT_TRANSACTIONS), returning the
``TxnTransitMetadata`` to persist; once ``__transaction_state`` holds it, ``complete_transition``
applies it; if the write failed, ``abandon_transition`` drops it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from rafka.protocol.errors import Errors
from rafka.protocol.messages.transactions import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from rafka.protocol.types import TopicPartition
from rafka.transactions.transaction_state import (
    COMPLETION_OF,
    IllegalTransitionError,
    TransactionState,
)

MAX_PRODUCER_EPOCH = 32_767
"""A producer epoch is an int16."""


def is_epoch_exhausted(epoch: int) -> bool:
    """Whether a bump of ``epoch`` leaves no room for the fence bump after it (Kafka keeps the
    last value for that), so the producer must move to a new producer id instead."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


@dataclass(frozen=True)
class TxnTransitMetadata:
    """A transactional id's state as a transition leaves it: what ``__transaction_state``
    records."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    start_timestamp: int
    last_update_timestamp: int


@dataclass
class TransactionMetadata:
    """One transactional id: its producer, epoch, timeout, state and the partitions of its
    transaction; ``pending_state`` is the transition being persisted, if any."""

    transactional_id: str
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: set[TopicPartition] = field(default_factory=set)
    start_timestamp: int = -1
    last_update_timestamp: int = -1
    pending_state: TransactionState | None = None
    has_failed_epoch_fence: bool = False
    """A fence bump whose abort was never written: the next fence reuses the epoch, unseen by any
    client, instead of bumping again."""

    @classmethod
    def new(
        cls, transactional_id: str, producer_id: int, timeout_ms: int, now: int
    ) -> TransactionMetadata:
        """A new id with a fresh producer id and no epoch yet (its first bump makes it 0)."""
        return cls(
            transactional_id,
            producer_id,
            NO_PRODUCER_ID,
            NO_PRODUCER_EPOCH,
            NO_PRODUCER_EPOCH,
            timeout_ms,
            TransactionState.EMPTY,
            last_update_timestamp=now,
        )

    @classmethod
    def restore(cls, transactional_id: str, stored: TxnTransitMetadata) -> TransactionMetadata:
        """The metadata a loaded ``__transaction_state`` record describes."""
        return cls(
            transactional_id,
            stored.producer_id,
            stored.last_producer_id,
            stored.producer_epoch,
            stored.last_producer_epoch,
            stored.timeout_ms,
            stored.state,
            set(stored.partitions),
            stored.start_timestamp,
            stored.last_update_timestamp,
        )

    @property
    def pending_transition_in_progress(self) -> bool:
        """A transition is being persisted: other requests wait (CONCURRENT_TRANSACTIONS)."""
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        """The epoch cannot be bumped again for this producer id."""
        return is_epoch_exhausted(self.producer_epoch)

    def snapshot(self) -> TxnTransitMetadata:
        """The current state, as the log would record it."""
        return TxnTransitMetadata(
            self.producer_id,
            self.last_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            self.state,
            frozenset(self.partitions),
            self.start_timestamp,
            self.last_update_timestamp,
        )

    # ------------------------------------------------------------------ prepare

    def _prepare(self, state: TransactionState, **changes: object) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransitionError(
                f"{self.transactional_id}: preparing {state.value} while {self.pending_state.value}"
                " is pending"
            )
        self.state.check_transition(state)
        self.pending_state = state
        return dataclasses.replace(self.snapshot(), state=state, **changes)  # type: ignore[arg-type]

    def prepare_increment_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now: int
    ) -> TxnTransitMetadata | Errors:
        """InitProducerId for an id with no open transaction: bump the epoch (fencing older
        instances), or answer a retry of a bump that already happened; PRODUCER_FENCED when
        ``expected_epoch`` is neither the current nor the last epoch."""
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last_epoch = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return Errors.PRODUCER_FENCED
        if epoch != self.producer_epoch and self.is_producer_epoch_exhausted:
            raise IllegalTransitionError(
                f"{self.transactional_id}: producer {self.producer_id} has no epoch left to bump"
            )
        return self._prepare(
            TransactionState.EMPTY,
            producer_epoch=epoch,
            last_producer_epoch=last_epoch,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_timestamp=-1,
            last_update_timestamp=now,
        )

    def prepare_producer_id_rotation(
        self, producer_id: int, timeout_ms: int, now: int, record_last_epoch: bool
    ) -> TxnTransitMetadata:
        """The epoch is exhausted: move to ``producer_id`` at epoch 0, remembering the old one."""
        return self._prepare(
            TransactionState.EMPTY,
            producer_id=producer_id,
            last_producer_id=self.producer_id,
            producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_timestamp=-1,
            last_update_timestamp=now,
        )

    def prepare_fence_epoch(self) -> TxnTransitMetadata:
        """Bump the epoch of an ONGOING transaction to abort it on its producer's behalf; the
        bumped epoch is never handed to a client."""
        if self.producer_epoch >= MAX_PRODUCER_EPOCH:
            raise IllegalTransitionError(
                f"{self.transactional_id}: producer {self.producer_id} has no epoch left to fence"
            )
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(
            TransactionState.PREPARE_EPOCH_FENCE,
            producer_epoch=bumped,
            last_producer_epoch=NO_PRODUCER_EPOCH,
        )

    def apply_epoch_fence(self, epoch: int) -> None:
        """Take the pending fence's bumped ``epoch`` in memory and clear the fence, so the abort it
        leads to can be prepared from ONGOING; that abort's record carries the epoch to the log."""
        if self.pending_state is not TransactionState.PREPARE_EPOCH_FENCE:
            raise IllegalTransitionError(f"{self.transactional_id}: no epoch fence is pending")
        self.pending_state = None
        self.producer_epoch = epoch
        self.last_producer_epoch = NO_PRODUCER_EPOCH

    def prepare_add_partitions(
        self, partitions: frozenset[TopicPartition], now: int
    ) -> TxnTransitMetadata:
        """Add ``partitions`` to the transaction, starting it if none is open."""
        started = now if self.state.is_complete else self.start_timestamp
        return self._prepare(
            TransactionState.ONGOING,
            partitions=frozenset(self.partitions) | partitions,
            start_timestamp=started,
            last_update_timestamp=now,
        )

    def prepare_abort_or_commit(self, state: TransactionState, now: int) -> TxnTransitMetadata:
        """The client's (or the coordinator's) decision: PREPARE_COMMIT or PREPARE_ABORT."""
        return self._prepare(state, last_update_timestamp=now)

    def prepare_complete(self, now: int) -> TxnTransitMetadata:
        """Every marker is written: COMPLETE_COMMIT or COMPLETE_ABORT, with no partitions."""
        if self.state not in COMPLETION_OF:
            raise IllegalTransitionError(
                f"{self.transactional_id}: cannot complete a transaction in {self.state.value}"
            )
        self.has_failed_epoch_fence = False
        return self._prepare(
            COMPLETION_OF[self.state], partitions=frozenset(), last_update_timestamp=now
        )

    def prepare_dead(self) -> TxnTransitMetadata:
        """Forget the id (expiry): its tombstone is written next."""
        return self._prepare(TransactionState.DEAD)

    # ------------------------------------------------------------------ complete

    def complete_transition(self, transit: TxnTransitMetadata) -> None:
        """The log holds ``transit``: make it the current state."""
        if self.pending_state is not transit.state:
            pending = self.pending_state.value if self.pending_state else "nothing"
            raise IllegalTransitionError(
                f"{self.transactional_id}: completing {transit.state.value} while {pending} is "
                "pending"
            )
        self.state.check_transition(transit.state)
        if transit.producer_epoch < self.producer_epoch and transit.producer_id == self.producer_id:
            raise IllegalTransitionError(
                f"{self.transactional_id}: epoch {transit.producer_epoch} would go back from "
                f"{self.producer_epoch}"
            )
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.start_timestamp = transit.start_timestamp
        self.last_update_timestamp = transit.last_update_timestamp
        self.pending_state = None

    def abandon_transition(self) -> None:
        """The pending transition was not persisted: forget it, the state stays as it was."""
        self.pending_state = None
