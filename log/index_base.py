"""The sorted, append-only index shared by the offset index and the time index.

Entries are fixed-size (key, value) pairs with non-decreasing keys, appended as the segment grows.
They are kept in memory (an index is small: one entry per ``index.interval.bytes`` of log) and
written to the index file on flush and close. A crash can leave the file short or stale; segment
recovery rebuilds it from the log, so the file is an accelerator, never the source of truth.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path


class SortedIndex:
    """Sorted (key, value) entries, persisted to ``path`` as big-endian ``entry`` structs."""

    entry: struct.Struct  # set by subclasses: the on-disk layout of one entry

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.entry.size)
        self._keys = array("q")
        self._values = array("q")
        self._persisted = 0

    def load(self) -> bool:
        """Read entries from disk; False (and an empty index) if the file is unusable."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        size = self.entry.size
        if len(data) % size:
            return False
        keys: list[int] = []
        values: list[int] = []
        for key, value in self.entry.iter_unpack(data):
            key, value = self._from_disk(key, value)
            if keys and key < keys[-1]:
                return False
            keys.append(key)
            values.append(value)
        self._keys = array("q", keys)
        self._values = array("q", values)
        self._persisted = len(keys)
        return True

    def _to_disk(self, key: int, value: int) -> tuple[int, int]:
        return key, value

    def _from_disk(self, key: int, value: int) -> tuple[int, int]:
        return key, value

    def append(self, key: int, value: int) -> None:
        """Add an entry; keys must not go backwards."""
        if self._keys and key < self._keys[-1]:
            raise ValueError(
                f"index {self.path.name}: key {key} is below the last key {self._keys[-1]}"
            )
        self._keys.append(key)
        self._values.append(value)

    def floor(self, key: int) -> tuple[int, int] | None:
        """The last entry whose key is <= ``key``, or None if every entry is above it."""
        i = bisect.bisect_right(self._keys, key)
        if i == 0:
            return None
        return self._keys[i - 1], self._values[i - 1]

    def truncate_keys_from(self, key: int) -> None:
        """Drop entries whose key is >= ``key`` (the log was truncated there)."""
        self._truncate(bisect.bisect_left(self._keys, key))

    def truncate_values_from(self, value: int) -> None:
        """Drop entries whose value is >= ``value``; values are non-decreasing too."""
        self._truncate(bisect.bisect_left(self._values, value))

    def _truncate(self, count: int) -> None:
        if count >= len(self._keys):
            return
        del self._keys[count:]
        del self._values[count:]
        if self._persisted > count:
            self._persisted = count
            if self.path.exists():
                os.truncate(self.path, count * self.entry.size)

    def reset(self) -> None:
        """Forget every entry (before a rebuild)."""
        self._truncate(0)

    def flush(self) -> None:
        """Write the entries appended since the last flush and fsync the file."""
        if self._persisted == len(self._keys) and self.path.exists():
            return
        pack = self.entry.pack
        data = b"".join(
            pack(*self._to_disk(self._keys[i], self._values[i]))
            for i in range(self._persisted, len(self._keys))
        )
        with open(self.path, "ab") as handle:
            handle.truncate(self._persisted * self.entry.size)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        self._persisted = len(self._keys)

    @property
    def is_full(self) -> bool:
        """Whether the index reached ``segment.index.bytes``: the segment must roll."""
        return len(self._keys) >= self.max_entries

    @property
    def last_entry(self) -> tuple[int, int] | None:
        """The newest entry, or None when empty."""
        if not self._keys:
            return None
        return self._keys[-1], self._values[-1]

    def __len__(self) -> int:
        return len(self._keys)

    def entries(self) -> list[tuple[int, int]]:
        """All entries, oldest first (for tests and tools)."""
        return list(zip(self._keys, self._values, strict=True))

    def delete(self) -> None:
        """Remove the index file."""
        self.path.unlink(missing_ok=True)
