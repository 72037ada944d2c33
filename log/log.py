"""The partition log: an ordered list of segments with one active segment at the end.

Appends are O(1) (write to the active segment's file and maybe add an index
entry); reads by offset are a binary search over segment base offsets, then
the segment's sparse index, then a short scan, so their cost does not grow
with the log. The log is owned by one replica actor and is not thread-safe.

Durability follows Kafka: writes go to the page cache and ``flush.messages`` / ``flush.ms`` decide
when to fsync (default: leave it to the OS). The recovery point is the offset below which everything
was fsynced; on an unclean open every segment from the one holding the recovery point is re-verified
and cut at the first torn or corrupt batch, so a batch that was written and flushed is never lost.
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rafka.log import deleted_dirs, producer_snapshot
from rafka.log.checkpoint import (
    LOG_START_OFFSET_FILE,
    RECOVERY_POINT_FILE,
    OffsetCheckpoint,
)
from rafka.log.config import INT32_MAX, LogConfig
from rafka.log.files import (
    CLEAN_SHUTDOWN_FILE,
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TEMP_SUFFIX,
    TIME_INDEX_SUFFIX,
    base_offset_of,
    fsync_dir,
    parse_partition_dir,
    segment_path,
)
from rafka.log.leader_epoch_cache import LeaderEpochCache
from rafka.log.producer_state import (
    AppendBatch,
    BatchMetadata,
    ProducerAppend,
    ProducerStateManager,
)
from rafka.log.segment import LogSegment
from rafka.log.transaction_index import AbortedTxn
from rafka.protocol.errors import (
    CorruptMessageError,
    InvalidRecordError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from rafka.protocol.messages.fetch import AbortedTransaction, FileRegion
from rafka.protocol.messages.produce import AppendOrigin
from rafka.protocol.records.batch import (
    BatchHeader,
    iter_batches,
    stamp,
    validate_records,
    verify_crc,
)
from rafka.protocol.records.control import parse_marker
from rafka.protocol.types import now_ms

logger = logging.getLogger(__name__)


class UnexpectedAppendOffsetError(CorruptMessageError):
    """A follower was handed batches that overlap its log or leave a gap after it."""


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    """What an append wrote: its offsets, timestamps and size. A ``duplicate`` append wrote
    nothing: the offsets are those the producer's batch got when it was first appended."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    record_count: int
    size_in_bytes: int
    duplicate: bool = False

    @classmethod
    def of_duplicate(cls, batch: BatchMetadata) -> LogAppendInfo:
        """The answer to a retried batch already in the log."""
        return cls(batch.first_offset, batch.last_offset, batch.timestamp, 0, 0, duplicate=True)


class Log:
    """The log of one partition replica in its own directory."""

    def __init__(
        self, directory: Path, config: LogConfig | None = None, clock: Callable[[], int] = now_ms
    ) -> None:
        self.directory = Path(directory)
        self.config = config or LogConfig()
        self.clock = clock
        self.directory.mkdir(parents=True, exist_ok=True)
        self._recovery_checkpoint = OffsetCheckpoint(self.directory / RECOVERY_POINT_FILE)
        self._start_checkpoint = OffsetCheckpoint(self.directory / LOG_START_OFFSET_FILE)
        self.epoch_cache = LeaderEpochCache(self.directory)
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = self._start_checkpoint.read(0)
        self.recovery_point = self._recovery_checkpoint.read(0)
        self._unflushed_records = 0
        self._last_flush_ms = clock()
        self.recovered_bytes_cut = 0
        self.producer_state = ProducerStateManager(self.directory.name)
        self._load()

    # ------------------------------------------------------------------ opening and recovery

    def _load(self) -> None:
        self._finish_interrupted_swaps()
        clean = (self.directory / CLEAN_SHUTDOWN_FILE).exists()
        bases = sorted(
            b
            for b in (base_offset_of(p) for p in self.directory.glob(f"*{LOG_SUFFIX}"))
            if b is not None
        )
        for base in bases:
            self._add_segment(
                LogSegment(
                    self.directory,
                    base,
                    self.config.index_interval_bytes,
                    self.config.segment_index_bytes,
                )
            )
        if clean:
            for segment in self.segments:
                segment.load()
            (self.directory / CLEAN_SHUTDOWN_FILE).unlink()
        else:
            self._recover_from(self.recovery_point)
        if not self.segments:
            self._add_segment(self._new_segment(self.log_start_offset))
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        if self.log_end_offset < self.log_start_offset:
            # The start offset was checkpointed (DeleteRecords) above data
            # the crash lost before an fsync; as in Kafka, restart the log
            # empty there rather than hand out offsets below its start.
            self.truncate_fully_and_start_at(self.log_start_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.epoch_cache.truncate_from_end(self.log_end_offset)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        producer_snapshot.delete_where(
            self.directory, below=self.segments[0].base_offset, above=self.log_end_offset
        )
        self._load_producer_state(clean)
        if not bases:
            logger.info("Created log for partition %s in %s", self.directory.name, self.directory)
            return
        logger.info(
            "[Log partition=%s] Loaded log with %d segments, log start offset %d and log end "
            "offset %d, after a%s shutdown",
            self.directory.name,
            len(self.segments),
            self.log_start_offset,
            self.log_end_offset,
            " clean" if clean else "n unclean",
        )

    # ------------------------------------------------------------------ producer state

    def _load_producer_state(self, clean: bool) -> None:
        """Restore producer state: the latest usable snapshot, then the batches after it."""
        end = self.log_end_offset
        start = producer_snapshot.restore(
            self.directory,
            self.producer_state,
            end if clean else self.active_segment.base_offset,
            self.segments[0].base_offset,
            end,
        )
        if start < end:
            self._replay_producer_state(start)
        self.producer_state.truncate_head(self.log_start_offset)

    def _replay_producer_state(self, start: int) -> None:
        """Apply every producer batch from ``start`` to the producer state and, for aborted
        transactions the indexes miss (lost in a crash), to the transaction indexes."""
        first = max(0, bisect.bisect_right(self._bases, start) - 1)
        for segment in self.segments[first:]:
            for position, header in segment.batches():
                if header.base_offset < start or header.producer_id < 0:
                    continue
                size = header.size_in_bytes if header.is_control else 0
                data = segment.read_slice(position, size)
                for aborted in self.producer_state.replay(_producer_batch(data, 0, header)):
                    segment.txn_index.append(aborted)

    def _index_aborted(self, aborted: list[AbortedTxn]) -> None:
        for entry in aborted:
            self.active_segment.txn_index.append(entry)

    def last_stable_offset(self, high_watermark: int) -> int:
        """LSO: ``high_watermark``, or the first offset of a transaction still open (or whose
        marker is not yet below ``high_watermark``) if lower."""
        return self.producer_state.last_stable_offset(high_watermark)

    def collect_aborted_transactions(self, start: int, end: int) -> list[AbortedTransaction]:
        """Aborted transactions with records in [``start``, ``end``), oldest first."""
        found: list[AbortedTransaction] = []
        first = max(0, bisect.bisect_right(self._bases, start) - 1)
        for segment in self.segments[first:]:
            entries, complete = segment.txn_index.collect(start, end)
            found.extend(AbortedTransaction(e.producer_id, e.first_offset) for e in entries)
            if complete:
                break
        return found

    def remove_expired_producers(self, expiration_ms: int) -> list[int]:
        """Forget producer ids idle for ``expiration_ms`` (``producer.id.expiration.ms``) with no
        open transaction; return them."""
        return self.producer_state.remove_expired(self.clock(), expiration_ms)

    def _finish_interrupted_swaps(self) -> None:
        """Complete or undo what a crash interrupted: temp and cleaned files go, swaps complete."""
        for leftover in list(self.directory.glob(f"*{CLEANED_SUFFIX}")) + list(
            self.directory.glob(f"*{TEMP_SUFFIX}")
        ):
            leftover.unlink()
        for swap in self.directory.glob(f"*{LOG_SUFFIX}{SWAP_SUFFIX}"):
            target = swap.with_name(swap.name[: -len(SWAP_SUFFIX)])
            base = base_offset_of(target)
            if base is not None:
                segment_path(self.directory, base, INDEX_SUFFIX).unlink(missing_ok=True)
                segment_path(self.directory, base, TIME_INDEX_SUFFIX).unlink(missing_ok=True)
            os.replace(swap, target)

    def _recover_from(self, recovery_point: int) -> None:
        """Load segments below the recovery point, verify the rest and cut at the first damage."""
        start = max(0, bisect.bisect_right(self._bases, recovery_point) - 1)
        for segment in self.segments[:start]:
            segment.load()
        for index in range(start, len(self.segments)):
            segment = self.segments[index]
            cut = segment.recover()
            if cut:
                self.recovered_bytes_cut += cut
                later = self.segments[index + 1 :]
                logger.warning(
                    "%s: cut %d damaged bytes from segment %d at offset %d "
                    "and dropped %d later segments",
                    self.directory.name,
                    cut,
                    segment.base_offset,
                    segment.next_offset,
                    len(later),
                )
                for dropped in later:
                    self.recovered_bytes_cut += dropped.size
                    dropped.delete()
                del self.segments[index + 1 :]
                del self._bases[index + 1 :]
                break

    def _new_segment(self, base_offset: int) -> LogSegment:
        segment = LogSegment(
            self.directory,
            base_offset,
            self.config.index_interval_bytes,
            self.config.segment_index_bytes,
        )
        fsync_dir(self.directory)
        return segment

    def _add_segment(self, segment: LogSegment) -> None:
        self.segments.append(segment)
        self._bases.append(segment.base_offset)

    # ------------------------------------------------------------------ state

    @property
    def active_segment(self) -> LogSegment:
        """The segment appends go to."""
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        """LEO: the offset the next appended record gets."""
        return self.segments[-1].next_offset

    @property
    def size_in_bytes(self) -> int:
        """Total bytes of all segments."""
        return sum(segment.size for segment in self.segments)

    # ------------------------------------------------------------------ appending

    def _validate(
        self, data: bytes | bytearray, deep: bool, control: bool = True
    ) -> list[tuple[int, BatchHeader]]:
        """Check every batch before anything is written; a bad one rejects the whole append."""
        batches = list(iter_batches(data))
        if not batches:
            # Rejected here, before the leader records its epoch
            # in the cache for an append that never happens.
            raise CorruptMessageError(f"append of {len(data)} bytes holds no whole batch")
        consumed = batches[-1][0] + batches[-1][1].size_in_bytes
        if consumed != len(data):
            raise CorruptMessageError(
                f"append of {len(data)} bytes holds {consumed} bytes of whole batches"
            )
        for position, header in batches:
            if header.size_in_bytes > self.config.max_message_bytes:
                raise MessageTooLargeError(
                    f"batch of {header.size_in_bytes} bytes exceeds "
                    f"max.message.bytes={self.config.max_message_bytes}"
                )
            if header.size_in_bytes > self.config.segment_bytes:
                raise RecordListTooLargeError(
                    f"batch of {header.size_in_bytes} bytes exceeds "
                    f"segment.bytes={self.config.segment_bytes}"
                )
            if header.record_count == 0:
                raise CorruptMessageError(f"batch at byte {position} holds no records")
            if header.is_control and not control:
                raise InvalidRecordError(
                    f"batch at byte {position} is a control batch, which only a transaction "
                    "coordinator may append"
                )
            verify_crc(data, position, header)
            if deep and None in validate_records(data, position, header).keys:
                raise InvalidRecordError("a compacted topic cannot accept a record without a key")
        return batches

    def append_as_leader(
        self,
        data: bytes | bytearray,
        leader_epoch: int,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> LogAppendInfo:
        """Validate producer batches, assign offsets from the LEO, stamp the epoch and append.

        Nothing is written unless every batch is valid: MESSAGE_TOO_LARGE over max.message.bytes,
        CORRUPT_MESSAGE for a bad CRC or framing, INVALID_RECORD for a null key on a compacted
        topic or a client's control batch, and the producer state's errors for batches with a
        producer id (epoch, sequence, coordinator epoch). A retried batch already in the log is
        not written again: the answer carries its first offsets with ``duplicate`` set. The CRC
        vouches for the bytes the producer built; records are decoded here only on compacted
        topics, which must see keys, so appends cost O(batches), not O(records).
        """
        coordinator = origin is AppendOrigin.COORDINATOR
        batches = self._validate(data, deep=self.config.compact, control=coordinator)
        buffer = bytearray(data)
        next_offset = self.log_end_offset
        stamped: list[tuple[int, BatchHeader]] = []
        for position, header in batches:
            stamp(buffer, position, next_offset, leader_epoch)
            stamped.append((position, _rebased(header, next_offset, leader_epoch)))
            next_offset += header.last_offset_delta + 1
        pending: ProducerAppend | None = None
        if any(header.producer_id >= 0 for _, header in stamped):
            pending = self.producer_state.prepare(
                [_producer_batch(buffer, p, h) for p, h in stamped if h.producer_id >= 0],
                check_sequence=not coordinator,
            )
            if pending.duplicate is not None:
                return LogAppendInfo.of_duplicate(pending.duplicate)
        self.epoch_cache.assign(leader_epoch, self.log_end_offset)
        info = self._append(buffer, stamped)
        if pending is not None:
            self._index_aborted(self.producer_state.commit(pending))
        return info

    def append_as_follower(self, data: bytes | bytearray) -> LogAppendInfo:
        """Append batches fetched from the leader, keeping their offsets and epochs.

        The first batch must start at the LEO (after compaction a later offset is allowed, since the
        leader's batches may have gaps); overlapping or backwards batches are rejected.
        """
        batches = self._validate(data, deep=False)
        expected = self.log_end_offset
        for _, header in batches:
            if header.base_offset < expected or (
                header.base_offset > expected and not self.config.compact
            ):
                raise UnexpectedAppendOffsetError(
                    f"follower append of batch at offset {header.base_offset} does not follow log "
                    f"end offset {expected}"
                )
            expected = header.next_offset
        for _, header in batches:
            if header.partition_leader_epoch > self.epoch_cache.latest_epoch:
                self.epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        info = self._append(data, batches)
        for position, header in batches:
            if header.producer_id >= 0:
                self._index_aborted(
                    self.producer_state.replay(_producer_batch(data, position, header))
                )
        return info

    def _append(
        self, data: bytes | bytearray, batches: list[tuple[int, BatchHeader]]
    ) -> LogAppendInfo:
        first, last = batches[0][1], batches[-1][1]
        self._maybe_roll(len(data), first, last)
        self.active_segment.append(data, batches)
        records = sum(header.record_count for _, header in batches)
        self._unflushed_records += records
        if self._unflushed_records >= self.config.flush_messages:
            self.flush()
        return LogAppendInfo(
            first_offset=first.base_offset,
            last_offset=last.last_offset,
            max_timestamp=max(header.max_timestamp for _, header in batches),
            record_count=records,
            size_in_bytes=len(data),
        )

    def _maybe_roll(self, size: int, first: BatchHeader, last: BatchHeader) -> None:
        segment = self.active_segment
        if segment.size == 0:
            return
        too_big = segment.size + size > self.config.segment_bytes
        too_old = (
            segment.first_batch_timestamp is not None
            and last.max_timestamp - segment.first_batch_timestamp > self.config.segment_ms
        )
        overflow = last.last_offset - segment.base_offset > INT32_MAX
        if too_big or too_old or overflow or segment.is_full_index:
            self.roll(first.base_offset)

    def roll(self, next_base_offset: int | None = None) -> LogSegment:
        """Close the active segment to appends and start a new one at the LEO."""
        base = self.log_end_offset if next_base_offset is None else next_base_offset
        if self.active_segment.size == 0 and self.active_segment.base_offset == base:
            return self.active_segment
        # Kafka flushes a segment when it rolls: everything below the new base becomes durable.
        self.active_segment.flush()
        self.recovery_point = max(self.recovery_point, self.active_segment.next_offset)
        # Before the new segment exists: a new active segment implies its base's snapshot.
        producer_snapshot.take(self.directory, base, self.producer_state)
        self._add_segment(self._new_segment(base))
        return self.active_segment

    # ------------------------------------------------------------------ reading

    def read(
        self,
        offset: int,
        max_bytes: int = 1 << 20,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> bytes:
        """Whole batches from the one holding ``offset``: at most
        ``max_bytes`` (but one batch at least if ``min_one_batch``), none
        at or above ``max_offset`` (the high watermark for consumers).

        OFFSET_OUT_OF_RANGE outside [log start offset, LEO]; reading at the LEO returns no bytes.
        """
        end = self.log_end_offset
        if offset < self.log_start_offset or offset > end:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside the log of {self.directory.name}: "
                f"[{self.log_start_offset}, {end}]"
            )
        if offset == end or (max_offset is not None and offset >= max_offset):
            return b""
        index = bisect.bisect_right(self._bases, offset) - 1
        while index < len(self.segments):
            segment = self.segments[index]
            data = segment.read(offset, max_bytes, max_offset, min_one_batch)
            # Only an offset in a gap at a segment's end (compaction)
            # continues in the next segment; an empty answer for a batch that
            # does not fit must not skip ahead to a later, smaller batch.
            if data or segment.find(offset) is not None:
                return data
            index += 1
        return b""

    def region(
        self,
        offset: int,
        max_bytes: int = 1 << 20,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> tuple[FileRegion, int] | None:
        """What ``read`` would return, as where it lies in one segment file, with the offset
        after its last batch; None when ``read`` must answer instead (nothing to read, an offset
        out of range, a gap, or a batch in rafka's columnar layout)."""
        if not self.log_start_offset <= offset < self.log_end_offset:
            return None
        if max_offset is not None and offset >= max_offset:
            return None
        segment = self.segments[bisect.bisect_right(self._bases, offset) - 1]
        return segment.region(offset, max_bytes, max_offset, min_one_batch)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``timestamp``, or None."""
        for segment in self.segments:
            if segment.max_timestamp >= timestamp:
                # Records below the log start offset are deleted even while their segment remains.
                found = segment.find_by_timestamp(timestamp, self.log_start_offset)
                if found is not None:
                    return found
        return None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (largest epoch <= ``epoch``, its end offset) or (-1, -1)."""
        return self.epoch_cache.end_offset_for(epoch, self.log_end_offset)

    # ------------------------------------------------------------------ truncation

    def truncate_to(self, offset: int) -> int:
        """Remove every record at or above ``offset`` (diverged follower); return bytes removed."""
        if offset >= self.log_end_offset:
            return 0
        if offset <= self.log_start_offset:
            return self.truncate_fully_and_start_at(offset)
        removed = 0
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            removed += self.segments[-1].size
            self.segments.pop().delete()
            self._bases.pop()
        removed += self.active_segment.truncate_to(offset)
        self.epoch_cache.truncate_from_end(self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        producer_snapshot.delete_where(self.directory, above=self.log_end_offset)
        # Truncation only removes producers: an empty state needs no rebuild.
        if not self.producer_state.is_empty:
            self._load_producer_state(clean=False)
        return removed

    def truncate_fully_and_start_at(self, offset: int) -> int:
        """Drop the whole log and restart it empty at ``offset`` (a replica far behind)."""
        removed = self.size_in_bytes
        for segment in self.segments:
            segment.delete()
        self.segments, self._bases = [], []
        self._add_segment(self._new_segment(offset))
        self.log_start_offset = self.recovery_point = offset
        self.epoch_cache.clear()
        producer_snapshot.delete_where(self.directory, above=-1)
        self.producer_state.clear()
        self.checkpoint()
        return removed

    # ------------------------------------------------------------------ retention

    def delete_old_segments(self) -> int:
        """Apply retention.ms, retention.bytes and the log start offset to whole inactive segments.

        Returns how many segments were deleted. The active segment is never deleted.
        """
        if not self.config.delete:
            return self._delete_prefix(self._below_start)
        now = self.clock()
        retention_ms = self.config.retention_ms
        excess = (
            self.size_in_bytes - self.config.retention_bytes
            if self.config.retention_bytes >= 0
            else 0
        )

        def expired(segment: LogSegment, following: LogSegment) -> bool:
            nonlocal excess
            if self._below_start(segment, following):
                return True
            if retention_ms >= 0 and now - segment.max_timestamp > retention_ms:
                return True
            if excess - segment.size >= 0:
                excess -= segment.size
                return True
            return False

        return self._delete_prefix(expired)

    def _below_start(self, segment: LogSegment, following: LogSegment) -> bool:
        return following.base_offset <= self.log_start_offset

    def _delete_prefix(self, deletable: Callable[[LogSegment, LogSegment], bool]) -> int:
        count = 0
        while len(self.segments) > 1 and deletable(self.segments[0], self.segments[1]):
            self.segments.pop(0).delete()
            self._bases.pop(0)
            count += 1
        if count:
            self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
            self.epoch_cache.truncate_from_start(self.log_start_offset)
            self._start_checkpoint.write(self.log_start_offset)
            producer_snapshot.delete_where(self.directory, below=self.segments[0].base_offset)
            self.producer_state.truncate_head(self.log_start_offset)
            fsync_dir(self.directory)
        return count

    def advance_log_start_offset(self, offset: int) -> None:
        """Move the log start offset forward (DeleteRecords); retention drops what is below."""
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"log start offset {offset} is above the log end offset {self.log_end_offset}"
            )
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self.epoch_cache.truncate_from_start(offset)
            self._start_checkpoint.write(offset)
            self.producer_state.truncate_head(offset)

    # ------------------------------------------------------------------ durability and lifecycle

    def flush(self) -> None:
        """fsync every segment with records above the recovery point; advance the recovery point."""
        start = max(0, bisect.bisect_right(self._bases, self.recovery_point) - 1)
        for segment in self.segments[start:]:
            segment.flush()
        self.recovery_point = self.log_end_offset
        self._unflushed_records = 0
        self._last_flush_ms = self.clock()

    def maybe_flush(self) -> bool:
        """Flush when records wait and ``flush.ms`` passed since the last flush (periodic)."""
        if self._unflushed_records and self.clock() - self._last_flush_ms >= self.config.flush_ms:
            self.flush()
            return True
        return False

    def checkpoint(self) -> None:
        """Persist the recovery point and log start offset (called periodically and on close)."""
        self._recovery_checkpoint.write(self.recovery_point)
        self._start_checkpoint.write(self.log_start_offset)

    def update_config(self, config: LogConfig) -> None:
        """Apply a changed topic config to the next appends, rolls and retention passes."""
        self.config = config
        for segment in self.segments:
            segment.index_interval_bytes = config.index_interval_bytes

    def close(self) -> None:
        """Flush, checkpoint, snapshot the producer state and mark the shutdown clean so the next
        open skips recovery."""
        self.flush()
        self.checkpoint()
        producer_snapshot.take(self.directory, self.log_end_offset, self.producer_state)
        for segment in self.segments:
            segment.close()
        (self.directory / CLEAN_SHUTDOWN_FILE).touch()
        fsync_dir(self.directory)

    def abandon(self) -> None:
        """Close file descriptors without a flush or a clean-shutdown marker (a simulated crash)."""
        for segment in self.segments:
            segment.release()

    def rename_for_deletion(self) -> Path:
        """Close the log's files and rename its directory ``<topic>-<partition>.<uuid>-delete``
        (StopReplica with deletion); the directory is removed later. Returns the new path."""
        self.abandon()
        renamed = deleted_dirs.rename_for_deletion(
            self.directory, *parse_partition_dir(self.directory.name)
        )
        assert renamed is not None
        self.directory = renamed
        return renamed


def _producer_batch(data: bytes | bytearray, position: int, header: BatchHeader) -> AppendBatch:
    """A batch with a producer id as producer state takes it: with its marker if a control batch."""
    return AppendBatch(header, parse_marker(data, position, header) if header.is_control else None)


def _rebased(header: BatchHeader, base_offset: int, leader_epoch: int) -> BatchHeader:
    """The header as stamped by the leader."""
    return replace(header, base_offset=base_offset, partition_leader_epoch=leader_epoch)
