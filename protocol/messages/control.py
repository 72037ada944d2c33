"""Controller-to-broker requests: LeaderAndIsr, UpdateMetadata and StopReplica.

Every request carries the controller epoch; brokers reject older epochs with STALE_CONTROLLER_EPOCH,
which is what fences a controller that lost its ZooKeeper session but has not noticed yet. The
controller's channel numbers each request it sends (``correlation_id``, None until then), so the
state-change logs of the controller and the broker can be matched line for line.
"""

from __future__ import annotations

from dataclasses import dataclass

from rafka.protocol.errors import Errors
from rafka.protocol.messages.metadata import BrokerMetadata, PartitionMetadata


@dataclass(frozen=True)
class LeaderAndIsrPartitionState:
    """A partition's leadership as decided by the controller and stored in ZooKeeper."""

    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    is_new: bool = False


@dataclass(frozen=True)
class LeaderAndIsrRequest:
    """Become leader or follower for these partitions."""

    controller_id: int
    controller_epoch: int
    partitions: tuple[LeaderAndIsrPartitionState, ...]
    correlation_id: int | None = None
    broker_epoch: int = -1
    """The receiving broker's epoch (the zxid that created its ``/brokers/ids`` znode, KIP-380)
    when the controller addressed it; a restarted broker refuses what was meant for its previous
    incarnation. -1: not checked."""


@dataclass(frozen=True)
class PartitionError:
    """The outcome of one partition of a control request."""

    topic: str
    partition: int
    error: Errors


@dataclass(frozen=True)
class LeaderAndIsrResponse:
    """Per-partition results; ``error`` is set when the whole request was refused."""

    error: Errors
    partition_errors: tuple[PartitionError, ...] = ()


@dataclass(frozen=True)
class TopicPartitions:
    """Metadata of one topic's partitions inside UpdateMetadata."""

    topic: str
    partitions: tuple[PartitionMetadata, ...]


@dataclass(frozen=True)
class UpdateMetadataRequest:
    """Replace (``full``) or update the broker's metadata cache."""

    controller_id: int
    controller_epoch: int
    live_brokers: tuple[BrokerMetadata, ...]
    topics: tuple[TopicPartitions, ...]
    deleted_topics: tuple[str, ...] = ()
    full: bool = False
    correlation_id: int | None = None
    broker_epoch: int = -1
    """The receiving broker's epoch (the zxid that created its ``/brokers/ids`` znode, KIP-380)
    when the controller addressed it; a restarted broker refuses what was meant for its previous
    incarnation. -1: not checked."""


@dataclass(frozen=True)
class StopReplicaRequest:
    """Stop serving these partitions; with ``delete`` remove their logs too."""

    controller_id: int
    controller_epoch: int
    partitions: tuple[tuple[str, int], ...]
    delete: bool = False
    correlation_id: int | None = None
    broker_epoch: int = -1
    """The receiving broker's epoch (the zxid that created its ``/brokers/ids`` znode, KIP-380)
    when the controller addressed it; a restarted broker refuses what was meant for its previous
    incarnation. -1: not checked."""


@dataclass(frozen=True)
class ControlResponse:
    """Result of UpdateMetadata or StopReplica."""

    error: Errors
    partition_errors: tuple[PartitionError, ...] = ()


def addressed_to_earlier_incarnation(
    request: LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest, broker_epoch: int
) -> bool:
    """Whether ``request`` was addressed to an earlier registration of the broker whose epoch is
    now ``broker_epoch`` (Kafka's STALE_BROKER_EPOCH check): sent before a restart, it describes
    leadership the broker must not act on."""
    return request.broker_epoch != -1 and request.broker_epoch < broker_epoch
