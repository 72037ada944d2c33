"""Tests for rafka.protocol.errors: Kafka's codes, retriability and the exception mapping."""

from __future__ import annotations

import logging
import pickle

import pytest

from rafka.protocol import errors
from rafka.protocol.errors import (
    CorruptMessageError,
    Errors,
    InvalidConfigError,
    InvalidReplicationFactorError,
    KafkaTimeoutError,
    MessageTooLargeError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    RafkaError,
    RequestTimedOutError,
    RetriableError,
    UnknownServerError,
    raise_for,
)

# Numbers from Apache Kafka's Errors.java; they are wire-protocol facts.
KAFKA_CODES = {
    "UNKNOWN_SERVER_ERROR": -1,
    "NONE": 0,
    "OFFSET_OUT_OF_RANGE": 1,
    "CORRUPT_MESSAGE": 2,
    "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "LEADER_NOT_AVAILABLE": 5,
    "NOT_LEADER_OR_FOLLOWER": 6,
    "REQUEST_TIMED_OUT": 7,
    "MESSAGE_TOO_LARGE": 10,
    "STALE_CONTROLLER_EPOCH": 11,
    "NOT_COORDINATOR": 16,
    "INVALID_TOPIC_EXCEPTION": 17,
    "NOT_ENOUGH_REPLICAS": 19,
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20,
    "ILLEGAL_GENERATION": 22,
    "UNKNOWN_MEMBER_ID": 25,
    "REBALANCE_IN_PROGRESS": 27,
    "INVALID_REPLICATION_FACTOR": 38,
    "INVALID_CONFIG": 40,
    "NOT_CONTROLLER": 41,
    "KAFKA_STORAGE_ERROR": 56,
    "FENCED_LEADER_EPOCH": 74,
    "UNKNOWN_LEADER_EPOCH": 75,
    "UNKNOWN_TOPIC_ID": 100,
}


@pytest.mark.parametrize(("name", "code"), sorted(KAFKA_CODES.items()))
def test_members_have_kafkas_names_and_numbers(name: str, code: int) -> None:
    assert Errors[name] == code
    # EnumMeta.__call__ looks the value up; mypy checks the call against Errors.__new__.
    assert Errors(code).name == name  # type: ignore[call-arg]


def test_covers_every_kafka_code_from_minus_one_through_one_hundred() -> None:
    assert set(range(-1, 101)) <= {member.value for member in Errors}


def test_codes_are_unique() -> None:
    # IntEnum silently turns a repeated value into an alias; aliases would lose a name.
    assert len(Errors.__members__) == len(Errors)
    assert len({member.value for member in Errors}) == len(Errors)


@pytest.mark.parametrize(
    "member",
    [
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.REQUEST_TIMED_OUT,
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Errors.NOT_COORDINATOR,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.CORRUPT_MESSAGE,  # CorruptRecordException is retriable in Kafka
        Errors.NETWORK_EXCEPTION,
        Errors.FENCED_LEADER_EPOCH,
        Errors.NOT_CONTROLLER,
    ],
)
def test_transient_conditions_are_retriable(member: Errors) -> None:
    assert member.retriable is True
    assert issubclass(member.exception_class, RetriableError)


@pytest.mark.parametrize(
    "member",
    [
        Errors.UNKNOWN_SERVER_ERROR,
        Errors.OFFSET_OUT_OF_RANGE,
        Errors.MESSAGE_TOO_LARGE,
        Errors.INVALID_CONFIG,
        Errors.INVALID_REPLICATION_FACTOR,
        Errors.REBALANCE_IN_PROGRESS,
        Errors.TOPIC_AUTHORIZATION_FAILED,
        Errors.STALE_CONTROLLER_EPOCH,
    ],
)
def test_permanent_failures_are_not_retriable(member: Errors) -> None:
    assert member.retriable is False
    assert not issubclass(member.exception_class, RetriableError)


def test_every_member_has_a_nonempty_message() -> None:
    assert all(isinstance(m.message, str) and m.message for m in Errors)


def test_for_code_returns_the_matching_member() -> None:
    assert Errors.for_code(6) is Errors.NOT_LEADER_OR_FOLLOWER
    assert Errors.for_code(0) is Errors.NONE


def test_for_code_maps_unknown_codes_to_unknown_server_error_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger=errors.__name__):
        assert Errors.for_code(9999) is Errors.UNKNOWN_SERVER_ERROR
    assert "9999" in caplog.text


def test_known_codes_do_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=errors.__name__):
        Errors.for_code(10)
    assert caplog.records == []


@pytest.mark.parametrize(
    ("member", "cls"),
    [
        (Errors.UNKNOWN_SERVER_ERROR, UnknownServerError),
        (Errors.OFFSET_OUT_OF_RANGE, OffsetOutOfRangeError),
        (Errors.CORRUPT_MESSAGE, CorruptMessageError),
        (Errors.NOT_LEADER_OR_FOLLOWER, NotLeaderOrFollowerError),
        (Errors.REQUEST_TIMED_OUT, RequestTimedOutError),
        (Errors.MESSAGE_TOO_LARGE, MessageTooLargeError),
        (Errors.INVALID_REPLICATION_FACTOR, InvalidReplicationFactorError),
        (Errors.INVALID_CONFIG, InvalidConfigError),
    ],
)
def test_members_map_to_their_named_exception_class(member: Errors, cls: type[RafkaError]) -> None:
    assert member.exception_class is cls
    assert cls.error is member
    assert isinstance(member.exception(), cls)


def test_every_code_except_none_has_its_own_exception_class() -> None:
    failures = [m for m in Errors if m is not Errors.NONE]
    classes = {m: m.exception_class for m in failures}
    assert len(set(classes.values())) == len(failures)
    for member, cls in classes.items():
        assert issubclass(cls, RafkaError)
        assert cls.error is member
        assert cls.retriable is member.retriable
        assert issubclass(cls, RetriableError) is member.retriable


def test_every_exception_class_is_a_module_attribute_listed_in_all() -> None:
    for member in Errors:
        if member is Errors.NONE:
            continue
        cls = member.exception_class
        assert getattr(errors, cls.__name__) is cls
        assert cls.__name__ in errors.__all__


def test_generated_classes_use_camel_case_names() -> None:
    assert Errors.UNKNOWN_TOPIC_OR_PARTITION.exception_class.__name__ == (
        "UnknownTopicOrPartitionError"
    )
    assert Errors.POLICY_VIOLATION.exception_class.__name__ == "PolicyViolationError"
    assert Errors.NETWORK_EXCEPTION.exception_class.__name__ == "NetworkError"


def test_none_has_no_exception() -> None:
    with pytest.raises(ValueError):
        _ = Errors.NONE.exception_class
    with pytest.raises(ValueError):
        Errors.NONE.exception()


def test_str_shows_name_code_and_default_message() -> None:
    exc = NotLeaderOrFollowerError()
    assert str(exc) == (f"NOT_LEADER_OR_FOLLOWER (6): {Errors.NOT_LEADER_OR_FOLLOWER.message}")
    assert exc.message == Errors.NOT_LEADER_OR_FOLLOWER.message


def test_str_uses_a_specific_message_when_given() -> None:
    exc = Errors.MESSAGE_TOO_LARGE.exception("record of 2 MiB exceeds 1 MiB")
    assert isinstance(exc, MessageTooLargeError)
    assert str(exc) == "MESSAGE_TOO_LARGE (10): record of 2 MiB exceeds 1 MiB"


def test_retriable_instances_are_retriable_errors() -> None:
    assert isinstance(NotLeaderOrFollowerError(), RetriableError)
    assert NotLeaderOrFollowerError.retriable is True
    assert not isinstance(MessageTooLargeError(), RetriableError)
    assert MessageTooLargeError.retriable is False


def test_raise_for_none_does_nothing() -> None:
    raise_for(0)
    raise_for(Errors.NONE)


def test_raise_for_raises_the_mapped_exception() -> None:
    with pytest.raises(NotLeaderOrFollowerError) as info:
        raise_for(6, "partition t-0 moved")
    assert info.value.message == "partition t-0 moved"
    with pytest.raises(InvalidConfigError):
        raise_for(Errors.INVALID_CONFIG)


def test_raise_for_unknown_code_raises_unknown_server_error_naming_the_code() -> None:
    with pytest.raises(UnknownServerError) as info:
        raise_for(4242)
    assert "4242" in str(info.value)


def test_kafka_timeout_error_is_a_client_side_retriable_timeout() -> None:
    exc = KafkaTimeoutError("no metadata for topic t after 60s")
    assert isinstance(exc, RafkaError)
    assert isinstance(exc, RetriableError)
    assert exc.retriable is True
    assert exc.error is Errors.REQUEST_TIMED_OUT
    # Distinct from the broker's REQUEST_TIMED_OUT so callers can tell who gave up.
    assert not isinstance(exc, RequestTimedOutError)
    assert Errors.REQUEST_TIMED_OUT.exception_class is RequestTimedOutError


@pytest.mark.parametrize("member", [Errors.NOT_LEADER_OR_FOLLOWER, Errors.POLICY_VIOLATION])
def test_exceptions_survive_pickling(member: Errors) -> None:
    # Ray pickles exceptions raised inside actors; generated classes must round-trip too.
    original = member.exception("details")
    copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is type(original)
    assert str(copy) == str(original)
