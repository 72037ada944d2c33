"""The source's ``kafka.isolation.level``: option parsing, and ``read_range`` over a fake leader
whose log mixes committed and aborted transactions with their markers (no JVM, no Ray)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rafka.actors import names
from rafka.clients.cluster import ClusterConnection
from rafka.protocol.errors import Errors, InvalidConfigError
from rafka.protocol.messages.fetch import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    AbortedTransaction,
    FetchRequest,
    FetchResponse,
)
from rafka.protocol.records.batch import iter_batches, read_header, stamp
from rafka.protocol.records.builder import RecordBatchBuilder
from rafka.protocol.records.control import ControlRecordType, build_marker
from rafka.spark_bridge.offset_ranges import OffsetRange
from rafka.spark_bridge.options import parse_source_options
from rafka.spark_bridge.range_reader import read_range

A, B = 1000, 2000


def test_isolation_level_defaults_to_read_uncommitted_and_takes_either_spelling() -> None:
    def level(**options: str) -> int:
        return parse_source_options({"subscribe": "t", **options}, streaming=False).isolation_level

    assert level() == READ_UNCOMMITTED
    assert level(**{"kafka.isolation.level": "read_committed"}) == READ_COMMITTED
    assert level(**{"isolation.level": "READ_COMMITTED"}) == READ_COMMITTED
    both = {"kafka.isolation.level": "read_uncommitted", "isolation.level": "read_committed"}
    assert level(**both) == READ_UNCOMMITTED
    streaming = {"subscribe": "t", "kafka.isolation.level": "read_committed"}
    assert parse_source_options(streaming, streaming=True).isolation_level == READ_COMMITTED


@pytest.mark.parametrize("name", ["kafka.isolation.level", "isolation.level"])
def test_an_unknown_isolation_level_names_the_option(name: str) -> None:
    with pytest.raises(InvalidConfigError, match=re.escape(f"option '{name}': 'snapshot' must be")):
        parse_source_options({"subscribe": "t", name: "snapshot"}, streaming=False)


class MixedLeader:
    """A leader of a log with two transactions (A aborted, B committed) and their markers; it
    lists A as aborted for READ_COMMITTED reads and answers from any fetch offset."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.isolation_levels: list[int] = []
        self._append(self._records(b"a1", producer_id=A))
        self._append(self._records(b"b1", producer_id=B))
        self._append(self._records(b"plain", producer_id=-1))
        self._append(build_marker(A, 0, ControlRecordType.ABORT, 0, 1))
        self._append(self._records(b"b2", producer_id=B))
        self._append(build_marker(B, 0, ControlRecordType.COMMIT, 0, 1))
        self.end = read_header(self.data, self._last).next_offset

    @staticmethod
    def _records(value: bytes, producer_id: int) -> bytes:
        builder = RecordBatchBuilder(
            producer_id=producer_id, producer_epoch=0, is_transactional=producer_id >= 0
        )
        builder.append(1, None, value)
        return builder.build()

    def _append(self, batch: bytes) -> None:
        stamped = bytearray(batch)
        stamp(stamped, 0, len(list(iter_batches(self.data))), 0)
        self._last = len(self.data)
        self.data += stamped

    def fetch(self, request: FetchRequest) -> FetchResponse:
        self.isolation_levels.append(request.isolation_level)
        out = bytearray()
        for position, header in iter_batches(self.data):
            if header.last_offset >= request.fetch_offset:
                out += self.data[position : position + header.size_in_bytes]
        committed = request.isolation_level == READ_COMMITTED
        aborted = (AbortedTransaction(A, 0),) if committed else ()
        return FetchResponse(
            Errors.NONE, self.end, 0, self.end, bytes(out), aborted_transactions=aborted
        )


@pytest.mark.parametrize(
    "level, expected",
    [
        (READ_COMMITTED, [(1, b"b1"), (2, b"plain"), (4, b"b2")]),
        (READ_UNCOMMITTED, [(0, b"a1"), (1, b"b1"), (2, b"plain"), (4, b"b2")]),
    ],
)
def test_read_range_skips_markers_and_with_read_committed_aborted_records(
    fake_cluster: Any, level: int, expected: list[tuple[int, bytes]]
) -> None:
    fake_cluster.add_brokers(1)
    fake_cluster.add_topic("txn", [(0, 0)])
    leader = MixedLeader()
    fake_cluster.actors[names.replica_actor_name("txn", 0, 0)] = leader
    cluster = ClusterConnection(request_timeout_ms=2000, transport=fake_cluster.transport)
    batches = read_range(
        cluster,
        OffsetRange("txn", 0, 0, leader.end),
        include_headers=False,
        fail_on_data_loss=True,
        max_bytes=1 << 20,
        max_wait_ms=10,
        poll_timeout_ms=2000,
        isolation_level=level,
    )
    rows = [
        (offset, value)
        for batch in batches
        for offset, value in zip(
            batch.column("offset").to_pylist(), batch.column("value").to_pylist(), strict=True
        )
    ]
    assert rows == expected
    assert set(leader.isolation_levels) == {level}
