"""Partition directories of deleted replicas: renamed at once, removed later (Kafka's LogManager
``asyncDelete`` and its delete-logs task).

StopReplica with deletion renames ``<topic>-<partition>`` to ``<topic>-<partition>.<uuid
hex>-delete`` straight away, so a new topic of the same name starts in a fresh directory, and the
renamed directory is removed ``file.delete.delay.ms`` later, off the request path. A broker that
restarts before then finds its renamed directories and schedules them again.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from rafka.log.files import fsync_dir, partition_dir_name

DELETE_DIR_SUFFIX = "-delete"


@dataclass(frozen=True)
class RenamedLog:
    """A deleted replica's directory, renamed, and how long it waits before it is removed."""

    path: str
    delete_delay_ms: int


def deleted_dir_name(topic: str, partition: int) -> str:
    """A fresh name for a partition directory marked for deletion."""
    return f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"


def rename_for_deletion(directory: Path, topic: str, partition: int) -> Path | None:
    """Rename a partition directory for deletion; the new path, or None if it does not exist."""
    if not directory.is_dir():
        return None
    target = directory.with_name(deleted_dir_name(topic, partition))
    directory.rename(target)
    fsync_dir(directory.parent)
    return target


def pending_deletions(log_dir: Path) -> list[Path]:
    """Directories in ``log_dir`` renamed for deletion and not removed yet."""
    if not log_dir.is_dir():
        return []
    return sorted(p for p in log_dir.iterdir() if p.is_dir() and p.name.endswith(DELETE_DIR_SUFFIX))


class DelayedDirRemover:
    """Removes renamed directories after their delay, on an event loop's executor."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.scheduled: set[Path] = set()

    def schedule(self, path: Path, delay_ms: int) -> None:
        """Remove ``path`` (with everything in it) ``delay_ms`` from now."""
        if path in self.scheduled:
            return
        self.scheduled.add(path)
        self.loop.call_later(delay_ms / 1000, self._remove, path)

    def _remove(self, path: Path) -> None:
        self.scheduled.discard(path)
        self.loop.run_in_executor(None, shutil.rmtree, path, True)
