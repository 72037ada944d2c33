"""The controller's events: plain data, one class per kind, as Kafka's ControllerEvent ADT.

Two families share the mailbox. *Triggers* (``Startup``, ``Reelect``, ``BrokerChange``, ...) say
that something in ZooKeeper may have changed; the shell answers them by reading ZooKeeper. *Core
events* carry what the shell read, an admin request, a ZooKeeper write's outcome or a broker's
answer, and are handed to ``ControllerCore.handle``. None of them holds a future or a handle: a
request that needs a reply carries an id the shell maps back to its caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rafka.actors.controller.effects import ZkWrite
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.log.config import LogConfig
from rafka.protocol.errors import Errors
from rafka.protocol.messages.control import PartitionError
from rafka.protocol.types import (
    ElectionType,
    NewPartitions,
    NewTopic,
    ReplicaPlacement,
    TopicPartition,
)

# ---------------------------------------------------------------------- triggers (shell only)


@dataclass(frozen=True)
class Startup:
    """The controller actor started: watch ``/controller`` and try to become controller."""


@dataclass(frozen=True)
class Reelect:
    """``/controller`` changed or vanished: resign if another broker holds it, run if it is
    free."""


@dataclass(frozen=True)
class ActiveControllerDied:
    """Ray reports the process of the active controller gone while its ``/controller`` znode
    lives on until its ZooKeeper session expires: free the znode of that dead session so an
    election runs now."""

    broker_id: int
    session_id: int


@dataclass(frozen=True)
class SessionExpired:
    """The controller's ZooKeeper session expired: drop controllership and run again."""


@dataclass(frozen=True)
class Resign:
    """The hosting broker is shutting down: stop acting as controller for good."""


@dataclass(frozen=True)
class BrokerChange:
    """``/brokers/ids`` changed: brokers started or failed."""


@dataclass(frozen=True)
class TopicChange:
    """``/brokers/topics`` changed: topics were created (or deleted)."""


@dataclass(frozen=True)
class IsrChangeNotification:
    """A leader changed an ISR and left a notification: propagate the new ISRs to the brokers."""


@dataclass(frozen=True)
class TopicDeletionChange:
    """``/admin/delete_topics`` changed: topics were queued for deletion."""


@dataclass(frozen=True)
class ConfigChangeNotification:
    """A config change notification was written under ``/config/changes``: re-read what changed."""


@dataclass(frozen=True)
class PartitionReassignmentChange:
    """``/admin/reassign_partitions`` was created, changed or deleted: re-read it."""


@dataclass(frozen=True)
class PreferredReplicaElectionChange:
    """``/admin/preferred_replica_election`` was created or changed: read the partitions it
    names."""


Trigger = (
    Startup
    | Reelect
    | ActiveControllerDied
    | SessionExpired
    | Resign
    | BrokerChange
    | TopicChange
    | IsrChangeNotification
    | TopicDeletionChange
    | ConfigChangeNotification
    | PartitionReassignmentChange
    | PreferredReplicaElectionChange
)

# ---------------------------------------------------------------------- core events


@dataclass(frozen=True)
class TopicSnapshot:
    """One topic as read from ZooKeeper: assignment, config overrides and existing partition
    states."""

    name: str
    assignment: Mapping[int, tuple[int, ...]]
    config: Mapping[str, str]
    states: Mapping[int, LeaderIsrAndEpoch]
    written_at: Mapping[int, int] = field(default_factory=dict)
    """Per partition, the ZooKeeper transaction that last wrote its state (its mzxid)."""


@dataclass(frozen=True)
class ControllerElected:
    """This broker created ``/controller`` and bumped the epoch; the cluster as read right after."""

    epoch: int
    epoch_zk_version: int
    brokers: Mapping[int, BrokerRegistration]
    topics: tuple[TopicSnapshot, ...]
    topics_to_delete: frozenset[str] = frozenset()
    """The children of ``/admin/delete_topics``: deletions to resume."""


@dataclass(frozen=True)
class Resigned:
    """Another broker holds ``/controller``, the session expired or the broker stops: go
    inactive."""


@dataclass(frozen=True)
class BrokersChanged:
    """The registrations under ``/brokers/ids`` as read after a change."""

    brokers: Mapping[int, BrokerRegistration]


@dataclass(frozen=True)
class BrokerDied:
    """Ray reported the process of this broker incarnation gone: fail it over before its session
    ends."""

    broker_id: int
    registered_at: int


@dataclass(frozen=True)
class TopicsChanged:
    """The topic names under ``/brokers/topics``, with a snapshot of each topic the core did not
    know."""

    names: frozenset[str]
    new_topics: tuple[TopicSnapshot, ...]


@dataclass(frozen=True)
class IsrChanged:
    """Partitions named by ISR change notifications, with their state znodes as read (None:
    gone) and the ZooKeeper transaction that wrote each (absent: unknown)."""

    states: Mapping[TopicPartition, LeaderIsrAndEpoch | None]
    written_at: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ConfigsChanged:
    """Dynamic configs as read after a change: the new overrides of the topics named, and the
    controller's topic defaults (its broker's static config with the dynamic broker overrides)."""

    topic_configs: Mapping[str, Mapping[str, str]]
    log_config: LogConfig


@dataclass(frozen=True)
class CreateTopics:
    """Admin request: validate and write new topics (with ``validate_only``, validate only);
    answered by a ``CreateTopicsReply``."""

    request_id: int
    topics: tuple[NewTopic, ...]
    placement: ReplicaPlacement = field(default_factory=ReplicaPlacement)
    validate_only: bool = False


@dataclass(frozen=True)
class CreatePartitions:
    """Admin request: grow topics to more partitions (with ``validate_only``, validate only);
    answered by a ``CreatePartitionsReply``."""

    request_id: int
    topics: tuple[tuple[str, NewPartitions], ...]
    placement: ReplicaPlacement = field(default_factory=ReplicaPlacement)
    validate_only: bool = False


@dataclass(frozen=True)
class ControlledShutdown:
    """A broker is stopping: move leadership off it; answered by a ``ControlledShutdownReply``."""

    request_id: int
    broker_id: int


@dataclass(frozen=True)
class DeleteTopics:
    """Admin request: queue topics for deletion; answered by a ``DeleteTopicsReply``."""

    request_id: int
    topics: tuple[str, ...]


@dataclass(frozen=True)
class TopicDeletionsChanged:
    """The topics named under ``/admin/delete_topics`` as read after a change."""

    names: frozenset[str]


@dataclass(frozen=True)
class StopReplicaAnswered:
    """A broker answered a StopReplica with deletion (Kafka's
    TopicDeletionStopReplicaResponseReceived): each partition deleted unless it carries an error."""

    broker_id: int
    partitions: tuple[tuple[str, int], ...]
    error: Errors
    partition_errors: tuple[PartitionError, ...] = ()


@dataclass(frozen=True)
class PartitionReassignmentsChanged:
    """``/admin/reassign_partitions`` as read (after a change, or on becoming controller): each
    partition's target replicas, and the znode's version (-1: there is none)."""

    partitions: Mapping[TopicPartition, tuple[int, ...]]
    zk_version: int


@dataclass(frozen=True)
class AlterPartitionReassignments:
    """Admin request: move partitions to new replicas; answered by an
    ``AlterPartitionReassignmentsReply``."""

    request_id: int
    reassignments: tuple[tuple[TopicPartition, tuple[int, ...]], ...]


@dataclass(frozen=True)
class ListPartitionReassignments:
    """Admin request: the reassignments in progress (of ``partitions``, or all if None); answered
    by a ``ListPartitionReassignmentsReply``."""

    request_id: int
    partitions: tuple[TopicPartition, ...] | None = None


@dataclass(frozen=True)
class ElectLeaders:
    """Admin request (Kafka's ElectLeaders, KIP-460): elect the preferred or an unclean leader
    of each partition (None: every partition); answered by an ``ElectLeadersReply``."""

    request_id: int
    election_type: ElectionType
    partitions: tuple[TopicPartition, ...] | None


@dataclass(frozen=True)
class PreferredElectionRequested:
    """The partitions named by ``/admin/preferred_replica_election`` as read."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class LeaderImbalanceCheck:
    """The automatic leader balance timer fired: check each broker's share of the leadership
    against ``leader.imbalance.per.broker.percentage``."""

    imbalance_percentage: int


@dataclass(frozen=True)
class ZkWriteSucceeded:
    """A write the core asked for was applied; ``zk_version`` is the written znode's new version."""

    write: ZkWrite
    zk_version: int


@dataclass(frozen=True)
class ZkWriteConflict:
    """A conditional write failed (BadVersion, NodeExists, NoNode); ``current`` is the znode's fresh
    partition state as read after the failure (None for a topic write, or if the znode is gone)."""

    write: ZkWrite
    current: LeaderIsrAndEpoch | None


@dataclass(frozen=True)
class ControllerMoved:
    """A write failed the ``/controller_epoch`` check: another controller took over (Kafka's
    ControllerMovedException); resign and give up ``/controller``."""


@dataclass(frozen=True)
class ControlResponseError:
    """A broker answered a control request with an error, for the request or for some partitions."""

    broker_id: int
    api: str
    error: Errors
    partition_errors: tuple[PartitionError, ...] = ()


CoreEvent = (
    ControllerElected
    | Resigned
    | BrokersChanged
    | BrokerDied
    | TopicsChanged
    | IsrChanged
    | ConfigsChanged
    | CreateTopics
    | CreatePartitions
    | ControlledShutdown
    | DeleteTopics
    | TopicDeletionsChanged
    | StopReplicaAnswered
    | PartitionReassignmentsChanged
    | AlterPartitionReassignments
    | ListPartitionReassignments
    | ZkWriteSucceeded
    | ZkWriteConflict
    | ControllerMoved
    | ControlResponseError
    | ElectLeaders
    | PreferredElectionRequested
    | LeaderImbalanceCheck
)

ControllerEvent = Trigger | CoreEvent
