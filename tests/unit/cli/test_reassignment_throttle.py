"""The replication throttle of ``rafka reassign-partitions`` (rafka.cli.reassignment_throttle):
which configs a move sets, on which brokers and topics, and which ones ``--verify`` removes."""

from __future__ import annotations

from rafka.cli.reassignment_throttle import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    PartitionMove,
    partition_moves,
    plan_throttle,
    removal_lines,
    throttle_removals,
)
from rafka.protocol.configs import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
)
from rafka.protocol.errors import Errors
from rafka.protocol.messages.configs import DescribeConfigsResult
from rafka.protocol.types import TopicPartition

FOO0, FOO1, BAR0 = TopicPartition("foo", 0), TopicPartition("foo", 1), TopicPartition("bar", 0)
SET = AlterConfigOpType.SET
DELETE = AlterConfigOp(AlterConfigOpType.DELETE)


def test_the_seeds_move_copies_every_new_replica_from_the_old_ones() -> None:
    moves = partition_moves({FOO0: (1, 2, 3)}, {FOO0: (4, 5, 6)})
    assert moves == {FOO0: PartitionMove((1, 2, 3), (4, 5, 6))}


def test_a_partition_that_gains_no_replica_does_not_move() -> None:
    current = {FOO0: (1, 2, 3), FOO1: (2, 3, 1), BAR0: (1, 2)}
    target = {FOO0: (3, 2, 1), FOO1: (2, 3, 4), BAR0: (1,)}
    assert partition_moves(current, target) == {FOO1: PartitionMove((2, 3, 1), (4,))}


def test_leaders_throttle_the_replicas_a_partition_has_and_followers_the_ones_it_gains() -> None:
    moves = partition_moves(
        {FOO0: (1, 2, 3), FOO1: (2, 3, 1), BAR0: (1,)},
        {FOO0: (4, 5, 6), FOO1: (2, 3, 5), BAR0: (2,)},
    )
    throttle = plan_throttle(moves, 10_000_000)
    assert throttle.rate == 10_000_000
    assert throttle.brokers == (1, 2, 3, 4, 5, 6)
    assert throttle.leader_replicas == {"bar": "0:1", "foo": "0:1,0:2,0:3,1:1,1:2,1:3"}
    assert throttle.follower_replicas == {"bar": "0:2", "foo": "0:4,0:5,0:6,1:5"}


def test_replica_lists_sort_partitions_as_numbers() -> None:
    tp2, tp10 = TopicPartition("foo", 2), TopicPartition("foo", 10)
    throttle = plan_throttle(partition_moves({tp10: (1,), tp2: (1,)}, {tp10: (2,), tp2: (2,)}), 1)
    assert throttle.leader_replicas == {"foo": "2:1,10:1"}
    assert throttle.follower_replicas == {"foo": "2:2,10:2"}


def test_the_rate_is_set_on_each_broker_involved_and_the_lists_on_each_topic() -> None:
    throttle = plan_throttle(
        partition_moves({BAR0: (1,), FOO0: (1, 2)}, {BAR0: (3,), FOO0: (2, 3)}), 500
    )
    assert throttle.resources() == [
        ConfigResource(
            ConfigResourceType.TOPIC,
            "bar",
            {
                LEADER_REPLICAS: AlterConfigOp(SET, "0:1"),
                FOLLOWER_REPLICAS: AlterConfigOp(SET, "0:3"),
            },
        ),
        ConfigResource(
            ConfigResourceType.TOPIC,
            "foo",
            {
                LEADER_REPLICAS: AlterConfigOp(SET, "0:1,0:2"),
                FOLLOWER_REPLICAS: AlterConfigOp(SET, "0:3"),
            },
        ),
        *(
            ConfigResource(
                ConfigResourceType.BROKER,
                str(b),
                {LEADER_RATE: AlterConfigOp(SET, "500"), FOLLOWER_RATE: AlterConfigOp(SET, "500")},
            )
            for b in (1, 2, 3)
        ),
    ]


def test_no_move_means_no_throttle_to_set() -> None:
    throttle = plan_throttle({}, 1000)
    assert throttle.brokers == () and throttle.resources() == []


def entry(name: str, value: str, source: ConfigSource) -> ConfigEntry:
    """A described config whose only level is ``source``."""
    return ConfigEntry(name, value, source, synonyms=(ConfigSynonym(name, value, source),))


def described(kind: ConfigResourceType, name: str, *entries: ConfigEntry) -> DescribeConfigsResult:
    return DescribeConfigsResult(ConfigResource(kind, name), Errors.NONE, None, entries)


def test_verify_removes_only_throttle_overrides_set_on_the_broker_or_topic_itself() -> None:
    results = [
        described(
            ConfigResourceType.BROKER,
            "1",
            entry(LEADER_RATE, "500", ConfigSource.DYNAMIC_BROKER_CONFIG),
            entry(FOLLOWER_RATE, "500", ConfigSource.DYNAMIC_BROKER_CONFIG),
            entry("log.retention.ms", "1000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ),
        # A rate set as the cluster-wide default is the operator's, not this broker's override.
        described(
            ConfigResourceType.BROKER,
            "2",
            entry(LEADER_RATE, "700", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ),
        described(
            ConfigResourceType.BROKER,
            "3",
            entry(FOLLOWER_RATE, "500", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ),
        described(
            ConfigResourceType.TOPIC,
            "foo",
            entry(LEADER_REPLICAS, "0:1", ConfigSource.TOPIC_CONFIG),
            entry(FOLLOWER_REPLICAS, "0:3", ConfigSource.TOPIC_CONFIG),
            entry("retention.ms", "1000", ConfigSource.TOPIC_CONFIG),
        ),
        described(
            ConfigResourceType.TOPIC, "bar", entry(LEADER_REPLICAS, "", ConfigSource.DEFAULT_CONFIG)
        ),
    ]
    assert throttle_removals(results) == [
        ConfigResource(
            ConfigResourceType.BROKER, "1", {FOLLOWER_RATE: DELETE, LEADER_RATE: DELETE}
        ),
        ConfigResource(ConfigResourceType.BROKER, "3", {FOLLOWER_RATE: DELETE}),
        ConfigResource(
            ConfigResourceType.TOPIC, "foo", {FOLLOWER_REPLICAS: DELETE, LEADER_REPLICAS: DELETE}
        ),
    ]


def test_removing_the_throttle_names_the_brokers_and_topics_cleared() -> None:
    removals = [
        ConfigResource(ConfigResourceType.BROKER, "1", {LEADER_RATE: DELETE}),
        ConfigResource(ConfigResourceType.BROKER, "3", {LEADER_RATE: DELETE}),
        ConfigResource(ConfigResourceType.TOPIC, "foo", {LEADER_REPLICAS: DELETE}),
    ]
    assert removal_lines(removals) == [
        "Clearing broker-level throttles on brokers 1,3",
        "Clearing topic-level throttles on topic foo",
        "Throttle was removed.",
    ]
    assert removal_lines(removals[2:]) == [
        "Clearing topic-level throttles on topic foo",
        "Throttle was removed.",
    ]
    assert removal_lines([]) == []
