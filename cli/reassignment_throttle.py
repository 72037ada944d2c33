"""The replication throttle of a reassignment, set and removed as Kafka's tool does.

A throttle has two halves. The rate, in bytes/s, is a broker config set on every broker a moving
partition has replicas on before or after the move: ``leader.replication.throttled.rate`` limits
what a broker serves to throttled followers, ``follower.replication.throttled.rate`` what it fetches
for throttled replicas. Which replicas count is a topic config listing ``partition:broker`` pairs:
``leader.replication.throttled.replicas`` names the replicas a moving partition has now (any of
them may lead while the new ones copy), ``follower.replication.throttled.replicas`` the replicas it
gains. Partitions that gain no replica are not throttled.

``--verify`` removes the throttle once no listed partition is being reassigned: the rates from every
live broker (which brokers the move involved is no longer known once it is done) and the replica
lists from the topics; only the overrides actually set are removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rafka.cli.configs import is_overridden
from rafka.protocol.configs import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
)
from rafka.protocol.messages.configs import DescribeConfigsResult
from rafka.protocol.types import TopicPartition

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"

BROKER_THROTTLES = (LEADER_RATE, FOLLOWER_RATE)
TOPIC_THROTTLES = (LEADER_REPLICAS, FOLLOWER_REPLICAS)


@dataclass(frozen=True)
class PartitionMove:
    """One partition's move: the replicas it has now and those it gains (not yet holding data)."""

    sources: tuple[int, ...]
    destinations: tuple[int, ...]


def partition_moves(
    current: Mapping[TopicPartition, Sequence[int]],
    target: Mapping[TopicPartition, Sequence[int]],
) -> dict[TopicPartition, PartitionMove]:
    """The partitions of ``target`` that gain at least one replica, with their moves."""
    moves = {}
    for tp, replicas in sorted(target.items()):
        sources = tuple(current[tp])
        destinations = tuple(b for b in replicas if b not in sources)
        if destinations:
            moves[tp] = PartitionMove(sources, destinations)
    return moves


def _replica_lists(pairs: Iterable[tuple[TopicPartition, int]]) -> dict[str, str]:
    """Topic -> its ``partition:broker`` list, sorted by partition then broker."""
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for tp, broker in pairs:
        by_topic.setdefault(tp.topic, []).append((tp.partition, broker))
    return {
        topic: ",".join(f"{p}:{b}" for p, b in sorted(set(found)))
        for topic, found in sorted(by_topic.items())
    }


@dataclass(frozen=True)
class Throttle:
    """The configs one ``--execute --throttle`` sets: the rate on ``brokers``, and per topic the
    leader-side and follower-side throttled replica lists."""

    rate: int
    brokers: tuple[int, ...]
    leader_replicas: Mapping[str, str]
    follower_replicas: Mapping[str, str]

    def resources(self) -> list[ConfigResource]:
        """The incremental config changes that set this throttle: topics first, then brokers."""
        resources = [
            _setting(
                ConfigResourceType.TOPIC,
                topic,
                {
                    LEADER_REPLICAS: self.leader_replicas[topic],
                    FOLLOWER_REPLICAS: self.follower_replicas[topic],
                },
            )
            for topic in sorted(self.leader_replicas)
        ]
        rate = str(self.rate)
        resources.extend(
            _setting(ConfigResourceType.BROKER, str(b), {LEADER_RATE: rate, FOLLOWER_RATE: rate})
            for b in self.brokers
        )
        return resources

    def removals(self) -> list[ConfigResource]:
        """The incremental config changes that delete every config this throttle sets."""
        return [
            ConfigResource(
                r.resource_type,
                r.name,
                {key: AlterConfigOp(AlterConfigOpType.DELETE) for key in r.configs or {}},
            )
            for r in self.resources()
        ]


def _setting(kind: ConfigResourceType, name: str, values: Mapping[str, str]) -> ConfigResource:
    ops = {key: AlterConfigOp(AlterConfigOpType.SET, value) for key, value in values.items()}
    return ConfigResource(kind, name, ops)


def plan_throttle(moves: Mapping[TopicPartition, PartitionMove], rate: int) -> Throttle:
    """The throttle of ``moves`` at ``rate`` bytes/s."""
    brokers = {b for move in moves.values() for b in (*move.sources, *move.destinations)}
    return Throttle(
        rate,
        tuple(sorted(brokers)),
        _replica_lists((tp, b) for tp, move in moves.items() for b in move.sources),
        _replica_lists((tp, b) for tp, move in moves.items() for b in move.destinations),
    )


def throttle_removals(described: Sequence[DescribeConfigsResult]) -> list[ConfigResource]:
    """For each described broker or topic that has throttle overrides of its own, the change that
    deletes them (resources without any are left out)."""
    removals = []
    for result in described:
        resource = result.resource
        is_broker = resource.resource_type is ConfigResourceType.BROKER
        names = BROKER_THROTTLES if is_broker else TOPIC_THROTTLES
        found = [e.name for e in result.entries if e.name in names and is_overridden(e, resource)]
        if found:
            ops = {name: AlterConfigOp(AlterConfigOpType.DELETE) for name in sorted(found)}
            removals.append(ConfigResource(resource.resource_type, resource.name, ops))
    return removals


def removal_lines(removals: Sequence[ConfigResource]) -> list[str]:
    """What removing the throttle says: Kafka's lines naming the brokers and topics cleared."""
    lines = []
    for kind, level in ((ConfigResourceType.BROKER, "broker"), (ConfigResourceType.TOPIC, "topic")):
        names = [r.name for r in removals if r.resource_type is kind]
        if names:
            plural = "s" if len(names) > 1 else ""
            lines.append(f"Clearing {level}-level throttles on {level}{plural} {','.join(names)}")
    if lines:
        lines.append("Throttle was removed.")
    return lines
