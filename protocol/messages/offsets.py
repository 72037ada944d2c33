"""Offset lookups: ListOffsets (timestamp, earliest, latest) and OffsetsForLeaderEpoch (KIP-101);
DeleteRecords, which moves a partition's log start offset (KIP-107)."""

from __future__ import annotations

from dataclasses import dataclass

from rafka.protocol.errors import Errors

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
HIGH_WATERMARK = -1
"""The DeleteRecords offset meaning "the partition's current high watermark"."""


@dataclass(frozen=True)
class ListOffsetsRequest:
    """The first offset whose timestamp is >= ``timestamp``; -1 = latest (the HW, or the last
    stable offset for ``isolation_level`` READ_COMMITTED), -2 = earliest."""

    timestamp: int
    current_leader_epoch: int = -1
    isolation_level: int = 0


@dataclass(frozen=True)
class ListOffsetsResponse:
    """The offset found and its record's timestamp (both -1 if no record is that new)."""

    error: Errors
    offset: int = -1
    timestamp: int = -1
    leader_epoch: int = -1
    error_message: str | None = None


@dataclass(frozen=True)
class OffsetsForLeaderEpochRequest:
    """A follower asks where ``leader_epoch`` ends in the leader's log, to truncate there."""

    leader_epoch: int
    replica_id: int
    current_leader_epoch: int = -1


@dataclass(frozen=True)
class OffsetsForLeaderEpochResponse:
    """The largest epoch <= the requested one known to the leader and the offset where it ends."""

    error: Errors
    leader_epoch: int = -1
    end_offset: int = -1
    error_message: str | None = None


@dataclass(frozen=True)
class DeleteRecordsRequest:
    """Delete a partition's records below ``offset`` (HIGH_WATERMARK: below the high watermark) by
    moving its log start offset there."""

    offset: int


@dataclass(frozen=True)
class DeleteRecordsResponse:
    """The partition's log start offset (its low watermark) after the deletion."""

    error: Errors
    low_watermark: int = -1
    error_message: str | None = None
