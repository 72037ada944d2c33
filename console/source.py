"""The console's one door to the cluster, and what it reads through it for each page.

``ConsoleAdmin`` names the ``Admin`` methods the console makes (``Admin`` itself satisfies it; unit
tests pass a fake); ``ClusterSource`` bundles it with the two reads the admin client does not offer,
the brokers' metric families and the active controller's epoch; ``ray_source`` builds the real one.
``ClusterReader`` gathers the admin client's answers each page needs and hands them to
``cluster_state``. Every call blocks, so the web app makes them in worker threads. A part of a page
the cluster cannot give right now is left blank rather than failing the page: sizes when a broker
does not describe its log directories, offsets when a partition has no leader, a topic or group
deleted between listing and describing it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from rafka.cli.reassignment_progress import replica_sizes
from rafka.clients.admin import ClusterDescription, TopicDescription
from rafka.clients.records import OffsetAndTimestamp
from rafka.console.cluster_state import (
    NO_THROUGHPUT,
    ClusterView,
    GroupView,
    ReplicaSizes,
    Throughput,
    TopicView,
    cluster_view,
    group_view,
    topic_view,
)
from rafka.metrics.registry import MetricFamily
from rafka.protocol.configs import ConfigResource, ConfigResourceType
from rafka.protocol.errors import (
    GroupIdNotFoundError,
    RafkaError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.admin import (
    ElectLeadersResult,
    LogDirDescription,
    PartitionReassignment,
)
from rafka.protocol.messages.configs import AlterConfigsResult, DescribeConfigsResult
from rafka.protocol.messages.groups import GroupDescription, GroupListing
from rafka.protocol.messages.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from rafka.protocol.types import (
    ElectionType,
    NewPartitions,
    NewTopic,
    OffsetAndMetadata,
    ReplicaPlacement,
    TopicPartition,
)

CONTROLLER_TIMEOUT_S = 5.0
"""How long the console waits for the active controller to describe itself."""


class ConsoleAdmin(Protocol):
    """The admin client calls the console makes (``Admin``'s, or a fake's in tests)."""

    def describe_cluster(self) -> ClusterDescription:
        """Live brokers, the controller and the cluster id."""

    def list_topics(self) -> list[str]:
        """Every topic's name."""

    def describe_topic(self, name: str) -> TopicDescription:
        """A topic's partitions and overrides; UNKNOWN_TOPIC_OR_PARTITION if there is none."""

    def list_offsets(
        self, partitions: Collection[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """Each partition's offset at ``timestamp`` (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP)."""

    def describe_log_dirs(
        self, brokers: Collection[int] | None = None
    ) -> dict[int, tuple[LogDirDescription, ...]]:
        """Each broker's log directories and the size of each replica in them."""

    def describe_configs(
        self, config_resources: Sequence[ConfigResource]
    ) -> list[DescribeConfigsResult]:
        """Every config of each resource with its value and source."""

    def incremental_alter_configs(
        self, config_resources: Sequence[ConfigResource]
    ) -> list[AlterConfigsResult]:
        """Apply each resource's ``AlterConfigOp``s."""

    def list_groups(self) -> list[GroupListing]:
        """Every consumer group."""

    def describe_group(self, group_id: str) -> GroupDescription:
        """A group's state, assignor and members."""

    def list_group_offsets(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """A group's committed offsets."""

    def create_topics(
        self,
        new_topics: list[NewTopic],
        timeout_ms: int | None = None,
        validate_only: bool = False,
        *,
        placement: ReplicaPlacement | None = None,
    ) -> None:
        """Create topics (or, with ``validate_only``, only check the request)."""

    def create_partitions(
        self,
        topic_partitions: Mapping[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
        *,
        placement: ReplicaPlacement | None = None,
    ) -> None:
        """Grow topics (or, with ``validate_only``, only check the request)."""

    def delete_topics(self, topics: list[str], timeout_ms: int | None = None) -> None:
        """Delete topics and wait until no broker knows them."""

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: Collection[TopicPartition] | None = None,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, ElectLeadersResult]:
        """Elect the preferred leader of each partition (of every one if None)."""

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        """Start reassigning each partition to its target replicas."""

    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress."""


@dataclass(frozen=True)
class ClusterSource:
    """Everything the console reads and changes: ``admin``; ``scrape()``, every broker's metric
    families (none before the brokers report metrics); ``controller_epoch(broker_id)``, the epoch
    of the controller on that broker (None if it does not answer)."""

    admin: ConsoleAdmin
    scrape: Callable[[], list[MetricFamily]]
    controller_epoch: Callable[[int], int | None]


def ray_source(namespace: str, connect_timeout_ms: int) -> ClusterSource:
    """The source of the cluster in Ray namespace ``namespace``: an ``Admin`` (which connects to
    Ray, waiting up to ``connect_timeout_ms`` for it to answer) and the brokers' and controller's
    actors."""
    import ray

    from rafka.actors.names import controller_actor_name
    from rafka.clients.admin import Admin
    from rafka.metrics.scrape import scrape

    admin = Admin(namespace=namespace, connect_timeout_ms=connect_timeout_ms)

    def controller_epoch(broker_id: int) -> int | None:
        # The admin client reports which broker's controller is active but not its epoch; the
        # controller actor's own description does.
        try:
            actor = ray.get_actor(controller_actor_name(broker_id), namespace=namespace)
            described = ray.get(actor.describe.remote(), timeout=CONTROLLER_TIMEOUT_S)
        except (ValueError, ray.exceptions.RayError):
            return None
        return int(described["epoch"])

    return ClusterSource(admin, lambda: scrape(namespace), controller_epoch)


class ClusterReader:
    """Reads the console's views through a ``ClusterSource``."""

    def __init__(self, source: ClusterSource) -> None:
        self.source = source
        self.admin = source.admin

    def topics(self) -> list[TopicDescription]:
        """Every topic's description, by name (a topic deleted meanwhile is left out)."""
        found = []
        for name in self.admin.list_topics():
            try:
                found.append(self.admin.describe_topic(name))
            except UnknownTopicOrPartitionError:
                continue
        return found

    def sizes(self) -> ReplicaSizes:
        """Every replica's size; none when some broker cannot describe its log directories."""
        try:
            return replica_sizes(self.admin.describe_log_dirs())
        except RafkaError:
            return {}

    def cluster(
        self,
        broker_throughput: Mapping[int, Throughput],
        topic_throughput: Mapping[str, Throughput],
    ) -> ClusterView:
        """The cluster page."""
        description = self.admin.describe_cluster()
        epoch = (
            self.source.controller_epoch(description.controller_id)
            if description.controller_id >= 0
            else None
        )
        return cluster_view(
            description,
            self.topics(),
            epoch,
            self.sizes(),
            broker_throughput,
            topic_throughput,
        )

    def topic(self, name: str, throughput: Throughput = NO_THROUGHPUT) -> TopicView:
        """A topic's page; UNKNOWN_TOPIC_OR_PARTITION if there is no such topic."""
        description = self.admin.describe_topic(name)
        (configs,) = self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
        led = [TopicPartition(name, p.partition) for p in description.partitions if p.leader >= 0]
        return topic_view(
            description,
            configs.entries,
            self.sizes(),
            self.offsets(led, EARLIEST_TIMESTAMP),
            self.offsets(led, LATEST_TIMESTAMP),
            throughput,
        )

    def offsets(
        self, partitions: Collection[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int]:
        """Each partition's offset at ``timestamp``; none if a leader does not answer in time."""
        if not partitions:
            return {}
        try:
            found = self.admin.list_offsets(partitions, timestamp)
        except RafkaError:
            return {}
        return {tp: answer.offset for tp, answer in found.items()}

    def led(self, partitions: Collection[TopicPartition]) -> list[TopicPartition]:
        """Those of ``partitions`` whose topic exists and which have a leader to ask for offsets
        (asking a leaderless one would wait out the request timeout)."""
        leaders: dict[TopicPartition, int] = {}
        for topic in sorted({tp.topic for tp in partitions}):
            try:
                description = self.admin.describe_topic(topic)
            except UnknownTopicOrPartitionError:
                continue
            leaders.update(
                {TopicPartition(topic, p.partition): p.leader for p in description.partitions}
            )
        return sorted(tp for tp in partitions if leaders.get(tp, -1) >= 0)

    def group(self, group_id: str) -> GroupView:
        """A group's page: lag per partition from its committed offsets and the log ends."""
        description = self.admin.describe_group(group_id)
        committed = self.admin.list_group_offsets(group_id)
        # The partitions the members own are known once their assignments are decoded.
        owned = group_view(description, committed, {}).partitions
        wanted = self.led([TopicPartition(row.topic, row.partition) for row in owned])
        return group_view(description, committed, self.offsets(wanted, LATEST_TIMESTAMP))

    def groups(self) -> list[GroupView]:
        """Every group with its lag (a group deleted meanwhile is left out)."""
        found = []
        for listing in self.admin.list_groups():
            try:
                found.append(self.group(listing.group_id))
            except GroupIdNotFoundError:
                continue
        return found
