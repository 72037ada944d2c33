"""Log compaction (``cleanup.policy=compact``): keep the latest record of every key.

One pass builds an offset map (key -> latest offset) over the dirty part of the log, from the
cleaner checkpoint up to the active segment, then rewrites every inactive segment keeping
only records that are the latest for their key. Offsets never change: surviving records keep
their offsets and batches keep their base offsets, so a consumer's position stays valid.
Tombstones (null values) are dropped once their batch is older than ``delete.retention.ms``,
giving consumers that long to see the delete. The active segment is never touched. Control
batches (transaction markers) are kept whole and stay out of the offset map: they all share a key,
and producer state rebuilt from the log needs every one of them.

A rewritten segment is written to ``.log.cleaned``, renamed to ``.log.swap`` and then over the
original; a crash at any step leaves either the old or the new segment (``Log`` finishes swaps on
open), never a mix.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rafka.log.checkpoint import OffsetCheckpoint
from rafka.log.files import CLEANED_SUFFIX, SWAP_SUFFIX, fsync_dir, write_durably
from rafka.log.log import Log
from rafka.log.segment import LogSegment
from rafka.protocol.records.batch import BatchHeader, decode_columns, encode_batch
from rafka.protocol.records.columns import RecordColumns

CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What one compaction pass did."""

    segments_rewritten: int
    records_removed: int
    tombstones_removed: int
    bytes_before: int
    bytes_after: int


def dirty_ratio(log: Log) -> float:
    """Share of the inactive log written since the last compaction."""
    first_dirty = max(_checkpoint(log).read(0), log.log_start_offset)
    inactive = log.segments[:-1]
    total = sum(segment.size for segment in inactive)
    if total == 0:
        return 0.0
    dirty = sum(segment.size for segment in inactive if segment.base_offset >= first_dirty)
    return dirty / total


def maybe_compact(log: Log) -> CleanResult | None:
    """Compact a compacted log whose dirty ratio reached ``min.cleanable.dirty.ratio``."""
    if not log.config.compact or len(log.segments) < 2:
        return None
    ratio = dirty_ratio(log)
    if ratio == 0.0 or ratio < log.config.min_cleanable_dirty_ratio:
        return None
    return compact(log)


def compact(log: Log) -> CleanResult:
    """Run one full compaction pass over the inactive segments of ``log``."""
    inactive = log.segments[:-1]
    first_dirty = max(_checkpoint(log).read(0), log.log_start_offset)
    latest = _offset_map(inactive, first_dirty)
    horizon = log.clock() - log.config.delete_retention_ms
    rewritten = removed = tombstones = 0
    before = sum(segment.size for segment in inactive)
    for index, segment in enumerate(inactive):
        kept_data, dropped, dropped_tombstones = _clean_segment(segment, latest, horizon)
        if dropped == 0:
            continue
        log.segments[index] = _swap_in(log, segment, kept_data)
        rewritten += 1
        removed += dropped
        tombstones += dropped_tombstones
    _checkpoint(log).write(log.active_segment.base_offset)
    after = sum(segment.size for segment in log.segments[:-1])
    return CleanResult(rewritten, removed, tombstones, before, after)


def _checkpoint(log: Log) -> OffsetCheckpoint:
    return OffsetCheckpoint(log.directory / CLEANER_CHECKPOINT_FILE)


def _offset_map(segments: list[LogSegment], first_dirty: int) -> dict[bytes, int]:
    """key -> latest offset among records at or above ``first_dirty`` in ``segments``."""
    latest: dict[bytes, int] = {}
    for segment in segments:
        if segment.next_offset <= first_dirty:
            continue
        for position, header in segment.batches():
            if header.last_offset < first_dirty or header.is_control:
                continue
            columns = decode_columns(segment.read_slice(position, header.size_in_bytes), 0, header)
            for od, key in zip(columns.offset_deltas, columns.keys, strict=True):
                if key is not None:
                    latest[key] = header.base_offset + od
    return latest


def _clean_segment(
    segment: LogSegment, latest: dict[bytes, int], horizon: int
) -> tuple[bytes, int, int]:
    """The segment's batches with superseded records (and old tombstones) removed."""
    out: list[bytes] = []
    dropped = dropped_tombstones = 0
    for position, header in segment.batches():
        raw = segment.read_slice(position, header.size_in_bytes)
        if header.is_control:
            out.append(raw)
            continue
        columns = decode_columns(raw, 0, header)
        kept: list[int] = []
        for index, (od, key, value) in enumerate(
            zip(columns.offset_deltas, columns.keys, columns.values, strict=True)
        ):
            offset = header.base_offset + od
            if key is not None and latest.get(key, offset) > offset:
                dropped += 1
            elif value is None and header.max_timestamp <= horizon:
                dropped += 1
                dropped_tombstones += 1
            else:
                kept.append(index)
        if len(kept) == header.record_count:
            out.append(raw)
        elif kept:
            out.append(_rebuild(header, columns.select(kept)))
    return b"".join(out), dropped, dropped_tombstones


def _rebuild(header: BatchHeader, kept: RecordColumns) -> bytes:
    """A batch with the same header identity (offsets, epoch, producer), only ``kept`` records."""
    first_ts = header.first_timestamp
    return encode_batch(
        kept,
        first_timestamp=first_ts,
        max_timestamp=first_ts + max(kept.timestamp_deltas),
        last_offset_delta=header.last_offset_delta,
        base_offset=header.base_offset,
        attributes=header.attributes,
        partition_leader_epoch=header.partition_leader_epoch,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
    )


def _swap_in(log: Log, old: LogSegment, data: bytes) -> LogSegment:
    """Replace ``old``'s file with ``data`` through the cleaned -> swap -> log renames."""
    cleaned = Path(f"{old.log_path}{CLEANED_SUFFIX}")
    swap = Path(f"{old.log_path}{SWAP_SUFFIX}")
    write_durably(cleaned, data)
    os.replace(cleaned, swap)
    fsync_dir(log.directory)
    aborted = old.txn_index.entries
    old.delete()
    os.replace(swap, old.log_path)
    fsync_dir(log.directory)
    fresh = LogSegment(
        log.directory,
        old.base_offset,
        log.config.index_interval_bytes,
        log.config.segment_index_bytes,
    )
    fresh.recover()
    for entry in aborted:
        fresh.txn_index.append(entry)
    # An emptied segment still covers its offsets: keep its
    # place so later base offsets stay ordered.
    fresh.next_offset = max(fresh.next_offset, old.next_offset)
    fresh.flush()
    return fresh
