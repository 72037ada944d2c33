"""A fake of the console's admin boundary: an in-memory cluster answering the ``Admin`` calls the
console makes with the protocol's dataclasses, and recording every call that would change it."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import pytest

from rafka.actors.broker.dynamic_config import validate_topic_config
from rafka.actors.controller.replica_assignment import validate_topic_name
from rafka.clients.admin import ClusterDescription, TopicDescription
from rafka.clients.records import OffsetAndTimestamp
from rafka.console.source import ClusterSource
from rafka.groups.subscription_codec import encode_assignment
from rafka.metrics.registry import MetricFamily
from rafka.protocol.configs import ConfigEntry, ConfigResource, ConfigSource
from rafka.protocol.errors import (
    Errors,
    GroupIdNotFoundError,
    InvalidPartitionsError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.admin import (
    ElectLeadersResult,
    LogDirDescription,
    PartitionReassignment,
    ReplicaLogDirInfo,
)
from rafka.protocol.messages.configs import AlterConfigsResult, DescribeConfigsResult
from rafka.protocol.messages.groups import GroupDescription, GroupListing, MemberDescription
from rafka.protocol.messages.metadata import BrokerMetadata, PartitionMetadata
from rafka.protocol.messages.offsets import EARLIEST_TIMESTAMP
from rafka.protocol.types import (
    ElectionType,
    NewPartitions,
    NewTopic,
    OffsetAndMetadata,
    ReplicaPlacement,
    TopicPartition,
)

DEFAULTS = {"retention.ms": "604800000", "cleanup.policy": "delete"}


def broker(broker_id: int, rack: str | None = None) -> BrokerMetadata:
    """A live broker with a PLAINTEXT listener on port 9092 + id."""
    host = f"10.0.0.{broker_id + 1}"
    return BrokerMetadata(
        broker_id, host, f"node-{broker_id}", rack, (f"PLAINTEXT://{host}:{9092 + broker_id}",)
    )


def member(member_id: str, partitions: Iterable[tuple[str, int]]) -> MemberDescription:
    """A group member with its assignment encoded as consumers encode it."""
    return MemberDescription(
        member_id,
        f"client-{member_id}",
        "/127.0.0.1",
        encode_assignment(TopicPartition(t, p) for t, p in partitions),
    )


class FakeAdmin:
    """Three live brokers (controller 0), topics, offsets, sizes, groups; changes are applied and
    recorded in ``changes``."""

    def __init__(self) -> None:
        self.brokers = [broker(0), broker(1), broker(2)]
        self.controller_id = 0
        self.topics: dict[str, TopicDescription] = {}
        self.offsets: dict[TopicPartition, tuple[int, int]] = {}
        self.sizes: dict[tuple[TopicPartition, int], int] = {}
        self.groups: dict[str, GroupDescription] = {}
        self.committed: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        self.reassigning: dict[TopicPartition, PartitionReassignment] = {}
        self.changes: list[tuple[Any, ...]] = []

    # ------------------------------------------------------------------ set-up

    def add_topic(
        self,
        name: str,
        replicas: Sequence[Sequence[int]],
        *,
        leaders: Sequence[int] | None = None,
        isrs: Sequence[Sequence[int]] | None = None,
        config: Mapping[str, str] | None = None,
        internal: bool = False,
    ) -> None:
        """A topic whose partition p has ``replicas[p]``, led by its first replica and all in
        sync unless ``leaders`` and ``isrs`` say otherwise."""
        partitions = tuple(
            PartitionMetadata(
                p,
                leaders[p] if leaders else r[0],
                0,
                tuple(r),
                tuple(isrs[p]) if isrs else tuple(r),
            )
            for p, r in enumerate(replicas)
        )
        self.topics[name] = TopicDescription(name, partitions, dict(config or {}), internal)

    def add_group(
        self,
        group_id: str,
        state: str,
        members: Sequence[MemberDescription] = (),
        committed: Mapping[TopicPartition, int] | None = None,
    ) -> None:
        """A consumer group with its members and committed offsets."""
        self.groups[group_id] = GroupDescription(
            Errors.NONE, group_id, state, "consumer", "range", 3, tuple(members)
        )
        self.committed[group_id] = {
            tp: OffsetAndMetadata(o, "") for tp, o in (committed or {}).items()
        }

    # ------------------------------------------------------------------ reads

    def describe_cluster(self) -> ClusterDescription:
        return ClusterDescription("cluster-1", self.controller_id, tuple(self.brokers))

    def list_topics(self) -> list[str]:
        return sorted(self.topics)

    def describe_topic(self, name: str) -> TopicDescription:
        if name not in self.topics:
            raise UnknownTopicOrPartitionError(
                f"topic {name!r}: This broker does not host the topic-partition."
            )
        return self.topics[name]

    def list_offsets(
        self, partitions: Collection[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        index = 0 if timestamp == EARLIEST_TIMESTAMP else 1
        return {
            tp: OffsetAndTimestamp(self.offsets.get(tp, (0, 0))[index], -1) for tp in partitions
        }

    def describe_log_dirs(
        self, brokers: Collection[int] | None = None
    ) -> dict[int, tuple[LogDirDescription, ...]]:
        found: dict[int, dict[TopicPartition, ReplicaLogDirInfo]] = {
            b.broker_id: {} for b in self.brokers
        }
        for (tp, b), size in self.sizes.items():
            found.setdefault(b, {})[tp] = ReplicaLogDirInfo(size, 0)
        return {
            b: (LogDirDescription(f"/data/broker-{b}", Errors.NONE, r),) for b, r in found.items()
        }

    def describe_configs(
        self, config_resources: Sequence[ConfigResource]
    ) -> list[DescribeConfigsResult]:
        results = []
        for resource in config_resources:
            overrides = self.describe_topic(resource.name).config
            entries = tuple(
                ConfigEntry(
                    name,
                    overrides.get(name, default),
                    ConfigSource.TOPIC_CONFIG if name in overrides else ConfigSource.DEFAULT_CONFIG,
                )
                for name, default in {**DEFAULTS, **overrides}.items()
            )
            results.append(DescribeConfigsResult(resource, Errors.NONE, None, entries))
        return results

    def list_groups(self) -> list[GroupListing]:
        return [GroupListing(g, d.protocol_type, d.state) for g, d in sorted(self.groups.items())]

    def describe_group(self, group_id: str) -> GroupDescription:
        return self.groups.get(group_id, GroupDescription(Errors.NONE, group_id))

    def list_group_offsets(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        if group_id not in self.committed:
            raise GroupIdNotFoundError(f"group {group_id!r}")
        return dict(self.committed[group_id])

    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        return {
            tp: r for tp, r in self.reassigning.items() if partitions is None or tp in partitions
        }

    # ------------------------------------------------------------------ changes

    def create_topics(
        self,
        new_topics: list[NewTopic],
        timeout_ms: int | None = None,
        validate_only: bool = False,
        *,
        placement: ReplicaPlacement | None = None,
    ) -> None:
        for topic in new_topics:
            validate_topic_name(topic.name)
            if topic.name in self.topics:
                raise TopicAlreadyExistsError(f"topic {topic.name!r} already exists")
            validate_topic_config(dict(topic.config))
        if validate_only:
            return
        for topic in new_topics:
            ids = [b.broker_id for b in self.brokers]
            self.add_topic(
                topic.name,
                [
                    [ids[(p + j) % len(ids)] for j in range(topic.replication_factor)]
                    for p in range(topic.num_partitions)
                ],
                config=dict(topic.config),
            )
            self.changes.append(("create_topics", topic))

    def create_partitions(
        self,
        topic_partitions: Mapping[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
        *,
        placement: ReplicaPlacement | None = None,
    ) -> None:
        for name, request in topic_partitions.items():
            current = len(self.describe_topic(name).partitions)
            if request.total_count <= current:
                raise InvalidPartitionsError(f"topic {name!r} already has {current} partitions")
        if not validate_only:
            self.changes.append(("create_partitions", dict(topic_partitions)))

    def delete_topics(self, topics: list[str], timeout_ms: int | None = None) -> None:
        for name in topics:
            self.describe_topic(name)
            del self.topics[name]
        self.changes.append(("delete_topics", list(topics)))

    def incremental_alter_configs(
        self, config_resources: Sequence[ConfigResource]
    ) -> list[AlterConfigsResult]:
        self.changes.append(("incremental_alter_configs", list(config_resources)))
        return [AlterConfigsResult(r, Errors.NONE) for r in config_resources]

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: Collection[TopicPartition] | None = None,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, ElectLeadersResult]:
        self.changes.append(("elect_leaders", election_type, partitions))
        wanted = (
            partitions
            if partitions is not None
            else [
                TopicPartition(t, p.partition) for t, d in self.topics.items() for p in d.partitions
            ]
        )
        return {
            TopicPartition(*tp): ElectLeadersResult(Errors.ELECTION_NOT_NEEDED) for tp in wanted
        }

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        self.changes.append(("alter_partition_reassignments", dict(reassignments)))
        for tp, replicas in reassignments.items():
            old = self.topics[tp.topic]
            partitions = tuple(
                PartitionMetadata(
                    p.partition, replicas[0], p.leader_epoch + 1, tuple(replicas), tuple(replicas)
                )
                if p.partition == tp.partition
                else p
                for p in old.partitions
            )
            self.topics[tp.topic] = TopicDescription(
                old.name, partitions, old.config, old.is_internal
            )


@pytest.fixture
def admin() -> FakeAdmin:
    """An in-memory cluster of three brokers and no topics."""
    return FakeAdmin()


@pytest.fixture
def families() -> list[MetricFamily]:
    """The metric families the fake brokers report (none until a test adds some)."""
    return []


@pytest.fixture
def source(admin: FakeAdmin, families: list[MetricFamily]) -> ClusterSource:
    """The console's source over the fake admin; the controller's epoch is 7."""
    return ClusterSource(admin, lambda: list(families), lambda broker_id: 7)
