"""Tests for rafka.transactions.transaction_metadata: prepare, persist, complete; epoch rules."""

from __future__ import annotations

import pytest

from rafka.protocol.errors import Errors
from rafka.protocol.types import TopicPartition
from rafka.transactions.transaction_metadata import (
    MAX_PRODUCER_EPOCH,
    TransactionMetadata,
    TxnTransitMetadata,
)
from rafka.transactions.transaction_state import IllegalTransitionError, TransactionState

S = TransactionState
TP = TopicPartition("orders", 0)


def fresh() -> TransactionMetadata:
    return TransactionMetadata.new("app", 5, 30_000, now=100)


def bumped(epoch: int = 0) -> TransactionMetadata:
    """An EMPTY id of producer 5 at ``epoch``."""
    m = fresh()
    m.producer_epoch = epoch
    return m


def step(m: TransactionMetadata, transit: TxnTransitMetadata | Errors) -> None:
    assert isinstance(transit, TxnTransitMetadata)
    m.complete_transition(transit)


def test_the_first_bump_of_a_new_id_gives_epoch_zero_and_completes_only_when_applied() -> None:
    m = fresh()
    transit = m.prepare_increment_epoch(30_000, None, now=200)
    assert isinstance(transit, TxnTransitMetadata)
    assert (transit.producer_epoch, transit.last_producer_epoch) == (0, -1)
    assert m.producer_epoch == -1 and m.pending_state is S.EMPTY
    m.complete_transition(transit)
    assert (m.producer_epoch, m.pending_state, m.last_update_timestamp) == (0, None, 200)


def test_a_second_prepare_while_one_is_pending_is_a_bug() -> None:
    m = bumped()
    m.prepare_add_partitions(frozenset({TP}), now=1)
    with pytest.raises(IllegalTransitionError, match="pending"):
        m.prepare_add_partitions(frozenset({TP}), now=2)


def test_an_abandoned_transition_leaves_the_state_as_it_was() -> None:
    m = bumped()
    m.prepare_add_partitions(frozenset({TP}), now=1)
    m.abandon_transition()
    assert (m.state, m.partitions, m.pending_state) == (S.EMPTY, set(), None)


def test_completing_something_other_than_the_pending_transition_is_a_bug() -> None:
    m = bumped()
    transit = m.prepare_add_partitions(frozenset({TP}), now=1)
    m.abandon_transition()
    with pytest.raises(IllegalTransitionError, match="completing Ongoing"):
        m.complete_transition(transit)


def test_invalid_transitions_are_refused_by_the_state_machine() -> None:
    m = bumped()
    with pytest.raises(IllegalTransitionError, match="PrepareCommit"):
        m.prepare_abort_or_commit(S.PREPARE_COMMIT, now=1)
    with pytest.raises(IllegalTransitionError):
        m.prepare_complete(now=1)
    assert m.pending_state is None


def test_a_transaction_goes_ongoing_prepare_complete_and_starts_at_its_first_partition() -> None:
    m = bumped()
    step(m, m.prepare_add_partitions(frozenset({TP}), now=10))
    step(m, m.prepare_add_partitions(frozenset({TopicPartition("orders", 1)}), now=20))
    assert m.start_timestamp == 10 and len(m.partitions) == 2
    step(m, m.prepare_abort_or_commit(S.PREPARE_COMMIT, now=30))
    assert m.state is S.PREPARE_COMMIT and len(m.partitions) == 2
    step(m, m.prepare_complete(now=40))
    assert (m.state, m.partitions) == (S.COMPLETE_COMMIT, set())
    step(m, m.prepare_add_partitions(frozenset({TP}), now=50))
    assert m.start_timestamp == 50


def test_a_retried_bump_with_the_last_epoch_returns_the_current_epoch_unbumped() -> None:
    m = bumped(3)
    step(m, m.prepare_increment_epoch(30_000, 3, now=1))
    assert (m.producer_epoch, m.last_producer_epoch) == (4, 3)
    retry = m.prepare_increment_epoch(30_000, 3, now=2)
    assert isinstance(retry, TxnTransitMetadata) and retry.producer_epoch == 4


def test_a_bump_expecting_an_epoch_neither_current_nor_last_is_fenced() -> None:
    m = bumped(3)
    assert m.prepare_increment_epoch(30_000, 1, now=1) is Errors.PRODUCER_FENCED
    assert m.pending_state is None


def test_an_exhausted_epoch_cannot_be_bumped_but_rotates_to_a_new_producer_id() -> None:
    m = bumped(MAX_PRODUCER_EPOCH - 1)
    assert m.is_producer_epoch_exhausted
    with pytest.raises(IllegalTransitionError, match="no epoch left"):
        m.prepare_increment_epoch(30_000, None, now=1)
    step(m, m.prepare_producer_id_rotation(9, 30_000, now=1, record_last_epoch=True))
    assert (m.producer_id, m.last_producer_id, m.producer_epoch) == (9, 5, 0)
    assert m.last_producer_epoch == MAX_PRODUCER_EPOCH - 1


def test_an_epoch_fence_bumps_once_even_when_retried_after_a_failed_abort() -> None:
    m = bumped(2)
    step(m, m.prepare_add_partitions(frozenset({TP}), now=1))
    fence = m.prepare_fence_epoch()
    assert (fence.state, fence.producer_epoch, m.pending_state) == (
        S.PREPARE_EPOCH_FENCE,
        3,
        fence.state,
    )
    m.apply_epoch_fence(fence.producer_epoch)
    assert (m.producer_epoch, m.pending_state, m.state) == (3, None, S.ONGOING)
    m.has_failed_epoch_fence = True
    assert m.prepare_fence_epoch().producer_epoch == 3


def test_the_last_epoch_cannot_be_fenced() -> None:
    m = bumped(MAX_PRODUCER_EPOCH)
    m.state = S.ONGOING
    with pytest.raises(IllegalTransitionError, match="no epoch left to fence"):
        m.prepare_fence_epoch()


def test_dead_follows_only_a_completed_state() -> None:
    m = bumped()
    assert m.prepare_dead().state is S.DEAD
    m.abandon_transition()
    step(m, m.prepare_add_partitions(frozenset({TP}), now=1))
    with pytest.raises(IllegalTransitionError):
        m.prepare_dead()


def test_restore_rebuilds_what_snapshot_recorded() -> None:
    m = bumped(4)
    step(m, m.prepare_add_partitions(frozenset({TP}), now=7))
    again = TransactionMetadata.restore("app", m.snapshot())
    assert again == m


def test_an_exhausted_epoch_still_answers_a_retry_or_fences_a_stranger_without_a_bump() -> None:
    m = bumped(MAX_PRODUCER_EPOCH - 1)
    m.last_producer_epoch = MAX_PRODUCER_EPOCH - 2
    retry = m.prepare_increment_epoch(30_000, MAX_PRODUCER_EPOCH - 2, now=1)
    assert isinstance(retry, TxnTransitMetadata) and retry.producer_epoch == MAX_PRODUCER_EPOCH - 1
    m.abandon_transition()
    assert m.prepare_increment_epoch(30_000, 7, now=1) is Errors.PRODUCER_FENCED
