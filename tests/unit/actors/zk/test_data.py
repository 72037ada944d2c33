"""Tests for rafka.actors.zk.data: znode paths and JSON that match Kafka's ZooKeeper layout."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from rafka.actors.zk import data as zk_data
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.protocol.types import TopicPartition


def as_json(data: bytes) -> dict:
    value = json.loads(data.decode())
    assert isinstance(value, dict)
    return value


# ------------------------------------------------------------------ paths


def test_paths_follow_kafkas_layout() -> None:
    assert zk_data.broker_path(3) == "/brokers/ids/3"
    assert zk_data.topic_path("events") == "/brokers/topics/events"
    assert zk_data.partitions_path("events") == "/brokers/topics/events/partitions"
    assert zk_data.partition_state_path("events", 7) == "/brokers/topics/events/partitions/7/state"
    assert zk_data.topic_config_path("events") == "/config/topics/events"
    assert zk_data.delete_topic_path("events") == "/admin/delete_topics/events"
    assert (zk_data.CONTROLLER, zk_data.CONTROLLER_EPOCH, zk_data.CLUSTER_ID) == (
        "/controller",
        "/controller_epoch",
        "/cluster/id",
    )
    assert zk_data.ISR_CHANGE_NOTIFICATION == "/isr_change_notification"


def test_partition_state_path_sits_under_partitions_path() -> None:
    assert zk_data.partition_state_path("t", 0).startswith(zk_data.partitions_path("t") + "/")


def test_persistent_paths_cover_every_parent_the_cluster_writes_under() -> None:
    parents = {
        zk_data.BROKER_IDS,
        zk_data.TOPICS,
        zk_data.CONFIG_TOPICS,
        zk_data.ISR_CHANGE_NOTIFICATION,
        zk_data.DELETE_TOPICS,
    }
    assert parents <= set(zk_data.PERSISTENT_PATHS)
    assert all(p.startswith("/") and not p.endswith("/") for p in zk_data.PERSISTENT_PATHS)


# ------------------------------------------------------------------ partition state


def test_partition_state_uses_kafkas_field_names() -> None:
    value = as_json(LeaderIsrAndEpoch(2, 5, (2, 0, 1), 3, zk_version=11).encode())
    assert value == {
        "version": 1,
        "leader": 2,
        "leader_epoch": 5,
        "isr": [2, 0, 1],
        "controller_epoch": 3,
    }


def test_partition_state_round_trips_with_the_znode_version() -> None:
    state = LeaderIsrAndEpoch(-1, 9, (), 4)
    assert LeaderIsrAndEpoch.decode(state.encode(), 17) == LeaderIsrAndEpoch(-1, 9, (), 4, 17)


def test_partition_state_written_by_kafka_decodes() -> None:
    kafka = b'{"controller_epoch":12,"leader":1,"version":1,"leader_epoch":3,"isr":[1,2]}'
    assert LeaderIsrAndEpoch.decode(kafka, 2) == LeaderIsrAndEpoch(1, 3, (1, 2), 12, 2)


# ------------------------------------------------------------------ brokers


def test_broker_registration_uses_kafkas_field_names() -> None:
    value = as_json(
        BrokerRegistration(1, "10.0.0.1", "node-a", "rack-1", 1_700_000_000_000).encode()
    )
    assert value["version"] == 5
    assert value["host"] == "10.0.0.1"
    assert value["rack"] == "rack-1"
    assert value["timestamp"] == "1700000000000"  # Kafka writes the timestamp as a string
    assert {"port", "jmx_port", "node_id"} <= set(value)


@pytest.mark.parametrize("rack", ["rack-1", None])
def test_broker_registration_round_trips(rack: str | None) -> None:
    registration = BrokerRegistration(4, "host-4", "node-4", rack, 1_700_000_000_123)
    assert BrokerRegistration.decode(4, registration.encode()) == registration


def test_broker_registration_without_timestamp_is_stamped_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(zk_data, "now_ms", lambda: 1_234)
    decoded = BrokerRegistration.decode(0, BrokerRegistration(0, "h", "n").encode())
    assert decoded.timestamp == 1_234


def test_broker_registration_reads_kafkas_endpoints_and_tolerates_its_other_fields() -> None:
    kafka = json.dumps(
        {
            "version": 5,
            "host": "h",
            "port": 9092,
            "jmx_port": -1,
            "timestamp": "42",
            "endpoints": ["PLAINTEXT://h:9092"],
            "node_id": "n",
            "rack": None,
        }
    ).encode()
    assert BrokerRegistration.decode(7, kafka) == BrokerRegistration(
        7, "h", "n", None, 42, endpoints=("PLAINTEXT://h:9092",)
    )


def test_broker_registration_writes_its_listener_as_kafkas_port_and_endpoints() -> None:
    registration = BrokerRegistration(3, "10.0.0.5", "n", endpoints=("PLAINTEXT://10.0.0.5:9093",))
    value = as_json(registration.encode())
    assert (value["port"], value["endpoints"]) == (9093, ["PLAINTEXT://10.0.0.5:9093"])
    assert value["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    assert BrokerRegistration.decode(3, registration.encode()).endpoints == registration.endpoints
    assert as_json(BrokerRegistration(3, "h", "n").encode())["port"] == -1


# ------------------------------------------------------------------ topics


def test_assignment_uses_string_partition_keys_and_version_2() -> None:
    value = as_json(zk_data.encode_assignment({1: (2, 0), 0: (0, 1)}))
    assert value == {"version": 2, "partitions": {"0": [0, 1], "1": [2, 0]}}


@pytest.mark.parametrize("seed", [1, 7, 42])
def test_assignment_round_trips_keeping_replica_order(seed: int) -> None:
    rng = random.Random(seed)
    assignment = {
        p: tuple(rng.sample(range(10), rng.randint(1, 5))) for p in range(rng.randint(1, 30))
    }
    assert zk_data.decode_assignment(zk_data.encode_assignment(assignment)) == assignment


def test_assignment_written_by_kafka_decodes() -> None:
    kafka = (
        b'{"version":2,"partitions":{"1":[2,3],"0":[1,2]},'
        b'"adding_replicas":{},"removing_replicas":{}}'
    )
    assert zk_data.decode_assignment(kafka) == {0: (1, 2), 1: (2, 3)}


def test_topic_config_is_stringified_under_config() -> None:
    # An int on purpose: the encoder stringifies every value.
    overrides: dict[str, Any] = {"retention.ms": 60000, "cleanup.policy": "compact"}
    value = as_json(zk_data.encode_topic_config(overrides))
    assert value == {"version": 1, "config": {"retention.ms": "60000", "cleanup.policy": "compact"}}
    assert zk_data.decode_topic_config(zk_data.encode_topic_config({"a.b": "1"})) == {"a.b": "1"}


# ---------------------------------------------------------- controller, ISR changes, cluster id


def test_controller_uses_brokerid_and_round_trips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zk_data, "now_ms", lambda: 99)
    data = zk_data.encode_controller(3)
    assert as_json(data) == {"version": 1, "brokerid": 3, "timestamp": "99"}
    assert zk_data.decode_controller(data) == 3


def test_isr_change_notification_round_trips_in_order() -> None:
    partitions = [("events", 3), ("audit", 0), ("events", 1)]
    data = zk_data.encode_isr_change(partitions)
    assert as_json(data) == {
        "version": 1,
        "partitions": [
            {"topic": "events", "partition": 3},
            {"topic": "audit", "partition": 0},
            {"topic": "events", "partition": 1},
        ],
    }
    assert zk_data.decode_isr_change(data) == partitions


def test_cluster_id_round_trips_with_string_version() -> None:
    data = zk_data.encode_cluster_id("AbC-123")
    assert as_json(data) == {"version": "1", "id": "AbC-123"}
    assert zk_data.decode_cluster_id(data) == "AbC-123"


def test_encoding_is_compact_and_deterministic() -> None:
    first = LeaderIsrAndEpoch(1, 2, (1, 2), 3).encode()
    assert first == LeaderIsrAndEpoch(1, 2, (1, 2), 3).encode()
    assert b" " not in first


def test_a_registration_read_from_zookeeper_carries_the_transaction_that_created_it() -> None:
    registration = BrokerRegistration(4, "host-4", "node-4", None, 1_700_000_000_123)
    decoded = BrokerRegistration.decode(4, registration.encode(), zxid=0x5000000A1)
    assert decoded.zxid == 0x5000000A1
    assert decoded.timestamp == registration.timestamp


# ------------------------------------------------------------------ dynamic configs


def test_config_overrides_and_change_notifications_follow_kafkas_layout() -> None:
    assert zk_data.entity_config_path("topics/events") == "/config/topics/events"
    assert zk_data.entity_config_path("brokers/<default>") == "/config/brokers/<default>"
    assert {zk_data.CONFIG_BROKERS, zk_data.CONFIG_CHANGES} <= set(zk_data.PERSISTENT_PATHS)
    change = zk_data.encode_config_change("brokers/2")
    assert as_json(change) == {"version": 2, "entity_path": "brokers/2"}
    assert zk_data.decode_config_change(change) == "brokers/2"


# ------------------------------------------------------------------ preferred replica election


def test_the_preferred_replica_election_node_is_kafkas_json_and_round_trips() -> None:
    partitions = [TopicPartition("t", 0), TopicPartition("u", 3)]
    data = zk_data.encode_preferred_replica_election(partitions)
    assert as_json(data) == {
        "version": 1,
        "partitions": [{"topic": "t", "partition": 0}, {"topic": "u", "partition": 3}],
    }
    assert zk_data.decode_preferred_replica_election(data) == partitions
    assert zk_data.PREFERRED_REPLICA_ELECTION == "/admin/preferred_replica_election"


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "expected"),
        (b'{"partitions": {"topic": "t"}}', "expected"),
        (b'{"partitions": [{"topic": "t"}]}', "partition number"),
        (b'{"partitions": [{"topic": 3, "partition": 0}]}', "string topic"),
        (b'{"partitions": [{"topic": "t", "partition": -1}]}', "partition number"),
        (
            b'{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]}',
            "duplicate partitions: t-0",
        ),
    ],
)
def test_a_bad_preferred_replica_election_document_names_what_is_wrong(
    data: bytes, complaint: str
) -> None:
    with pytest.raises(ValueError, match=complaint):
        zk_data.decode_preferred_replica_election(data)


# ------------------------------------------------------------------ partition reassignment


def test_reassignments_are_kafkas_json_at_kafkas_path() -> None:
    assert zk_data.REASSIGN_PARTITIONS == "/admin/reassign_partitions"
    encoded = zk_data.encode_reassignments(
        {TopicPartition("b", 1): (4, 5), TopicPartition("a", 0): (6,)}
    )
    assert as_json(encoded) == {
        "version": 1,
        "partitions": [
            {"topic": "a", "partition": 0, "replicas": [6]},
            {"topic": "b", "partition": 1, "replicas": [4, 5]},
        ],
    }


def test_reassignments_written_by_a_zookeeper_era_tool_are_read() -> None:
    written = b"""{"version": 1,
      "partitions": [{"topic": "topic3", "partition": 1, "replicas": [1, 2, 3]}]}"""
    assert zk_data.decode_reassignments(written) == {TopicPartition("topic3", 1): (1, 2, 3)}


@pytest.mark.parametrize(
    "data", [b"not json", b"[]", b'{"version": 1}', b'{"partitions": [{"topic": "t"}]}']
)
def test_malformed_reassignments_raise_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        zk_data.decode_reassignments(data)
