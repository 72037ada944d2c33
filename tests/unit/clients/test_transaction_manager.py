"""The producer's transaction state machine, its configuration checks and its sequence numbers."""

from __future__ import annotations

import pytest

from rafka.clients.transaction_manager import (
    MAX_SEQUENCE,
    VALID_TRANSITIONS,
    ProducerIdAndEpoch,
    SequenceReaction,
    TransactionManager,
    TransactionState,
    check_transactional_id,
    resolve_idempotence,
    sequence_reaction,
)
from rafka.protocol.errors import (
    Errors,
    InvalidConfigError,
    RafkaError,
)
from rafka.protocol.messages.produce import ACKS_ALL, ACKS_LEADER, ACKS_NONE
from rafka.protocol.messages.transactions import MAX_TRANSACTIONAL_ID_LENGTH
from rafka.protocol.types import TopicPartition

S = TransactionState
TP = TopicPartition("events", 0)


def ready(transactional_id: str | None = "txn") -> TransactionManager:
    """A manager past init_transactions (or, without an id, past its first producer id)."""
    manager = TransactionManager(transactional_id)
    if transactional_id is not None:
        manager.begin_init()
    manager.set_producer(ProducerIdAndEpoch(7, 0))
    return manager


def in_transaction() -> TransactionManager:
    manager = ready()
    manager.begin_transaction()
    return manager


def error_of(call: object) -> RafkaError:
    assert callable(call)
    with pytest.raises(RafkaError) as raised:
        call()
    return raised.value


# ------------------------------------------------------------------ the table


def test_every_state_has_its_transitions_listed() -> None:
    assert set(VALID_TRANSITIONS) == set(TransactionState)
    assert all(targets <= set(TransactionState) for targets in VALID_TRANSITIONS.values())


def test_any_state_may_fail_fatally_and_a_fatal_error_is_final() -> None:
    assert all(S.FATAL_ERROR in targets for targets in VALID_TRANSITIONS.values())
    assert VALID_TRANSITIONS[S.FATAL_ERROR] == {S.FATAL_ERROR}


@pytest.mark.parametrize(
    ("source", "target"),
    [(s, t) for s in TransactionState for t in TransactionState if t not in VALID_TRANSITIONS[s]],
)
def test_a_transition_the_table_forbids_raises_invalid_txn_state(
    source: TransactionState, target: TransactionState
) -> None:
    manager = TransactionManager("txn")
    manager.state = source
    error = error_of(lambda: manager.transition(target))
    assert error.error is Errors.INVALID_TXN_STATE
    assert source.value in str(error) and target.value in str(error)
    assert manager.state is source


def test_a_whole_transaction_walks_the_states_kafka_names() -> None:
    manager = TransactionManager("txn")
    seen = [manager.state]
    manager.begin_init()
    seen.append(manager.state)
    manager.set_producer(ProducerIdAndEpoch(3, 1))
    seen.append(manager.state)
    manager.begin_transaction()
    seen.append(manager.state)
    manager.begin_commit()
    seen.append(manager.state)
    manager.completed()
    seen.append(manager.state)
    assert seen == [
        S.UNINITIALIZED,
        S.INITIALIZING,
        S.READY,
        S.IN_TRANSACTION,
        S.COMMITTING_TRANSACTION,
        S.READY,
    ]


# ------------------------------------------------------------------ bad calls


@pytest.mark.parametrize(
    "call", ["begin_transaction", "begin_commit", "begin_abort", "check_can_send"]
)
def test_a_transactional_call_before_init_transactions_says_to_call_it(call: str) -> None:
    manager = TransactionManager("txn")
    error = error_of(getattr(manager, call))
    assert error.error is Errors.INVALID_TXN_STATE
    assert "init_transactions()" in str(error)


def test_sending_outside_a_transaction_says_to_begin_one() -> None:
    error = error_of(ready().check_can_send)
    assert error.error is Errors.INVALID_TXN_STATE
    assert "begin_transaction()" in str(error)


def test_commit_with_no_transaction_open_says_to_begin_one() -> None:
    error = error_of(ready().begin_commit)
    assert "begin_transaction()" in str(error)


def test_init_transactions_twice_is_refused() -> None:
    error = error_of(ready().begin_init)
    assert error.error is Errors.INVALID_TXN_STATE
    assert "already" in str(error)


def test_begin_transaction_twice_says_to_finish_the_first() -> None:
    error = error_of(in_transaction().begin_transaction)
    assert "commit_transaction() or abort_transaction()" in str(error)


def test_transactional_calls_on_a_producer_without_a_transactional_id_say_to_set_one() -> None:
    manager = ready(None)
    for call in (manager.begin_init, manager.begin_transaction, manager.begin_commit):
        error = error_of(call)
        assert error.error is Errors.INVALID_TXN_STATE
        assert "transactional_id" in str(error)


def test_an_idempotent_producer_may_always_send() -> None:
    manager = TransactionManager(None)
    manager.check_can_send()
    manager.set_producer(ProducerIdAndEpoch(1, 0))
    manager.check_can_send()
    assert manager.state is S.READY


# ------------------------------------------------------------------ errors


def test_an_abortable_error_allows_only_an_abort() -> None:
    manager = in_transaction()
    manager.fail(Errors.TOPIC_AUTHORIZATION_FAILED.exception("not allowed to write"))
    assert manager.state is S.ABORTABLE_ERROR
    for call in (manager.check_can_send, manager.begin_commit):
        error = error_of(call)
        assert error.error is Errors.TOPIC_AUTHORIZATION_FAILED
        assert "abort_transaction()" in str(error)
    manager.begin_abort()
    assert manager.state is S.ABORTING_TRANSACTION
    manager.completed()
    manager.begin_transaction()
    assert manager.state is S.IN_TRANSACTION


def test_a_batch_failing_during_commit_makes_the_commit_fail_with_its_error() -> None:
    manager = in_transaction()
    manager.begin_commit()
    manager.fail(Errors.MESSAGE_TOO_LARGE.exception("record too big"))
    error = error_of(manager.check_can_commit)
    assert error.error is Errors.MESSAGE_TOO_LARGE
    assert "abort_transaction()" in str(error)


@pytest.mark.parametrize("fatal", [Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH])
def test_a_fatal_error_is_raised_by_every_later_call(fatal: Errors) -> None:
    manager = in_transaction()
    manager.fail(fatal.exception("a newer producer called init_transactions"))
    assert manager.state is S.FATAL_ERROR
    for call in (
        manager.check_can_send,
        manager.begin_commit,
        manager.begin_abort,
        manager.begin_transaction,
    ):
        error = error_of(call)
        assert error.error is fatal
        assert "create a new one" in str(error)


def test_an_idempotent_producer_ignores_non_fatal_errors_but_not_fatal_ones() -> None:
    manager = ready(None)
    manager.fail(Errors.MESSAGE_TOO_LARGE.exception())
    assert manager.state is S.READY
    manager.fail(Errors.PRODUCER_FENCED.exception())
    assert manager.state is S.FATAL_ERROR
    assert error_of(manager.check_can_send).error is Errors.PRODUCER_FENCED


def test_an_abort_that_needs_a_new_epoch_goes_through_initializing() -> None:
    manager = in_transaction()
    manager.request_new_producer_id()
    manager.fail(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.exception())
    manager.begin_abort()
    manager.transition(S.INITIALIZING)
    manager.set_producer(ProducerIdAndEpoch(7, 1))
    assert manager.state is S.READY
    assert not manager.needs_producer_id


# ------------------------------------------------------------------ config


@pytest.mark.parametrize("bad", ["", "x" * (MAX_TRANSACTIONAL_ID_LENGTH + 1)])
def test_an_empty_or_too_long_transactional_id_is_invalid_config(bad: str) -> None:
    with pytest.raises(InvalidConfigError, match="transactional_id"):
        check_transactional_id(bad)


def test_a_transactional_id_of_the_longest_length_is_accepted() -> None:
    TransactionManager("x" * MAX_TRANSACTIONAL_ID_LENGTH)


def test_a_non_positive_transaction_timeout_is_invalid_config() -> None:
    with pytest.raises(InvalidConfigError, match="transaction_timeout_ms"):
        TransactionManager("txn", 0)


@pytest.mark.parametrize(
    ("explicit", "acks", "in_flight", "transactional_id", "idempotent"),
    [
        (None, ACKS_ALL, 5, None, True),  # Kafka 3.x: on by default
        (None, ACKS_LEADER, 5, None, False),  # acks=1 chosen: off without a word
        (None, ACKS_NONE, 5, None, False),
        (None, ACKS_ALL, 6, None, False),
        (False, ACKS_ALL, 5, None, False),
        (True, ACKS_ALL, 1, None, True),
        (None, ACKS_ALL, 5, "txn", True),  # a transactional id implies idempotence
    ],
)
def test_idempotence_follows_kafkas_rules(
    explicit: bool | None,
    acks: int,
    in_flight: int,
    transactional_id: str | None,
    idempotent: bool,
) -> None:
    assert resolve_idempotence(explicit, acks, in_flight, transactional_id) is idempotent


@pytest.mark.parametrize(
    ("explicit", "acks", "in_flight", "transactional_id", "named"),
    [
        (True, ACKS_LEADER, 5, None, "acks"),
        (True, ACKS_NONE, 5, None, "acks"),
        (True, ACKS_ALL, 6, None, "max_in_flight_requests_per_connection"),
        (None, ACKS_LEADER, 5, "txn", "acks"),
        (False, ACKS_ALL, 5, "txn", "enable_idempotence"),
        (None, ACKS_ALL, 0, None, "max_in_flight_requests_per_connection"),
    ],
)
def test_settings_that_cannot_keep_requested_idempotence_are_invalid_config(
    explicit: bool | None, acks: int, in_flight: int, transactional_id: str | None, named: str
) -> None:
    with pytest.raises(InvalidConfigError, match=named):
        resolve_idempotence(explicit, acks, in_flight, transactional_id)


# ------------------------------------------------------------------ sequences and partitions


def test_sequences_count_records_per_partition() -> None:
    manager = ready(None)
    other = TopicPartition("events", 1)
    assert [manager.next_sequence(TP, 3), manager.next_sequence(TP, 2)] == [0, 3]
    assert manager.next_sequence(other, 4) == 0
    assert manager.next_sequence(TP, 1) == 5


def test_sequences_wrap_around_past_int32() -> None:
    manager = ready(None)
    manager.next_sequence(TP, MAX_SEQUENCE)
    assert manager.next_sequence(TP, 3) == MAX_SEQUENCE
    assert manager.next_sequence(TP, 1) == 2


def test_a_new_producer_id_restarts_every_sequence_at_zero() -> None:
    manager = ready(None)
    manager.next_sequence(TP, 10)
    manager.request_new_producer_id()
    assert manager.needs_producer_id
    assert manager.state is S.INITIALIZING
    manager.set_producer(ProducerIdAndEpoch(8, 0))
    assert manager.next_sequence(TP, 1) == 0
    assert manager.state is S.READY


def test_only_partitions_not_yet_in_the_transaction_are_added() -> None:
    manager = in_transaction()
    other = TopicPartition("events", 1)
    assert manager.partitions_to_add([other, TP]) == [TP, other]
    assert manager.blocks(TP)
    manager.partitions_added([TP])
    assert manager.partitions_to_add([other, TP]) == [other]
    assert not manager.blocks(TP)
    assert manager.started


def test_a_new_transaction_starts_with_no_partitions() -> None:
    manager = in_transaction()
    manager.partitions_added([TP])
    manager.begin_commit()
    manager.completed()
    manager.begin_transaction()
    assert manager.partitions_to_add([TP]) == [TP]
    assert not manager.started


# ------------------------------------------------------------------ sequence answers


@pytest.mark.parametrize(
    ("error", "transactional", "maybe_written", "reaction"),
    [
        (Errors.DUPLICATE_SEQUENCE_NUMBER, False, True, SequenceReaction.SUCCEED),
        (Errors.DUPLICATE_SEQUENCE_NUMBER, True, False, SequenceReaction.SUCCEED),
        (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, False, False, SequenceReaction.RESEND_UNDER_NEW_ID),
        (Errors.UNKNOWN_PRODUCER_ID, False, False, SequenceReaction.RESEND_UNDER_NEW_ID),
        (Errors.UNKNOWN_PRODUCER_ID, False, True, SequenceReaction.FAIL),
        (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, True, False, SequenceReaction.FAIL),
        (Errors.INVALID_PRODUCER_EPOCH, False, False, SequenceReaction.FAIL_PRODUCER),
        (Errors.PRODUCER_FENCED, True, False, SequenceReaction.FAIL_PRODUCER),
    ],
)
def test_each_sequence_answer_gets_kafkas_reaction(
    error: Errors, transactional: bool, maybe_written: bool, reaction: SequenceReaction
) -> None:
    assert sequence_reaction(error, transactional, maybe_written) is reaction
