"""Checkpoint files in Kafka's text format, replaced atomically.

Kafka's offset checkpoints (recovery point, log start offset, high watermark) and the leader epoch
checkpoint share one format: a version line, a count line, then one entry per line. Each partition
directory keeps its own files, because each partition is owned by its own replica actor.
"""

from __future__ import annotations

from pathlib import Path

from rafka.log.files import atomic_write

RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_FILE = "log-start-offset-checkpoint"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
LEADER_EPOCH_FILE = "leader-epoch-checkpoint"

VERSION = 0


class CheckpointFile:
    """A file of integer tuples: ``write([(a, b), ...])`` then ``read()`` returns them back.

    A missing file reads as no entries; a malformed one raises ValueError naming the file, so the
    caller decides whether to rebuild (epochs) or recover from scratch (offsets).
    """

    def __init__(self, path: Path, width: int) -> None:
        self.path = path
        self.width = width

    def write(self, entries: list[tuple[int, ...]]) -> None:
        """Atomically replace the file with ``entries``."""
        lines = [str(VERSION), str(len(entries))]
        lines.extend(" ".join(str(value) for value in entry) for entry in entries)
        atomic_write(self.path, ("\n".join(lines) + "\n").encode())

    def read(self) -> list[tuple[int, ...]]:
        """Entries in the file, or [] when it does not exist."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        lines = text.splitlines()
        try:
            if int(lines[0]) != VERSION:
                raise ValueError(f"unknown version {lines[0]}")
            count = int(lines[1])
            entries = [tuple(int(part) for part in line.split()) for line in lines[2 : 2 + count]]
        except (IndexError, ValueError) as exc:
            raise ValueError(f"checkpoint file {self.path} is malformed: {exc}") from exc
        if len(entries) != count or any(len(entry) != self.width for entry in entries):
            raise ValueError(
                f"checkpoint file {self.path} is malformed: "
                f"expected {count} entries of {self.width}"
            )
        return entries


class OffsetCheckpoint:
    """One offset in a checkpoint file (recovery point, log start offset or high watermark)."""

    def __init__(self, path: Path) -> None:
        self._file = CheckpointFile(path, 1)

    def write(self, offset: int) -> None:
        """Persist ``offset`` atomically."""
        self._file.write([(offset,)])

    def read(self, default: int = 0) -> int:
        """The stored offset, or ``default`` when there is none or the file is unreadable."""
        try:
            entries = self._file.read()
        except ValueError:
            return default
        return entries[0][0] if entries else default
