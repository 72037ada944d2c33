"""Which partitions the producer sends records without a key to, as leadership comes and goes
(a fake cluster)."""

from __future__ import annotations

from typing import Any

from rafka.actors import names
from rafka.clients.producer import Producer
from rafka.protocol.errors import Errors
from rafka.protocol.messages.metadata import (
    BrokerMetadata,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from rafka.protocol.messages.produce import ProduceRequest, ProduceResponse
from rafka.protocol.messages.transactions import InitProducerIdRequest, InitProducerIdResponse
from rafka.testing import wait_until


class CountingLeader:
    """A leader replica that acknowledges every produce request and counts them."""

    def __init__(self) -> None:
        self.requests = 0

    def produce(self, request: ProduceRequest) -> ProduceResponse:
        self.requests += 1
        return ProduceResponse(Errors.NONE, base_offset=self.requests - 1)


class TwoPartitions:
    """A broker answering metadata for topic "events", partition 0 led by broker 0 and partition 1
    by broker 1 once a test gives it a leader."""

    def __init__(self) -> None:
        self.second_leader = -1

    def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        return InitProducerIdResponse(Errors.NONE, 1000, 0)

    def metadata(self, request: MetadataRequest) -> MetadataResponse:
        partitions = (
            PartitionMetadata(0, 0, 0, (0,), (0,)),
            PartitionMetadata(1, self.second_leader, 0, (1,), (1,)),
        )
        return MetadataResponse(
            tuple(BrokerMetadata(b, "127.0.0.1", f"node-{b}") for b in (0, 1)),
            0,
            (TopicMetadata("events", partitions),),
            "fake-cluster",
        )


def test_a_partition_leaderless_when_the_topic_was_loaded_gets_records_once_it_has_a_leader(
    fake_cluster: Any,
) -> None:
    fake_cluster.add_brokers(2)
    metadata = TwoPartitions()
    first, second = CountingLeader(), CountingLeader()
    fake_cluster.actors[names.broker_actor_name(0)] = metadata
    fake_cluster.actors[names.broker_actor_name(1)] = metadata
    fake_cluster.actors[names.replica_actor_name("events", 0, 0)] = first
    fake_cluster.actors[names.replica_actor_name("events", 1, 1)] = second
    producer = Producer(
        transport=fake_cluster.transport, linger_ms=0, batch_size=1, retry_backoff_ms=20
    )
    for _ in range(20):
        producer.send("events", b"x").get(timeout=5)
    assert (first.requests, second.requests) == (20, 0)
    metadata.second_leader = 1

    def second_partition_gets_records() -> bool:
        producer.send("events", b"x").get(timeout=5)
        return second.requests > 0

    wait_until(second_partition_gets_records, 5, "records on the partition that got a leader")
    producer.close(timeout=5)


def test_a_topic_whose_partitions_all_have_leaders_is_not_asked_for_again_on_every_batch(
    fake_cluster: Any,
) -> None:
    fake_cluster.add_brokers(2)
    metadata = TwoPartitions()
    metadata.second_leader = 1
    asked = 0

    class CountingMetadata:
        def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
            return InitProducerIdResponse(Errors.NONE, 1000, 0)

        def metadata(self, request: MetadataRequest) -> MetadataResponse:
            nonlocal asked
            asked += 1
            return metadata.metadata(request)

    for broker_id in (0, 1):
        fake_cluster.actors[names.broker_actor_name(broker_id)] = CountingMetadata()
    fake_cluster.actors[names.replica_actor_name("events", 0, 0)] = CountingLeader()
    fake_cluster.actors[names.replica_actor_name("events", 1, 1)] = CountingLeader()
    producer = Producer(transport=fake_cluster.transport, linger_ms=0, retry_backoff_ms=1)
    producer.send("events", b"x").get(timeout=5)
    loaded = asked
    for _ in range(50):
        producer.send("events", b"x").get(timeout=5)
    assert asked == loaded
    producer.close(timeout=5)
