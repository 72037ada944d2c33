"""Tests for rafka.clients.transaction_filter: which fetched batches reach the caller.

Logs are built by hand from real batches (``txn_log``: plain and transactional data batches, COMMIT
and ABORT markers, stamped with offsets as a leader stamps them), then filtered with the aborted
transactions a leader would list for a read from offset 0.
"""

from __future__ import annotations

from typing import Any

import pytest

from rafka.clients.transaction_filter import isolation_level, visible_batches
from rafka.protocol.errors import InvalidConfigError
from rafka.protocol.messages.fetch import READ_COMMITTED, READ_UNCOMMITTED, AbortedTransaction
from rafka.protocol.records.batch import decode_records, iter_batches

A, B, C = 1000, 2000, 3000


def values(log: Any, aborted: list[AbortedTransaction] | None) -> list[bytes | None]:
    data = bytes(log.data)
    return [
        record.value
        for position, header in visible_batches(data, iter_batches(data), aborted)
        for record in decode_records(data, position, header)
    ]


def aborted_of(log: Any) -> list[AbortedTransaction]:
    return [t for t, _ in log.aborted]


def test_read_committed_drops_aborted_transactions_interleaved_with_committed_ones(
    txn_log: Any,
) -> None:
    txn_log.records(b"a1", producer_id=A, transactional=True)
    txn_log.records(b"b1", producer_id=B, transactional=True)
    txn_log.records(b"plain")
    txn_log.records(b"a2", b"a3", producer_id=A, transactional=True)
    txn_log.records(b"c1", producer_id=C, transactional=True)
    txn_log.marker(A, committed=False)
    txn_log.records(b"b2", producer_id=B, transactional=True)
    txn_log.marker(B, committed=True)
    txn_log.marker(C, committed=False)
    assert values(txn_log, aborted_of(txn_log)) == [b"b1", b"plain", b"b2"]


def test_read_uncommitted_returns_every_data_record_and_no_marker(txn_log: Any) -> None:
    txn_log.records(b"a1", producer_id=A, transactional=True)
    txn_log.marker(A, committed=False)
    txn_log.records(b"b1", producer_id=B, transactional=True)
    txn_log.marker(B, committed=True)
    assert values(txn_log, None) == [b"a1", b"b1"]


def test_a_producer_aborting_then_committing_loses_only_the_aborted_transaction(
    txn_log: Any,
) -> None:
    txn_log.records(b"first", producer_id=A, transactional=True)
    txn_log.marker(A, committed=False)
    txn_log.records(b"second", producer_id=A, transactional=True)
    txn_log.marker(A, committed=True)
    txn_log.records(b"third", producer_id=A, transactional=True)
    txn_log.marker(A, committed=False)
    assert values(txn_log, aborted_of(txn_log)) == [b"second"]


def test_idempotent_batches_of_an_aborting_producer_are_kept(txn_log: Any) -> None:
    txn_log.records(b"txn", producer_id=A, transactional=True)
    txn_log.records(b"idempotent", producer_id=B)
    txn_log.marker(A, committed=False)
    assert values(txn_log, aborted_of(txn_log)) == [b"idempotent"]


def test_the_aborted_list_order_does_not_matter(txn_log: Any) -> None:
    txn_log.records(b"a", producer_id=A, transactional=True)
    txn_log.records(b"b", producer_id=B, transactional=True)
    txn_log.records(b"c", producer_id=C, transactional=True)
    for producer, committed in ((B, False), (C, True), (A, False)):
        txn_log.marker(producer, committed)
    assert values(txn_log, list(reversed(aborted_of(txn_log)))) == [b"c"]


def test_markers_alone_yield_nothing_in_either_isolation_level(txn_log: Any) -> None:
    txn_log.marker(A, committed=True)
    txn_log.marker(B, committed=False)
    assert values(txn_log, None) == []
    assert values(txn_log, aborted_of(txn_log)) == []


def test_isolation_level_names_map_to_kafkas_numbers_and_others_name_the_setting() -> None:
    assert isolation_level("read_committed") == READ_COMMITTED
    assert isolation_level("read_uncommitted") == READ_UNCOMMITTED
    with pytest.raises(InvalidConfigError, match="isolation_level='READ_COMMITTED'"):
        isolation_level("READ_COMMITTED")
    with pytest.raises(InvalidConfigError, match=r"kafka\.isolation\.level=1"):
        isolation_level(1, "kafka.isolation.level")
