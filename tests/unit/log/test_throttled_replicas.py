"""Tests for the ``*.replication.throttled.replicas`` topic configs (KIP-73) in
rafka.log.config: Kafka's value format, its validation and the parsed value a replica consults."""

from __future__ import annotations

import re

import pytest

from rafka.log.config import LogConfig, ThrottledReplicas
from rafka.protocol.errors import InvalidConfigError


def test_a_list_names_partition_broker_pairs() -> None:
    throttled = ThrottledReplicas.parse("0:1, 2:0,0:1")
    assert throttled.replicas == {(0, 1), (2, 0)}
    assert throttled.includes(0, 1) and throttled.includes(2, 0)
    assert not throttled.includes(0, 0) and not throttled.includes(1, 1)


def test_a_star_throttles_every_replica_and_empty_none() -> None:
    assert ThrottledReplicas.parse("*").includes(7, 3)
    assert not ThrottledReplicas.parse("").includes(0, 0)


def test_a_value_is_written_back_sorted_without_duplicates() -> None:
    config = LogConfig.from_dict(
        {
            "leader.replication.throttled.replicas": "10:2, 2:1,2:1",
            "follower.replication.throttled.replicas": " * ",
        }
    )
    assert config.leader_replication_throttled_replicas == "2:1,10:2"
    assert config.follower_replication_throttled_replicas == "*"
    assert config.leader_throttled.includes(10, 2)
    assert config.follower_throttled.every


def test_by_default_nothing_is_throttled() -> None:
    config = LogConfig()
    assert not config.leader_throttled.includes(0, 0)
    assert not config.follower_throttled.includes(0, 0)


@pytest.mark.parametrize("value", ["0-1", "a:1", "0:", "*,0:1", "0:1:2", "-1:0"])
def test_a_bad_value_is_invalid_config_naming_the_config_and_value(value: str) -> None:
    name = "follower.replication.throttled.replicas"
    with pytest.raises(InvalidConfigError, match=re.escape(f"{name}='{value}' is invalid")):
        LogConfig.from_dict({name: value})
