"""``Consumer.poll_arrow`` over a hand-built log (``txn_log``): its rows are ``poll``'s records
field for field, control batches, aborted transactions and compaction gaps included, and mixing it
with ``poll`` hands every record out exactly once."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from rafka.clients.consumer import Consumer
from rafka.clients.fetcher import ARROW_SCHEMA
from rafka.protocol.records.batch import encode_batch
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.columns import RecordColumns
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

TP = TopicPartition("txn", 0)
A = 1000
T0 = 1_700_000_000_000


def consumer(fake: Any, **config: Any) -> Consumer:
    settings = {"fetch_max_wait_ms": 10, "request_timeout_ms": 2000, **config}
    created = Consumer(transport=fake.transport, **settings)
    created.assign([TP])
    created.seek(TP, 0)
    return created


def as_row(record: Any) -> dict[str, Any]:
    """A ConsumerRecord in the form of a ``poll_arrow`` row."""
    return {
        "key": record.key,
        "value": record.value,
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": datetime.fromtimestamp(record.timestamp / 1000, timezone.utc),
        "timestampType": record.timestamp_type,
        "headers": [{"key": k, "value": v} for k, v in record.headers],
    }


def polled_rows(c: Consumer, until: int) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def more() -> bool:
        for records in c.poll(timeout_ms=20).values():
            seen.extend(as_row(r) for r in records)
        return c.position(TP) >= until

    wait_until(more, 5, f"poll to reach offset {until}")
    return seen


def arrow_rows(c: Consumer, until: int, max_records: int | None = None) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def more() -> bool:
        table = c.poll_arrow(timeout_ms=20, max_records=max_records)
        assert table.schema.equals(ARROW_SCHEMA)
        assert max_records is None or table.num_rows <= max_records
        seen.extend(table.to_pylist())
        return c.position(TP) >= until

    wait_until(more, 5, f"poll_arrow to reach offset {until}")
    return seen


def varied_log(log: Any) -> None:
    """Headers, null keys and values, a transaction's marker, an aborted transaction and a
    compacted batch whose records 1 and 3 were removed."""
    log.append(build_batch([(b"k0", b"v0", T0, [("h", b"x")]), (None, b"v1", T0 + 5)]))
    log.records(b"t1", b"t2", producer_id=A, transactional=True)
    log.marker(A, committed=True)
    log.records(b"aborted", producer_id=A, transactional=True)
    log.marker(A, committed=False)
    log.append(build_batch([(b"k2", None, T0 + 9, [("a", None), ("b", b"y")])]))
    log.append(
        encode_batch(
            RecordColumns.from_rows(
                [[0, 0, b"a", b"0", []], [2, 1, b"c", b"2", []], [4, 2, b"e", b"4", []]]
            ),
            first_timestamp=T0,
            max_timestamp=T0 + 2,
            last_offset_delta=4,
        )
    )
    log.records(b"last")


def test_poll_arrow_rows_are_polls_records(fake_cluster: Any, txn_log: Any) -> None:
    varied_log(txn_log)
    end = txn_log.next_offset
    for isolation in ("read_uncommitted", "read_committed"):
        with consumer(fake_cluster, isolation_level=isolation) as c:
            expected = polled_rows(c, end)
        with consumer(fake_cluster, isolation_level=isolation) as c:
            assert arrow_rows(c, end) == expected
            assert c.position(TP) == end
        values = [row["value"] for row in expected]
        assert (b"aborted" in values) == (isolation == "read_uncommitted")
        assert b"0" in values and b"1" not in values  # the compacted gap stays a gap


def test_mixing_poll_and_poll_arrow_hands_out_every_record_once(
    fake_cluster: Any, txn_log: Any
) -> None:
    varied_log(txn_log)
    end = txn_log.next_offset
    with consumer(fake_cluster) as c:
        expected = polled_rows(c, end)
    seen: list[dict[str, Any]] = []
    with consumer(fake_cluster) as c:

        def more() -> bool:
            # One record, then two, alternating, so batches are split between the two forms.
            for records in c.poll(timeout_ms=20, max_records=1).values():
                seen.extend(as_row(r) for r in records)
            seen.extend(c.poll_arrow(timeout_ms=20, max_records=2).to_pylist())
            return c.position(TP) >= end

        wait_until(more, 5, f"the consumer to reach offset {end}")
    assert seen == expected


def test_poll_arrow_moves_the_position_row_by_row(fake_cluster: Any, txn_log: Any) -> None:
    txn_log.records(b"a", b"b", b"c")
    with consumer(fake_cluster) as c:
        assert [r["offset"] for r in arrow_rows(c, 1, max_records=1)] == [0]
        assert c.position(TP) == 1
        assert [r.value for r in c.poll(timeout_ms=1000)[TP]] == [b"b", b"c"]


def test_poll_arrow_with_nothing_to_return_is_an_empty_table(
    fake_cluster: Any, txn_log: Any
) -> None:
    with consumer(fake_cluster) as c:
        table = c.poll_arrow(timeout_ms=30)
    assert table.num_rows == 0
    assert table.schema.equals(ARROW_SCHEMA)
