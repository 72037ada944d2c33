"""ClusterConnection.refresh_metadata: the freshest view of each topic across the brokers'
caches."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

from rafka.clients.cluster import METADATA_GRACE_S, ClusterConnection
from rafka.protocol.errors import Errors
from rafka.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)

NAMESPACE = "rafka"


def lagging(fake: Any, broker_id: int, view: dict[str, TopicMetadata]) -> None:
    """Make ``broker_id`` answer from its own (possibly stale) view instead of the fake
    cluster's."""
    broker = fake.broker(broker_id)

    def metadata(request: MetadataRequest) -> MetadataResponse:
        answer = type(broker).metadata(broker, request)
        topics = tuple(view.get(t.name, t) for t in answer.topics)
        return MetadataResponse(answer.brokers, answer.controller_id, topics, answer.cluster_id)

    broker.metadata = metadata


def test_a_topic_one_broker_does_not_know_yet_is_taken_from_one_that_does(
    fake_cluster: Any,
) -> None:
    fake_cluster.add_brokers(3)
    fake_cluster.add_topic("events", [(0, 10), (0, 10)])
    lagging(
        fake_cluster,
        0,
        {"events": TopicMetadata("events", error=Errors.UNKNOWN_TOPIC_OR_PARTITION)},
    )
    found = ClusterConnection(NAMESPACE, transport=fake_cluster.transport).topic(
        "events", refresh=True
    )
    assert found.error is Errors.NONE and len(found.partitions) == 2


def test_the_view_with_the_newest_leader_epochs_wins(fake_cluster: Any) -> None:
    fake_cluster.add_brokers(2)
    fake_cluster.add_topic("events", [(0, 10)])
    newer = TopicMetadata("events", (PartitionMetadata(0, 1, 7, (0, 1), (1,)),))
    lagging(fake_cluster, 1, {"events": newer})
    found = ClusterConnection(NAMESPACE, transport=fake_cluster.transport).topic(
        "events", refresh=True
    )
    assert (found.partitions[0].leader, found.partitions[0].leader_epoch) == (1, 7)


def test_each_partition_is_taken_from_the_broker_that_knows_its_newest_leader(
    fake_cluster: Any,
) -> None:
    fake_cluster.add_brokers(2)
    fake_cluster.add_topic("events", [(0, 10), (0, 10)])
    lagging(
        fake_cluster,
        0,
        {
            "events": TopicMetadata(
                "events",
                (
                    PartitionMetadata(0, 1, 3, (0, 1), (1,)),
                    PartitionMetadata(1, 0, 1, (0, 1), (0,)),
                ),
            )
        },
    )
    lagging(
        fake_cluster,
        1,
        {
            "events": TopicMetadata(
                "events",
                (
                    PartitionMetadata(0, 0, 2, (0, 1), (0,)),
                    PartitionMetadata(1, 1, 4, (0, 1), (1,)),
                ),
            )
        },
    )
    found = ClusterConnection(NAMESPACE, transport=fake_cluster.transport).topic(
        "events", refresh=True
    )
    assert [(p.partition, p.leader, p.leader_epoch) for p in found.partitions] == [
        (0, 1, 3),
        (1, 1, 4),
    ]


def test_a_dead_broker_is_skipped(fake_cluster: Any) -> None:
    fake_cluster.add_brokers(2)
    fake_cluster.add_topic("events", [(0, 10)])
    fake_cluster.dead.add("broker-0")
    assert (
        ClusterConnection(NAMESPACE, transport=fake_cluster.transport)
        .topic("events", refresh=True)
        .error
        is Errors.NONE
    )


def test_a_broker_silent_on_an_earlier_request_is_not_waited_for_again(fake_cluster: Any) -> None:
    fake_cluster.add_brokers(2)
    fake_cluster.add_topic("events", [(0, 10)])
    frozen = fake_cluster.broker(1)
    unanswered: list[Future[MetadataResponse]] = []

    def silent(request: MetadataRequest) -> Future[MetadataResponse]:
        unanswered.append(Future())
        return unanswered[-1]

    frozen.metadata = silent
    connection = ClusterConnection(NAMESPACE, transport=fake_cluster.transport)
    started = time.monotonic()
    connection.refresh_metadata(["events"])
    assert time.monotonic() - started >= METADATA_GRACE_S  # the first silence is waited out
    started = time.monotonic()
    assert connection.topic("events", refresh=True).error is Errors.NONE
    assert time.monotonic() - started < METADATA_GRACE_S / 2
    assert len(unanswered) == 2  # still asked every time
    unanswered[0].set_result(type(frozen).metadata(frozen, MetadataRequest(("events",))))
    del frozen.metadata  # it answers again, and is waited for again
    assert set(connection.metadata_answers(MetadataRequest(("events",)))) == {0, 1}
