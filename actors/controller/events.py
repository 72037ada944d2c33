"""The controller's events: plain data, one class per kind, as Kafka's ControllerEvent ADT.

Events that need an answer carry an asyncio future, which the controller resolves after processing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from rafka.protocol.types import NewTopic


@dataclass(frozen=True)
class Startup:
    """The controller actor started: watch ``/controller`` and try to become controller."""


@dataclass(frozen=True)
class Reelect:
    """``/controller`` changed or vanished: resign if another broker holds it, run for it if free."""


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
class SessionExpired:
    """The controller's ZooKeeper session expired: drop controllership and run again."""


@dataclass(frozen=True)
class Resign:
    """The hosting broker is shutting down: stop acting as controller."""


@dataclass(frozen=True)
class BrokerDied:
    """Ray reported the process of this broker incarnation gone: fail it over before its session ends."""

    broker_id: int
    registered_at: int


@dataclass(frozen=True, eq=False)
class ControlledShutdown:
    """A broker is stopping: move leadership off it and drop it from ISRs; the future gets
    (error, partitions it still leads, refs of the LeaderAndIsr requests sent)."""

    broker_id: int
    result: asyncio.Future


@dataclass(frozen=True, eq=False)
class CreateTopics:
    """Admin request: validate and write new topics; the future gets (name, error, message) per topic."""

    topics: tuple[NewTopic, ...]
    result: asyncio.Future


ControllerEvent = (
    Startup
    | Reelect
    | BrokerChange
    | TopicChange
    | IsrChangeNotification
    | SessionExpired
    | Resign
    | CreateTopics
    | BrokerDied
    | ControlledShutdown
)
