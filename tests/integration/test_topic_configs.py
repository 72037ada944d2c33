"""Dynamic configs on a live cluster: changes reach running replicas without a restart, describe
names each value's source, bad values are refused with nothing written, and auto-creation of
topics follows ``auto.create.topics.enable``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
from kazoo.client import KazooClient

from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.configs import (
    DEFAULT_BROKER,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)
from rafka.protocol.errors import (
    InvalidConfigError,
    NotEnoughReplicasError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.offsets import EARLIEST_TIMESTAMP
from rafka.protocol.types import TopicPartition
from rafka.testing import serving_replica, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NS = "rafka-configs"
CLUSTER = "configs"
SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE


@pytest.fixture(scope="module")
def ccluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """Three brokers running retention every second, with topic auto-creation on."""
    local = LocalCluster(
        brokers=3,
        data_dir=session_dir / CLUSTER,
        zookeeper=zookeeper.connect_string,
        cluster_name=CLUSTER,
        namespace=NS,
        node_ids=ray_nodes,
        broker_config={
            "zookeeper_session_timeout_ms": 4000,
            "replica_fetch_backoff_ms": 100,
            "log_retention_check_interval_ms": 1000,
            "num_partitions": 2,
            "default_replication_factor": 2,
        },
    )
    with local:
        yield local


@pytest.fixture(scope="module")
def cadmin(ccluster: LocalCluster) -> Admin:
    return ccluster.admin()


def topic_resource(name: str, **ops: AlterConfigOp) -> ConfigResource:
    return ConfigResource(
        ConfigResourceType.TOPIC, name, {k.replace("_", "."): v for k, v in ops.items()}
    )


def set_topic(admin: Admin, topic: str, **values: str) -> None:
    admin.incremental_alter_configs(
        [topic_resource(topic, **{k: AlterConfigOp(SET, v) for k, v in values.items()})]
    )


def replicas(topic: str, partition: int, brokers: tuple[int, ...]) -> list[dict[str, Any]]:
    """Each replica's own description (log segments, log start offset)."""
    return [
        ray.get(serving_replica(topic, partition, b, NS).describe.remote(), timeout=30)
        for b in brokers
    ]


def produce(topic: str, count: int, size: int = 200, acks: str = "all") -> None:
    with Producer(namespace=NS, acks=acks, linger_ms=0) as producer:
        for _ in range(count):
            producer.send(topic, b"x" * size, partition=0).get(timeout=60)


def refused(producer: Producer, topic: str) -> bool:
    """Whether an acks=all send to ``topic`` is refused with NOT_ENOUGH_REPLICAS."""
    try:
        producer.send(topic, b"x", partition=0).get(timeout=30)
    except NotEnoughReplicasError:
        return True
    return False


def entries(admin: Admin, resource: ConfigResource) -> dict[str, Any]:
    (result,) = admin.describe_configs([resource])
    return {e.name: e for e in result.entries}


def test_segment_bytes_and_retention_ms_changes_apply_to_live_replicas(
    cadmin: Admin, topic_name: str
) -> None:
    cadmin.create_topic(topic_name, 1, 2)
    brokers = tuple(cadmin.describe_topic(topic_name).partitions[0].replicas)
    produce(topic_name, 5)
    assert [r["segments"] for r in replicas(topic_name, 0, brokers)] == [1, 1]
    set_topic(cadmin, topic_name, segment_bytes="1024")

    def rolled() -> bool:
        produce(topic_name, 3)
        return all(r["segments"] >= 3 for r in replicas(topic_name, 0, brokers))

    wait_until(rolled, 60, "both replicas to roll 1 KiB segments")
    end = replicas(topic_name, 0, brokers)[0]["log_end_offset"]
    set_topic(cadmin, topic_name, retention_ms="500")
    wait_until(
        lambda: all(
            r["segments"] == 1 and r["log_start_offset"] > 0
            for r in replicas(topic_name, 0, brokers)
        ),
        60,
        "retention to delete every closed segment on both replicas",
    )
    earliest = cadmin.list_offsets([TopicPartition(topic_name, 0)], EARLIEST_TIMESTAMP)
    assert 0 < earliest[TopicPartition(topic_name, 0)].offset <= end


def test_raising_min_insync_replicas_above_the_replicas_refuses_acks_all(
    cadmin: Admin, topic_name: str
) -> None:
    cadmin.create_topic(topic_name, 1, 2)
    produce(topic_name, 1)
    set_topic(cadmin, topic_name, min_insync_replicas="3")
    with Producer(namespace=NS, acks="all", retries=0) as producer:
        wait_until(
            lambda: refused(producer, topic_name),
            60,
            "acks=all to be refused with NOT_ENOUGH_REPLICAS",
        )
        cadmin.incremental_alter_configs(
            [topic_resource(topic_name, min_insync_replicas=AlterConfigOp(DELETE))]
        )
        wait_until(
            lambda: not refused(producer, topic_name),
            60,
            "acks=all to succeed once the override is deleted",
        )
        assert producer.send(topic_name, b"y", partition=0, key=None).get(timeout=30).offset > 0


def test_describe_names_the_source_of_each_value(cadmin: Admin, topic_name: str) -> None:
    cadmin.create_topic(topic_name, 1, 1, config={"retention.ms": "123456"})
    default = ConfigResource(ConfigResourceType.BROKER, DEFAULT_BROKER)
    broker = ConfigResource(ConfigResourceType.BROKER, "1")
    try:
        cadmin.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.BROKER, DEFAULT_BROKER, {"log.flush.interval.ms": "60000"}
                )
            ]
        )
        cadmin.alter_configs(
            [ConfigResource(ConfigResourceType.BROKER, "1", {"log.retention.bytes": "1000000"})]
        )
        topic = entries(cadmin, ConfigResource(ConfigResourceType.TOPIC, topic_name))
        assert (topic["retention.ms"].value, topic["retention.ms"].source) == (
            "123456",
            ConfigSource.TOPIC_CONFIG,
        )
        assert (topic["flush.ms"].value, topic["flush.ms"].source) == (
            "60000",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        )
        assert topic["cleanup.policy"].source is ConfigSource.DEFAULT_CONFIG
        assert [s.source for s in topic["retention.ms"].synonyms] == [
            ConfigSource.TOPIC_CONFIG,
            ConfigSource.DEFAULT_CONFIG,
        ]
        one = entries(cadmin, broker)
        assert (one["log.retention.bytes"].value, one["log.retention.bytes"].source) == (
            "1000000",
            ConfigSource.DYNAMIC_BROKER_CONFIG,
        )
        assert one["log.flush.interval.ms"].source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        assert (one["num.partitions"].value, one["num.partitions"].source) == (
            "2",
            ConfigSource.STATIC_BROKER_CONFIG,
        )
        assert one["auto.create.topics.enable"].read_only
        assert entries(cadmin, default)["log.retention.bytes"].source is ConfigSource.DEFAULT_CONFIG
    finally:
        cadmin.alter_configs([default, broker])


@pytest.mark.parametrize(
    ("config", "value"),
    [
        ("retention.ms", "abc"),
        ("min.insync.replicas", "0"),
        ("cleanup.policy", "bogus"),
        ("no.such.config", "1"),
    ],
)
def test_a_bad_topic_config_is_refused_naming_it_and_nothing_is_written(
    cadmin: Admin, zk: KazooClient, topic_name: str, config: str, value: str
) -> None:
    cadmin.create_topic(topic_name, 1, 1, config={"retention.ms": "60000"})
    before = zk.get(f"/config/topics/{topic_name}")[0], sorted(zk.get_children("/config/changes"))
    with pytest.raises(InvalidConfigError, match=rf"{config}.*{value}"):
        set_topic(cadmin, topic_name, **{config.replace(".", "_"): value})
    with pytest.raises(InvalidConfigError, match=rf"{config}.*{value}"):
        cadmin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic_name, {config: value})]
        )
    after = zk.get(f"/config/topics/{topic_name}")[0], sorted(zk.get_children("/config/changes"))
    assert after == before


def test_bad_or_read_only_broker_configs_are_refused_and_nothing_is_written(
    cadmin: Admin, zk: KazooClient
) -> None:
    before = zk.exists("/config/brokers/<default>"), sorted(zk.get_children("/config/changes"))
    for config, value in [("log.retention.ms", "abc"), ("auto.create.topics.enable", "false")]:
        with pytest.raises(InvalidConfigError, match=rf"{config}.*{value}"):
            cadmin.alter_configs(
                [ConfigResource(ConfigResourceType.BROKER, DEFAULT_BROKER, {config: value})]
            )
    assert (
        zk.exists("/config/brokers/<default>"),
        sorted(zk.get_children("/config/changes")),
    ) == before


def test_the_cluster_default_applies_to_topics_without_their_own_override(
    cadmin: Admin, topic_name: str
) -> None:
    plain, own = f"{topic_name}-plain", f"{topic_name}-own"
    cadmin.create_topic(plain, 1, 2)
    cadmin.create_topic(own, 1, 2, config={"min.insync.replicas": "1"})
    default = ConfigResource(ConfigResourceType.BROKER, DEFAULT_BROKER)
    try:
        cadmin.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.BROKER, DEFAULT_BROKER, {"min.insync.replicas": "3"}
                )
            ]
        )
        with Producer(namespace=NS, acks="all", retries=0) as producer:
            wait_until(
                lambda: refused(producer, plain),
                60,
                "the cluster default min.insync.replicas=3 to apply",
            )
            assert producer.send(own, b"x", partition=0).get(timeout=30).offset == 0
    finally:
        cadmin.alter_configs([default])


def test_a_client_asking_for_an_unknown_topic_creates_it_but_admin_lookups_do_not(
    cadmin: Admin, topic_name: str
) -> None:
    with pytest.raises(UnknownTopicOrPartitionError):
        cadmin.describe_topic(topic_name)
    assert topic_name not in cadmin.list_topics()
    with Producer(namespace=NS, acks="all") as producer:
        assert producer.send(topic_name, b"first", partition=1).get(timeout=60).offset == 0
    description = cadmin.describe_topic(topic_name)
    assert [len(p.replicas) for p in description.partitions] == [2, 2]
    subscribed = f"{topic_name}-subscribed"
    consumer = Consumer(namespace=NS, group_id=f"{subscribed}-g")
    try:
        consumer.subscribe([subscribed])
        wait_until(
            lambda: consumer.poll(200) is not None and subscribed in cadmin.list_topics(),
            60,
            "the subscription to create its topic",
        )
    finally:
        consumer.close()


def test_with_auto_creation_off_an_unknown_topic_stays_unknown(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> None:
    namespace = "rafka-configs-off"
    with LocalCluster(
        brokers=1,
        data_dir=session_dir / "configs-off",
        zookeeper=zookeeper.connect_string,
        cluster_name="configs-off",
        namespace=namespace,
        node_ids=ray_nodes[:1],
        broker_config={"auto_create_topics_enable": False},
    ) as off:
        with Producer(namespace=namespace) as producer:
            with pytest.raises(UnknownTopicOrPartitionError, match="nowhere"):
                producer.send("nowhere", b"x")
        consumer = Consumer(namespace=namespace)
        with pytest.raises(UnknownTopicOrPartitionError):
            consumer.assign([TopicPartition("nowhere", 0)])
        consumer.close()
        assert off.admin().list_topics() == []


def rafka_configs(*args: str) -> subprocess.CompletedProcess[str]:
    address = ray.get_runtime_context().gcs_address
    return subprocess.run(
        [sys.executable, "-m", "rafka", "--namespace", NS, "--address", address, "configs", *args],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_configs_command_alters_and_describes_like_kafka_configs(
    cadmin: Admin, topic_name: str
) -> None:
    cadmin.create_topic(topic_name, 1, 1)
    entity = ("--entity-type", "topics", "--entity-name", topic_name)
    altered = rafka_configs(
        *entity, "--alter", "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]"
    )
    assert altered.returncode == 0, altered.stderr
    assert altered.stdout.strip() == f"Completed updating config for topic {topic_name}."
    described = rafka_configs(*entity, "--describe")
    assert described.stdout.splitlines() == [
        f"Dynamic configs for topic {topic_name} are:",
        "  cleanup.policy=compact,delete sensitive=false synonyms="
        "{TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=60000 sensitive=false synonyms="
        "{TOPIC_CONFIG:retention.ms=60000, DEFAULT_CONFIG:log.retention.ms=604800000}",
    ]
    assert rafka_configs(*entity, "--alter", "--delete-config", "cleanup.policy").returncode == 0
    assert rafka_configs(*entity, "--describe").stdout.count("sensitive=false") == 1
    refused = rafka_configs(*entity, "--alter", "--add-config", "min.insync.replicas=0")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"Error: INVALID_CONFIG (40): topic {topic_name}: min.insync.replicas='0' is out of "
        "range: allowed [1, 2147483647]"
    ]
    defaults = rafka_configs("--entity-type", "brokers", "--entity-default", "--describe")
    assert defaults.stdout.splitlines()[0] == "Default configs for brokers in the cluster are:"
