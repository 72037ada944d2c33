"""The leader epoch cache (KIP-101): which epoch's leader wrote which offsets.

Each entry is (epoch, start offset): the first offset written under that epoch. A
follower that starts following asks the leader for the end offset of its own
latest epoch and truncates there, instead of truncating to its high watermark,
which loses acknowledged data or lets replicas diverge when leaders change quickly
(KIP-101's two scenarios). Entries persist in ``leader-epoch-checkpoint``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rafka.log.checkpoint import LEADER_EPOCH_FILE, CheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """The first offset written by the leader of ``epoch``."""

    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Epoch -> start offset entries of one partition, kept in memory and checkpointed on change."""

    def __init__(self, directory: Path) -> None:
        self._file = CheckpointFile(directory / LEADER_EPOCH_FILE, 2)
        try:
            loaded = self._file.read()
        except ValueError:
            # An unreadable cache only costs a wider truncation
            # later; rebuild it from future appends.
            loaded = []
        self._entries = [EpochEntry(epoch, offset) for epoch, offset in loaded]

    @property
    def entries(self) -> list[EpochEntry]:
        """The entries, oldest epoch first."""
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or UNDEFINED_EPOCH when the cache is empty."""
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; ignore epochs that are not newer.

        Returns whether the cache changed (and was checkpointed).
        """
        if epoch < 0 or (self._entries and epoch <= self._entries[-1].epoch):
            return False
        # An entry must not start before an older one ends: drop older entries it overlaps.
        while self._entries and self._entries[-1].start_offset >= start_offset:
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        self._flush()
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) answering OffsetsForLeaderEpoch for ``requested_epoch``.

        The end offset is the start offset of the first epoch above the requested one, or
        the log end offset when the requested epoch is the latest. The epoch returned is
        the largest known epoch not above the requested one, so a follower with an epoch
        the leader never saw truncates to the end of the last epoch they share (KIP-279).
        """
        if not self._entries or requested_epoch < self._entries[0].epoch:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if requested_epoch >= self._entries[-1].epoch:
            return self._entries[-1].epoch, log_end_offset
        for index, entry in enumerate(self._entries):
            if entry.epoch > requested_epoch:
                return self._entries[index - 1].epoch, entry.start_offset
        raise AssertionError("unreachable: requested epoch is below the latest")

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (the log was truncated there)."""
        kept = [entry for entry in self._entries if entry.start_offset < end_offset]
        if len(kept) != len(self._entries):
            self._entries = kept
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget epochs wholly below the new log start offset; the first kept one starts there."""
        index = 0
        while (
            index + 1 < len(self._entries) and self._entries[index + 1].start_offset <= start_offset
        ):
            index += 1
        kept = self._entries[index:]
        if kept and kept[0].start_offset < start_offset:
            kept[0] = EpochEntry(kept[0].epoch, start_offset)
        if kept != self._entries:
            self._entries = kept
            self._flush()

    def clear(self) -> None:
        """Forget every entry (the log was emptied)."""
        if self._entries:
            self._entries = []
            self._flush()

    def _flush(self) -> None:
        self._file.write([(entry.epoch, entry.start_offset) for entry in self._entries])
