"""Produce: a producer hands one partition's batch to that partition's leader replica.

Requests are addressed to a partition's leader replica actor, so unlike Kafka's ProduceRequest they
carry one partition's records, not a map of topics. Frozen dataclasses without slots, so they pickle
the same on every supported Python for Ray calls.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rafka.protocol.errors import Errors

ACKS_NONE = 0
ACKS_LEADER = 1
ACKS_ALL = -1


class AppendOrigin(enum.Enum):
    """Who appends (Kafka's AppendOrigin): a client's batches have their sequence numbers checked;
    a coordinator's (transactional offset commits, group records) are trusted, as are markers."""

    CLIENT = "client"
    COORDINATOR = "coordinator"


@dataclass(frozen=True)
class ProduceRequest:
    """Append ``records`` (whole batches) to the partition; ``acks`` as in Kafka (0, 1, -1: all)."""

    records: bytes
    acks: int = ACKS_LEADER
    timeout_ms: int = 30_000
    origin: AppendOrigin = AppendOrigin.CLIENT


@dataclass(frozen=True)
class ProduceResponse:
    """Where the records landed, or why they did not."""

    error: Errors
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None


@dataclass(frozen=True)
class ProduceAppended:
    """The first half of a produce the Kafka listener splits: the append's answer, and for
    acks=all the high watermark it must still wait for (None when the answer is final)."""

    response: ProduceResponse
    required_offset: int | None = None


@dataclass(frozen=True)
class HighWatermarkWait:
    """The second half: wait until the partition's HW reaches ``required_offset`` (at most
    ``timeout_ms``) with enough in-sync replicas, as an acks=all produce does after appending."""

    required_offset: int
    timeout_ms: int


@dataclass(frozen=True)
class HighWatermarkReached:
    """How a ``HighWatermarkWait`` ended: ``error`` is its own outcome (REQUEST_TIMED_OUT if the
    HW did not reach the offset in time); ``below`` is what every acks=all produce waiting for an
    offset at or below ``high_watermark`` is answered (NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    so one wait can answer many."""

    error: Errors
    high_watermark: int
    below: Errors
