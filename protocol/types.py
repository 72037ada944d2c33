"""The value types every layer shares, declared once and named as Kafka's clients name them.

``TopicPartition`` and ``OffsetAndMetadata`` are named tuples (so a plain ``(topic, partition)``
pair compares and hashes equal to a ``TopicPartition``); ``NewTopic`` and ``NewPartitions`` are what
an admin asks the controller to create, and ``ReplicaPlacement`` how it places the replicas it
assigns itself. ``rafka`` re-exports them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple


class ElectionType(IntEnum):
    """Which leader an election asks for (Kafka's ElectionType, KIP-460): the preferred replica,
    or any live replica even outside the ISR."""

    PREFERRED = 0
    UNCLEAN = 1


class TopicPartition(NamedTuple):
    """A partition of a topic."""

    topic: str
    partition: int


def partition_name(tp: TopicPartition) -> str:
    """A partition as Kafka prints it: ``topic-partition``."""
    return f"{tp.topic}-{tp.partition}"


class OffsetAndMetadata(NamedTuple):
    """A group's committed offset of a partition (the next to consume) and its metadata."""

    offset: int
    metadata: str


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """A consumer's place in its group, handed to ``send_offsets_to_transaction`` so the group
    coordinator can fence a zombie member's transactional commits (KIP-447)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: name, partitions, replication factor and config overrides.

    ``replica_assignments`` (kafka-python's name) places the replicas explicitly: partition id ->
    broker ids, preferred leader first; ``num_partitions`` and ``replication_factor`` are then -1 or
    agree with it.
    """

    name: str
    num_partitions: int
    replication_factor: int
    config: tuple[tuple[str, str], ...] = ()
    replica_assignments: Mapping[int, Sequence[int]] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class NewPartitions:
    """Grow a topic to ``total_count`` partitions (kafka-python's name); ``new_assignments`` places
    the added ones explicitly, one broker list per new partition in order, else the controller
    places them."""

    total_count: int
    new_assignments: Sequence[Sequence[int]] | None = field(default=None, hash=False)


@dataclass(frozen=True)
class ReplicaPlacement:
    """How the controller places replicas it assigns itself (Kafka's ``AdminUtils`` options).

    ``rack_aware=False`` ignores brokers' racks (kafka-topics' ``--disable-rack-aware``);
    ``racks_if_all`` uses them only when every live broker has one (Kafka's ``RackAwareMode.Safe``,
    which auto-created topics use); a fixed ``start_index`` and ``replica_shift`` replace the random
    ones, making the layout reproducible.
    """

    rack_aware: bool = True
    racks_if_all: bool = False
    start_index: int | None = None
    replica_shift: int | None = None


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch: timestamps, registrations and expiry times."""
    return int(time.time() * 1000)
