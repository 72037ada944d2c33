"""Sparse time index of one segment: max timestamp so far -> offset of the batch that reached it.

On disk each entry is (timestamp: int64, offset relative to the base offset: int32), as in
Kafka's ``.timeindex``. Entries are added with the offset index entries when the segment's
max timestamp grew, so timestamps in the index never go down even when record timestamps do.
"""

from __future__ import annotations

import struct

from rafka.log.index_base import SortedIndex


class TimeIndex(SortedIndex):
    """Maps a timestamp to the offset from which a scan finds the first record at or after it."""

    entry = struct.Struct(">qi")

    def _to_disk(self, key: int, value: int) -> tuple[int, int]:
        return key, value - self.base_offset

    def _from_disk(self, key: int, value: int) -> tuple[int, int]:
        return key, value + self.base_offset

    def lookup(self, timestamp: int) -> int:
        """Offset to start scanning from for the first record with timestamp >= ``timestamp``."""
        found = self.floor(timestamp - 1)
        return self.base_offset if found is None else found[1]
