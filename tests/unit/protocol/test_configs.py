"""Tests for rafka.protocol.configs: kafka-python's ConfigResource and Kafka's config enums."""

from __future__ import annotations

import pytest

from rafka.protocol.configs import (
    DEFAULT_BROKER,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)


def test_a_resource_type_may_be_given_by_name_as_in_kafka_python() -> None:
    assert ConfigResource("topic", "t").resource_type is ConfigResourceType.TOPIC
    assert ConfigResource("BROKER", "1") == ConfigResource(ConfigResourceType.BROKER, "1")
    with pytest.raises(KeyError):
        ConfigResource("group", "g")


def test_the_empty_broker_name_is_the_cluster_default() -> None:
    assert ConfigResource(ConfigResourceType.BROKER, DEFAULT_BROKER).is_default_broker
    assert not ConfigResource(ConfigResourceType.TOPIC, DEFAULT_BROKER).is_default_broker
    assert ConfigResource(ConfigResourceType.BROKER, "").describe() == "the broker default"
    assert ConfigResource(ConfigResourceType.TOPIC, "t").describe() == "topic t"


def test_codes_are_kafkas() -> None:
    assert (ConfigResourceType.TOPIC, ConfigResourceType.BROKER) == (2, 4)
    assert [op.value for op in AlterConfigOpType] == [0, 1, 2, 3]
    assert ConfigSource.TOPIC_CONFIG == 1 and ConfigSource.DEFAULT_CONFIG == 5
