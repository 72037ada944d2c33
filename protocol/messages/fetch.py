"""Fetch: consumers and followers read whole batches from a partition's leader replica.

Followers use the same request as consumers (``replica_id`` >= 0
marks a follower), as in Kafka: the leader learns each follower's log
end offset from its fetch offset and answers with its high watermark.
"""

from __future__ import annotations

from dataclasses import dataclass

from rafka.protocol.errors import Errors

CONSUMER_REPLICA_ID = -1
NO_LEADER_EPOCH = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
"""``isolation_level``: read up to the high watermark, or only up to the last stable offset with
aborted transactions listed for the consumer to drop (Kafka's numbers)."""


@dataclass(frozen=True)
class FileRegion:
    """Whole batches as they lie in a segment file, for a listener on the same machine to send
    with ``sendfile`` instead of receiving their bytes; ``inode`` names the file read, so one
    replaced since (compaction, deletion) is noticed."""

    path: str
    inode: int
    position: int
    size: int

    def __len__(self) -> int:
        return self.size


@dataclass(frozen=True)
class AbortedTransaction:
    """An aborted transaction overlapping a fetch: its producer and its first offset."""

    producer_id: int
    first_offset: int


@dataclass(frozen=True)
class FetchRequest:
    """Read from ``fetch_offset``; wait up to ``max_wait_ms`` for ``min_bytes`` to be available."""

    fetch_offset: int
    max_bytes: int = 1 << 20
    max_wait_ms: int = 500
    min_bytes: int = 1
    replica_id: int = CONSUMER_REPLICA_ID
    current_leader_epoch: int = NO_LEADER_EPOCH
    isolation_level: int = READ_UNCOMMITTED
    # A consumer's fetch may be answered with a file region when every batch read is stored in
    # Kafka's layout (the Kafka listener asks for this; other readers want bytes).
    file_regions: bool = False


@dataclass(frozen=True)
class FetchResponse:
    """Raw batches (possibly starting before the fetch offset) and the partition's watermarks."""

    error: Errors
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    records: bytes = b""
    leader_epoch: int = NO_LEADER_EPOCH
    error_message: str | None = None
    last_stable_offset: int = -1
    aborted_transactions: tuple[AbortedTransaction, ...] = ()
    region: FileRegion | None = None

    @property
    def size(self) -> int:
        """Bytes of batches answered, as ``records`` or as a file region."""
        return len(self.records) if self.region is None else self.region.size
