"""The aborted-transaction index of one segment (``.txnindex``), as in Kafka.

Each entry names an aborted transaction whose ABORT marker lies in the segment: its producer id,
first offset, last offset (the marker's) and the last stable offset when it was aborted. A
read_committed fetch asks the indexes from the segment holding its fetch offset onwards for the
aborted transactions overlapping the records it returns, and stops at the first entry whose LSO is
past them: every transaction aborted later began at or after that LSO. Entries are fixed-width
big-endian (version int16, producer_id int64, first_offset int64, last_offset int64,
last_stable_offset int64); the file is created with its first entry and kept in memory, since
aborted transactions are few.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

ENTRY = struct.Struct(">hqqqq")
ENTRY_VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction: producer, first offset, marker offset, LSO at the abort."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """The ``.txnindex`` file of one segment and its entries in marker-offset order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []
        self._dirty = False
        self._load()

    def _load(self) -> None:
        """Read the entries; a torn last entry (a crash mid-write) is cut off."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        whole = len(data) - len(data) % ENTRY.size
        self.entries = [
            AbortedTxn(*fields[1:]) for fields in ENTRY.iter_unpack(memoryview(data)[:whole])
        ]
        if whole != len(data):
            os.truncate(self.path, whole)

    @property
    def last_offset(self) -> int:
        """The marker offset of the newest entry, or -1."""
        return self.entries[-1].last_offset if self.entries else -1

    def append(self, entry: AbortedTxn) -> bool:
        """Add an entry newer than every other; False (nothing written) if it is not newer, which
        makes replaying already indexed markers harmless."""
        if entry.last_offset <= self.last_offset:
            return False
        with open(self.path, "ab") as handle:
            handle.write(ENTRY.pack(ENTRY_VERSION, *_fields(entry)))
        self.entries.append(entry)
        self._dirty = True
        return True

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [``fetch_offset``, ``upper_bound``), and whether the search is
        complete (an entry's LSO reached ``upper_bound``, so no later index can add any)."""
        found = []
        for entry in self.entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Remove the entries whose marker is at or above ``offset``."""
        kept = [entry for entry in self.entries if entry.last_offset < offset]
        if len(kept) == len(self.entries):
            return
        self.entries = kept
        if kept:
            os.truncate(self.path, len(kept) * ENTRY.size)
            self._dirty = True
        else:
            self.path.unlink(missing_ok=True)

    def flush(self) -> None:
        """fsync the file if entries were written since the last flush."""
        if self._dirty and self.entries:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._dirty = False

    def delete(self) -> None:
        """Remove the file with its segment."""
        self.entries = []
        self.path.unlink(missing_ok=True)


def _fields(entry: AbortedTxn) -> tuple[int, int, int, int]:
    return entry.producer_id, entry.first_offset, entry.last_offset, entry.last_stable_offset
