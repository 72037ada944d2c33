"""Which fetched batches a consumer hands to its caller: read_committed drops aborted transactions.

A fetch answers with whole batches. Control batches (transaction markers) are never records to a
caller, whatever the isolation level, but they take offsets, so the position moves past them. With
``read_committed`` the leader returns data only up to the last stable offset and lists the aborted
transactions overlapping the range (producer id and first offset); the client drops their batches
with Kafka's algorithm (the Java consumer's ``Fetcher``): the aborted transactions are taken in
order of first offset; once a batch reaches a transaction's first offset, that transaction's
producer joins the aborted set; a transactional batch of a producer in the set is skipped; that
producer's ABORT marker ends the transaction and takes it out of the set again.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from rafka.protocol.errors import InvalidConfigError
from rafka.protocol.messages.fetch import READ_COMMITTED, READ_UNCOMMITTED, AbortedTransaction
from rafka.protocol.records.batch import NO_PRODUCER_ID, BatchHeader
from rafka.protocol.records.control import ControlRecordType, parse_marker

ISOLATION_LEVELS = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}
"""The ``isolation_level`` setting's names (Kafka's and kafka-python's) and their wire numbers."""

Batches = Iterable[tuple[int, BatchHeader]]
"""``(position, header)`` of each batch of a fetched buffer, as ``iter_batches`` yields them."""


def isolation_level(name: object, setting: str = "isolation_level") -> int:
    """The wire number of an isolation level name; INVALID_CONFIG naming ``setting`` otherwise."""
    level = ISOLATION_LEVELS.get(name) if isinstance(name, str) else None
    if level is None:
        raise InvalidConfigError(
            f"{setting}={name!r} must be one of {', '.join(repr(n) for n in ISOLATION_LEVELS)}"
        )
    return level


def visible_batches(
    data: bytes | bytearray | memoryview,
    batches: Batches,
    aborted_transactions: Iterable[AbortedTransaction] | None,
) -> Iterator[tuple[int, BatchHeader]]:
    """The batches of ``data`` whose records the caller sees, in log order.

    ``aborted_transactions`` is the fetch response's list for ``read_committed`` and None for
    ``read_uncommitted``; either way control batches are left out. The state (which producers are
    aborting) lives for one call, as it does for one fetch response in Kafka.
    """
    if aborted_transactions is None:
        for position, header in batches:
            if not header.is_control:
                yield position, header
        return
    upcoming = [(t.first_offset, t.producer_id) for t in aborted_transactions]
    heapq.heapify(upcoming)
    aborting: set[int] = set()
    for position, header in batches:
        if header.producer_id != NO_PRODUCER_ID:
            while upcoming and upcoming[0][0] <= header.last_offset:
                aborting.add(heapq.heappop(upcoming)[1])
            if header.is_control:
                if header.producer_id in aborting and _is_abort_marker(data, position, header):
                    aborting.discard(header.producer_id)
                continue
            if header.is_transactional and header.producer_id in aborting:
                continue
        elif header.is_control:
            continue
        yield position, header


def _is_abort_marker(
    data: bytes | bytearray | memoryview, position: int, header: BatchHeader
) -> bool:
    return parse_marker(data, position, header).control_type is ControlRecordType.ABORT
