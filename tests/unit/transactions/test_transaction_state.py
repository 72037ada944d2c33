"""Tests for rafka.transactions.transaction_state: Kafka's valid previous states, consulted."""

from __future__ import annotations

import pytest

from rafka.transactions.transaction_state import (
    VALID_PREVIOUS_STATES,
    IllegalTransitionError,
    TransactionState,
)

S = TransactionState

KAFKA_VALID_PREVIOUS = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}


def test_every_state_has_kafkas_valid_previous_states() -> None:
    assert {s: set(p) for s, p in VALID_PREVIOUS_STATES.items()} == KAFKA_VALID_PREVIOUS
    assert set(VALID_PREVIOUS_STATES) == set(TransactionState)


@pytest.mark.parametrize("target", list(TransactionState))
@pytest.mark.parametrize("source", list(TransactionState))
def test_check_transition_allows_exactly_the_valid_previous_states(
    source: TransactionState, target: TransactionState
) -> None:
    if source in KAFKA_VALID_PREVIOUS[target]:
        source.check_transition(target)
    else:
        with pytest.raises(IllegalTransitionError, match=target.value):
            source.check_transition(target)


def test_states_carry_kafkas_names_and_groupings() -> None:
    assert S.PREPARE_EPOCH_FENCE.value == "PrepareEpochFence"
    assert {s for s in S if s.is_complete} == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    assert {s for s in S if s.is_preparing} == {S.PREPARE_COMMIT, S.PREPARE_ABORT}
