"""Tests for rafka.clients.partitioner: Kafka-compatible murmur2 and sticky partitioning."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rafka.clients.partitioner import (
    DefaultPartitioner,
    StickyPartitioner,
    murmur2,
    partition_for_key,
    to_positive,
)

# Expected values are Java's signed ints from apache/kafka
# clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2.
# The comment on each row gives len(key) % 4, the tail length the hash handles separately.
KAFKA_MURMUR2_VECTORS = [
    (b"21", -973932308),  # 2
    (b"foobar", -790332482),  # 2
    (b"abc", 479470107),  # 3
    (b"a-little-bit-long-string", -985981536),  # 0
    (b"a-little-bit-longer-string", -1486304829),  # 2
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),  # 0
]

# Partitions out of 1000 from kafka-python (dpkp/kafka-python) test/test_partitioner.py,
# test_murmur2_java_compatibility, which it took from Kafka's Java producer.
# They cover the empty key and the 1-byte tail that the Java vectors lack.
KAFKA_PYTHON_PARTITIONS_OF_1000 = [
    (b"", 681),  # 0
    (b"a", 524),  # 1
    (b"ab", 434),  # 2
    (b"abc", 107),  # 3
    (b"123456789", 566),  # 1
    (b"\x00 ", 742),  # 2
]


@pytest.mark.parametrize(("key", "expected"), KAFKA_MURMUR2_VECTORS)
def test_murmur2_matches_kafka_java_utils(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


@pytest.mark.parametrize(("key", "expected"), KAFKA_PYTHON_PARTITIONS_OF_1000)
def test_partition_for_key_matches_kafka_python_and_java(key: bytes, expected: int) -> None:
    assert partition_for_key(key, 1000) == expected


def test_murmur2_of_empty_input_is_positive_known_value() -> None:
    # murmur2(b"") % 1000 == 681 per kafka-python; the full value pins the empty-input path.
    assert murmur2(b"") == 275646681


def test_murmur2_returns_signed_32_bit_range_for_high_bytes() -> None:
    for key in (b"\xff", b"\x80\x81", b"\xa4\xa4\xa4", b"\x81" * 1000):
        assert -(2**31) <= murmur2(key) < 2**31


def test_murmur2_accepts_any_bytes_like_object() -> None:
    key = b"a-little-bit-longer-string"
    assert murmur2(bytearray(key)) == murmur2(memoryview(key)) == -1486304829  # type: ignore[arg-type]


def test_to_positive_clears_only_the_sign_bit() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(12345) == 12345
    assert to_positive(-973932308) == -973932308 & 0x7FFFFFFF


@pytest.mark.parametrize("num_partitions", [0, -1])
def test_partition_for_key_rejects_fewer_than_one_partition(num_partitions: int) -> None:
    with pytest.raises(ValueError):
        partition_for_key(b"key", num_partitions)


@given(key=st.binary(max_size=200), num_partitions=st.integers(min_value=1, max_value=10_000))
def test_partition_for_key_is_in_range_and_deterministic(key: bytes, num_partitions: int) -> None:
    p = partition_for_key(key, num_partitions)
    assert 0 <= p < num_partitions
    assert partition_for_key(bytes(key), num_partitions) == p


def test_sticky_partitioner_sticks_until_new_batch_then_changes() -> None:
    sticky = StickyPartitioner(random.Random(7))
    first = sticky.partition("t", 8)
    assert all(sticky.partition("t", 8) == first for _ in range(100))

    switched = sticky.on_new_batch("t", 8, first)
    assert switched != first
    assert all(sticky.partition("t", 8) == switched for _ in range(100))


def test_sticky_partitioner_changes_with_exactly_two_available_partitions() -> None:
    sticky = StickyPartitioner(random.Random(0))
    seen = [sticky.partition("t", 5, available=[1, 3])]
    for _ in range(10):
        seen.append(sticky.on_new_batch("t", 5, seen[-1], available=[1, 3]))
    assert all(a != b for a, b in itertools.pairwise(seen))
    assert set(seen) == {1, 3}


def test_sticky_partitioner_ignores_stale_new_batch_for_other_partition() -> None:
    sticky = StickyPartitioner(random.Random(3))
    current = sticky.partition("t", 10)
    stale = (current + 1) % 10
    assert sticky.on_new_batch("t", 10, stale) == current
    assert sticky.partition("t", 10) == current


def test_sticky_partitioner_only_picks_available_partitions() -> None:
    sticky = StickyPartitioner(random.Random(11))
    available = [2, 5, 7]
    current = sticky.partition("t", 10, available)
    picks = {current}
    for _ in range(200):
        current = sticky.on_new_batch("t", 10, current, available)
        picks.add(current)
    assert picks == set(available)


def test_sticky_partitioner_falls_back_to_all_partitions_when_none_available() -> None:
    sticky = StickyPartitioner(random.Random(5))
    current = sticky.partition("t", 4, available=[])
    picks = {current}
    for _ in range(200):
        current = sticky.on_new_batch("t", 4, current, available=[])
        picks.add(current)
    assert picks == {0, 1, 2, 3}


def test_sticky_partitioner_works_with_one_partition() -> None:
    sticky = StickyPartitioner(random.Random(1))
    assert sticky.partition("t", 1) == 0
    assert sticky.on_new_batch("t", 1, 0) == 0
    assert sticky.partition("t", 1) == 0


def test_sticky_partitioner_keeps_topics_independent() -> None:
    sticky = StickyPartitioner(random.Random(2))
    a = sticky.partition("a", 50)
    b = sticky.partition("b", 50)
    sticky.on_new_batch("a", 50, a)
    assert sticky.partition("b", 50) == b


def test_sticky_partitioner_repicks_when_topic_shrinks() -> None:
    sticky = StickyPartitioner(random.Random(4))
    sticky.partition("t", 100, available=[99])
    assert sticky.partition("t", 3) in range(3)


@pytest.mark.parametrize("num_partitions", [0, -3])
def test_sticky_partitioner_rejects_fewer_than_one_partition(num_partitions: int) -> None:
    with pytest.raises(ValueError):
        StickyPartitioner().partition("t", num_partitions)


def test_default_partitioner_hashes_keyed_records_with_murmur2() -> None:
    partitioner = DefaultPartitioner(random.Random(0))
    for key, expected in KAFKA_PYTHON_PARTITIONS_OF_1000:
        assert partitioner("t", key, 1000) == expected


def test_default_partitioner_keyed_records_ignore_availability() -> None:
    # A key must keep its partition even while that partition has no leader.
    partitioner = DefaultPartitioner(random.Random(0))
    assert partitioner("t", b"abc", 1000, available=[0]) == 107


def test_default_partitioner_sticks_unkeyed_records_until_new_batch() -> None:
    partitioner = DefaultPartitioner(random.Random(9))
    first = partitioner("t", None, 6, available=[0, 4])
    assert first in (0, 4)
    assert partitioner("t", None, 6, available=[0, 4]) == first

    switched = partitioner.on_new_batch("t", 6, first, available=[0, 4])
    assert switched == ({0, 4} - {first}).pop()
    assert partitioner("t", None, 6, available=[0, 4]) == switched
