"""The decoded form of a batch's records, whichever layout its records section has.

Readers of either layout (rafka's msgpack columns, Kafka's varint rows) produce these, and the
builder, the cleaner and the converters consume them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

Header = tuple[str, "bytes | None"]


class Record(NamedTuple):
    """One decoded record with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


class RecordColumns(NamedTuple):
    """A batch's records as columns ``record_count`` long, offsets and timestamps relative.

    This is the decoded form of the records section and what ``encode_batch`` frames: the builder
    fills it, the cleaner filters it, the consumer and the Spark bridge read it.
    """

    offset_deltas: Sequence[int]
    timestamp_deltas: Sequence[int]
    keys: Sequence[bytes | None]
    values: Sequence[bytes | None]
    headers: Sequence[Sequence[Header]]

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[object]]) -> RecordColumns:
        """Columns from ``(offset_delta, timestamp_delta, key, value, headers)`` rows."""
        if not rows:
            return cls((), (), (), (), ())
        ods, tds, keys, values, headers = zip(*rows, strict=True)
        return cls(ods, tds, keys, values, headers)

    def rows(self) -> Iterator[tuple[int, int, bytes | None, bytes | None, Sequence[Header]]]:
        """The records as ``(offset_delta, timestamp_delta, key, value, headers)`` rows."""
        return zip(
            self.offset_deltas,
            self.timestamp_deltas,
            self.keys,
            self.values,
            self.headers,
            strict=True,
        )

    def select(self, indexes: Sequence[int]) -> RecordColumns:
        """The records at ``indexes`` (in that order), e.g. those compaction keeps."""
        return RecordColumns._make([column[i] for i in indexes] for column in self)
