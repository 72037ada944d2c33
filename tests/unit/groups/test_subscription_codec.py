"""Tests for rafka.groups.subscription_codec: JoinGroup and SyncGroup payload bytes."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rafka.groups.assignors import Subscription, get_assignor
from rafka.groups.group_metadata import GroupMetadata, GroupState, MemberMetadata
from rafka.groups.subscription_codec import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from rafka.protocol.types import TopicPartition
from rafka.protocol.wire.primitives import Writer

topic_names = st.text(min_size=1, max_size=20)
topic_partitions = st.tuples(topic_names, st.integers(0, 2**31 - 1))
subscriptions = st.builds(
    Subscription,
    topics=st.lists(topic_names, max_size=5).map(tuple),
    owned_partitions=st.lists(topic_partitions, max_size=8).map(tuple),
    user_data=st.binary(max_size=32),
)


def wire(*parts: tuple[str, Any]) -> bytes:
    """Bytes written field by field with Kafka's primitive encodings (("int16", 1), ...)."""
    writer = Writer()
    for kind, value in parts:
        getattr(writer, f"write_{kind}")(value)
    return writer.getvalue()


def topics(*names: str) -> tuple[str, Any]:
    """A non-flexible array of strings, as ("raw", bytes)."""
    return ("raw", wire(("int32", len(names)), *(("string", n) for n in names)))


# Round trips


@given(subscriptions)
def test_subscription_round_trips_with_owned_partitions_sorted(subscription: Subscription) -> None:
    decoded = decode_subscription(encode_subscription(subscription))
    assert decoded.topics == subscription.topics
    assert decoded.user_data == subscription.user_data
    assert list(decoded.owned_partitions) == sorted(subscription.owned_partitions)


@given(st.lists(topic_partitions, max_size=20))
def test_assignment_round_trips_sorted(partitions: list[TopicPartition]) -> None:
    assert decode_assignment(encode_assignment(partitions)) == sorted(partitions)


def test_equal_assignments_encode_to_equal_bytes() -> None:
    assert encode_assignment([TopicPartition("t", 1), TopicPartition("s", 0)]) == encode_assignment(
        [TopicPartition("s", 0), TopicPartition("t", 1)]
    )


def test_subscription_layout_is_kafkas_consumer_protocol_v1() -> None:
    data = encode_subscription(Subscription(("t",), (TopicPartition("t", 0),), b"x"))
    assert data == wire(
        ("int16", 1),  # version
        topics("t"),
        ("nullable_bytes", b"x"),  # user data
        ("int32", 1),  # owned partitions: one topic
        ("string", "t"),
        ("int32", 1),
        ("int32", 0),
    )


def test_assignment_layout_is_kafkas_consumer_protocol_v0_with_null_user_data() -> None:
    data = encode_assignment([TopicPartition("t", 1), TopicPartition("t", 0)])
    assert data == wire(
        ("int16", 0),
        ("int32", 1),
        ("string", "t"),
        ("int32", 2),
        ("int32", 0),
        ("int32", 1),
        ("nullable_bytes", None),
    )


def test_empty_assignment_bytes_mean_no_partitions() -> None:
    assert decode_assignment(b"") == []
    assert decode_assignment(encode_assignment([])) == []


def test_a_v0_subscription_has_no_owned_partitions() -> None:
    data = wire(("int16", 0), topics("a", "b"), ("nullable_bytes", None))
    assert decode_subscription(data) == Subscription(("a", "b"))


def test_newer_versions_with_extra_fields_still_decode() -> None:
    v3 = wire(
        ("int16", 3),
        topics("t"),
        ("nullable_bytes", None),
        ("int32", 1),
        ("string", "t"),
        ("int32", 1),
        ("int32", 2),
        ("int32", 7),  # generation id
        ("nullable_string", "rack-a"),
    )
    assert decode_subscription(v3) == Subscription(("t",), (TopicPartition("t", 2),))
    v9 = wire(("raw", v3[2:]), ("string", "appended by a future version"))
    assert decode_subscription(wire(("int16", 9), ("raw", v9))) == Subscription(
        ("t",), (TopicPartition("t", 2),)
    )


# Malformed input: ValueError naming the problem

BAD_SUBSCRIPTIONS = {
    "empty": (wire(("int8", 0)), "malformed subscription"),
    "negative version": (wire(("int16", -1), topics()), "bad version"),
    "truncated topics": (wire(("int16", 0), ("int32", 2), ("string", "t")), "malformed"),
    "trailing bytes": (
        wire(("int16", 0), topics(), ("nullable_bytes", None), ("int8", 0)),
        "1 bytes after",
    ),
    "negative partition": (
        wire(
            ("int16", 1),
            topics(),
            ("nullable_bytes", None),
            ("int32", 1),
            ("string", "t"),
            ("int32", 1),
            ("int32", -1),
        ),
        "partition -1",
    ),
}


@pytest.mark.parametrize(("data", "message"), BAD_SUBSCRIPTIONS.values(), ids=BAD_SUBSCRIPTIONS)
def test_malformed_subscription_is_a_value_error(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode_subscription(data)


BAD_ASSIGNMENTS = {
    "version only": (wire(("int16", 0)), "malformed assignment"),
    "truncated partitions": (wire(("int16", 0), ("int32", 1), ("string", "t")), "malformed"),
}


@pytest.mark.parametrize(("data", "message"), BAD_ASSIGNMENTS.values(), ids=BAD_ASSIGNMENTS)
def test_malformed_assignment_is_a_value_error(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode_assignment(data)


def test_non_bytes_input_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="expected bytes"):
        decode_subscription("not bytes")  # type: ignore[arg-type]


@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_raise_value_error(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        with contextlib.suppress(ValueError):
            decode(data)


# The leader's path: member bytes -> assignor -> per-member assignment bytes


def test_leader_decodes_subscriptions_assigns_and_encodes_per_member() -> None:
    group = GroupMetadata("g")
    group.transition_to(GroupState.PREPARING_REBALANCE)
    for member_id, topics in (("a", ("t1", "t2")), ("b", ("t1",))):
        group.add_member(
            MemberMetadata(
                member_id=member_id,
                client_id="client",
                client_host="/127.0.0.1",
                session_timeout_ms=10_000,
                rebalance_timeout_ms=30_000,
                protocols=(("range", encode_subscription(Subscription(topics))),),
                awaiting_join=True,
            )
        )
    group.init_next_generation()
    assert group.protocol_name is not None

    subscriptions_by_member = {
        member_id: decode_subscription(data)
        for member_id, data in group.current_member_metadata().items()
    }
    assignment = get_assignor(group.protocol_name).assign(
        {"t1": 4, "t2": 2}, subscriptions_by_member
    )
    wire = {
        member_id: encode_assignment(partitions) for member_id, partitions in assignment.items()
    }

    assert decode_assignment(wire["a"]) == [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)]
    assert decode_assignment(wire["b"]) == [("t1", 2), ("t1", 3)]
