"""What the controller core asks its shell to do, as data: ZooKeeper writes, control requests per
broker, state-change log lines and replies to admin requests.

Every ZooKeeper write is conditional, like Kafka's zkVersion compare-and-set: it names the
``/controller_epoch`` version the controller was elected with, and partition state updates also the
state znode version the core last saw. The shell reports each write's outcome back to the core as an
event before it takes the next event from the mailbox.
"""

from __future__ import annotations

from dataclasses import dataclass

from rafka.actors.zk.data import LeaderIsrAndEpoch
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import (
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
    ElectLeadersResult,
    PartitionReassignment,
    ReassignmentResult,
)
from rafka.protocol.messages.control import (
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from rafka.protocol.types import TopicPartition

# ---------------------------------------------------------------------- ZooKeeper writes


@dataclass(frozen=True)
class CreatePartitionState:
    """Create a new partition's state znode (fails if it exists)."""

    tp: TopicPartition
    state: LeaderIsrAndEpoch
    epoch_zk_version: int


@dataclass(frozen=True)
class UpdatePartitionState:
    """Compare-and-set a partition's state znode at ``state.zk_version``."""

    tp: TopicPartition
    state: LeaderIsrAndEpoch
    epoch_zk_version: int


@dataclass(frozen=True)
class CreateTopic:
    """Create a topic's assignment and config znodes (fails if the topic exists)."""

    name: str
    assignment: tuple[tuple[int, tuple[int, ...]], ...]
    config: tuple[tuple[str, str], ...]
    epoch_zk_version: int


@dataclass(frozen=True)
class AddPartitions:
    """Rewrite an existing topic's assignment znode with partitions added (fails if the topic is
    gone)."""

    name: str
    assignment: tuple[tuple[int, tuple[int, ...]], ...]
    epoch_zk_version: int


@dataclass(frozen=True)
class QueueTopicDeletion:
    """Create ``/admin/delete_topics/<name>`` (an existing node is no conflict to act on)."""

    name: str


@dataclass(frozen=True)
class DeleteTopicZnodes:
    """Remove a deleted topic's assignment, states, config and admin node, fenced by the
    controller epoch."""

    name: str
    epoch_zk_version: int


@dataclass(frozen=True)
class SetTopicAssignment:
    """Rewrite an existing topic's assignment znode with reassigned partitions' replicas (fails
    if the topic is gone)."""

    name: str
    assignment: tuple[tuple[int, tuple[int, ...]], ...]
    epoch_zk_version: int


@dataclass(frozen=True)
class WriteReassignments:
    """Compare-and-set ``/admin/reassign_partitions`` at ``zk_version`` (-1: create it) to the
    reassignments in progress; with none left, delete it."""

    partitions: tuple[tuple[TopicPartition, tuple[int, ...]], ...]
    zk_version: int
    epoch_zk_version: int


@dataclass(frozen=True)
class ClearPreferredReplicaElection:
    """Delete ``/admin/preferred_replica_election`` once its elections ran, fenced by the
    controller epoch (a missing node is no conflict to act on)."""

    epoch_zk_version: int


ZkWrite = (
    CreatePartitionState
    | UpdatePartitionState
    | CreateTopic
    | AddPartitions
    | QueueTopicDeletion
    | DeleteTopicZnodes
    | SetTopicAssignment
    | WriteReassignments
    | ClearPreferredReplicaElection
)

# ---------------------------------------------------------------------- requests and replies

ControlRequest = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest


@dataclass(frozen=True)
class BrokerRequest:
    """One control request for one broker's channel."""

    broker_id: int
    request: ControlRequest


@dataclass(frozen=True)
class CreateTopicsReply:
    """Answer to ``CreateTopics``: one result per requested topic, in request order."""

    request_id: int
    results: tuple[CreateTopicResult, ...]


@dataclass(frozen=True)
class CreatePartitionsReply:
    """Answer to ``CreatePartitions``: one result per topic, in request order."""

    request_id: int
    results: tuple[CreatePartitionsResult, ...]


@dataclass(frozen=True)
class ControlledShutdownReply:
    """Answer to ``ControlledShutdown``: the error and how many partitions the broker still leads
    that another replica could have taken. The shell answers once the requests sent with this reply
    are answered too, so clients find the new leaders at once."""

    request_id: int
    error: Errors
    remaining: int


@dataclass(frozen=True)
class DeleteTopicsReply:
    """Answer to ``DeleteTopics``: one result per requested topic, in request order."""

    request_id: int
    results: tuple[DeleteTopicResult, ...]


@dataclass(frozen=True)
class AlterPartitionReassignmentsReply:
    """Answer to ``AlterPartitionReassignments``: one result per partition, in request order."""

    request_id: int
    results: tuple[ReassignmentResult, ...]


@dataclass(frozen=True)
class ListPartitionReassignmentsReply:
    """Answer to ``ListPartitionReassignments``: the reassignments in progress, or
    NOT_CONTROLLER."""

    request_id: int
    error: Errors
    reassignments: tuple[tuple[TopicPartition, PartitionReassignment], ...] = ()


@dataclass(frozen=True)
class ElectLeadersReply:
    """Answer to ``ElectLeaders``: one result per partition, in request order, and the error of the
    whole request (NOT_CONTROLLER from a controller that is not active)."""

    request_id: int
    results: tuple[tuple[TopicPartition, ElectLeadersResult], ...]
    error: Errors = Errors.NONE


Reply = (
    CreateTopicsReply
    | CreatePartitionsReply
    | ControlledShutdownReply
    | DeleteTopicsReply
    | AlterPartitionReassignmentsReply
    | ListPartitionReassignmentsReply
    | ElectLeadersReply
)


@dataclass(frozen=True)
class Effects:
    """What one event made the core decide, in the order the shell carries it out: forget the
    channels of removed brokers, log, send the requests, answer the replies, then perform the writes
    and feed each outcome back. ``release_controller`` asks to delete ``/controller`` (a controller
    that moved)."""

    writes: tuple[ZkWrite, ...] = ()
    requests: tuple[BrokerRequest, ...] = ()
    state_changes: tuple[str, ...] = ()
    replies: tuple[Reply, ...] = ()
    brokers_removed: tuple[int, ...] = ()
    release_controller: bool = False
