"""The ZooKeeper layout of Kafka's ZooKeeper mode: every znode's path and JSON encoding,
declared once.

All paths are relative to the cluster's chroot (``/rafka/<cluster>`` by default), so several
clusters can share one ensemble::

    /cluster/id                                          {"version": "1", "id": ...}
    /brokers/ids/<id>                  (ephemeral)       {"version": 5, "host", "node_id", "rack",
                                                          "timestamp"}
    /brokers/topics/<t>                                  {"version": 2, "partitions": {"0": [1, 2]}}
    /brokers/topics/<t>/partitions/<p>/state             {"version": 1, "leader", "leader_epoch",
                                                          "isr", "controller_epoch"}
    /controller                        (ephemeral)       {"version": 1, "brokerid", "timestamp"}
    /controller_epoch                                    "<int>"
    /config/topics/<t>                                   {"version": 1,
                                                          "config": {"retention.ms": "..."}}
    /config/brokers/<id> and /config/brokers/<default>   the same, with broker config names
    /config/users/<name>                                 the same: {"SCRAM-SHA-256": "salt=...,
                                                          stored_key=...,server_key=...,
                                                          iterations=4096"}
    /config/changes/config_change_<seq>                  {"version": 2,
                                                          "entity_path": "topics/<t>"}
    /isr_change_notification/isr_change_<seq>            {"version": 1,
                                                          "partitions": [{"topic", "partition"}]}
    /admin/delete_topics/<t>
    /admin/preferred_replica_election                    {"version": 1,
                                                          "partitions": [{"topic", "partition"}]}
    /admin/reassign_partitions                           {"version": 1, "partitions":
                                                          [{"topic", "partition", "replicas"}]}
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rafka.protocol.messages.metadata import listener_endpoint
from rafka.protocol.types import TopicPartition, now_ms

CLUSTER_ID = "/cluster/id"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG = "/config"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
CONFIG_USERS = "/config/users"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DEFAULT_BROKER_ENTITY = "<default>"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
DELETE_TOPICS = "/admin/delete_topics"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"

PERSISTENT_PATHS = (
    BROKER_IDS,
    TOPICS,
    CONFIG_TOPICS,
    CONFIG_BROKERS,
    CONFIG_USERS,
    CONFIG_CHANGES,
    ISR_CHANGE_NOTIFICATION,
    DELETE_TOPICS,
    "/cluster",
)


def _dump(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def _load(data: bytes) -> Any:
    return json.loads(data.decode())


def broker_path(broker_id: int) -> str:
    """Ephemeral registration of a live broker."""
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    """Replica assignment of a topic."""
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    """Parent of a topic's partition state znodes."""
    return f"{TOPICS}/{topic}/partitions"


def partition_state_path(topic: str, partition: int) -> str:
    """Leader, leader epoch and ISR of one partition."""
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    """Topic-level config overrides."""
    return f"{CONFIG_TOPICS}/{topic}"


def entity_config_path(entity_path: str) -> str:
    """Config overrides of an entity named ``topics/<t>``, ``brokers/<id>`` or
    ``brokers/<default>``."""
    return f"{CONFIG}/{entity_path}"


def delete_topic_path(topic: str) -> str:
    """Admin request to delete a topic."""
    return f"{DELETE_TOPICS}/{topic}"


@dataclass(frozen=True)
class BrokerRegistration:
    """What a broker writes to its ephemeral znode."""

    broker_id: int
    host: str
    node_id: str
    rack: str | None = None
    timestamp: int = 0
    zxid: int = 0
    """The ZooKeeper transaction that created the znode (Kafka's broker epoch); 0 if not read."""
    endpoints: tuple[str, ...] = ()
    """The advertised Kafka listeners, ``NAME://host:port``."""
    security_protocols: tuple[tuple[str, str], ...] = ()
    """Each advertised listener's name and security protocol (Kafka's
    ``listener_security_protocol_map``); empty: every listener is named after its protocol."""

    def encode(self) -> bytes:
        """JSON as stored in ``/brokers/ids/<id>``."""
        return _dump(
            {
                "version": 5,
                "host": self.host,
                "node_id": self.node_id,
                "rack": self.rack,
                "timestamp": str(self.timestamp or now_ms()),
                "port": (listener_endpoint(self.endpoints, "PLAINTEXT") or ("", -1))[1],
                "jmx_port": -1,
                "endpoints": list(self.endpoints),
                "listener_security_protocol_map": dict(self.security_protocols)
                or {e.partition("://")[0]: e.partition("://")[0] for e in self.endpoints},
            }
        )

    @classmethod
    def decode(cls, broker_id: int, data: bytes, zxid: int = 0) -> BrokerRegistration:
        """Parse a broker znode created by transaction ``zxid``."""
        value = _load(data)
        return cls(
            broker_id,
            value["host"],
            value["node_id"],
            value.get("rack"),
            int(value["timestamp"]),
            zxid,
            tuple(value.get("endpoints", ())),
            tuple(sorted(value.get("listener_security_protocol_map", {}).items())),
        )


def encode_assignment(assignment: dict[int, tuple[int, ...]]) -> bytes:
    """``/brokers/topics/<t>``: partition -> replica list."""
    return _dump(
        {"version": 2, "partitions": {str(p): list(r) for p, r in sorted(assignment.items())}}
    )


def decode_assignment(data: bytes) -> dict[int, tuple[int, ...]]:
    """Parse a topic assignment znode."""
    return {int(p): tuple(r) for p, r in _load(data)["partitions"].items()}


@dataclass(frozen=True)
class LeaderIsrAndEpoch:
    """A partition state znode's content plus the znode version that compare-and-set writes
    check."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = 0

    def encode(self) -> bytes:
        """JSON as stored in ``.../partitions/<p>/state``."""
        return _dump(
            {
                "version": 1,
                "leader": self.leader,
                "leader_epoch": self.leader_epoch,
                "isr": list(self.isr),
                "controller_epoch": self.controller_epoch,
            }
        )

    @classmethod
    def decode(cls, data: bytes, zk_version: int) -> LeaderIsrAndEpoch:
        """Parse a partition state znode read at ``zk_version``."""
        value = _load(data)
        return cls(
            value["leader"],
            value["leader_epoch"],
            tuple(value["isr"]),
            value["controller_epoch"],
            zk_version,
        )


def encode_controller(broker_id: int) -> bytes:
    """``/controller``: who the controller is."""
    return _dump({"version": 1, "brokerid": broker_id, "timestamp": str(now_ms())})


def decode_controller(data: bytes) -> int:
    """The controller's broker id from ``/controller``."""
    return int(_load(data)["brokerid"])


def encode_topic_config(config: dict[str, str]) -> bytes:
    """``/config/topics/<t>`` (and ``/config/brokers/<b>``): overrides with Kafka's dotted
    names."""
    return _dump({"version": 1, "config": {k: str(v) for k, v in config.items()}})


def decode_topic_config(data: bytes) -> dict[str, str]:
    """Parse a topic config znode (broker config znodes have the same form)."""
    return dict(_load(data)["config"])


def encode_config_change(entity_path: str) -> bytes:
    """A config change notification naming the entity whose overrides changed."""
    return _dump({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> str:
    """The entity path (``topics/<t>``, ``brokers/<id>``) of a config change notification."""
    return str(_load(data)["entity_path"])


def encode_isr_change(partitions: list[tuple[str, int]]) -> bytes:
    """An ISR change notification listing the partitions whose ISR changed."""
    return _dump(
        {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    )


def decode_isr_change(data: bytes) -> list[tuple[str, int]]:
    """Parse an ISR change notification."""
    return [(item["topic"], item["partition"]) for item in _load(data)["partitions"]]


def encode_reassignments(reassignments: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    """``/admin/reassign_partitions``: each partition's target replicas, in Kafka's JSON (a
    ZooKeeper-era ``kafka-reassign-partitions`` writes the same)."""
    return _dump(
        {
            "version": 1,
            "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
                for tp, replicas in sorted(reassignments.items())
            ],
        }
    )


def decode_reassignments(data: bytes) -> dict[TopicPartition, tuple[int, ...]]:
    """Parse ``/admin/reassign_partitions``; ValueError if it is not Kafka's JSON."""
    try:
        value = _load(data)
        return {
            TopicPartition(str(item["topic"]), int(item["partition"])): tuple(
                int(r) for r in item["replicas"]
            )
            for item in value["partitions"]
        }
    except (KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not a reassignment JSON: {exc!r}") from exc


def encode_cluster_id(cluster_id: str) -> bytes:
    """``/cluster/id``."""
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    """Parse ``/cluster/id``."""
    return str(_load(data)["id"])


def encode_preferred_replica_election(partitions: list[TopicPartition]) -> bytes:
    """``/admin/preferred_replica_election``: the partitions whose preferred replica should lead
    (the same shape as an ISR change notification)."""
    return encode_isr_change([(tp.topic, tp.partition) for tp in partitions])


def decode_preferred_replica_election(data: bytes) -> list[TopicPartition]:
    """Parse ``/admin/preferred_replica_election`` (or the tool's JSON file, which has the same
    shape); ValueError names what is wrong: not JSON, a missing or mistyped field, or a partition
    listed twice."""
    try:
        document = _load(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    items = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(items, list):
        raise ValueError('expected {"partitions": [{"topic": ..., "partition": ...}, ...]}')
    partitions: list[TopicPartition] = []
    for item in items:
        topic = item.get("topic") if isinstance(item, dict) else None
        partition = item.get("partition") if isinstance(item, dict) else None
        if not isinstance(topic, str) or not isinstance(partition, int) or partition < 0:
            raise ValueError(
                f"entry {json.dumps(item)} needs a string topic and a partition number >= 0"
            )
        partitions.append(TopicPartition(topic, partition))
    counts = Counter(partitions)
    duplicates = sorted(f"{t}-{p}" for (t, p), n in counts.items() if n > 1)
    if duplicates:
        raise ValueError(f"duplicate partitions: {', '.join(duplicates)}")
    return partitions
