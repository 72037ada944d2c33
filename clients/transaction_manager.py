"""The producer's idempotence and transaction state (Kafka's TransactionManager), free of Ray.

An idempotent producer stamps every batch with its producer id, epoch and the partition's next
sequence number, so a broker can drop a retried batch it already has. A transactional producer
(``transactional_id`` set) also walks a state machine: ``init_transactions`` (UNINITIALIZED ->
INITIALIZING -> READY), ``begin_transaction`` (-> IN_TRANSACTION), then ``commit_transaction`` or
``abort_transaction`` (-> COMMITTING_TRANSACTION / ABORTING_TRANSACTION -> READY), or
``prepare_transaction`` (-> COMMITTING_TRANSACTION for good: the first phase of a two-phase commit,
whose EndTxn someone else sends, after which the producer may only be closed). An error that
spoils only the current transaction moves it to ABORTABLE_ERROR, where only an abort is allowed; one
that spoils the producer (fenced by a newer instance) to FATAL_ERROR, where nothing is. The valid
transitions are data (``VALID_TRANSITIONS``) and every change of state consults them.

This class decides; the producer makes the requests and reports their answers here. It is shared by
the application's threads and the sender thread, hence its lock.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from rafka.protocol.errors import Errors, InvalidConfigError, RafkaError
from rafka.protocol.messages.produce import ACKS_ALL
from rafka.protocol.messages.transactions import (
    MAX_TRANSACTIONAL_ID_LENGTH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
)
from rafka.protocol.types import TopicPartition

MAX_SEQUENCE = (1 << 31) - 1
"""Sequence numbers are int32 and wrap around to 0 past this (as in Kafka)."""
MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5
"""Kafka's bound on requests in flight per connection for an idempotent producer."""


class TransactionState(enum.Enum):
    """Where a producer is in its transaction life cycle (Kafka's TransactionManager.State)."""

    UNINITIALIZED = "Uninitialized"
    INITIALIZING = "Initializing"
    READY = "Ready"
    IN_TRANSACTION = "InTransaction"
    COMMITTING_TRANSACTION = "CommittingTransaction"
    ABORTING_TRANSACTION = "AbortingTransaction"
    ABORTABLE_ERROR = "AbortableError"
    FATAL_ERROR = "FatalError"


S = TransactionState
VALID_TRANSITIONS: dict[TransactionState, frozenset[TransactionState]] = {
    S.UNINITIALIZED: frozenset({S.INITIALIZING, S.FATAL_ERROR}),
    # INITIALIZING may fail abortably when an epoch bump after an abort is refused.
    S.INITIALIZING: frozenset({S.READY, S.UNINITIALIZED, S.ABORTABLE_ERROR, S.FATAL_ERROR}),
    # READY -> INITIALIZING: an idempotent producer gets a new id after the broker lost its state.
    S.READY: frozenset({S.IN_TRANSACTION, S.INITIALIZING, S.FATAL_ERROR}),
    S.IN_TRANSACTION: frozenset(
        {S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION, S.ABORTABLE_ERROR, S.FATAL_ERROR}
    ),
    S.COMMITTING_TRANSACTION: frozenset({S.READY, S.ABORTABLE_ERROR, S.FATAL_ERROR}),
    # ABORTING -> INITIALIZING: the epoch is bumped after aborting a transaction whose batches
    # failed with an unknown outcome (KIP-360).
    S.ABORTING_TRANSACTION: frozenset({S.READY, S.INITIALIZING, S.FATAL_ERROR}),
    S.ABORTABLE_ERROR: frozenset({S.ABORTING_TRANSACTION, S.ABORTABLE_ERROR, S.FATAL_ERROR}),
    S.FATAL_ERROR: frozenset({S.FATAL_ERROR}),
}
"""For each state, the states it may move to."""

FATAL_ERRORS = frozenset(
    {
        Errors.PRODUCER_FENCED,
        Errors.INVALID_PRODUCER_EPOCH,
        Errors.INVALID_PRODUCER_ID_MAPPING,
        Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        Errors.INVALID_TXN_STATE,
        Errors.UNSUPPORTED_VERSION,
        Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT,
        Errors.CLUSTER_AUTHORIZATION_FAILED,
        Errors.INVALID_TRANSACTION_TIMEOUT,
    }
)
"""Errors after which the producer can do nothing more (Kafka: close it and make a new one)."""

COORDINATOR_RETRIABLE = frozenset(
    {
        Errors.NOT_COORDINATOR,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.CONCURRENT_TRANSACTIONS,
    }
)
"""Coordinator answers that a later attempt (after a FindCoordinator for the first three) fixes."""


SEQUENCE_ANSWERS = frozenset(
    {
        Errors.DUPLICATE_SEQUENCE_NUMBER,
        Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
        Errors.UNKNOWN_PRODUCER_ID,
        Errors.INVALID_PRODUCER_EPOCH,
        Errors.PRODUCER_FENCED,
    }
)
"""Produce answers about an idempotent producer's sequence numbers or epoch."""
UNKNOWN_OUTCOME = frozenset(
    {Errors.REQUEST_TIMED_OUT, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.NETWORK_EXCEPTION}
)
"""Produce errors after which the batch may be in the log all the same."""


class SequenceReaction(enum.Enum):
    """What an idempotent producer does with a batch answered with one of SEQUENCE_ANSWERS."""

    SUCCEED = "succeed"
    RESEND_UNDER_NEW_ID = "resend under a new producer id"
    FAIL = "fail the batch"
    FAIL_PRODUCER = "fail the batch and the producer"


def sequence_reaction(error: Errors, transactional: bool, maybe_written: bool) -> SequenceReaction:
    """Kafka's reactions: a duplicate was written before (success); a fenced epoch ends the
    producer; a leader that lost the producer's state (unknown producer, sequence gap) gets the
    batch again under a new producer id (KIP-360), unless an earlier attempt may have been written
    (resending could write it twice) or the batch is a transaction's, which must abort instead."""
    if error is Errors.DUPLICATE_SEQUENCE_NUMBER:
        return SequenceReaction.SUCCEED
    if is_fatal(error):
        return SequenceReaction.FAIL_PRODUCER
    if transactional or maybe_written:
        return SequenceReaction.FAIL
    return SequenceReaction.RESEND_UNDER_NEW_ID


@dataclass(frozen=True)
class ProducerIdAndEpoch:
    """The producer id and epoch stamped on batches; NONE before the producer has one."""

    producer_id: int
    epoch: int

    @property
    def is_valid(self) -> bool:
        """Whether a broker assigned these (rather than the NONE placeholder)."""
        return self.producer_id >= 0


NO_PRODUCER = ProducerIdAndEpoch(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)


def check_transactional_id(transactional_id: str | None) -> None:
    """INVALID_CONFIG for an empty transactional id or one longer than Kafka allows."""
    if transactional_id is None:
        return
    if not isinstance(transactional_id, str) or not transactional_id:
        raise InvalidConfigError(
            f"transactional_id={transactional_id!r} must be a non-empty string (or None for a "
            "producer without transactions)"
        )
    if len(transactional_id) > MAX_TRANSACTIONAL_ID_LENGTH:
        raise InvalidConfigError(
            f"transactional_id is {len(transactional_id)} characters long; the limit is "
            f"{MAX_TRANSACTIONAL_ID_LENGTH}"
        )


def resolve_idempotence(
    explicit: bool | None, acks: int, max_in_flight: int, transactional_id: str | None
) -> bool:
    """Whether the producer is idempotent (Kafka 3.x): on by default, off without a word when the
    user chose acks 0 or 1 (or more than five requests in flight) and left ``enable_idempotence``
    alone, INVALID_CONFIG when the user asked for it (or for transactions) with settings that
    cannot keep it."""
    if not isinstance(max_in_flight, int) or max_in_flight < 1:
        raise InvalidConfigError(
            f"max_in_flight_requests_per_connection={max_in_flight!r} must be at least 1"
        )
    if transactional_id is not None:
        if explicit is False:
            raise InvalidConfigError(
                f"transactional_id={transactional_id!r} needs enable_idempotence=True"
            )
        explicit = True
    if explicit is None:
        return acks == ACKS_ALL and max_in_flight <= MAX_IN_FLIGHT_FOR_IDEMPOTENCE
    if not explicit:
        return False
    why = "transactional_id is set" if transactional_id is not None else "enable_idempotence=True"
    if acks != ACKS_ALL:
        raise InvalidConfigError(f"acks must be 'all' when {why} (acks={acks})")
    if max_in_flight > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
        raise InvalidConfigError(
            f"max_in_flight_requests_per_connection={max_in_flight} must be at most "
            f"{MAX_IN_FLIGHT_FOR_IDEMPOTENCE} when {why}"
        )
    return True


def is_fatal(error: Errors) -> bool:
    """Whether ``error`` ends the producer rather than only its transaction."""
    return error in FATAL_ERRORS


class TransactionManager:
    """Producer id, epoch, per-partition sequences and, for a transactional producer, the state of
    its transaction."""

    def __init__(
        self, transactional_id: str | None = None, transaction_timeout_ms: int = 60_000
    ) -> None:
        check_transactional_id(transactional_id)
        if transaction_timeout_ms <= 0:
            raise InvalidConfigError(
                f"transaction_timeout_ms={transaction_timeout_ms} must be positive"
            )
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.state = TransactionState.UNINITIALIZED
        self.producer = NO_PRODUCER
        self.last_error: RafkaError | None = None
        # The next sequence of each partition under the current producer id and epoch.
        self._sequences: dict[TopicPartition, int] = {}
        # Partitions in the ongoing transaction (AddPartitionsToTxn answered), and whether the
        # coordinator knows of the transaction at all (a partition or a group's offsets added):
        # an empty transaction ends without an EndTxn.
        self.partitions: set[TopicPartition] = set()
        self.started = False
        self.needs_producer_id = True
        # Set by prepare_transaction: the transaction is flushed and its EndTxn is left to whoever
        # holds the PreparedTransaction, so this producer must not touch it again.
        self.prepared = False
        self._lock = threading.RLock()

    @property
    def is_transactional(self) -> bool:
        """Whether this producer has a transactional id."""
        return self.transactional_id is not None

    # ------------------------------------------------------------------ states

    def transition(self, target: TransactionState, error: RafkaError | None = None) -> None:
        """Move to ``target`` (INVALID_TXN_STATE if the table forbids it); an error state keeps
        ``error`` to raise at the application's next call."""
        with self._lock:
            if target not in VALID_TRANSITIONS[self.state]:
                raise Errors.INVALID_TXN_STATE.exception(
                    f"transactional producer {self.transactional_id!r} cannot move from "
                    f"{self.state.value} to {target.value}"
                )
            if target in (TransactionState.ABORTABLE_ERROR, TransactionState.FATAL_ERROR):
                self.last_error = error
            elif target is not TransactionState.ABORTING_TRANSACTION:
                self.last_error = None
            self.state = target

    def fail(self, error: RafkaError) -> None:
        """Record an error from a request: fatal errors end the producer; others, inside a
        transaction, spoil only the transaction (an idempotent producer has none to spoil)."""
        with self._lock:
            if self.state is TransactionState.FATAL_ERROR:
                return
            if is_fatal(error.error) or not self.is_transactional:
                if is_fatal(error.error):
                    self.transition(TransactionState.FATAL_ERROR, error)
                return
            if TransactionState.ABORTABLE_ERROR in VALID_TRANSITIONS[self.state]:
                self.transition(TransactionState.ABORTABLE_ERROR, error)

    def check_not_failed(self) -> None:
        """Raise the stored fatal error, if any."""
        with self._lock:
            if self.state is TransactionState.FATAL_ERROR:
                raise self._stored("the producer hit a fatal error; close it and create a new one")

    def check_can_commit(self) -> None:
        """After a commit's flush: raise the error that spoiled the transaction meanwhile."""
        with self._lock:
            self.check_not_failed()
            if self.state is TransactionState.ABORTABLE_ERROR:
                raise self._stored("the transaction cannot commit; call abort_transaction()")

    def check_can_send(self) -> None:
        """What ``send`` needs: no fatal error; a transactional producer inside a transaction that
        has not failed."""
        with self._lock:
            self.check_not_failed()
            if not self.is_transactional:
                return
            self.check_not_prepared("send")
            if self.state is TransactionState.ABORTABLE_ERROR:
                raise self._stored(
                    "the transaction hit an error; call abort_transaction() before sending again"
                )
            if self.state is not TransactionState.IN_TRANSACTION:
                raise Errors.INVALID_TXN_STATE.exception(
                    f"cannot send with transactional producer {self.transactional_id!r} in state "
                    f"{self.state.value}: call init_transactions() once, then begin_transaction() "
                    "before sending"
                )

    def _stored(self, advice: str) -> RafkaError:
        """The stored error again, with what the application should do next."""
        error = self.last_error
        if error is None:
            return Errors.INVALID_TXN_STATE.exception(advice)
        return error.error.exception(f"{error.message}; {advice}")

    def check_not_prepared(self, method: str) -> None:
        """INVALID_TXN_STATE once ``prepare_transaction`` handed the transaction's end to someone
        else."""
        if self.prepared:
            raise Errors.INVALID_TXN_STATE.exception(
                f"{method}() on transactional producer {self.transactional_id!r} after "
                "prepare_transaction(): its transaction is ended with end_prepared_transaction(); "
                "close this producer"
            )

    def _require_transactional(self, method: str) -> None:
        if not self.is_transactional:
            raise Errors.INVALID_TXN_STATE.exception(
                f"{method}() needs a transactional producer: set transactional_id"
            )

    def begin_init(self) -> None:
        """``init_transactions``: UNINITIALIZED -> INITIALIZING (a second call after success is
        refused, as in Kafka)."""
        with self._lock:
            self._require_transactional("init_transactions")
            self.check_not_failed()
            self.check_not_prepared("init_transactions")
            if self.state is TransactionState.INITIALIZING:
                return  # an earlier call timed out: carry on with it
            if self.state is not TransactionState.UNINITIALIZED:
                raise Errors.INVALID_TXN_STATE.exception(
                    f"init_transactions() was already called (state {self.state.value}); call it "
                    "once per producer"
                )
            self.transition(TransactionState.INITIALIZING)

    def begin_transaction(self) -> None:
        """``begin_transaction``: READY -> IN_TRANSACTION."""
        with self._lock:
            self._require_transactional("begin_transaction")
            self.check_not_failed()
            self.check_not_prepared("begin_transaction")
            if self.state is not TransactionState.READY:
                raise Errors.INVALID_TXN_STATE.exception(self._order_advice("begin_transaction"))
            self.partitions.clear()
            self.started = False
            self.transition(TransactionState.IN_TRANSACTION)

    def begin_commit(self, method: str = "commit_transaction") -> None:
        """``commit_transaction`` or ``prepare_transaction``: IN_TRANSACTION ->
        COMMITTING_TRANSACTION (a retried call stays there); an abortable error must be aborted
        instead."""
        with self._lock:
            self._require_transactional(method)
            self.check_not_failed()
            self.check_not_prepared(method)
            if self.state is TransactionState.COMMITTING_TRANSACTION:
                return
            if self.state is TransactionState.ABORTABLE_ERROR:
                raise self._stored("the transaction cannot commit; call abort_transaction()")
            if self.state is not TransactionState.IN_TRANSACTION:
                raise Errors.INVALID_TXN_STATE.exception(self._order_advice(method))
            self.transition(TransactionState.COMMITTING_TRANSACTION)

    def mark_prepared(self) -> None:
        """``prepare_transaction`` flushed a transaction that can commit: it stays in
        COMMITTING_TRANSACTION and this producer refuses every further transactional call."""
        with self._lock:
            if self.state is not TransactionState.COMMITTING_TRANSACTION:
                raise Errors.INVALID_TXN_STATE.exception(self._order_advice("prepare_transaction"))
            self.prepared = True

    def begin_abort(self) -> None:
        """``abort_transaction``: IN_TRANSACTION or ABORTABLE_ERROR -> ABORTING_TRANSACTION."""
        with self._lock:
            self._require_transactional("abort_transaction")
            self.check_not_failed()
            self.check_not_prepared("abort_transaction")
            if self.state is TransactionState.ABORTING_TRANSACTION:
                return
            if self.state not in (
                TransactionState.IN_TRANSACTION,
                TransactionState.ABORTABLE_ERROR,
            ):
                raise Errors.INVALID_TXN_STATE.exception(self._order_advice("abort_transaction"))
            self.transition(TransactionState.ABORTING_TRANSACTION)

    def check_in_transaction(self, method: str) -> None:
        """What a call inside a transaction (``send_offsets_to_transaction``) needs."""
        with self._lock:
            self._require_transactional(method)
            self.check_not_failed()
            self.check_not_prepared(method)
            if self.state is TransactionState.ABORTABLE_ERROR:
                raise self._stored("call abort_transaction()")
            if self.state is not TransactionState.IN_TRANSACTION:
                raise Errors.INVALID_TXN_STATE.exception(self._order_advice(method))

    def completed(self) -> None:
        """EndTxn succeeded: COMMITTING/ABORTING -> READY, the transaction's partitions
        forgotten."""
        with self._lock:
            self.partitions.clear()
            self.started = False
            self.transition(TransactionState.READY)

    def _order_advice(self, method: str) -> str:
        if self.state in (TransactionState.UNINITIALIZED, TransactionState.INITIALIZING):
            return f"{method}() before init_transactions() completed: call init_transactions()"
        if self.state is TransactionState.READY:
            return f"{method}() with no transaction open: call begin_transaction() first"
        return (
            f"{method}() is not allowed in state {self.state.value}: finish the current "
            "transaction with commit_transaction() or abort_transaction() first"
        )

    # ------------------------------------------------------------------ producer id and sequences

    def set_producer(self, producer: ProducerIdAndEpoch) -> None:
        """A broker gave a producer id and epoch: sequences restart at 0 under them; a
        transactional producer becomes READY."""
        with self._lock:
            self.producer = producer
            self._sequences.clear()
            self.partitions.clear()
            self.started = False
            self.needs_producer_id = False
            if self.state is TransactionState.INITIALIZING:
                self.transition(TransactionState.READY)
            elif self.state is TransactionState.UNINITIALIZED and not self.is_transactional:
                self.transition(TransactionState.INITIALIZING)
                self.transition(TransactionState.READY)

    def request_new_producer_id(self) -> None:
        """The broker lost this producer's state, or a batch failed after taking a sequence number
        (a gap the broker would refuse): get a new id or epoch before stamping more batches."""
        with self._lock:
            if not self.is_transactional and self.state is TransactionState.READY:
                self.transition(TransactionState.INITIALIZING)
            self.needs_producer_id = True

    def next_sequence(self, tp: TopicPartition, record_count: int) -> int:
        """The base sequence of a batch of ``record_count`` records for ``tp``, taken now."""
        with self._lock:
            sequence = self._sequences.get(tp, 0)
            following = sequence + record_count
            if following > MAX_SEQUENCE:
                following -= MAX_SEQUENCE + 1
            self._sequences[tp] = following
            return sequence

    # ------------------------------------------------------------------ partitions

    def partitions_to_add(self, queued: Iterable[TopicPartition]) -> list[TopicPartition]:
        """Those of ``queued`` not yet in the transaction (AddPartitionsToTxn before sending)."""
        with self._lock:
            # A commit flushes first: batches sent before it may still need their partition added.
            if self.state not in (
                TransactionState.IN_TRANSACTION,
                TransactionState.COMMITTING_TRANSACTION,
            ):
                return []
            return sorted(
                (tp for tp in queued if tp not in self.partitions),
                key=lambda tp: (tp.topic, tp.partition),
            )

    def partitions_added(self, added: Iterable[TopicPartition]) -> None:
        """AddPartitionsToTxn succeeded for ``added``."""
        with self._lock:
            self.partitions.update(added)
            self.started = True

    def offsets_added(self) -> None:
        """AddOffsetsToTxn succeeded: the transaction exists at the coordinator."""
        with self._lock:
            self.started = True

    def blocks(self, tp: TopicPartition) -> bool:
        """Whether a batch for ``tp`` must wait for the sender thread: no producer id yet, or (in a
        transaction) the partition is not added to it yet."""
        return self.needs_producer_id or (
            self.transactional_id is not None and tp not in self.partitions
        )
