"""Metadata: the live brokers, the controller, and each partition's leader, replicas and ISR."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rafka.protocol.errors import Errors


@dataclass(frozen=True)
class BrokerMetadata:
    """A live broker: its id, Ray node, the host that node advertises and its advertised Kafka
    listeners (``NAME://host:port``, the name mapped to a security protocol by the broker's
    ``listener_security_protocol_map``)."""

    broker_id: int
    host: str
    node_id: str
    rack: str | None = None
    endpoints: tuple[str, ...] = ()

    def listener(self, name: str = "PLAINTEXT") -> tuple[str, int] | None:
        """Host and port of the listener called ``name``, None without one: Kafka answers a
        client with the brokers' endpoints of the listener its request came in on."""
        return listener_endpoint(self.endpoints, name)


def listener_endpoint(endpoints: tuple[str, ...], name: str) -> tuple[str, int] | None:
    """Host and port of the ``name://host:port`` entry of ``endpoints``, None without one."""
    for address in parse_listeners(",".join(endpoints), "endpoints"):
        if address.listener_name == name:
            return address.host, address.port
    return None


@dataclass(frozen=True)
class ListenerAddress:
    """One entry of ``listeners`` / ``advertised_listeners``: ``NAME://host:port``, the name being a
    security protocol's or one that ``listener_security_protocol_map`` maps to one."""

    listener_name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.listener_name}://{self.host}:{self.port}"


def parse_listeners(value: str, config_name: str = "listeners") -> list[ListenerAddress]:
    """Parse Kafka's comma-separated listener list; an empty host means this node's address and
    port 0 a free port. A malformed entry or a name used twice raises INVALID_CONFIG naming it;
    which security protocol a name stands for is the broker's business."""
    addresses = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        name, sep, rest = entry.partition("://")
        host, colon, port_text = rest.rpartition(":")
        if not sep or not colon or not port_text.isdigit() or int(port_text) > 65535:
            raise Errors.INVALID_CONFIG.exception(
                f"{config_name}: {entry!r} is not NAME://host:port"
            )
        if not _LISTENER_NAME.fullmatch(name):
            raise Errors.INVALID_CONFIG.exception(
                f"{config_name}: listener name {name!r} of {entry!r} is not letters, digits and _"
            )
        addresses.append(ListenerAddress(name.upper(), host.strip("[]"), int(port_text)))
    if len({a.listener_name for a in addresses}) != len(addresses):
        raise Errors.INVALID_CONFIG.exception(
            f"{config_name}: {value!r} names a listener twice (each needs a distinct name)"
        )
    return addresses


_LISTENER_NAME = re.compile(r"[A-Za-z0-9_]+")


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

    @property
    def led(self) -> bool:
        """Whether the topic exists and every one of its partitions has a leader."""
        return (
            self.error is Errors.NONE
            and bool(self.partitions)
            and all(p.leader >= 0 and p.error is Errors.NONE for p in self.partitions)
        )


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

    @property
    def briefed(self) -> bool:
        """Whether a controller has sent this broker metadata yet: before that its cache is
        empty, and a topic it does not know is not known yet rather than absent."""
        return self.controller_id >= 0
