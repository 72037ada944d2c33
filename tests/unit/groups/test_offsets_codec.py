"""Tests for rafka.groups.offsets_codec: ``__consumer_offsets`` records, the group -> partition map.

``partition_for`` must place every group exactly where Kafka does
(``Utils.abs(groupId.hashCode()) % n``), so the expected values come from an independent, literal
transcription of Java's ``String.hashCode`` (s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units,
wrapped to a signed 32-bit int) and of Kafka's ``Utils.abs`` (``Math.abs``, except that
Integer.MIN_VALUE maps to 0), plus values Java itself prints.
"""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rafka.groups.offsets_codec import (
    GROUP_KEY_VERSION,
    OFFSET_KEY_VERSION,
    OFFSETS_TOPIC,
    VALUE_VERSION,
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    StoredMember,
    decode_group,
    decode_key,
    decode_offset,
    encode_group,
    encode_key,
    encode_offset,
    java_string_hash,
    partition_for,
)

INT_MIN = -(2**31)

# Text msgpack can carry (lone surrogates cannot be encoded as UTF-8; no Java client sends them).
texts = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
any_text = st.text(max_size=40)  # for hashing, lone surrogates included: Java strings may hold them
int64 = st.integers(-(2**63), 2**63 - 1)


def reference_java_hash(text: str) -> int:
    """Java's String.hashCode written out from its definition, a check independent of the module."""
    units: list[int] = []
    for char in text:
        code = ord(char)
        if code > 0xFFFF:  # outside the BMP: a surrogate pair, two UTF-16 units
            code -= 0x10000
            units += [0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)]
        else:
            units.append(code)
    n = len(units)
    total = sum(unit * 31 ** (n - 1 - i) for i, unit in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


def reference_partition(group_id: str, num_partitions: int) -> int:
    """Kafka's GroupMetadataManager.partitionFor.

    That is Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount.
    """
    h = reference_java_hash(group_id)
    return (0 if h == INT_MIN else abs(h)) % num_partitions


# ---------------------------------------------------------------------------- String.hashCode


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("Aa", 2112),  # the classic collision
        ("BB", 2112),
        ("polygenelubricants", INT_MIN),  # the classic string whose hash is Integer.MIN_VALUE
        ("\U0001f600", 0xD83D * 31 + 0xDE00),  # a non-BMP character is two UTF-16 units
        ("\u00e9", 0xE9),
    ],
)
def test_java_string_hash_matches_values_java_prints(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected
    assert reference_java_hash(text) == expected


def test_non_bmp_characters_hash_as_two_utf16_units_not_one_code_point() -> None:
    emoji = "\U0001f600"
    assert java_string_hash(emoji) == 1772899
    assert java_string_hash(emoji) != ord(emoji)
    # In Java the character and its explicit surrogate pair are the same string, so the same hash.
    assert java_string_hash("g-" + emoji) == java_string_hash("g-\ud83d\ude00")
    assert java_string_hash("\ud800") == 0xD800  # a lone surrogate is one unit
    assert java_string_hash("x\U00010000y") == reference_java_hash("x\U00010000y")


def test_java_string_hash_wraps_to_a_signed_32_bit_int() -> None:
    long_id = "consumer-group-with-a-rather-long-name-" * 5
    h = java_string_hash(long_id)
    assert INT_MIN <= h < 2**31
    assert h == reference_java_hash(long_id)
    assert java_string_hash("my-group") == -1906497762  # negative hashes occur for ordinary ids


@given(any_text)
@settings(max_examples=300, deadline=None)
def test_java_string_hash_equals_the_reference_formula(text: str) -> None:
    assert java_string_hash(text) == reference_java_hash(text)


# ---------------------------------------------------------------------------- partition_for


@pytest.mark.parametrize(
    ("group_id", "num_partitions", "expected"),
    [
        ("test-group", 50, 627841412 % 50),
        ("hello", 50, 99162322 % 50),
        ("", 50, 0),
        ("my-group", 50, 1906497762 % 50),  # Utils.abs of a negative hash, not hash & 0x7fffffff
        ("my-group", 7, 1906497762 % 7),
        ("polygenelubricants", 50, 0),  # Utils.abs(Integer.MIN_VALUE) == 0
        ("polygenelubricants", 7, 0),
    ],
)
def test_partition_for_is_kafkas_utils_abs_of_the_hash_mod_n(
    group_id: str, num_partitions: int, expected: int
) -> None:
    assert partition_for(group_id, num_partitions) == expected
    assert reference_partition(group_id, num_partitions) == expected


def test_test_group_hash_is_the_one_java_computes() -> None:
    assert java_string_hash("test-group") == reference_java_hash("test-group") == 627841412


@given(any_text, st.integers(1, 1000))
@settings(max_examples=300, deadline=None)
def test_partition_for_is_stable_in_range_and_equals_kafkas(
    group_id: str, num_partitions: int
) -> None:
    partition = partition_for(group_id, num_partitions)
    assert 0 <= partition < num_partitions
    assert partition == partition_for(group_id, num_partitions)
    assert partition == reference_partition(group_id, num_partitions)


def test_partition_for_a_single_partition_topic_is_always_0() -> None:
    assert {
        partition_for(g, 1) for g in ("", "a", "my-group", "polygenelubricants", "\U0001f600")
    } == {0}


def test_partition_for_spreads_groups_over_the_partitions() -> None:
    used = {partition_for(f"group-{i}", 50) for i in range(1000)}
    assert len(used) > 40


# ---------------------------------------------------------------------------- round trips


def test_offsets_topic_name_is_kafkas() -> None:
    assert OFFSETS_TOPIC == "__consumer_offsets"


def test_offset_key_round_trips_and_keeps_the_documented_layout() -> None:
    key = OffsetKey("my-group", "orders", 7)
    data = encode_key(key)
    assert decode_key(data) == key
    assert msgpack.unpackb(data) == [OFFSET_KEY_VERSION, "my-group", "orders", 7]


def test_group_key_round_trips_and_keeps_the_documented_layout() -> None:
    key = GroupKey("my-group")
    data = encode_key(key)
    assert decode_key(data) == key
    assert msgpack.unpackb(data) == [GROUP_KEY_VERSION, "my-group"]


def test_tombstone_keys_tell_a_group_from_its_offsets() -> None:
    # A tombstone is a key with no value: compaction deletes whatever that key named, so the key
    # alone must say whether a group's metadata or one of its offsets goes.
    group_key, offset_key = encode_key(GroupKey("g")), encode_key(OffsetKey("g", "t", 0))
    assert group_key != offset_key
    assert isinstance(decode_key(group_key), GroupKey)
    assert isinstance(decode_key(offset_key), OffsetKey)
    # Keys are deterministic, so a tombstone written later compacts away the earlier record.
    assert encode_key(GroupKey("g")) == group_key
    assert encode_key(OffsetKey("g", "t", 0)) == offset_key
    assert encode_key(OffsetKey("g", "t", 1)) != offset_key


def test_version_0_offset_keys_are_read_as_offset_keys() -> None:
    assert decode_key(msgpack.packb([0, "g", "t", 3])) == OffsetKey("g", "t", 3)


@given(texts, texts, st.integers(0, 2**31 - 1))
@settings(max_examples=200, deadline=None)
def test_any_offset_key_round_trips(group: str, topic: str, partition: int) -> None:
    assert decode_key(encode_key(OffsetKey(group, topic, partition))) == OffsetKey(
        group, topic, partition
    )
    assert decode_key(encode_key(GroupKey(group))) == GroupKey(group)


def test_offset_value_round_trips_and_keeps_the_documented_layout() -> None:
    value = OffsetValue(123_456_789_012, "checkpoint \u2713", 1_700_000_000_000)
    data = encode_offset(value)
    assert decode_offset(data) == value
    assert msgpack.unpackb(data) == [
        VALUE_VERSION,
        123_456_789_012,
        "checkpoint \u2713",
        1_700_000_000_000,
    ]


@given(int64, texts, int64)
@settings(max_examples=200, deadline=None)
def test_any_offset_value_round_trips(offset: int, metadata: str, timestamp: int) -> None:
    value = OffsetValue(offset, metadata, timestamp)
    assert decode_offset(encode_offset(value)) == value


def member(
    i: int, subscription: bytes = b"\x00\x01sub", assignment: bytes = b"\xffassign"
) -> StoredMember:
    return StoredMember(
        f"consumer-{i}-5b0c",
        f"client-{i}",
        f"/10.0.0.{i}",
        10_000 + i,
        300_000,
        subscription,
        assignment,
    )


def test_group_value_with_members_round_trips() -> None:
    value = GroupValue(
        "consumer",
        12,
        "range",
        "consumer-1-5b0c",
        1_700_000_000_000,
        (member(1), member(2, b"", b""), member(3, bytes(range(256)), b"\x00" * 1000)),
    )
    decoded = decode_group(encode_group(value))
    assert decoded == value
    assert [m.member_id for m in decoded.members] == [
        "consumer-1-5b0c",
        "consumer-2-5b0c",
        "consumer-3-5b0c",
    ]
    assert all(
        isinstance(m.subscription, bytes) and isinstance(m.assignment, bytes)
        for m in decoded.members
    )


def test_empty_group_value_round_trips_with_no_protocol_leader_or_members() -> None:
    value = GroupValue("consumer", 3, None, None, 0, ())
    data = encode_group(value)
    assert decode_group(data) == value
    assert msgpack.unpackb(data) == [VALUE_VERSION, "consumer", 3, None, None, 0, []]


member_strategy = st.builds(
    StoredMember,
    texts,
    texts,
    texts,
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.binary(max_size=64),
    st.binary(max_size=64),
)


@given(
    texts,
    st.integers(0, 2**31 - 1),
    st.none() | texts,
    st.none() | texts,
    int64,
    st.lists(member_strategy, max_size=5).map(tuple),
)
@settings(max_examples=200, deadline=None)
def test_any_group_value_round_trips(
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    timestamp: int,
    members: tuple[StoredMember, ...],
) -> None:
    value = GroupValue(protocol_type, generation, protocol, leader, timestamp, members)
    assert decode_group(encode_group(value)) == value


# ---------------------------------------------------------------------------- garbage


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "not valid msgpack"),
        (b"\xc1", "not valid msgpack"),  # a byte msgpack never uses
        (b"\x92\x01", "not valid msgpack"),  # truncated array
        (msgpack.packb([2, "g"]) + b"\x00", "not valid msgpack"),  # trailing bytes
        (b"\x81\x90\x00", "not valid msgpack"),  # a map keyed by an array
        (msgpack.packb(5), "non-empty array"),
        (msgpack.packb("g"), "non-empty array"),
        (msgpack.packb({"version": 2}), "non-empty array"),
        (msgpack.packb([]), "non-empty array"),
        (msgpack.packb([9, "g"]), "unknown version"),
        (msgpack.packb(["2", "g"]), "unknown version"),
        (msgpack.packb([1, "g", "t"]), "too few fields"),
        (msgpack.packb([2]), "too few fields"),
        (msgpack.packb([1, 5, "t", 0]), "group must be a string"),
        (msgpack.packb([1, "g", None, 0]), "topic must be a string"),
        (msgpack.packb([1, "g", "t", "0"]), "partition must be an integer"),
        (msgpack.packb([1, "g", "t", True]), "partition must be an integer"),
        (msgpack.packb([1, "g", "t", 1.5]), "partition must be an integer"),
        (msgpack.packb([2, b"g"]), "group must be a string"),
    ],
)
def test_decode_key_refuses_garbage_with_a_value_error_naming_the_problem(
    data: bytes, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        decode_key(data)


@given(st.binary(max_size=64))
@settings(max_examples=300, deadline=None)
def test_decode_key_of_random_bytes_returns_a_key_or_raises_value_error(data: bytes) -> None:
    try:
        key = decode_key(data)
    except ValueError:
        return
    assert isinstance(key, (OffsetKey, GroupKey))


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\xc1", "not valid msgpack"),
        (msgpack.packb([1, 5, ""]), "3 fields, expected 4"),
        (msgpack.packb([1, "5", "", 0]), "offset must be an integer"),
        (msgpack.packb([1, 5, None, 0]), "metadata must be a string"),
        (msgpack.packb([1, 5, "", "now"]), "commit timestamp must be an integer"),
    ],
)
def test_decode_offset_refuses_garbage_with_a_value_error(data: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        decode_offset(data)


GOOD_MEMBER = ["m", "c", "/h", 10_000, 30_000, b"s", b"a"]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ([1, "consumer", 1, "range", "m", 0], "6 fields, expected 7"),
        ([1, "consumer", 1, "range", "m", 0, 5], "members"),
        ([1, "consumer", 1, "range", "m", 0, [5]], "member"),
        ([1, "consumer", 1, "range", "m", 0, [["m", "c"]]], "member"),
        (
            [1, "consumer", 1, "range", "m", 0, [["m", "c", "/h", 10_000, 30_000, 5, b"a"]]],
            "subscription",
        ),
        (
            [1, "consumer", 1, "range", "m", 0, [["m", "c", "/h", 10_000, 30_000, b"s", "text"]]],
            "assignment",
        ),
        (
            [1, "consumer", 1, "range", "m", 0, [[None, "c", "/h", 10_000, 30_000, b"s", b"a"]]],
            "member id",
        ),
        (
            [1, "consumer", 1, "range", "m", 0, [["m", "c", "/h", "10s", 30_000, b"s", b"a"]]],
            "session timeout",
        ),
        ([1, "consumer", "1", "range", "m", 0, [GOOD_MEMBER]], "generation"),
        ([1, None, 1, "range", "m", 0, [GOOD_MEMBER]], "protocol type"),
        ([1, "consumer", 1, 5, "m", 0, [GOOD_MEMBER]], "protocol"),
        ([1, "consumer", 1, "range", ["m"], 0, [GOOD_MEMBER]], "leader"),
        ([1, "consumer", 1, "range", "m", None, [GOOD_MEMBER]], "timestamp"),
    ],
)
def test_decode_group_refuses_garbage_with_a_value_error(fields: list, problem: str) -> None:
    # The coordinator treats a ValueError while loading as a failed load it retries; any other
    # exception, or silently coerced fields (bytes(5) is five zero bytes), would corrupt or wedge
    # it.
    with pytest.raises(ValueError, match=problem):
        decode_group(msgpack.packb(fields))


def test_decode_group_accepts_a_well_formed_member_list() -> None:
    value = decode_group(msgpack.packb([1, "consumer", 1, "range", "m", 0, [GOOD_MEMBER]]))
    assert value.members == (StoredMember("m", "c", "/h", 10_000, 30_000, b"s", b"a"),)
