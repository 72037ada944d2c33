"""Bad input gets Kafka's error code and a message naming what was wrong, never a hang."""

from __future__ import annotations

import pytest
import ray

from rafka.clients.admin import Admin
from rafka.clients.cluster import ClusterConnection
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.protocol.errors import (
    Errors,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    KafkaTimeoutError,
    MessageTooLargeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.fetch import FetchRequest
from rafka.protocol.messages.produce import ProduceRequest
from rafka.protocol.records.builder import build_batch
from rafka.protocol.types import ReplicaPlacement, TopicPartition
from rafka.testing import serving_replica

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), pytest.mark.usefixtures("cluster")]
NS = "rafka-test"

# Kafka's placement with start index 0: partition 0's preferred leader is broker 0, as these tests
# read it.
LEADS_ON_BROKER_0 = ReplicaPlacement(start_index=0)


def test_producing_to_an_unknown_topic_fails_with_unknown_topic_or_partition() -> None:
    with Producer(namespace=NS) as producer:
        with pytest.raises(UnknownTopicOrPartitionError, match="no-such-topic"):
            producer.send("no-such-topic", b"x")


def test_consuming_an_unknown_topic_fails_with_unknown_topic_or_partition() -> None:
    consumer = Consumer(namespace=NS)
    with pytest.raises(UnknownTopicOrPartitionError):
        consumer.assign([TopicPartition("no-such-topic", 0)])


@pytest.mark.parametrize("name", ["", ".", "..", "has space", "x" * 250, "bad/slash"])
def test_invalid_topic_names_are_refused(admin: Admin, name: str) -> None:
    with pytest.raises(InvalidTopicError):
        admin.create_topic(name, 1, 1)


def test_replication_factor_above_live_brokers_is_refused(admin: Admin, topic_name: str) -> None:
    with pytest.raises(InvalidReplicationFactorError, match=r"4.*3"):
        admin.create_topic(topic_name, 1, 4)


def test_fewer_than_one_partition_is_refused(admin: Admin, topic_name: str) -> None:
    with pytest.raises(InvalidPartitionsError):
        admin.create_topic(topic_name, 0, 1)


def test_an_existing_topic_is_not_created_twice(admin: Admin, topic_name: str) -> None:
    admin.create_topic(topic_name, 1, 1)
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topic(topic_name, 1, 1)


def test_bad_topic_config_names_the_key(admin: Admin, topic_name: str) -> None:
    with pytest.raises(InvalidConfigError, match=r"retention.ms"):
        admin.create_topic(topic_name, 1, 1, config={"retention.ms": "-5"})


def test_record_over_max_message_bytes_fails_with_message_too_large(
    admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, 1, 2, config={"max.message.bytes": "1000"})
    with Producer(namespace=NS, retries=0) as producer:
        future = producer.send(topic_name, b"x" * 2000)
        with pytest.raises(MessageTooLargeError, match=r"max.message.bytes=1000"):
            future.get(timeout=30)
        assert producer.send(topic_name, b"small").get(timeout=30).offset == 0


def test_produce_and_fetch_at_a_follower_fail_with_not_leader_or_follower(
    admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, 1, 2, placement=LEADS_ON_BROKER_0)
    follower = serving_replica(topic_name, 0, 1, NS)
    produced = ray.get(
        follower.produce.remote(ProduceRequest(build_batch([(None, b"x", 1)]))), timeout=30
    )
    assert produced.error is Errors.NOT_LEADER_OR_FOLLOWER
    fetched = ray.get(follower.fetch.remote(FetchRequest(0, max_wait_ms=0)), timeout=30)
    assert fetched.error is Errors.NOT_LEADER_OR_FOLLOWER


def test_fetch_outside_the_log_fails_with_offset_out_of_range(
    admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, 1, 1, placement=LEADS_ON_BROKER_0)
    leader = serving_replica(topic_name, 0, 0, NS)
    response = ray.get(leader.fetch.remote(FetchRequest(10**9, max_wait_ms=0)), timeout=30)
    assert response.error is Errors.OFFSET_OUT_OF_RANGE
    assert "10000000" in (response.error_message or "")


def test_corrupt_batch_is_refused_and_nothing_is_written(admin: Admin, topic_name: str) -> None:
    admin.create_topic(topic_name, 1, 1, placement=LEADS_ON_BROKER_0)
    leader = serving_replica(topic_name, 0, 0, NS)
    batch = bytearray(build_batch([(None, b"payload", 1)]))
    batch[-1] ^= 0xFF
    response = ray.get(leader.produce.remote(ProduceRequest(bytes(batch))), timeout=30)
    assert response.error is Errors.CORRUPT_MESSAGE
    assert ray.get(leader.describe.remote(), timeout=30)["log_end_offset"] == 0


def test_a_client_that_cannot_find_the_cluster_times_out_naming_the_namespace() -> None:
    connection = ClusterConnection(namespace="no-such-cluster")
    with pytest.raises(KafkaTimeoutError, match="no-such-cluster"):
        connection.refresh_metadata(None)


def test_unknown_client_config_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match="linger"):
        Producer(namespace=NS, lingerms=5)
