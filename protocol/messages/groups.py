"""Group coordination: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, ListGroups, DescribeGroups and DeleteGroups.

Clients call the coordinator actor of the group's broker with these; field names follow Kafka's
message definitions. Frozen dataclasses without slots, so they pickle the same for Ray calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from rafka.protocol.errors import Errors

NO_GENERATION = -1
"""The generation a commit carries when it comes from outside the group protocol (admin tools)."""
NO_MEMBER = ""
"""The member id of a member's first JoinGroup, and of commits made outside the group protocol."""


@dataclass(frozen=True)
class FindCoordinatorResponse:
    """The broker whose coordinator owns the group (leads its ``__consumer_offsets`` partition)."""

    error: Errors
    coordinator_id: int = -1
    error_message: str | None = None


@dataclass(frozen=True)
class JoinGroupRequest:
    """Join (or rejoin) a group with ``protocols``: (assignor name, encoded subscription) pairs."""

    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    client_id: str = "rafka"
    client_host: str = ""


@dataclass(frozen=True)
class JoinGroupResponse:
    """The new generation; the leader alone gets ``members`` (member id, subscription) to assign."""

    error: Errors
    generation_id: int = NO_GENERATION
    protocol_name: str = ""
    leader_id: str = ""
    member_id: str = ""
    members: tuple[tuple[str, bytes], ...] = ()
    error_message: str | None = None


@dataclass(frozen=True)
class SyncGroupRequest:
    """The leader sends every member's assignment; followers send none and wait for theirs."""

    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class SyncGroupResponse:
    """This member's encoded assignment for the generation."""

    error: Errors
    assignment: bytes = b""
    error_message: str | None = None


@dataclass(frozen=True)
class HeartbeatRequest:
    """A member is alive in ``generation_id``."""

    group_id: str
    generation_id: int
    member_id: str


@dataclass(frozen=True)
class LeaveGroupRequest:
    """A member leaves at once instead of waiting for its session to time out."""

    group_id: str
    member_id: str


@dataclass(frozen=True)
class GroupResponse:
    """Heartbeat, LeaveGroup and DeleteGroups answer with just an error."""

    error: Errors
    error_message: str | None = None


@dataclass(frozen=True)
class OffsetCommitEntry:
    """One partition's offset to commit: the next offset to consume, with optional metadata."""

    topic: str
    partition: int
    offset: int
    metadata: str = ""


@dataclass(frozen=True)
class OffsetCommitRequest:
    """Commit offsets as ``member_id`` of ``generation_id`` (NO_GENERATION/NO_MEMBER:
    an admin commit, accepted only while the group has no members)."""

    group_id: str
    generation_id: int
    member_id: str
    offsets: tuple[OffsetCommitEntry, ...]


@dataclass(frozen=True)
class PartitionResult:
    """One partition's outcome in OffsetCommit."""

    topic: str
    partition: int
    error: Errors
    error_message: str | None = None


@dataclass(frozen=True)
class OffsetCommitResponse:
    """The request-level error (e.g. ILLEGAL_GENERATION) and each partition's outcome."""

    error: Errors
    partitions: tuple[PartitionResult, ...] = ()
    error_message: str | None = None


@dataclass(frozen=True)
class OffsetFetchRequest:
    """Committed offsets of ``partitions`` ((topic, partition) pairs), or of all if None. With
    ``require_stable`` (KIP-447) a partition whose offset an open transaction is committing is
    answered UNSTABLE_OFFSET_COMMIT, to ask again once the transaction ends."""

    group_id: str
    partitions: tuple[tuple[str, int], ...] | None = None
    require_stable: bool = False


@dataclass(frozen=True)
class CommittedOffset:
    """A partition's committed offset (-1 if none) and its metadata and commit time."""

    topic: str
    partition: int
    offset: int
    metadata: str = ""
    commit_timestamp: int = -1


@dataclass(frozen=True)
class OffsetFetchResponse:
    """The committed offsets asked for."""

    error: Errors
    offsets: tuple[CommittedOffset, ...] = ()
    error_message: str | None = None


@dataclass(frozen=True)
class GroupListing:
    """A group as ListGroups reports it."""

    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True)
class MemberDescription:
    """A member as DescribeGroups reports it; ``assignment`` is the encoded assignment."""

    member_id: str
    client_id: str
    client_host: str
    assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    """A group's state, assignor, generation and members (DescribeGroups)."""

    error: Errors
    group_id: str
    state: str = "Dead"
    protocol_type: str = ""
    protocol: str = ""
    generation_id: int = NO_GENERATION
    members: tuple[MemberDescription, ...] = ()
    error_message: str | None = None
