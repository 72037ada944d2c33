"""Metadata: the live brokers, the controller, and each partition's leader, replicas and ISR."""

from __future__ import annotations

from dataclasses import dataclass

from rafka.protocol.errors import Errors


@dataclass(frozen=True)
class BrokerMetadata:
    """A live broker: its id, Ray node, the host that node advertises and its advertised Kafka
    listeners (``PLAINTEXT://host:port``)."""

    broker_id: int
    host: str
    node_id: str
    rack: str | None = None
    endpoints: tuple[str, ...] = ()

    def listener(self) -> tuple[str, int] | None:
        """Host and port of the PLAINTEXT listener, None without one."""
        return plaintext_listener(self.endpoints)


def plaintext_listener(endpoints: tuple[str, ...]) -> tuple[str, int] | None:
    """Host and port of the ``PLAINTEXT://host:port`` entry of ``endpoints``, None without one."""
    for endpoint in endpoints:
        protocol, _, address = endpoint.partition("://")
        if protocol == "PLAINTEXT":
            host, _, port = address.rpartition(":")
            return host.strip("[]"), int(port)
    return None


@dataclass(frozen=True)
class PartitionMetadata:
    """One partition's leadership as the brokers' metadata caches know it."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: Errors = Errors.NONE


@dataclass(frozen=True)
class TopicMetadata:
    """A topic and its partitions, or an error such as UNKNOWN_TOPIC_OR_PARTITION."""

    name: str
    partitions: tuple[PartitionMetadata, ...] = ()
    error: Errors = Errors.NONE
    is_internal: bool = False


@dataclass(frozen=True)
class MetadataRequest:
    """Ask for some topics (None = every topic)."""

    topics: tuple[str, ...] | None = None
    allow_auto_topic_creation: bool = True


@dataclass(frozen=True)
class MetadataResponse:
    """The cluster as one broker's metadata cache sees it."""

    brokers: tuple[BrokerMetadata, ...]
    controller_id: int
    topics: tuple[TopicMetadata, ...]
    cluster_id: str | None = None
