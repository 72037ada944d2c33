"""Tests for rafka.groups.subscription_codec: JoinGroup and SyncGroup payload bytes."""

from __future__ import annotations

import contextlib
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rafka.groups.assignors import Subscription, get_assignor
from rafka.groups.group_metadata import GroupMetadata, GroupState, MemberMetadata
from rafka.groups.subscription_codec import (
    VERSION,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from rafka.protocol.types import TopicPartition

topic_names = st.text(min_size=1, max_size=20)
topic_partitions = st.tuples(topic_names, st.integers(0, 2**31 - 1))
subscriptions = st.builds(
    Subscription,
    topics=st.lists(topic_names, max_size=5).map(tuple),
    owned_partitions=st.lists(topic_partitions, max_size=8).map(tuple),
    user_data=st.binary(max_size=32),
)


def pack(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


# Round trips


@given(subscriptions)
def test_subscription_round_trips(subscription: Subscription) -> None:
    assert decode_subscription(encode_subscription(subscription)) == subscription


@given(st.lists(topic_partitions, max_size=20))
def test_assignment_round_trips_sorted(partitions: list[TopicPartition]) -> None:
    assert decode_assignment(encode_assignment(partitions)) == sorted(partitions)


def test_equal_assignments_encode_to_equal_bytes() -> None:
    assert encode_assignment([TopicPartition("t", 1), TopicPartition("s", 0)]) == encode_assignment(
        [TopicPartition("s", 0), TopicPartition("t", 1)]
    )


def test_subscription_layout_is_a_versioned_array() -> None:
    data = encode_subscription(Subscription(("t",), (TopicPartition("t", 0),), b"x"))
    assert msgpack.unpackb(data, raw=False) == [VERSION, ["t"], [["t", 0]], b"x"]


def test_empty_assignment_bytes_mean_no_partitions() -> None:
    assert decode_assignment(b"") == []
    assert decode_assignment(encode_assignment([])) == []


def test_newer_versions_with_extra_fields_still_decode() -> None:
    subscription = decode_subscription(pack([VERSION + 1, ["t"], [["t", 2]], b"", "rack-a"]))
    assert subscription == Subscription(("t",), (TopicPartition("t", 2),))
    assert decode_assignment(pack([VERSION + 1, [["t", 2]], b"user"])) == [("t", 2)]


# Malformed input: ValueError naming the problem

BAD_SUBSCRIPTIONS = {
    "empty": (b"", "not valid msgpack"),
    "not msgpack": (b"\xc1", "not valid msgpack"),
    "trailing bytes": (pack([0, [], [], b""]) + b"\x00", "not valid msgpack"),
    "not an array": (pack({"topics": []}), "array"),
    "too short": (pack([0, ["t"], []]), "at least 4 fields"),
    "negative version": (pack([-1, [], [], b""]), "version"),
    "bool version": (pack([True, [], [], b""]), "version"),
    "topic not a string": (pack([0, [1], [], b""]), "topics"),
    "topics not a list": (pack([0, "t", [], b""]), "topics"),
    "user data not bytes": (pack([0, [], [], "text"]), "user data"),
    "owned not a list": (pack([0, [], "t", b""]), "partitions must be a list"),
    "owned pair too long": (pack([0, [], [["t", 0, 1]], b""]), "partition"),
    "negative partition": (pack([0, [], [["t", -1]], b""]), "partition"),
    "bool partition": (pack([0, [], [["t", True]], b""]), "partition"),
    "non-string topic in owned": (pack([0, [], [[3, 0]], b""]), "partition"),
}


@pytest.mark.parametrize(("data", "message"), BAD_SUBSCRIPTIONS.values(), ids=BAD_SUBSCRIPTIONS)
def test_malformed_subscription_is_a_value_error(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode_subscription(data)


BAD_ASSIGNMENTS = {
    "not msgpack": (b"\xc1", "not valid msgpack"),
    "too short": (pack([0]), "at least 2 fields"),
    "string version": (pack(["0", []]), "version"),
    "partition as string": (pack([0, [["t", "1"]]]), "partition"),
    "pair not a list": (pack([0, ["t"]]), "partition"),
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
