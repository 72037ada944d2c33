"""Sparse offset index of one segment: offset -> byte position of the batch starting at that offset.

On disk each entry is (offset relative to the segment's base offset: int32, position: int32), as in
Kafka's ``.index`` files. An entry is added every ``index.interval.bytes`` of log, so lookup is a
binary search here followed by a short forward scan of batch headers in the segment.
"""

from __future__ import annotations

import struct

from rafka.log.index_base import SortedIndex


class OffsetIndex(SortedIndex):
    """Maps absolute batch base offsets to byte positions in the segment's ``.log`` file."""

    entry = struct.Struct(">ii")

    def _to_disk(self, key: int, value: int) -> tuple[int, int]:
        return key - self.base_offset, value

    def _from_disk(self, key: int, value: int) -> tuple[int, int]:
        return key + self.base_offset, value

    def lookup(self, offset: int) -> int:
        """Byte position from which a scan finds ``offset``: the nearest indexed batch below it."""
        found = self.floor(offset)
        return 0 if found is None else found[1]
