"""The consumer's isolation levels over a hand-built transactional log (``txn_log``, served by a
fake leader that honours the fetch's isolation level): read_committed sees committed records only
and stops at the last stable offset, neither level returns markers, the position moves past
markers, and ``group_metadata`` names the member's generation."""

from __future__ import annotations

from typing import Any

import pytest

from rafka.clients.consumer import Consumer
from rafka.protocol.errors import InvalidConfigError, InvalidGroupIdError
from rafka.protocol.messages.fetch import READ_COMMITTED, READ_UNCOMMITTED
from rafka.protocol.types import ConsumerGroupMetadata, TopicPartition
from rafka.testing import wait_until

TP = TopicPartition("txn", 0)
A, B = 1000, 2000


def consumer(fake: Any, **config: Any) -> Consumer:
    settings = {"fetch_max_wait_ms": 10, "request_timeout_ms": 2000, **config}
    created = Consumer(transport=fake.transport, **settings)
    created.assign([TP])
    created.seek(TP, 0)
    return created


def drain(c: Consumer, until: int) -> list[Any]:
    """Poll until the position reaches ``until``; the values seen."""
    seen: list[Any] = []

    def more() -> bool:
        for records in c.poll(timeout_ms=20).values():
            seen.extend(r.value for r in records)
        return c.position(TP) >= until

    wait_until(more, 5, f"the consumer to reach offset {until}")
    return seen


def mixed_log(log: Any) -> None:
    log.records(b"a1", producer_id=A, transactional=True)
    log.records(b"b1", producer_id=B, transactional=True)
    log.records(b"plain")
    log.marker(A, committed=False)
    log.records(b"b2", producer_id=B, transactional=True)
    log.marker(B, committed=True)


def test_read_committed_returns_committed_and_plain_records_only(
    fake_cluster: Any, txn_log: Any
) -> None:
    mixed_log(txn_log)
    with consumer(fake_cluster, isolation_level="read_committed") as c:
        assert drain(c, txn_log.next_offset) == [b"b1", b"plain", b"b2"]
    assert {f.isolation_level for f in fake_cluster.txn_replica.fetches} == {READ_COMMITTED}


def test_read_uncommitted_returns_every_data_record_and_never_a_marker(
    fake_cluster: Any, txn_log: Any
) -> None:
    mixed_log(txn_log)
    with consumer(fake_cluster) as c:
        assert drain(c, txn_log.next_offset) == [b"a1", b"b1", b"plain", b"b2"]
    assert {f.isolation_level for f in fake_cluster.txn_replica.fetches} == {READ_UNCOMMITTED}


def test_read_committed_waits_at_the_last_stable_offset_until_the_transaction_ends(
    fake_cluster: Any, txn_log: Any
) -> None:
    txn_log.records(b"before")
    txn_log.records(b"open", producer_id=A, transactional=True)
    txn_log.records(b"after")
    with consumer(fake_cluster, isolation_level="read_committed") as c:
        assert drain(c, 1) == [b"before"]
        assert c.poll(timeout_ms=50) == {}
        assert c.position(TP) == 1
        txn_log.marker(A, committed=True)
        assert drain(c, txn_log.next_offset) == [b"open", b"after"]


def test_a_poll_that_finds_only_markers_moves_the_position_past_them(
    fake_cluster: Any, txn_log: Any
) -> None:
    txn_log.records(b"aborted", producer_id=A, transactional=True)
    txn_log.marker(A, committed=False)
    txn_log.marker(B, committed=True)
    for level in ("read_committed", "read_uncommitted"):
        with consumer(fake_cluster, isolation_level=level) as c:
            fetched = len(fake_cluster.txn_replica.fetches)
            seen = drain(c, txn_log.next_offset)
            assert seen == ([] if level == "read_committed" else [b"aborted"])
            assert c.position(TP) == txn_log.next_offset
            # The position moved at the first answer: no fetch was repeated at the same offset.
            offsets = [f.fetch_offset for f in fake_cluster.txn_replica.fetches[fetched:]]
            assert offsets[:2] == [0, 3]


def test_end_offsets_and_seek_to_end_use_the_last_stable_offset_when_read_committed(
    fake_cluster: Any, txn_log: Any
) -> None:
    txn_log.records(b"x")
    txn_log.records(b"open", producer_id=A, transactional=True)
    with consumer(fake_cluster, isolation_level="read_committed") as committed:
        assert committed.end_offsets([TP]) == {TP: 1}
        committed.seek_to_end(TP)
        assert committed.position(TP) == 1
    with consumer(fake_cluster) as uncommitted:
        assert uncommitted.end_offsets([TP]) == {TP: 2}
    levels = [r.isolation_level for r in fake_cluster.txn_replica.list_offsets_requests]
    assert levels == [READ_COMMITTED, READ_COMMITTED, READ_UNCOMMITTED]


def test_auto_offset_reset_latest_starts_a_read_committed_consumer_at_the_last_stable_offset(
    fake_cluster: Any, txn_log: Any
) -> None:
    txn_log.records(b"x")
    txn_log.records(b"open", producer_id=A, transactional=True)
    c = Consumer(transport=fake_cluster.transport, isolation_level="read_committed")
    c.assign([TP])
    assert c.position(TP) == 1
    c.close()


def test_an_unknown_isolation_level_is_an_invalid_config_naming_it(fake_cluster: Any) -> None:
    with pytest.raises(InvalidConfigError, match="isolation_level='serializable'"):
        Consumer(transport=fake_cluster.transport, isolation_level="serializable")


def test_group_metadata_needs_a_group_id(fake_cluster: Any, txn_log: Any) -> None:
    with consumer(fake_cluster) as c, pytest.raises(InvalidGroupIdError):
        c.group_metadata()


def test_group_metadata_names_the_generation_and_member_once_joined(group_cluster: Any) -> None:
    c = Consumer(
        transport=group_cluster.transport,
        group_id="g",
        session_timeout_ms=6000,
        heartbeat_interval_ms=50,
        fetch_max_wait_ms=20,
        enable_auto_commit=False,
    )
    assert c.group_metadata() == ConsumerGroupMetadata("g", -1, "")
    c.subscribe(["events"])
    wait_until(
        lambda: c.poll(timeout_ms=50) is not None and len(c.assignment()) == 3,
        10,
        "the member to join",
    )
    found = c.group_metadata()
    assert found.group_id == "g"
    assert found.generation_id == group_cluster.groups.generation("g") >= 1
    assert found.member_id in group_cluster.groups.membership.groups["g"].members
    c.close()
