"""Answers of the admin and broker-lifecycle requests that go to the controller or a broker.

Kafka's CreateTopics, CreatePartitions, DeleteTopics, ControlledShutdown and AlterIsr (KIP-497)
responses, carrying what rafka's actors send back instead of bare tuples.
"""

from __future__ import annotations

from dataclasses import dataclass

from rafka.protocol.errors import Errors


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
