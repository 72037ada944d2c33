"""Kafka's admin APIs on the brokers' listeners, spoken by real Kafka admin clients (kafka-python's
KafkaAdminClient and confluent-kafka's AdminClient): each change they make is checked through
rafka's own Admin."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Any

import kafka
import pytest
import ray
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
from confluent_kafka.admin import ConfigResource as ConfluentConfigResource
from confluent_kafka.admin import NewTopic as ConfluentNewTopic
from kafka import KafkaAdminClient, KafkaProducer

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.configs import ConfigResource, ConfigResourceType
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.offsets import EARLIEST_TIMESTAMP
from rafka.protocol.types import NewPartitions, TopicPartition
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY
from rafka.testing import serving_replica, wait_until

# kafka.admin ships no type information (only the top-level "kafka" is exempted from checking).
KafkaConfigResource = kafka.admin.ConfigResource
KafkaConfigResourceType = kafka.admin.ConfigResourceType

pytestmark = [
    pytest.mark.timeout(300),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]

TIMEOUT_S = 60


@pytest.fixture(scope="module")
def bootstrap(cluster: LocalCluster) -> str:
    """The shared cluster's bootstrap string."""
    return cluster.bootstrap_servers()


@pytest.fixture(scope="module")
def kafka_admin(bootstrap: str) -> Iterator[KafkaAdminClient]:
    """A kafka-python admin client of the shared cluster."""
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60_000)
    yield client
    client.close()


@pytest.fixture(scope="module")
def confluent_admin(bootstrap: str) -> ConfluentAdmin:
    """A confluent-kafka (librdkafka) admin client of the shared cluster."""
    return ConfluentAdmin({"bootstrap.servers": bootstrap})


def topic_config(admin: Admin, topic: str, name: str) -> str | None:
    """The effective value of a topic config, as rafka's Admin describes it."""
    [result] = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    return next(e.value for e in result.entries if e.name == name)


def partition_count(admin: Admin, topic: str) -> int:
    """How many partitions rafka's Admin sees ``topic`` with."""
    return len(admin.describe_topic(topic).partitions)


def gone(admin: Admin, topic: str) -> bool:
    """Whether rafka's Admin no longer finds ``topic``."""
    try:
        admin.describe_topic(topic)
    except RafkaError as exc:
        return exc.error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    return False


def settled(futures: dict[Any, Any]) -> dict[Any, Any]:
    """Every confluent-kafka future's result (raising its KafkaException if it failed)."""
    return {key: future.result(timeout=TIMEOUT_S) for key, future in futures.items()}


def test_kafka_python_creates_grows_configures_and_deletes_a_topic(
    kafka_admin: KafkaAdminClient, admin: Admin, topic_name: str
) -> None:
    created = kafka_admin.create_topics(
        {
            topic_name: {
                "num_partitions": 2,
                "replication_factor": 2,
                "configs": {"retention.ms": "3600000"},
            }
        },
        timeout_ms=30_000,
    )
    assert [t["error_code"] for t in created["topics"]] == [0]
    described = admin.describe_topic(topic_name)
    assert len(described.partitions) == 2
    assert all(len(p.replicas) == 2 for p in described.partitions)
    assert described.config == {"retention.ms": "3600000"}
    assert topic_name in kafka_admin.list_topics()
    [seen] = kafka_admin.describe_topics([topic_name])
    assert seen["name"] == topic_name and len(seen["partitions"]) == 2

    kafka_admin.create_partitions({topic_name: 4}, timeout_ms=30_000)
    assert partition_count(admin, topic_name) == 4

    resource = KafkaConfigResource(KafkaConfigResourceType.TOPIC, topic_name)
    configs = kafka_admin.describe_configs([resource])["topic"][topic_name]
    assert configs["retention.ms"]["value"] == "3600000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"

    # The legacy AlterConfigs (kafka-python keeps the other overrides it read first)...
    answer = kafka_admin.alter_configs(
        [
            KafkaConfigResource(
                KafkaConfigResourceType.TOPIC, topic_name, {"cleanup.policy": "compact"}
            )
        ],
        incremental=False,
    )
    assert answer == {"topic": {topic_name: "OK"}}
    assert topic_config(admin, topic_name, "cleanup.policy") == "compact"
    assert topic_config(admin, topic_name, "retention.ms") == "3600000"
    # ... and the incremental one, kafka-python's default with a broker that offers it.
    answer = kafka_admin.alter_configs(
        [
            KafkaConfigResource(
                KafkaConfigResourceType.TOPIC, topic_name, {"retention.ms": "7200000"}
            )
        ]
    )
    assert answer == {"topic": {topic_name: "OK"}}
    assert topic_config(admin, topic_name, "retention.ms") == "7200000"

    deleted = kafka_admin.delete_topics([topic_name], timeout_ms=60_000)
    assert [r["error_code"] for r in deleted["topics"]] == [0]
    assert gone(admin, topic_name)


def test_kafka_python_create_topics_reports_an_existing_topic(
    kafka_admin: KafkaAdminClient, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, 1, 1)
    answer = kafka_admin.create_topics({topic_name: {}}, raise_errors=False)
    assert [t["error_code"] for t in answer["topics"]] == [Errors.TOPIC_ALREADY_EXISTS]


def test_validate_only_checks_creation_and_growth_and_changes_nothing(
    kafka_admin: KafkaAdminClient, admin: Admin, topic_name: str
) -> None:
    checked = kafka_admin.create_topics(
        {
            topic_name: {"num_partitions": 2, "replication_factor": 2},
            f"{topic_name}-wide": {"num_partitions": 1, "replication_factor": 9},
        },
        validate_only=True,
        raise_errors=False,
    )
    assert sorted((t["name"], t["error_code"]) for t in checked["topics"]) == [
        (topic_name, 0),
        (f"{topic_name}-wide", Errors.INVALID_REPLICATION_FACTOR),
    ]
    assert gone(admin, topic_name)

    admin.create_topic(topic_name, 2, 1)
    grown = kafka_admin.create_partitions({topic_name: 4}, validate_only=True)
    assert [r.error_code for r in grown.results] == [0]
    assert partition_count(admin, topic_name) == 2
    admin.create_partitions({topic_name: NewPartitions(4)}, validate_only=True)
    assert partition_count(admin, topic_name) == 2


def test_confluent_admin_creates_configures_and_deletes_a_topic(
    confluent_admin: ConfluentAdmin, admin: Admin, topic_name: str
) -> None:
    settled(
        confluent_admin.create_topics(
            [
                ConfluentNewTopic(
                    topic_name,
                    num_partitions=3,
                    replication_factor=1,
                    config={"segment.ms": "60000"},
                )
            ],
            operation_timeout=30,
        )
    )
    assert partition_count(admin, topic_name) == 3
    assert admin.describe_topic(topic_name).config == {"segment.ms": "60000"}

    [described] = settled(
        confluent_admin.describe_configs([ConfluentConfigResource("TOPIC", topic_name)])
    ).values()
    assert described["segment.ms"].value == "60000"
    assert not described["segment.ms"].is_default
    assert described["retention.bytes"].is_default

    change = ConfluentConfigResource(
        "TOPIC",
        topic_name,
        incremental_configs=[
            ConfigEntry("max.message.bytes", "65536", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("segment.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    # validate_only checks the change as if made and changes nothing.
    settled(confluent_admin.incremental_alter_configs([change], validate_only=True))
    assert admin.describe_topic(topic_name).config == {"segment.ms": "60000"}
    bad = ConfluentConfigResource(
        "TOPIC",
        topic_name,
        incremental_configs=[
            ConfigEntry("max.message.bytes", "-1", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(KafkaException) as refused:
        settled(confluent_admin.incremental_alter_configs([bad], validate_only=True))
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    settled(confluent_admin.incremental_alter_configs([change]))
    assert admin.describe_topic(topic_name).config == {"max.message.bytes": "65536"}

    settled(confluent_admin.delete_topics([topic_name], operation_timeout=60))
    assert gone(admin, topic_name)


def test_kafka_python_describes_the_cluster_rafka_knows(
    kafka_admin: KafkaAdminClient, admin: Admin
) -> None:
    cluster = kafka_admin.describe_cluster()
    known = admin.describe_cluster()
    assert (cluster["cluster_id"], cluster["controller_id"]) == (
        known.cluster_id,
        known.controller_id,
    )
    assert sorted(b["broker_id"] for b in cluster["brokers"]) == sorted(
        b.broker_id for b in known.brokers
    )
    # DescribeCluster v2 answered it (its Metadata fallback has no fencing).
    assert all(b["is_fenced"] is False for b in cluster["brokers"])


def test_confluent_admin_describes_the_cluster_rafka_knows(
    confluent_admin: ConfluentAdmin, admin: Admin
) -> None:
    cluster = confluent_admin.describe_cluster().result(timeout=TIMEOUT_S)
    known = admin.describe_cluster()
    assert cluster.cluster_id == known.cluster_id
    assert cluster.controller.id == known.controller_id
    assert sorted(node.id for node in cluster.nodes) == sorted(b.broker_id for b in known.brokers)


def test_confluent_admin_deletes_records_below_an_offset(
    confluent_admin: ConfluentAdmin,
    cluster: LocalCluster,
    bootstrap: str,
    admin: Admin,
    topic_name: str,
) -> None:
    admin.create_topic(topic_name, 1, 2)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(10):
        producer.send(topic_name, f"r{i}".encode())
    producer.flush(timeout=TIMEOUT_S)
    producer.close()

    [deleted] = settled(
        confluent_admin.delete_records([ConfluentTopicPartition(topic_name, 0, 6)])
    ).values()
    assert deleted.low_watermark == 6
    tp = TopicPartition(topic_name, 0)
    assert admin.list_offsets([tp], EARLIEST_TIMESTAMP)[tp].offset == 6
    # The follower takes the new log start from its next fetch.
    partition = admin.describe_topic(topic_name).partitions[0]
    follower_id = next(b for b in partition.replicas if b != partition.leader)
    follower = serving_replica(topic_name, 0, follower_id, cluster.namespace)
    wait_until(
        lambda: ray.get(follower.describe.remote(), timeout=10)["log_start_offset"] == 6,
        TIMEOUT_S,
        "the follower to move its log start offset to 6",
    )


def test_offset_for_leader_epoch_names_where_the_leaders_epoch_ends(
    admin: Admin, bootstrap: str, topic_name: str
) -> None:
    admin.create_topic(topic_name, 1, 2)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(5):
        producer.send(topic_name, f"r{i}".encode())
    producer.flush(timeout=TIMEOUT_S)
    producer.close()
    partition = admin.describe_topic(topic_name).partitions[0]
    leader = next(b for b in admin.describe_cluster().brokers if b.broker_id == partition.leader)
    address = leader.listener()
    assert address is not None
    header = RequestHeader(23, 4, 7, "raw")
    body = {
        "topics": [
            {
                "topic": topic_name,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": partition.leader_epoch,
                        "leader_epoch": partition.leader_epoch,
                    }
                ],
            }
        ]
    }
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(DEFAULT_REGISTRY.encode_request(header, body))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        _, answer = DEFAULT_REGISTRY.decode_response(sock.recv(size, socket.MSG_WAITALL), header)
    [found] = answer["topics"][0]["partitions"]
    assert (found["error_code"], found["leader_epoch"]) == (0, partition.leader_epoch)
    assert found["end_offset"] == 5
