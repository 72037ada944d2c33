"""Kafka ACLs enforced on Kafka clients: a one-broker cluster with a SASL_SSL listener (SCRAM), the
ACL authorizer on and ``User:admin`` a super user. Its users log in with kafka-python and
confluent-kafka: ``writer`` may WRITE the ``orders*`` topics, ``reader`` may READ them and the
``readers*`` groups, ``peeker`` may DESCRIBE the internal topics (and READ its ``peekers*``
groups), ``nobody`` has no ACL. A writer produces and a reader consumes with its group; a principal
without WRITE is refused and nothing is stored; Metadata hides what a principal may not describe;
no one without READ reads ``__consumer_offsets`` or ``__transaction_state``, and the broker goes on
serving; creating a topic needs CREATE; the super user needs no ACL at all."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import NewTopic
from kafka.errors import TopicAuthorizationFailedError

from rafka.cli.certs import CertFiles
from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.messages.offsets import LATEST_TIMESTAMP
from rafka.protocol.messages.users import UserScramCredentialUpsertion
from rafka.protocol.types import TopicPartition
from rafka.security.acl import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourceType,
)
from rafka.security.scram import ScramMechanism
from rafka.testing import listener_address, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]
NS = "rafka-kafka-authorizer"
CLUSTER = "kafka-authorizer"
RECORDS = 10
USERS = {
    "admin": "admin-secret",
    "writer": "writer-secret",
    "reader": "reader-secret",
    "peeker": "peeker-secret",
    "nobody": "nobody-secret",
}
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


def literal(principal: str, operation: ACLOperation, topic: str) -> ACL:
    """ALLOW ``operation`` on one topic."""
    pattern = ResourcePattern(ResourceType.TOPIC, topic)
    return ACL(principal, "*", operation, ACLPermissionType.ALLOW, pattern)


def prefixed(
    principal: str, operation: ACLOperation, resource_type: ResourceType, prefix: str
) -> ACL:
    """ALLOW ``operation`` on every resource of the type whose name starts with ``prefix``."""
    pattern = ResourcePattern(resource_type, prefix, ACLResourcePatternType.PREFIXED)
    return ACL(principal, "*", operation, ACLPermissionType.ALLOW, pattern)


ACLS = (
    prefixed("User:reader", ACLOperation.READ, ResourceType.GROUP, "readers"),
    prefixed("User:writer", ACLOperation.WRITE, ResourceType.TOPIC, "orders"),
    prefixed("User:writer", ACLOperation.DESCRIBE, ResourceType.TOPIC, "orders"),
    # The peeker may see the internal topics in Metadata, and so gets as far as fetching them.
    *(literal("User:peeker", ACLOperation.DESCRIBE, t) for t in INTERNAL_TOPICS),
    prefixed("User:peeker", ACLOperation.READ, ResourceType.GROUP, "peekers"),
    # Last: once the broker shows the reader its topics, it has taken every ACL before this one.
    prefixed("User:reader", ACLOperation.READ, ResourceType.TOPIC, "orders"),
)


@dataclass(frozen=True)
class AclCluster:
    """The module's cluster and how each user reaches its SASL_SSL listener."""

    cluster: LocalCluster
    endpoint: str
    ca: Path

    def confluent(self, user: str, **more: Any) -> dict[str, Any]:
        """confluent-kafka's settings for ``user``'s login, with ``more``."""
        return {
            "bootstrap.servers": self.endpoint,
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(self.ca),
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": USERS[user],
            **more,
        }

    def kafka_python(self, user: str) -> dict[str, Any]:
        """kafka-python's settings for ``user``'s login."""
        return {
            "bootstrap_servers": self.endpoint,
            "security_protocol": "SASL_SSL",
            "ssl_cafile": str(self.ca),
            "sasl_mechanism": "SCRAM-SHA-256",
            "sasl_plain_username": user,
            "sasl_plain_password": USERS[user],
        }

    def logs_in(self, user: str) -> bool:
        """Whether ``user`` logs in and reads metadata with confluent-kafka."""
        try:
            ConfluentProducer(self.confluent(user)).list_topics(timeout=5)
        except KafkaException:
            return False
        return True

    def listed_topics(self, user: str) -> set[str]:
        """The topics a listing of every topic shows ``user`` (confluent-kafka's Metadata)."""
        return set(ConfluentProducer(self.confluent(user)).list_topics(timeout=10).topics)

    def new_topic(self, name: str) -> str:
        """A new one-partition topic, created by rafka's own Admin (no ACL applies to it)."""
        self.cluster.admin().create_topic(name, 1, 1)
        return name


@pytest.fixture(scope="module")
def acl_cluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str], certs: CertFiles
) -> Iterator[AclCluster]:
    """One broker with the ACL authorizer on, the users of ``USERS`` and the ACLs of ``ACLS``,
    both taken by the broker before the tests start."""
    with LocalCluster(
        brokers=1,
        data_dir=session_dir / CLUSTER,
        zookeeper=zookeeper.connect_string,
        cluster_name=CLUSTER,
        namespace=NS,
        node_ids=ray_nodes[:1],
        broker_config={
            "zookeeper_session_timeout_ms": 4000,
            "offsets_topic_num_partitions": 1,
            "transaction_state_log_num_partitions": 1,
            "auto_create_topics_enable": False,
            "listeners": "SASL_SSL://127.0.0.1:0",
            "ssl_keystore_location": str(certs.broker),
            "sasl_enabled_mechanisms": "SCRAM-SHA-256",
            "authorizer_class_name": "kafka.security.authorizer.AclAuthorizer",
            "super_users": "User:admin",
        },
    ) as local:
        admin = local.admin()
        admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion.from_password(
                    user, ScramMechanism.SCRAM_SHA_256, password
                )
                for user, password in USERS.items()
            ]
        )
        admin.create_topic("orders-probe", 1, 1)
        assert [r.error.name for r in admin.create_acls(ACLS)] == ["NONE"] * len(ACLS)
        setup = AclCluster(local, listener_address(admin, "SASL_SSL"), certs.ca)
        # The broker takes credentials and ACLs from ZooKeeper's change notifications.
        for user in USERS:
            wait_until(partial(setup.logs_in, user), 60, f"{user}'s login")
        wait_until(lambda: "orders-probe" in setup.listed_topics("reader"), 60, "the reader's ACLs")
        yield setup


def end_offset(admin: Admin, topic: str) -> int:
    tp = TopicPartition(topic, 0)
    return admin.list_offsets([tp], LATEST_TIMESTAMP)[tp].offset


def confluent_deliveries(client: dict[str, Any], topic: str, count: int) -> list[Any]:
    """The delivery error (None for success) of each of ``count`` records produced to ``topic``."""
    delivered: list[Any] = []
    producer = ConfluentProducer({**client, "acks": "all", "message.timeout.ms": 30_000})
    for i in range(count):
        producer.produce(topic, f"c{i}".encode(), on_delivery=lambda e, m: delivered.append(e))
    assert producer.flush(60) == 0
    return delivered


def confluent_poll(consumer: ConfluentConsumer, until: Callable[[list[Any]], bool]) -> list[Any]:
    """Poll until ``until(messages)`` (every message and error event so far) or 60 s passed."""
    polled: list[Any] = []
    deadline = time.monotonic() + 60
    while not until(polled) and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None:
            polled.append(message)
    return polled


def kafka_python_refusal(consumer: KafkaConsumer) -> Exception | None:
    """The TopicAuthorizationFailedError kafka-python's ``poll`` raises, waited for 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            consumer.poll(timeout_ms=500)
        except TopicAuthorizationFailedError as exc:
            return exc
    return None


def values(messages: list[Any]) -> list[bytes]:
    return [m.value() for m in messages if m.error() is None]


def error_codes(messages: list[Any]) -> set[int]:
    return {m.error().code() for m in messages if m.error() is not None}


# ------------------------------------------------------------------ what an ACL allows


def test_kafka_python_writer_produces_and_reader_consumes_and_commits_with_its_group(
    acl_cluster: AclCluster,
) -> None:
    topic = acl_cluster.new_topic("orders-kafka-python")
    producer = KafkaProducer(acks="all", **acl_cluster.kafka_python("writer"))
    for future in [producer.send(topic, f"v{i}".encode()) for i in range(RECORDS)]:
        future.get(30)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        group_id="readers-kafka-python",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
        **acl_cluster.kafka_python("reader"),
    )
    got = [m.value for _, m in zip(range(RECORDS), consumer, strict=False)]
    consumer.commit()
    tp = KafkaTopicPartition(topic, 0)
    assert consumer.committed(tp) == RECORDS
    consumer.close()
    assert got == [f"v{i}".encode() for i in range(RECORDS)]


def test_confluent_kafka_writer_produces_and_reader_consumes_and_commits_with_its_group(
    acl_cluster: AclCluster,
) -> None:
    topic = acl_cluster.new_topic("orders-confluent")
    assert confluent_deliveries(acl_cluster.confluent("writer"), topic, RECORDS) == [None] * RECORDS
    consumer = ConfluentConsumer(
        acl_cluster.confluent(
            "reader",
            **{
                "group.id": "readers-confluent",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            },
        )
    )
    consumer.subscribe([topic])
    polled = confluent_poll(consumer, lambda got: len(values(got)) >= RECORDS)
    consumer.commit(asynchronous=False)
    (committed,) = consumer.committed([ConfluentTopicPartition(topic, 0)], timeout=30)
    consumer.close()
    assert values(polled) == [f"c{i}".encode() for i in range(RECORDS)]
    assert committed.offset == RECORDS


# ------------------------------------------------------------------ what is refused


def test_a_principal_without_write_is_refused_and_nothing_is_stored(
    acl_cluster: AclCluster,
) -> None:
    topic = acl_cluster.new_topic("orders-refused")
    producer = KafkaProducer(acks="all", retries=0, **acl_cluster.kafka_python("reader"))
    with pytest.raises(TopicAuthorizationFailedError):
        producer.send(topic, b"not allowed").get(30)
    producer.close()
    refused = confluent_deliveries(acl_cluster.confluent("reader"), topic, 3)
    assert [e.code() for e in refused] == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 3
    assert end_offset(acl_cluster.cluster.admin(), topic) == 0
    server_log = acl_cluster.cluster.data_dir / "broker-0" / "server.log"
    denial = (
        "Principal = User:reader is Denied Operation = WRITE from host = 127.0.0.1 "
        f"on resource = Topic:{topic}"
    )
    wait_until(lambda: denial in server_log.read_text(), 30, "the broker's log line for the denial")


def test_metadata_shows_only_the_topics_a_principal_may_describe(
    acl_cluster: AclCluster,
) -> None:
    secret = acl_cluster.new_topic("secret-metadata")
    shown = acl_cluster.new_topic("orders-metadata")
    reader_sees = acl_cluster.listed_topics("reader")
    assert shown in reader_sees
    assert not reader_sees & {secret, *INTERNAL_TOPICS}
    assert acl_cluster.listed_topics("nobody") == set()
    consumer = KafkaConsumer(**acl_cluster.kafka_python("reader"))
    assert shown in consumer.topics() and secret not in consumer.topics()
    consumer.close()
    named = ConfluentProducer(acl_cluster.confluent("reader")).list_topics(secret, timeout=10)
    assert named.topics[secret].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert {secret, shown} <= acl_cluster.listed_topics("admin")


@pytest.mark.parametrize("internal", INTERNAL_TOPICS)
def test_a_principal_without_rights_cannot_read_an_internal_topic_and_the_broker_serves_on(
    acl_cluster: AclCluster, internal: str
) -> None:
    ensure_internal_topics(acl_cluster.cluster)
    consumer = KafkaConsumer(
        group_id=None, auto_offset_reset="earliest", **acl_cluster.kafka_python("peeker")
    )
    consumer.assign([KafkaTopicPartition(internal, 0)])
    refusal = kafka_python_refusal(consumer)
    consumer.close()
    assert refusal is not None and internal in str(refusal)
    peeker = ConfluentConsumer(acl_cluster.confluent("peeker", **{"group.id": "peekers"}))
    peeker.assign([ConfluentTopicPartition(internal, 0, 0)])
    refused = confluent_poll(peeker, lambda got: bool(error_codes(got)))
    peeker.close()
    assert error_codes(refused) == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
    assert not values(refused)
    # Without DESCRIBE the refusal comes earlier, from Metadata.
    named = ConfluentProducer(acl_cluster.confluent("nobody")).list_topics(internal, timeout=10)
    assert named.topics[internal].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    topic = acl_cluster.new_topic(f"orders-after-{internal.strip('_')}")
    assert confluent_deliveries(acl_cluster.confluent("writer"), topic, 3) == [None] * 3


def ensure_internal_topics(cluster: LocalCluster) -> None:
    """Both internal topics created, as a group's and a transactional producer's first use
    creates them (rafka's own clients, no ACL involved)."""
    admin = cluster.admin()
    admin.list_group_offsets("readers-setup")
    producer = cluster.producer(transactional_id="setup")
    producer.init_transactions()
    producer.close()
    wait_until(lambda: set(INTERNAL_TOPICS) <= set(admin.list_topics()), 60, "both internal topics")


def test_creating_a_topic_over_the_kafka_protocol_needs_create(acl_cluster: AclCluster) -> None:
    reader = KafkaAdminClient(**acl_cluster.kafka_python("reader"))
    with pytest.raises(TopicAuthorizationFailedError):
        reader.create_topics([NewTopic("orders-by-reader", 1, 1)])
    reader.close()
    admin = KafkaAdminClient(**acl_cluster.kafka_python("admin"))
    admin.create_topics([NewTopic("orders-by-admin", 1, 1)])
    admin.close()
    topics = acl_cluster.cluster.admin().list_topics()
    assert "orders-by-admin" in topics and "orders-by-reader" not in topics


# ------------------------------------------------------------------ the super user


def test_the_super_user_needs_no_acl(acl_cluster: AclCluster) -> None:
    topic = acl_cluster.new_topic("admins-own")
    assert confluent_deliveries(acl_cluster.confluent("admin"), topic, RECORDS) == [None] * RECORDS
    consumer = ConfluentConsumer(
        acl_cluster.confluent("admin", **{"group.id": "admins", "auto.offset.reset": "earliest"})
    )
    consumer.subscribe([topic])
    polled = confluent_poll(consumer, lambda got: len(values(got)) >= RECORDS)
    consumer.commit(asynchronous=False)
    consumer.close()
    assert len(values(polled)) == RECORDS
    ensure_internal_topics(acl_cluster.cluster)
    internal = ConfluentConsumer(acl_cluster.confluent("admin", **{"group.id": "admins-peek"}))
    internal.assign([ConfluentTopicPartition("__consumer_offsets", 0, 0)])
    peeked = confluent_poll(internal, lambda got: bool(values(got) or error_codes(got)))
    internal.close()
    assert values(peeked) and not error_codes(peeked)
