"""Tests for rafka.transactions.transaction_log: the records of ``__transaction_state``."""

from __future__ import annotations

import msgpack  # type: ignore[import-untyped, unused-ignore]
import pytest

from rafka.groups.offsets_codec import partition_for as group_partition_for
from rafka.protocol.types import TopicPartition
from rafka.transactions.transaction_log import (
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from rafka.transactions.transaction_metadata import TxnTransitMetadata
from rafka.transactions.transaction_state import TransactionState

VALUE = TxnTransitMetadata(
    producer_id=42,
    last_producer_id=-1,
    producer_epoch=3,
    last_producer_epoch=2,
    timeout_ms=60_000,
    state=TransactionState.ONGOING,
    partitions=frozenset({TopicPartition("orders", 2), TopicPartition("__consumer_offsets", 0)}),
    start_timestamp=1_700_000_000_000,
    last_update_timestamp=1_700_000_000_500,
)


def test_a_value_survives_encoding() -> None:
    assert decode_value(encode_value(VALUE)) == VALUE


def test_a_key_is_the_transactional_id() -> None:
    assert decode_key(encode_key("payments-ü")) == "payments-ü"


@pytest.mark.parametrize("state", [TransactionState.DEAD, TransactionState.PREPARE_EPOCH_FENCE])
def test_states_never_written_are_refused(state: TransactionState) -> None:
    with pytest.raises(ValueError, match="never written"):
        encode_value(TxnTransitMetadata(1, -1, 0, -1, 1, state, frozenset(), -1, 0))


@pytest.mark.parametrize(
    "fields, problem",
    [
        ([1, 42], "version"),
        ([0, "x", -1, 3, 2, 1, "Ongoing", [], 0, 0], "producer id"),
        ([0, 42, -1, 3, 2, 1, "Sleeping", [], 0, 0], "unknown transaction state"),
        ([0, 42, -1, 3, 2, 1, "Ongoing", [["orders"]], 0, 0], r"\[topic, partition\]"),
        ([0, 42, -1, 3, 2, 1, "Ongoing", {}, 0, 0], "partitions must be an array"),
    ],
)
def test_malformed_values_name_the_problem(fields: list[object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        decode_value(msgpack.packb(fields))


def test_garbage_is_a_value_error_not_a_crash() -> None:
    with pytest.raises(ValueError, match="msgpack"):
        decode_key(b"\xc1")
    with pytest.raises(ValueError, match="not"):
        decode_key(msgpack.packb([1, "app"]))


@pytest.mark.parametrize("transactional_id", ["app", "payments-1", "", "Aa", "BB", "ü" * 7])
def test_an_id_lands_where_a_group_of_that_name_would(transactional_id: str) -> None:
    for n in (1, 4, 50):
        assert partition_for(transactional_id, n) == group_partition_for(transactional_id, n)
