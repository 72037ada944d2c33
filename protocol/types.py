"""The value types every layer shares, declared once and named as Kafka's clients name them.

``TopicPartition`` and ``OffsetAndMetadata`` are named tuples (so a plain ``(topic, partition)``
pair compares and hashes equal to a ``TopicPartition``); ``NewTopic`` is what an admin asks the
controller to create. ``rafka`` re-exports them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic."""

    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    """A group's committed offset of a partition (the next to consume) and its metadata."""

    offset: int
    metadata: str


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: name, partitions, replication factor and config overrides."""

    name: str
    num_partitions: int
    replication_factor: int
    config: tuple[tuple[str, str], ...] = ()


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch: timestamps, registrations and expiry times."""
    return int(time.time() * 1000)
