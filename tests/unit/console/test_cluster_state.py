"""The console's view model (rafka.console.cluster_state) from made-up admin answers: partition and
leader counts per broker, offline brokers, under-replicated and offline partitions, preferred
leaders, sizes, configs, and a group's lag."""

from __future__ import annotations

from rafka.clients.admin import ClusterDescription, TopicDescription
from rafka.console.cluster_state import (
    Throughput,
    cluster_view,
    group_view,
    topic_view,
)
from rafka.protocol.configs import ConfigEntry, ConfigSource
from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import GroupDescription
from rafka.protocol.messages.metadata import PartitionMetadata
from rafka.protocol.types import OffsetAndMetadata, TopicPartition

from .conftest import broker, member

TP = TopicPartition


def topic(name: str, *partitions: tuple[int, tuple[int, ...], tuple[int, ...]]) -> TopicDescription:
    """A topic whose partition p is (leader, replicas, isr)."""
    return TopicDescription(
        name,
        tuple(
            PartitionMetadata(p, leader, 0, r, isr) for p, (leader, r, isr) in enumerate(partitions)
        ),
    )


CLUSTER = ClusterDescription("c1", 1, (broker(0, "a"), broker(1, "b")))
ORDERS = topic("orders", (0, (0, 1), (0, 1)), (0, (1, 0), (0,)), (-1, (2, 1), ()))
LOGS = topic("logs", (1, (1,), (1,)))


def test_brokers_count_hosted_replicas_and_leaders_and_a_named_dead_broker_is_offline() -> None:
    view = cluster_view(CLUSTER, [ORDERS, LOGS], 9, {}, {0: Throughput(5.0, 50.0, 0.0)}, {})
    rows = {b.broker_id: b for b in view.brokers}
    assert [b.broker_id for b in view.brokers] == [0, 1, 2]
    assert (rows[0].partitions, rows[0].leaders) == (2, 2)
    assert (rows[1].partitions, rows[1].leaders) == (4, 1)
    assert (rows[0].host, rows[0].port, rows[0].rack, rows[0].state) == (
        "10.0.0.1",
        9092,
        "a",
        "online",
    )
    assert rows[1].controller and not rows[0].controller
    assert (rows[2].state, rows[2].host, rows[2].partitions, rows[2].leaders) == (
        "offline",
        None,
        1,
        0,
    )
    assert rows[0].throughput.messages_in == 5.0
    assert rows[1].throughput.messages_in is None
    assert (view.controller_id, view.controller_epoch, view.cluster_id) == (1, 9, "c1")


def test_under_replicated_and_offline_partitions_are_listed_apart() -> None:
    view = cluster_view(CLUSTER, [ORDERS, LOGS], None, {}, {}, {})
    assert [(p.topic, p.partition) for p in view.under_replicated] == [("orders", 1)]
    assert [(p.topic, p.partition) for p in view.offline] == [("orders", 2)]
    assert view.partition_count == 4
    (logs, orders) = view.topics
    assert (orders.name, orders.partitions, orders.replication_factor) == ("orders", 3, 2)
    assert (orders.under_replicated, orders.offline, orders.preferred) == (2, 1, 1)
    assert (logs.under_replicated, logs.offline, logs.preferred) == (0, 0, 1)


def test_a_partition_is_as_big_as_its_leaders_log_else_its_largest_replica() -> None:
    sizes = {(TP("orders", 0), 0): 100, (TP("orders", 0), 1): 90, (TP("orders", 2), 1): 40}
    view = topic_view(ORDERS, [], sizes, {}, {})
    assert [p.size for p in view.partitions] == [100, None, 40]
    assert view.row.size == 140


def test_no_size_reported_is_unknown_not_zero() -> None:
    assert cluster_view(CLUSTER, [LOGS], None, {}, {}, {}).topics[0].size is None


def test_topic_view_has_offsets_preferred_flags_and_configs_with_overrides_marked() -> None:
    moved = topic("t", (1, (0, 1), (0, 1)), (1, (1, 0), (1, 0)))
    configs = [
        ConfigEntry("retention.ms", "1000", ConfigSource.TOPIC_CONFIG),
        ConfigEntry("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG),
    ]
    view = topic_view(moved, configs, {}, {TP("t", 0): 3}, {TP("t", 0): 10, TP("t", 1): 4})
    first, second = view.partitions
    assert (first.preferred_leader, first.preferred, second.preferred) == (0, False, True)
    assert (first.log_start, first.log_end, second.log_start, second.log_end) == (3, 10, None, 4)
    assert [(c.name, c.overridden, c.source) for c in view.configs] == [
        ("cleanup.policy", False, "DEFAULT_CONFIG"),
        ("retention.ms", True, "TOPIC_CONFIG"),
    ]


def test_group_lag_is_log_end_minus_committed_for_owned_and_committed_partitions() -> None:
    description = GroupDescription(
        Errors.NONE,
        "app",
        "Stable",
        "consumer",
        "range",
        4,
        (member("m2", [("orders", 1)]), member("m1", [("orders", 0)])),
    )
    committed = {TP("orders", 0): OffsetAndMetadata(5, ""), TP("logs", 0): OffsetAndMetadata(2, "")}
    view = group_view(description, committed, {TP("orders", 0): 12, TP("orders", 1): 7})
    assert [m.member_id for m in view.members] == ["m1", "m2"]
    assert view.members[0].assignment == (TP("orders", 0),)
    rows = {(r.topic, r.partition): r for r in view.partitions}
    assert list(rows) == [("logs", 0), ("orders", 0), ("orders", 1)]
    assert (rows["orders", 0].lag, rows["orders", 0].owner) == (7, "m1")
    assert (rows["orders", 1].committed, rows["orders", 1].lag, rows["orders", 1].owner) == (
        None,
        None,
        "m2",
    )
    assert (rows["logs", 0].log_end, rows["logs", 0].lag, rows["logs", 0].owner) == (
        None,
        None,
        None,
    )
    assert view.total_lag == 7


def test_a_group_with_no_known_lag_has_no_total() -> None:
    view = group_view(GroupDescription(Errors.NONE, "idle", "Empty"), {}, {})
    assert view.total_lag is None
    assert view.partitions == ()
