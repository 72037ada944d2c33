"""The states of a transaction, and which state each may be entered from (Kafka's
``TransactionState``).

A transactional id moves EMPTY -> ONGOING (first partition added) -> PREPARE_COMMIT or PREPARE_ABORT
(the decision, durable before the client hears it) -> COMPLETE_COMMIT or COMPLETE_ABORT (every
marker written) and back to ONGOING with its next transaction. PREPARE_EPOCH_FENCE is never
written: it marks, in memory, the epoch bump that aborts a transaction on a producer's behalf (a new
instance of it, or its timeout). DEAD is an id being forgotten (its tombstone is being written).
"""

from __future__ import annotations

from enum import Enum


class IllegalTransitionError(Exception):
    """A transition the state machine forbids: a bug in the coordinator, never a client's error."""


class TransactionState(Enum):
    """Kafka's transaction states, with the name Kafka logs and lists them by."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    @property
    def valid_previous_states(self) -> frozenset[TransactionState]:
        """The states this one may be entered from."""
        return VALID_PREVIOUS_STATES[self]

    @property
    def is_complete(self) -> bool:
        """No transaction is open: a new one may start, the id may expire."""
        return self in COMPLETED_STATES

    @property
    def is_preparing(self) -> bool:
        """The decision is durable and its markers are being written."""
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)

    def check_transition(self, target: TransactionState) -> None:
        """Raise IllegalTransitionError unless ``target`` may follow this state."""
        if self not in target.valid_previous_states:
            raise IllegalTransitionError(
                f"transaction state {self.value} cannot move to {target.value} (it follows only "
                f"{sorted(s.value for s in target.valid_previous_states)})"
            )


_S = TransactionState

COMPLETED_STATES = frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})

VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: COMPLETED_STATES,
    _S.ONGOING: COMPLETED_STATES | {_S.ONGOING},
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: COMPLETED_STATES,
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
"""Kafka's valid previous states of each state."""

COMPLETION_OF = {_S.PREPARE_COMMIT: _S.COMPLETE_COMMIT, _S.PREPARE_ABORT: _S.COMPLETE_ABORT}
"""The state a prepared transaction reaches once all its markers are written."""
