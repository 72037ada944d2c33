"""Transactional offset commits waiting for their transaction to end (KIP-98, KIP-447).

Kafka's ``GroupMetadata`` keeps a producer's TxnOffsetCommit offsets apart ("pending transactional
offset commits") from the committed ones OffsetFetch answers with, until the transaction
coordinator's marker reaches the group's ``__consumer_offsets`` partition: COMMIT makes them
committed, ABORT drops them. Of two commits of one partition the one later in the log wins, which
is why every offset remembers the log offset of the batch that wrote it (``LoggedOffset``): a plain
commit written after a transactional one stays when that transaction commits later, and a
transactional commit written after a plain one replaces it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass

from rafka.groups.offsets_codec import OffsetKey, OffsetValue


@dataclass(frozen=True)
class LoggedOffset:
    """A committed offset and the base offset of the ``__consumer_offsets`` batch that wrote it."""

    value: OffsetValue
    batch_offset: int


def apply_later(
    committed: MutableMapping[OffsetKey, LoggedOffset], completed: Mapping[OffsetKey, LoggedOffset]
) -> list[OffsetKey]:
    """Install each completed transactional offset unless ``committed`` holds one written later in
    the log (Kafka's rule); the keys installed."""
    installed = []
    for key, logged in completed.items():
        current = committed.get(key)
        if current is None or current.batch_offset < logged.batch_offset:
            committed[key] = logged
            installed.append(key)
    return installed


class PendingOffsets:
    """Each producer's transactional offset commits not yet ended by a marker."""

    def __init__(self) -> None:
        self._by_producer: dict[int, dict[OffsetKey, LoggedOffset]] = {}

    def add(self, producer_id: int, key: OffsetKey, logged: LoggedOffset | None) -> None:
        """Hold ``logged`` for ``producer_id``'s transaction (None, a tombstone, drops the key)."""
        if logged is None:
            self._by_producer.get(producer_id, {}).pop(key, None)
            return
        self._by_producer.setdefault(producer_id, {})[key] = logged

    def complete(
        self, producer_id: int, belongs: Callable[[OffsetKey], bool]
    ) -> dict[OffsetKey, LoggedOffset]:
        """Take out ``producer_id``'s pending offsets that ``belongs`` picks (those of the groups
        of the partition the marker was written to); the caller installs them or drops them."""
        pending = self._by_producer.get(producer_id, {})
        taken = {key: logged for key, logged in pending.items() if belongs(key)}
        for key in taken:
            del pending[key]
        if not pending:
            self._by_producer.pop(producer_id, None)
        return taken

    def discard(self, doomed: Callable[[OffsetKey], bool]) -> None:
        """Forget the pending offsets ``doomed`` picks (partition unloaded, group or topic
        deleted)."""
        for producer_id in list(self._by_producer):
            self.complete(producer_id, doomed)

    def has_pending(self, key: OffsetKey) -> bool:
        """Whether some open transaction holds an offset for ``key``."""
        return any(key in pending for pending in self._by_producer.values())

    def producers(self) -> list[int]:
        """The producer ids with pending offsets, sorted."""
        return sorted(self._by_producer)

    def offsets_of(self, producer_id: int) -> dict[OffsetKey, LoggedOffset]:
        """``producer_id``'s pending offsets (a copy)."""
        return dict(self._by_producer.get(producer_id, {}))
