"""Tests for rafka.actors.broker.metadata_cache: a broker's view of the cluster, fed by
UpdateMetadata only."""

from __future__ import annotations

from rafka.actors.broker.metadata_cache import MetadataCache
from rafka.protocol.errors import Errors
from rafka.protocol.messages.control import TopicPartitions, UpdateMetadataRequest
from rafka.protocol.messages.metadata import BrokerMetadata, PartitionMetadata

BROKERS = {b: BrokerMetadata(b, f"10.0.0.{b}", f"node-{b}", rack=f"r{b % 2}") for b in range(3)}


def part(
    p: int,
    leader: int,
    replicas: tuple[int, ...] = (0, 1, 2),
    isr: tuple[int, ...] | None = None,
    epoch: int = 0,
) -> PartitionMetadata:
    return PartitionMetadata(p, leader, epoch, replicas, replicas if isr is None else isr)


def update(
    *topics: TopicPartitions,
    live: tuple[int, ...] = (0, 1, 2),
    full: bool = False,
    deleted: tuple[str, ...] = (),
    controller: int = 0,
) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(
        controller, 1, tuple(BROKERS[b] for b in live), topics, deleted, full
    )


def partitions_of(cache: MetadataCache, topic: str) -> dict[int, PartitionMetadata]:
    (metadata,) = cache.topic_metadata((topic,))
    return {p.partition: p for p in metadata.partitions}


def test_empty_cache_knows_no_brokers_controller_or_topics() -> None:
    cache = MetadataCache()
    assert (cache.brokers, cache.controller_id, cache.topic_metadata(None)) == ({}, -1, ())


def test_update_sets_live_brokers_and_controller() -> None:
    cache = MetadataCache()
    cache.update(update(live=(0, 2), controller=2))
    assert cache.brokers == {0: BROKERS[0], 2: BROKERS[2]}
    assert cache.controller_id == 2
    cache.update(update(live=(1,), controller=1))
    assert cache.brokers == {1: BROKERS[1]}  # the list is replaced, not merged


def test_partition_with_live_leader_has_no_error_and_no_offline_replicas() -> None:
    cache = MetadataCache()
    cache.update(update(TopicPartitions("events", (part(0, 1, isr=(1, 2), epoch=4),))))
    assert partitions_of(cache, "events")[0] == PartitionMetadata(
        0, 1, 4, (0, 1, 2), (1, 2), (), Errors.NONE
    )


def test_partition_whose_leader_is_not_live_is_leader_not_available_with_no_leader() -> None:
    cache = MetadataCache()
    cache.update(update(TopicPartitions("events", (part(0, 2), part(1, 0))), live=(0, 1)))
    partitions = partitions_of(cache, "events")
    assert partitions[0].error is Errors.LEADER_NOT_AVAILABLE
    assert partitions[0].leader == -1
    assert partitions[1].error is Errors.NONE


def test_partition_without_leader_is_leader_not_available() -> None:
    cache = MetadataCache()
    cache.update(update(TopicPartitions("events", (part(0, -1, isr=()),))))
    assert partitions_of(cache, "events")[0].error is Errors.LEADER_NOT_AVAILABLE


def test_replicas_on_dead_brokers_are_offline_in_assignment_order() -> None:
    cache = MetadataCache()
    cache.update(update(TopicPartitions("events", (part(0, 1, replicas=(2, 1, 0)),)), live=(1,)))
    assert partitions_of(cache, "events")[0].offline_replicas == (2, 0)


def test_partial_update_changes_named_partitions_and_keeps_the_rest() -> None:
    cache = MetadataCache()
    cache.update(
        update(
            TopicPartitions("events", (part(0, 0), part(1, 1))),
            TopicPartitions("audit", (part(0, 2),)),
        )
    )
    cache.update(update(TopicPartitions("events", (part(1, 2, epoch=1),))))
    events = partitions_of(cache, "events")
    assert (events[0].leader, events[1].leader, events[1].leader_epoch) == (0, 2, 1)
    assert partitions_of(cache, "audit")[0].leader == 2


def test_full_update_replaces_every_topic() -> None:
    cache = MetadataCache()
    cache.update(
        update(
            TopicPartitions("events", (part(0, 0),)),
            TopicPartitions("audit", (part(0, 2),)),
        )
    )
    cache.update(update(TopicPartitions("audit", (part(0, 1),)), full=True))
    assert [t.name for t in cache.topic_metadata(None)] == ["audit"]
    assert partitions_of(cache, "audit")[0].leader == 1


def test_deleted_topics_are_forgotten() -> None:
    cache = MetadataCache()
    cache.update(
        update(
            TopicPartitions("events", (part(0, 0),)),
            TopicPartitions("audit", (part(0, 1),)),
        )
    )
    cache.update(update(deleted=("events", "never-existed")))
    assert [t.name for t in cache.topic_metadata(None)] == ["audit"]
    assert cache.topic_metadata(("events",))[0].error is Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_unknown_topic_is_reported_with_no_partitions() -> None:
    cache = MetadataCache()
    cache.update(update(TopicPartitions("events", (part(0, 0),))))
    unknown, known = cache.topic_metadata(("missing", "events"))
    assert (unknown.name, unknown.partitions, unknown.error) == (
        "missing",
        (),
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
    )
    assert (known.name, known.error) == ("events", Errors.NONE)


def test_all_topics_are_sorted_by_name_with_partitions_in_order() -> None:
    cache = MetadataCache()
    cache.update(
        update(
            TopicPartitions("zeta", (part(2, 0), part(0, 1), part(1, 2))),
            TopicPartitions("alpha", (part(0, 0),)),
        )
    )
    topics = cache.topic_metadata(None)
    assert [t.name for t in topics] == ["alpha", "zeta"]
    assert [p.partition for p in topics[1].partitions] == [0, 1, 2]


def test_internal_topics_are_flagged() -> None:
    cache = MetadataCache()
    cache.update(
        update(
            TopicPartitions("__consumer_offsets", (part(0, 0),)),
            TopicPartitions("events", (part(0, 0),)),
        )
    )
    flags = {t.name: t.is_internal for t in cache.topic_metadata(None)}
    assert flags == {"__consumer_offsets": True, "events": False}


def test_leader_moved_off_a_dead_broker_serves_again_with_the_dead_replica_offline() -> None:
    cache = MetadataCache()
    cache.update(update(TopicPartitions("events", (part(0, 2),))))
    cache.update(update(TopicPartitions("events", (part(0, 1, isr=(0, 1), epoch=1),)), live=(0, 1)))
    partition = partitions_of(cache, "events")[0]
    assert (partition.leader, partition.error, partition.offline_replicas) == (1, Errors.NONE, (2,))
