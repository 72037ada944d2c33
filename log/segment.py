"""One segment of a partition log: a ``.log`` file of whole batches plus its sparse indexes.

Appends go to the end of the file (the page cache absorbs them; ``flush`` fsyncs). Reads
find a batch through the offset index and a short forward scan of batch headers, then
return raw batch bytes with no decoding. ``recover`` rebuilds the indexes from the file and
cuts it at the first torn or corrupt batch, which is how a crash's damage is contained.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from rafka.log.files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_path,
)
from rafka.log.offset_index import OffsetIndex
from rafka.log.time_index import TimeIndex
from rafka.log.transaction_index import TransactionIndex
from rafka.protocol.errors import CorruptMessageError
from rafka.protocol.messages.fetch import FileRegion
from rafka.protocol.records.batch import (
    HEADER_SIZE,
    NO_TIMESTAMP,
    BatchHeader,
    decode_records,
    iter_batches,
    read_header,
    verify_crc,
)

SCAN_CHUNK = 64 * 1024
RECOVERY_CHUNK = 8 * 1024 * 1024


class LogSegment:
    """A ``.log`` file with its ``.index``, ``.timeindex`` and ``.txnindex``; owned by one Log."""

    def __init__(
        self, directory: Path, base_offset: int, index_interval_bytes: int, max_index_bytes: int
    ) -> None:
        self.base_offset = base_offset
        self.log_path = segment_path(directory, base_offset, LOG_SUFFIX)
        self.offset_index = OffsetIndex(
            segment_path(directory, base_offset, INDEX_SUFFIX), base_offset, max_index_bytes
        )
        self.time_index = TimeIndex(
            segment_path(directory, base_offset, TIME_INDEX_SUFFIX), base_offset, max_index_bytes
        )
        self.txn_index = TransactionIndex(segment_path(directory, base_offset, TXN_INDEX_SUFFIX))
        self.index_interval_bytes = index_interval_bytes
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.first_batch_timestamp: int | None = None
        self._bytes_since_index = 0
        self._indexed_max_timestamp = NO_TIMESTAMP

    # ------------------------------------------------------------------ opening

    def load(self) -> None:
        """Open after a clean shutdown: trust the file, load the indexes or rebuild them."""
        if not (self.offset_index.load() and self.time_index.load() and self._indexes_fit_file()):
            self.recover()
            return
        last_indexed = self.offset_index.last_entry
        self._restore_tail(0 if last_indexed is None else last_indexed[1])

    def _indexes_fit_file(self) -> bool:
        last = self.offset_index.last_entry
        if last is None:
            return True
        if not (last[0] >= self.base_offset and 0 <= last[1] < self.size):
            return False
        # Opening scans the tail from the last entry, so it must name the batch that starts there; a
        # damaged entry would otherwise fail the open or restore the wrong log end offset.
        try:
            return read_header(os.pread(self._fd, HEADER_SIZE, last[1])).base_offset == last[0]
        except CorruptMessageError:
            return False

    def _restore_tail(self, position: int) -> None:
        """Recompute next offset and max timestamp from the headers at ``position`` onwards."""
        last_time = self.time_index.last_entry
        self.max_timestamp = self._indexed_max_timestamp = (
            NO_TIMESTAMP if last_time is None else last_time[0]
        )
        for _, header in self._headers_from(position):
            self.next_offset = header.next_offset
            self.max_timestamp = max(self.max_timestamp, header.max_timestamp)
        self.first_batch_timestamp = None
        for _, header in self._headers_from(0):
            self.first_batch_timestamp = header.max_timestamp
            break

    def recover(self) -> int:
        """Rebuild the indexes and cut the file after the last valid batch; return bytes cut.

        A batch is valid when its header parses, it lies wholly in the file, its CRC matches and its
        offsets follow the previous batch's. Everything from the first invalid batch on is removed.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp = self._indexed_max_timestamp = NO_TIMESTAMP
        self.first_batch_timestamp = None
        self._bytes_since_index = 0
        valid_end = 0
        try:
            for position, header in self._verified_batches():
                if header.base_offset < self.next_offset or header.last_offset_delta < 0:
                    break
                self._index_batch(position, header)
                valid_end = position + header.size_in_bytes
        except CorruptMessageError:
            pass
        cut = self.size - valid_end
        if cut:
            os.ftruncate(self._fd, valid_end)
            self.size = valid_end
        # Entries for markers the cut removed go; the log's producer state replay adds back any
        # the crash lost.
        self.txn_index.truncate_to(self.next_offset)
        return cut

    def _verified_batches(self) -> Iterator[tuple[int, BatchHeader]]:
        """Whole batches with valid CRCs from the start; raises CORRUPT_MESSAGE at a bad one."""
        position = 0
        while position < self.size:
            chunk = os.pread(self._fd, RECOVERY_CHUNK, position)
            consumed = 0
            for offset, header in iter_batches(chunk):
                verify_crc(chunk, offset, header)
                yield position + offset, header
                consumed = offset + header.size_in_bytes
            if consumed == 0:
                header = read_header(chunk)
                if position + header.size_in_bytes > self.size:
                    return
                whole = os.pread(self._fd, header.size_in_bytes, position)
                verify_crc(whole, 0, header)
                yield position, header
                consumed = header.size_in_bytes
            position += consumed

    # ------------------------------------------------------------------ writing

    def append(self, data: bytes | bytearray, batches: list[tuple[int, BatchHeader]]) -> None:
        """Append whole batches (``batches``: each one's position within ``data``) in one write."""
        position = self.size
        written = os.write(self._fd, data)
        if written != len(data):
            # A short write would leave a torn batch; cut it off so the file stays whole batches.
            os.ftruncate(self._fd, position)
            raise OSError(f"short write to {self.log_path}: {written} of {len(data)} bytes")
        self.size += written
        for relative, header in batches:
            self._index_batch(position + relative, header)

    def _index_batch(self, position: int, header: BatchHeader) -> None:
        if self.first_batch_timestamp is None:
            self.first_batch_timestamp = header.max_timestamp
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
        if self._bytes_since_index > self.index_interval_bytes:
            self.offset_index.append(header.base_offset, position)
            if self.max_timestamp > self._indexed_max_timestamp:
                self.time_index.append(self.max_timestamp, header.base_offset)
                self._indexed_max_timestamp = self.max_timestamp
            self._bytes_since_index = 0
        self._bytes_since_index += header.size_in_bytes
        self.next_offset = header.next_offset

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; return the bytes removed."""
        found = self.find(offset)
        if found is None:
            return 0
        position, first_removed = found
        removed = self.size - position
        os.ftruncate(self._fd, position)
        self.size = position
        self.offset_index.truncate_values_from(position)
        self.time_index.truncate_values_from(first_removed.base_offset)
        self.txn_index.truncate_to(first_removed.base_offset)
        self.next_offset = self.base_offset
        self._bytes_since_index = 0
        last = self.offset_index.last_entry
        self._restore_tail(0 if last is None else last[1])
        return removed

    def flush(self) -> None:
        """fsync the log file and persist the index entries."""
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    # ------------------------------------------------------------------ reading

    def _headers_from(self, position: int) -> Iterator[tuple[int, BatchHeader]]:
        """Batch headers from ``position`` to the end, reading the file in chunks."""
        while position + HEADER_SIZE <= self.size:
            chunk = os.pread(self._fd, SCAN_CHUNK, position)
            at = 0
            while at + HEADER_SIZE <= len(chunk):
                header = read_header(chunk, at)
                yield position + at, header
                at += header.size_in_bytes
            position += at

    def find(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``."""
        for position, header in self._headers_from(self.offset_index.lookup(offset)):
            if header.last_offset >= offset:
                return position, header
        return None

    def _span(self, offset: int, max_offset: int | None) -> tuple[int, BatchHeader, int] | None:
        """Where a read from ``offset`` starts, its first batch, and where batches starting at
        or after ``max_offset`` begin (the end of the file if none do); None if nothing here."""
        found = self.find(offset)
        if found is None:
            return None
        start, first = found
        end = self.size
        if max_offset is not None:
            if first.base_offset >= max_offset:
                return None
            if max_offset < self.next_offset:
                bound = self.find(max_offset)
                if bound is not None:
                    end = bound[0]
        return start, first, end

    def read(
        self, offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
    ) -> bytes:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` (but at least one
        batch if ``min_one_batch``), none starting at or after ``max_offset``."""
        span = self._span(offset, max_offset)
        if span is None:
            return b""
        start, first, end = span
        length = min(end - start, max_bytes)
        if length < first.size_in_bytes:
            return os.pread(self._fd, first.size_in_bytes, start) if min_one_batch else b""
        data = os.pread(self._fd, length, start)
        whole = 0
        for position, header in iter_batches(data):
            whole = position + header.size_in_bytes
        return data if whole == len(data) else data[:whole]

    def region(
        self, offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
    ) -> tuple[FileRegion, int] | None:
        """The batches ``read`` would return, as where they lie in the file, with the offset
        after the last; None if there are none or any is in rafka's columnar layout (a reader
        in Kafka's layout needs those converted)."""
        span = self._span(offset, max_offset)
        if span is None:
            return None
        start, first, end = span
        limit = min(end - start, max_bytes)
        if limit < first.size_in_bytes and not min_one_batch:
            return None
        size, next_offset = 0, offset
        for position, header in self._headers_from(start):
            batch_end = position + header.size_in_bytes - start
            if position >= end or (size and batch_end > limit):
                break
            if header.is_columnar:
                return None
            size, next_offset = batch_end, header.next_offset
        if not size:
            return None
        inode = os.fstat(self._fd).st_ino
        # Absolute: the broker process that opens it may not share this process's directory.
        path = os.path.abspath(self.log_path)
        return FileRegion(path, inode, start, size), next_offset

    def read_slice(self, position: int, size: int) -> bytes:
        """Raw bytes of the file (for the cleaner and tools)."""
        return os.pread(self._fd, size, position)

    def batches(self) -> Iterator[tuple[int, BatchHeader]]:
        """Every batch header in the segment, oldest first."""
        return self._headers_from(0)

    def find_by_timestamp(self, timestamp: int, min_offset: int = 0) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or above ``min_offset`` with timestamp >=
        ``timestamp`` here, or None."""
        if self.max_timestamp < timestamp:
            return None
        found = self.find(max(self.time_index.lookup(timestamp), min_offset))
        if found is None:
            return None
        for position, header in self._headers_from(found[0]):
            if header.max_timestamp >= timestamp:
                batch = os.pread(self._fd, header.size_in_bytes, position)
                for record in decode_records(batch, 0, header):
                    if record.offset >= min_offset and record.timestamp >= timestamp:
                        return record.offset, record.timestamp
        return None

    # ------------------------------------------------------------------ lifecycle

    @property
    def is_full_index(self) -> bool:
        """Whether either index reached ``segment.index.bytes``."""
        return self.offset_index.is_full or self.time_index.is_full

    def close(self) -> None:
        """Persist indexes and close the file descriptor."""
        if self._fd >= 0:
            self.offset_index.flush()
            self.time_index.flush()
            self.txn_index.flush()
            os.close(self._fd)
            self._fd = -1

    def release(self) -> None:
        """Close the file descriptor without persisting anything (a simulated crash)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        """Close and remove the segment's files."""
        self.release()
        self.log_path.unlink(missing_ok=True)
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
