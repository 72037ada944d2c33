"""Answers of the admin and broker-lifecycle requests that go to the controller or a broker.

Kafka's CreateTopics, CreatePartitions, DeleteTopics, ControlledShutdown, AlterIsr (KIP-497),
ListPartitionReassignments (KIP-455), ElectLeaders (KIP-460) and DescribeLogDirs responses,
carrying what rafka's actors send back instead of bare tuples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rafka.protocol.errors import Errors
from rafka.protocol.types import TopicPartition


@dataclass(frozen=True)
class CreateTopicResult:
    """The outcome of creating one topic (``message`` explains an error)."""

    name: str
    error: Errors
    message: str | None = None


@dataclass(frozen=True)
class CreatePartitionsResult:
    """The outcome of adding partitions to one topic (``message`` explains an error)."""

    name: str
    error: Errors
    message: str | None = None


@dataclass(frozen=True)
class DeleteTopicResult:
    """The outcome of asking to delete one topic (``message`` explains an error)."""

    name: str
    error: Errors
    message: str | None = None


@dataclass(frozen=True)
class ControlledShutdownResponse:
    """The controller's answer to a stopping broker: how many partitions it still leads."""

    error: Errors
    remaining: int


@dataclass(frozen=True)
class AlterIsrResponse:
    """A broker's answer to its leader replica's ISR change: the state znode's new version."""

    error: Errors
    zk_version: int


@dataclass(frozen=True)
class PartitionReassignment:
    """A reassignment in progress (Kafka's PartitionReassignment): the whole replica list while
    it runs (OAR + RAR), and the replicas being added (RAR - OAR) and removed (OAR - RAR)."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@dataclass(frozen=True)
class ElectLeadersResult:
    """The outcome of a leader election for one partition: ``NONE`` when the leader moved,
    ``ELECTION_NOT_NEEDED`` when it already was the one asked for, or why it could not move."""

    error: Errors
    message: str | None = None


@dataclass(frozen=True)
class ReplicaLogDirInfo:
    """One replica's log in a log directory: its size on disk in bytes and how far its end offset
    is behind the leader's high watermark (0 for a leader)."""

    size: int
    offset_lag: int
    is_future: bool = False


@dataclass(frozen=True)
class LogDirDescription:
    """One log directory of a broker and the replicas it holds (``error`` is ``NONE`` when the
    directory is readable)."""

    path: str
    error: Errors
    replicas: Mapping[TopicPartition, ReplicaLogDirInfo] = field(default_factory=dict)


@dataclass(frozen=True)
class ReassignmentResult:
    """The controller's verdict on one partition of an AlterPartitionReassignments request:
    ``NONE`` when its target replicas are valid, else the error and what is wrong. A request
    starts only if every partition in it is valid (all or nothing)."""

    tp: TopicPartition
    error: Errors
    message: str | None = None
