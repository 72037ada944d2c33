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
    for address in parse_listeners(",".join(endpoints), "endpoints"):
        if address.security_protocol == "PLAINTEXT":
            return address.host, address.port
    return None


SECURITY_PROTOCOLS = ("PLAINTEXT",)
"""The listener security protocols served today."""


@dataclass(frozen=True)
class ListenerAddress:
    """One entry of ``listeners`` / ``advertised_listeners``: ``PROTOCOL://host:port``."""

    security_protocol: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.security_protocol}://{self.host}:{self.port}"


def parse_listeners(value: str, config_name: str = "listeners") -> list[ListenerAddress]:
    """Parse Kafka's comma-separated listener list; an empty host means this node's address and
    port 0 a free port. A malformed entry raises INVALID_CONFIG naming it."""
    addresses = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        protocol, sep, rest = entry.partition("://")
        host, colon, port_text = rest.rpartition(":")
        if not sep or not colon or not port_text.isdigit() or int(port_text) > 65535:
            raise Errors.INVALID_CONFIG.exception(
                f"{config_name}: {entry!r} is not PROTOCOL://host:port"
            )
        if protocol.upper() not in SECURITY_PROTOCOLS:
            raise Errors.INVALID_CONFIG.exception(
                f"{config_name}: security protocol {protocol!r} of {entry!r} is not one of "
                f"{', '.join(SECURITY_PROTOCOLS)}"
            )
        addresses.append(ListenerAddress(protocol.upper(), host.strip("[]"), int(port_text)))
    if len({a.security_protocol for a in addresses}) != len(addresses):
        raise Errors.INVALID_CONFIG.exception(f"{config_name}: {value!r} names a protocol twice")
    return addresses


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
