"""Producer state snapshots: ``<20-digit offset>.snapshot`` files in the partition directory.

A snapshot holds the producer state of the log below its offset, so opening a log loads the latest
one and replays only the batches after it. The file is a CRC-32C (uint32, big-endian) of the body
followed by the body, msgpack ``[version, entries]`` with each entry ``[producer_id, epoch,
coordinator_epoch, current_txn_first_offset, last_timestamp, [[first_seq, last_seq, first_offset,
last_offset, timestamp], ...]]``. A file that fails its CRC or does not parse is ignored.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from pathlib import Path

import crc32c
import msgpack

from rafka.log.files import SNAPSHOT_SUFFIX, atomic_write, segment_path, snapshot_offset_of
from rafka.log.producer_state import BatchMetadata, ProducerStateEntry, ProducerStateManager

logger = logging.getLogger(__name__)

SNAPSHOT_VERSION = 1
_CRC = struct.Struct(">I")


def encode(entries: Iterable[ProducerStateEntry]) -> bytes:
    """The snapshot file's bytes for ``entries``."""
    body: bytes = msgpack.packb(
        [
            SNAPSHOT_VERSION,
            [
                [
                    e.producer_id,
                    e.producer_epoch,
                    e.coordinator_epoch,
                    e.current_txn_first_offset,
                    e.last_timestamp,
                    [
                        [b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp]
                        for b in e.batches
                    ],
                ]
                for e in entries
            ],
        ]
    )
    return _CRC.pack(crc32c.crc32c(body)) + body


def decode(data: bytes) -> list[ProducerStateEntry] | None:
    """The entries of a snapshot file's bytes, or None if they are damaged or of another version."""
    if len(data) < _CRC.size or _CRC.unpack_from(data)[0] != crc32c.crc32c(data[_CRC.size :]):
        return None
    try:
        version, raw = msgpack.unpackb(data[_CRC.size :])
        if version != SNAPSHOT_VERSION:
            return None
        return [
            ProducerStateEntry(
                pid, epoch, [BatchMetadata(*b) for b in batches], coordinator_epoch, txn, ts
            )
            for pid, epoch, coordinator_epoch, txn, ts, batches in raw
        ]
    except (ValueError, TypeError):
        return None


def write(directory: Path, offset: int, entries: Iterable[ProducerStateEntry]) -> Path:
    """Write (atomically and durably) the snapshot of the state below ``offset``."""
    path = segment_path(directory, offset, SNAPSHOT_SUFFIX)
    atomic_write(path, encode(entries))
    return path


def take(directory: Path, offset: int, state: ProducerStateManager) -> None:
    """Snapshot ``state`` as the state below ``offset``; an empty state leaves no file there."""
    if state.is_empty:
        delete_where(directory, below=offset + 1, above=offset - 1)
    else:
        write(directory, offset, state.producers.values())


def restore(
    directory: Path, state: ProducerStateManager, start: int, first_base: int, end: int
) -> int:
    """Load into ``state`` the snapshot to replay from; return where the replay starts.

    ``start`` is where replay may start on its own: the log end after a clean close, else the
    active segment's base. A snapshot is taken at every roll and on close unless the state is
    empty, so with no snapshot in [``start``, ``end``] the state was empty at ``start``. If the
    newest snapshot is damaged, only an older one or the log's first segment (``first_base``) is
    safe to start from.
    """
    newest = max((o for o in offsets(directory) if o <= end), default=-1)
    found = load_latest(directory, end)
    if newest >= 0 and (found is None or found[0] != newest):
        start = first_base if found is None else found[0]
    if found is not None and found[0] >= start:
        state.load(found[1])
        return found[0]
    state.clear()
    return start


def offsets(directory: Path) -> list[int]:
    """Offsets of the snapshot files in ``directory``, ascending."""
    found = (snapshot_offset_of(p) for p in directory.glob(f"*{SNAPSHOT_SUFFIX}"))
    return sorted(o for o in found if o is not None)


def load_latest(directory: Path, at_most: int) -> tuple[int, list[ProducerStateEntry]] | None:
    """The newest readable snapshot at or below ``at_most``, with its offset; damaged ones found on
    the way are deleted."""
    for offset in reversed(offsets(directory)):
        if offset > at_most:
            continue
        path = segment_path(directory, offset, SNAPSHOT_SUFFIX)
        entries = decode(path.read_bytes())
        if entries is not None:
            return offset, entries
        logger.warning("%s: deleting damaged producer snapshot %s", directory.name, path.name)
        path.unlink(missing_ok=True)
    return None


def delete_where(directory: Path, below: int | None = None, above: int | None = None) -> int:
    """Delete snapshots with offsets < ``below`` or > ``above``; return how many."""
    count = 0
    for offset in offsets(directory):
        if (below is not None and offset < below) or (above is not None and offset > above):
            segment_path(directory, offset, SNAPSHOT_SUFFIX).unlink(missing_ok=True)
            count += 1
    return count
