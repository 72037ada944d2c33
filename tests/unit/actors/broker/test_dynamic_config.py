"""Tests for rafka.actors.broker.dynamic_config: config definitions, validation, incremental
operations and the precedence of topic, broker, cluster-default, static and built-in values."""

from __future__ import annotations

import dataclasses

import pytest

from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.dynamic_config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    TOPIC_TO_BROKER,
    DynamicOverrides,
    apply_ops,
    describe_broker_configs,
    describe_topic_configs,
    effective_log_config,
    validate_broker_config,
    validate_topic_config,
)
from rafka.log.config import LogConfig
from rafka.protocol.configs import AlterConfigOp, AlterConfigOpType, ConfigSource
from rafka.protocol.errors import InvalidConfigError

SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE
APPEND, SUBTRACT = AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT


def test_every_topic_config_has_a_broker_synonym_that_is_a_dynamic_broker_config() -> None:
    assert set(TOPIC_CONFIGS) == {f.name.replace("_", ".") for f in dataclasses.fields(LogConfig)}
    # KIP-73's throttled-replica lists are topic-only in Kafka: they have no broker synonym.
    throttle_lists = {
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    }
    assert {n for n, d in TOPIC_CONFIGS.items() if d.broker_name is None} == throttle_lists
    for name, definition in TOPIC_CONFIGS.items():
        if name in throttle_lists:
            continue
        assert definition.broker_name == TOPIC_TO_BROKER[name]
        assert BROKER_CONFIGS[TOPIC_TO_BROKER[name]].dynamic
    assert not BROKER_CONFIGS["auto.create.topics.enable"].dynamic


def test_static_broker_synonyms_are_the_topic_defaults() -> None:
    defaults = BrokerConfig().log_config()
    assert defaults == LogConfig()


def test_valid_topic_configs_are_normalised_to_kafka_names_and_text() -> None:
    assert validate_topic_config(
        {
            "retention_ms": 60000,
            "unclean.leader.election.enable": "TRUE",
            "cleanup.policy": "delete, compact",
            "min.cleanable.dirty.ratio": "0.2",
        }
    ) == {
        "retention.ms": "60000",
        "unclean.leader.election.enable": "true",
        "cleanup.policy": "compact,delete",
        "min.cleanable.dirty.ratio": "0.2",
    }


@pytest.mark.parametrize(
    ("config", "value"),
    [
        ("retention.ms", "abc"),
        ("min.insync.replicas", "0"),
        ("cleanup.policy", "bogus"),
        ("segment.bytes", "10"),
        ("unclean.leader.election.enable", "maybe"),
        ("no.such.config", "1"),
    ],
)
def test_a_bad_topic_config_is_invalid_config_naming_the_config_and_value(
    config: str, value: str
) -> None:
    with pytest.raises(InvalidConfigError, match=rf"{config}.*{value}"):
        validate_topic_config({config: value})


def test_broker_overrides_take_dynamic_configs_and_refuse_read_only_ones() -> None:
    assert validate_broker_config({"log.retention.ms": "1000", "min.insync.replicas": 2}) == {
        "log.retention.ms": "1000",
        "min.insync.replicas": "2",
    }
    with pytest.raises(InvalidConfigError, match=r"log.cleanup.policy='bogus'"):
        validate_broker_config({"log.cleanup.policy": "bogus"})
    with pytest.raises(InvalidConfigError, match=r"auto.create.topics.enable.*dynamically"):
        validate_broker_config({"auto.create.topics.enable": "false"})
    with pytest.raises(InvalidConfigError, match=r"unknown broker config retention.ms"):
        validate_broker_config({"retention.ms": "1"})


def test_incremental_operations_set_delete_append_and_subtract() -> None:
    current = {"retention.ms": "1000", "segment.bytes": "2048"}
    result = apply_ops(
        current,
        {
            "retention.ms": AlterConfigOp(DELETE),
            "segment_bytes": AlterConfigOp(SET, "4096"),
            "cleanup.policy": AlterConfigOp(APPEND, "compact"),
        },
        {"cleanup.policy": "delete"},
    )
    assert result == {"segment.bytes": "4096", "cleanup.policy": "delete,compact"}
    assert current == {"retention.ms": "1000", "segment.bytes": "2048"}
    assert apply_ops(result, {"cleanup.policy": AlterConfigOp(SUBTRACT, "delete")}, {}) == {
        "segment.bytes": "4096",
        "cleanup.policy": "compact",
    }


def test_append_to_a_config_that_is_not_a_list_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match=r"APPEND retention\.ms"):
        apply_ops({}, {"retention.ms": AlterConfigOp(APPEND, "5")}, {})


def test_a_topic_override_beats_the_broker_the_cluster_default_and_the_static_config() -> None:
    static = BrokerConfig(log_retention_ms=5000, log_segment_bytes=1 << 20)
    overrides = DynamicOverrides(
        broker={"log.retention.ms": "4000", "log.flush.interval.ms": "100"},
        cluster_default={"log.retention.ms": "3000", "log.retention.bytes": "999"},
    )
    config = effective_log_config(static, overrides, {"retention.ms": "2000"})
    assert (config.retention_ms, config.flush_ms, config.retention_bytes) == (2000, 100, 999)
    assert config.segment_bytes == 1 << 20
    assert effective_log_config(static, overrides, {}).retention_ms == 4000
    assert effective_log_config(static, DynamicOverrides(), {}).retention_ms == 5000


def test_an_invalid_stored_value_is_skipped_not_fatal() -> None:
    config = effective_log_config(
        BrokerConfig(), DynamicOverrides(), {"retention.ms": "abc", "segment.ms": "10"}
    )
    assert (config.retention_ms, config.segment_ms) == (LogConfig().retention_ms, 10)


def test_describe_names_the_level_each_topic_value_comes_from() -> None:
    static = BrokerConfig(log_segment_bytes=1 << 20)
    overrides = DynamicOverrides(
        broker={"log.flush.interval.ms": "100"}, cluster_default={"log.retention.bytes": "999"}
    )
    entries = {e.name: e for e in describe_topic_configs(static, overrides, {"retention.ms": "7"})}
    sources = {name: (e.value, e.source) for name, e in entries.items()}
    assert sources["retention.ms"] == ("7", ConfigSource.TOPIC_CONFIG)
    assert sources["flush.ms"] == ("100", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert sources["retention.bytes"] == ("999", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert sources["segment.bytes"] == (str(1 << 20), ConfigSource.STATIC_BROKER_CONFIG)
    assert sources["cleanup.policy"] == ("delete", ConfigSource.DEFAULT_CONFIG)
    assert [(s.name, s.source) for s in entries["retention.ms"].synonyms] == [
        ("retention.ms", ConfigSource.TOPIC_CONFIG),
        ("log.retention.ms", ConfigSource.DEFAULT_CONFIG),
    ]
    assert entries["cleanup.policy"].is_default


def test_describe_of_a_broker_marks_static_only_configs_read_only() -> None:
    entries = {
        e.name: e
        for e in describe_broker_configs(
            BrokerConfig(num_partitions=3), DynamicOverrides(broker={"min.insync.replicas": "2"})
        )
    }
    assert (entries["min.insync.replicas"].value, entries["min.insync.replicas"].source) == (
        "2",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
    )
    assert entries["num.partitions"].source is ConfigSource.STATIC_BROKER_CONFIG
    assert entries["num.partitions"].read_only
    assert not entries["min.insync.replicas"].read_only
    assert entries["auto.create.topics.enable"].value == "true"


def test_replication_throttle_configs_are_validated_and_written_canonically() -> None:
    assert validate_topic_config(
        {
            "leader.replication.throttled.replicas": "1:2, 0:1",
            "follower.replication.throttled.replicas": "*",
        }
    ) == {
        "leader.replication.throttled.replicas": "0:1,1:2",
        "follower.replication.throttled.replicas": "*",
    }
    assert validate_broker_config(
        {"leader.replication.throttled.rate": "200000", "follower.replication.throttled.rate": 1}
    ) == {"leader.replication.throttled.rate": "200000", "follower.replication.throttled.rate": "1"}


@pytest.mark.parametrize(
    ("config", "value"),
    [
        ("leader.replication.throttled.replicas", "0-1"),
        ("follower.replication.throttled.replicas", "x:1"),
    ],
)
def test_a_bad_throttled_replicas_list_is_invalid_config_naming_it(config: str, value: str) -> None:
    with pytest.raises(InvalidConfigError, match=rf"{config}='{value}'"):
        validate_topic_config({config: value})


@pytest.mark.parametrize("value", ["-1", "fast"])
def test_a_bad_throttled_rate_is_invalid_config_naming_it(value: str) -> None:
    with pytest.raises(InvalidConfigError, match=rf"follower.replication.throttled.rate='{value}'"):
        validate_broker_config({"follower.replication.throttled.rate": value})


def test_replica_lists_take_appends_and_subtracts() -> None:
    name = "follower.replication.throttled.replicas"
    added = apply_ops({name: "0:1"}, {name: AlterConfigOp(APPEND, "1:2,0:1")}, {})
    assert validate_topic_config(added) == {name: "0:1,1:2"}
    assert apply_ops(added, {name: AlterConfigOp(SUBTRACT, "0:1")}, {}) == {name: "1:2"}


def test_throttled_replicas_describe_as_topic_configs_without_a_broker_level() -> None:
    name = "leader.replication.throttled.replicas"
    entries = {e.name: e for e in describe_topic_configs(BrokerConfig(), DynamicOverrides(), {})}
    assert (entries[name].value, entries[name].source) == ("", ConfigSource.DEFAULT_CONFIG)
    assert [(s.name, s.source) for s in entries[name].synonyms] == [
        (name, ConfigSource.DEFAULT_CONFIG)
    ]
    entries = {
        e.name: e for e in describe_topic_configs(BrokerConfig(), DynamicOverrides(), {name: "*"})
    }
    assert (entries[name].value, entries[name].source) == ("*", ConfigSource.TOPIC_CONFIG)


def test_a_brokers_throttled_rates_are_dynamic_and_unlimited_by_default() -> None:
    for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
        assert BROKER_CONFIGS[name].dynamic
    entries = {
        e.name: e
        for e in describe_broker_configs(
            BrokerConfig(),
            DynamicOverrides(broker={"follower.replication.throttled.rate": "200000"}),
        )
    }
    assert entries["leader.replication.throttled.rate"].value == str((1 << 63) - 1)
    assert (
        entries["follower.replication.throttled.rate"].value,
        entries["follower.replication.throttled.rate"].source,
    ) == ("200000", ConfigSource.DYNAMIC_BROKER_CONFIG)


def test_a_password_is_described_as_sensitive_without_its_value() -> None:
    static = dataclasses.replace(BrokerConfig(), ssl_key_password="hunter2")
    entries = {e.name: e for e in describe_broker_configs(static, DynamicOverrides())}
    password = entries["ssl.key.password"]
    assert password.is_sensitive
    assert password.value is None
    assert password.source is ConfigSource.STATIC_BROKER_CONFIG
    assert [s.value for s in password.synonyms] == [None, None]
    assert "hunter2" not in repr(list(entries.values()))
    assert not entries["ssl.keystore.location"].is_sensitive
    assert [e.name for e in entries.values() if e.is_sensitive] == [
        "ssl.key.password",
        "zookeeper.digest.credentials",
    ]


def test_the_zookeeper_identity_is_described_as_sensitive_and_kept_out_of_repr() -> None:
    static = BrokerConfig.from_dict({"zookeeper_digest_credentials": "rafka:s3cret"})
    entries = {e.name: e for e in describe_broker_configs(static, DynamicOverrides())}
    identity = entries["zookeeper.digest.credentials"]
    assert (identity.is_sensitive, identity.value) == (True, None)
    assert "s3cret" not in repr(list(entries.values()))
    assert "s3cret" not in repr(static)
