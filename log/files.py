"""File names and durable file operations for partition directories.

A partition lives in ``<topic>-<partition>``; its segments are ``<20-digit base
offset>.log`` with ``.index``, ``.timeindex`` and (after an abort) ``.txnindex`` beside them, and
producer state snapshots ``<20-digit offset>.snapshot``, as in Kafka. Checkpoints are
replaced atomically so a crash leaves either the old or the new content, never a torn file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TEMP_SUFFIX = ".tmp"
CLEAN_SHUTDOWN_FILE = ".rafka_cleanshutdown"

_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT_NAME = re.compile(r"^(\d{20})\.snapshot$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    """Path of a segment file: ``00000000000000000042.log`` for base offset 42."""
    return directory / f"{base_offset:020d}{suffix}"


def base_offset_of(path: Path) -> int | None:
    """Base offset encoded in a ``.log`` file name, or None if the name is not a segment's."""
    match = _SEGMENT_NAME.match(path.name)
    return int(match.group(1)) if match else None


def snapshot_offset_of(path: Path) -> int | None:
    """Offset encoded in a producer ``.snapshot`` file name, or None if it is not one."""
    match = _SNAPSHOT_NAME.match(path.name)
    return int(match.group(1)) if match else None


def partition_dir_name(topic: str, partition: int) -> str:
    """Directory name of a partition: ``<topic>-<partition>``."""
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int]:
    """Split ``<topic>-<partition>`` back into its parts (topics may contain dashes)."""
    match = _PARTITION_DIR.match(name)
    if match is None:
        raise ValueError(f"{name!r} is not a partition directory name (<topic>-<partition>)")
    return match.group(1), int(match.group(2))


def fsync_dir(directory: Path) -> None:
    """Make created, renamed or deleted entries of ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, data: bytes) -> None:
    """Write ``path`` (replacing any content) and fsync it before returning."""
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: write a temp file, fsync, rename it over, fsync the dir."""
    temp = path.with_name(path.name + TEMP_SUFFIX)
    write_durably(temp, data)
    os.replace(temp, path)
    fsync_dir(path.parent)
