"""Tests for LogConfig.from_dict: Kafka or snake_case names, strings, ranges, INVALID_CONFIG."""

from __future__ import annotations

import dataclasses

import pytest

from rafka.log.config import INT32_MAX, INT64_MAX, LogConfig
from rafka.protocol.errors import Errors, InvalidConfigError

BOUNDED = [f for f in dataclasses.fields(LogConfig) if "min" in f.metadata]


def test_defaults_are_kafkas():
    config = LogConfig()
    assert (config.segment_bytes, config.retention_ms, config.retention_bytes) == (
        1 << 30,
        7 * 24 * 3600 * 1000,
        -1,
    )
    assert (config.index_interval_bytes, config.segment_index_bytes) == (4096, 10 * 1024 * 1024)
    assert (config.cleanup_policy, config.min_cleanable_dirty_ratio, config.max_message_bytes) == (
        "delete",
        0.5,
        1048588,
    )
    assert config.delete and not config.compact


def test_from_dict_accepts_dotted_and_snake_case_names():
    dotted = LogConfig.from_dict(
        {"retention.ms": 1000, "segment.bytes": 4096, "cleanup.policy": "compact"}
    )
    snake = LogConfig.from_dict(
        {"retention_ms": 1000, "segment_bytes": 4096, "cleanup_policy": "compact"}
    )
    assert dotted == snake
    assert (dotted.retention_ms, dotted.segment_bytes, dotted.cleanup_policy) == (
        1000,
        4096,
        "compact",
    )


def test_from_dict_converts_string_values():
    config = LogConfig.from_dict(
        {
            "retention.ms": "-1",
            "min.cleanable.dirty.ratio": "0.25",
            "unclean.leader.election.enable": "TRUE",
            "cleanup.policy": "compact, delete",
            "flush.messages": "1",
        }
    )
    assert config.retention_ms == -1 and isinstance(config.retention_ms, int)
    assert config.min_cleanable_dirty_ratio == 0.25
    assert config.unclean_leader_election_enable is True
    assert config.cleanup_policy == "compact,delete" and config.compact and config.delete
    assert config.flush_messages == 1
    assert (
        LogConfig.from_dict(
            {"unclean.leader.election.enable": "false"}
        ).unclean_leader_election_enable
        is False
    )


def test_from_dict_accepts_whole_floats_for_integers():
    assert LogConfig.from_dict({"segment.ms": 60000.0}).segment_ms == 60000


def test_from_dict_applies_values_over_a_base_config():
    base = LogConfig.from_dict({"retention.ms": 5, "segment.bytes": 1000})
    config = LogConfig.from_dict({"segment.bytes": 2000}, base=base)
    assert (config.retention_ms, config.segment_bytes) == (5, 2000)
    assert base.segment_bytes == 1000, "the base is not modified"


def test_to_dict_uses_dotted_names_and_round_trips():
    config = LogConfig.from_dict({"retention.bytes": 123, "cleanup.policy": "compact,delete"})
    exported = config.to_dict()
    assert exported["retention.bytes"] == 123 and exported["cleanup.policy"] == "compact,delete"
    assert all("_" not in key for key in exported)
    assert LogConfig.from_dict(exported) == config


@pytest.mark.parametrize(
    "key", ["retention.millis", "segment-bytes", "Retention.ms", "log.retention.ms"]
)
def test_unknown_key_is_invalid_config_naming_the_key(key):
    with pytest.raises(InvalidConfigError) as raised:
        LogConfig.from_dict({key: 1})
    assert raised.value.error is Errors.INVALID_CONFIG
    assert repr(key) in str(raised.value)
    assert "retention.ms" in str(raised.value), "the message lists the known names"


@pytest.mark.parametrize("spec", BOUNDED, ids=[f.name for f in BOUNDED])
def test_values_just_outside_the_range_are_rejected_naming_key_and_range(spec):
    low, high = spec.metadata["min"], spec.metadata["max"]
    key = spec.name.replace("_", ".")
    step = 0.01 if isinstance(low, float) else 1
    for bad in (low - step, high + step):
        with pytest.raises(InvalidConfigError) as raised:
            LogConfig.from_dict({key: bad})
        message = str(raised.value)
        assert key in message and str(low) in message and str(high) in message, message
    # Both ends of the range are allowed.
    assert getattr(LogConfig.from_dict({key: low}), spec.name) == low
    assert getattr(LogConfig.from_dict({key: str(high)}), spec.name) == high


def test_range_limits_match_kafka_types():
    limits = {f.name: (f.metadata["min"], f.metadata["max"]) for f in BOUNDED}
    assert limits["segment_bytes"] == (14, INT32_MAX)
    assert limits["retention_ms"] == (-1, INT64_MAX)
    assert limits["flush_messages"] == (1, INT64_MAX)
    assert limits["min_cleanable_dirty_ratio"] == (0.0, 1.0)


@pytest.mark.parametrize(
    "key, value",
    [
        ("retention.ms", "soon"),
        ("retention.ms", "1.5"),
        ("retention.ms", 1.5),
        ("segment.bytes", None),
        ("min.cleanable.dirty.ratio", "half"),
        ("unclean.leader.election.enable", "yes"),
        ("cleanup.policy", "archive"),
        ("cleanup.policy", ""),
    ],
)
def test_malformed_values_are_invalid_config_naming_the_key(key, value):
    with pytest.raises(InvalidConfigError) as raised:
        LogConfig.from_dict({key: value})
    assert key in str(raised.value)


def test_nothing_is_applied_when_one_value_is_invalid():
    base = LogConfig()
    with pytest.raises(InvalidConfigError):
        LogConfig.from_dict({"retention.ms": 10, "segment.bytes": 1}, base=base)
    assert base == LogConfig()


def test_config_is_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        LogConfig().retention_ms = 5  # type: ignore[misc]


def test_spaces_around_list_separators_go_and_those_inside_a_value_stay() -> None:
    from rafka.actors.broker.config import BrokerConfig

    config = BrokerConfig.from_dict(
        {
            "super.users": " User:Alice Smith ; User:CN=alice,O=Example\\, Inc. ",
            "ssl.keystore.location": "/keys/my broker.pem",
            "ssl.key.password": " pass phrase ",
        }
    )
    assert LogConfig.from_dict({"cleanup.policy": "compact, delete"}).cleanup_policy == (
        "compact,delete"
    )
    assert config.super_users == "User:Alice Smith;User:CN=alice,O=Example\\, Inc."
    assert config.ssl_keystore_location == "/keys/my broker.pem"
    assert config.ssl_key_password == " pass phrase "
