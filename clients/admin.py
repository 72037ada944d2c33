"""The admin client: create, grow, delete, list and describe topics; look up offsets; describe the
cluster; manage consumer groups (the group operations live in ``group_admin``), dynamic configs
(``config_admin``), users' SCRAM credentials (``user_admin``), client quotas (``quota_admin``),
ACLs (``acl_admin``), partition reassignments (``reassignment_admin``) and leader elections
(``leader_admin``); describe log directories (``log_dir_admin``).

Requests go to the active controller actor (found through any broker's metadata), which validates
them and writes ZooKeeper; ``create_topic`` and ``create_partitions`` then wait until every
partition has a leader, so the partitions can be used as soon as the call returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rafka.clients.acl_admin import AclAdminMixin
from rafka.clients.cluster import ClusterConnection
from rafka.clients.config import CONNECT_TIMEOUT_MS
from rafka.clients.config_admin import ConfigAdminMixin
from rafka.clients.fetcher import list_offsets
from rafka.clients.group_admin import GroupAdminMixin
from rafka.clients.leader_admin import LeaderAdminMixin
from rafka.clients.log_dir_admin import LogDirAdminMixin
from rafka.clients.quota_admin import QuotaAdminMixin
from rafka.clients.reassignment_admin import ReassignmentAdminMixin
from rafka.clients.records import OffsetAndTimestamp
from rafka.clients.transport import Transport, TransportError
from rafka.clients.user_admin import UserAdminMixin
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import (
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
)
from rafka.protocol.messages.metadata import (
    BrokerMetadata,
    MetadataRequest,
    PartitionMetadata,
    parse_listeners,
)
from rafka.protocol.types import NewPartitions, NewTopic, ReplicaPlacement, TopicPartition


@dataclass(frozen=True)
class TopicDescription:
    """A topic's partitions and config overrides."""

    name: str
    partitions: tuple[PartitionMetadata, ...]
    config: Mapping[str, str] = field(default_factory=dict)
    is_internal: bool = False


@dataclass(frozen=True)
class ClusterDescription:
    """Live brokers and the controller."""

    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerMetadata, ...]

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of every live broker's PLAINTEXT Kafka listener, comma-separated: what a
        Kafka client's ``bootstrap_servers`` (or kcat's ``-b``) takes."""
        return self.listener_bootstrap_servers("PLAINTEXT")

    def listener_bootstrap_servers(self, listener: str) -> str:
        """``bootstrap_servers`` for the listener called ``listener`` (``SSL``, say)."""
        return ",".join(
            f"{address[0]}:{address[1]}"
            for broker in self.brokers
            if (address := broker.listener(listener)) is not None
        )

    @property
    def listener_names(self) -> tuple[str, ...]:
        """The names of the brokers' Kafka listeners, each once, in the order brokers list them."""
        found = (
            address.listener_name
            for broker in self.brokers
            for address in parse_listeners(",".join(broker.endpoints), "endpoints")
        )
        return tuple(dict.fromkeys(found))


class Admin(
    GroupAdminMixin,
    UserAdminMixin,
    QuotaAdminMixin,
    AclAdminMixin,
    ConfigAdminMixin,
    ReassignmentAdminMixin,
    LeaderAdminMixin,
    LogDirAdminMixin,
):
    """Topic, cluster and consumer-group administration (kafka-python's KafkaAdminClient,
    trimmed)."""

    def __init__(
        self,
        namespace: str = "rafka",
        ray_address: str | None = None,
        request_timeout_ms: int = 30_000,
        transport: Transport | None = None,
        connect_timeout_ms: int = CONNECT_TIMEOUT_MS,
    ) -> None:
        self._cluster = ClusterConnection(
            namespace, ray_address, request_timeout_ms, transport, connect_timeout_ms
        )
        self._timeout_s = request_timeout_ms / 1000

    def create_topic(
        self,
        name: str,
        num_partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, Any] | None = None,
        timeout_ms: int | None = None,
        replica_assignments: Mapping[int, list[int]] | None = None,
        placement: ReplicaPlacement | None = None,
    ) -> TopicDescription:
        """Create a topic and wait until every partition has a leader; raise Kafka's error on
        failure. ``replica_assignments`` (partition -> brokers) places the replicas explicitly, and
        then fixes the partition count and replication factor."""
        explicit = dict(replica_assignments or {})
        self.create_topics(
            [
                NewTopic(
                    name,
                    -1 if explicit else num_partitions,
                    -1 if explicit else replication_factor,
                    tuple((k, str(v)) for k, v in (config or {}).items()),
                    explicit,
                )
            ],
            timeout_ms,
            placement=placement,
        )
        return self.describe_topic(name)

    def create_topics(
        self,
        new_topics: list[NewTopic],
        timeout_ms: int | None = None,
        validate_only: bool = False,
        *,
        placement: ReplicaPlacement | None = None,
    ) -> None:
        """Create several topics (kafka-python's signature); the first failure raises
        (INVALID_REPLICATION_FACTOR, TOPIC_ALREADY_EXISTS, INVALID_REPLICA_ASSIGNMENT, ...).
        With ``validate_only`` the controller checks the request the same way and creates
        nothing. ``placement`` fixes how the controller places replicas (racks, start index,
        shift)."""
        timeout_s = self._timeout_s if timeout_ms is None else timeout_ms / 1000
        self._ask_controller("create_topics", timeout_s, list(new_topics), placement, validate_only)
        if validate_only:
            return
        for topic in new_topics:
            self._wait_led(topic.name, None, timeout_s)

    def create_partitions(
        self,
        topic_partitions: Mapping[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
        *,
        placement: ReplicaPlacement | None = None,
    ) -> None:
        """Grow topics to ``NewPartitions.total_count`` partitions (kafka-python's signature) and
        wait until every new partition has a leader; the first failure raises (INVALID_PARTITIONS
        for no growth, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, ...). Existing
        partitions keep their replicas and data. With ``validate_only`` the controller checks the
        request the same way and changes nothing."""
        timeout_s = self._timeout_s if timeout_ms is None else timeout_ms / 1000
        self._ask_controller(
            "create_partitions", timeout_s, dict(topic_partitions), placement, validate_only
        )
        if validate_only:
            return
        for name, request in topic_partitions.items():
            self._wait_led(name, request.total_count, timeout_s)

    def delete_topics(self, topics: list[str], timeout_ms: int | None = None) -> None:
        """Delete topics (kafka-python's signature) and wait until no broker knows them; the
        first failure raises (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_DELETION_DISABLED). The brokers
        remove the partitions' data in the background."""
        timeout_s = self._timeout_s if timeout_ms is None else timeout_ms / 1000
        self._ask_controller("delete_topics", timeout_s, list(topics))
        for name in topics:
            self._cluster.wait_for(
                lambda name=name: self._forgotten_everywhere(name),
                timeout_s,
                f"every broker to forget topic {name!r}",
            )

    def _ask_controller(self, method: str, timeout_s: float, *request: object) -> None:
        """Send a topic (or reassignment) request to the active controller, again if it moved;
        raise the first topic's (or partition's) error."""

        def attempt() -> (
            list[CreateTopicResult | CreatePartitionsResult | DeleteTopicResult] | None
        ):
            results: list[CreateTopicResult | CreatePartitionsResult | DeleteTopicResult] = (
                self._cluster.request(
                    self._cluster.controller(), method, *request, timeout_s=timeout_s
                )
            )
            if any(result.error is Errors.NOT_CONTROLLER for result in results):
                return None
            return results

        results = self._cluster.wait_for(attempt, timeout_s, f"the controller to answer {method}")
        for result in results:
            if result.error is not Errors.NONE:
                raise result.error.exception(result.message)

    def _forgotten_everywhere(self, name: str) -> bool:
        """Whether every broker that answers reports ``name`` as an unknown topic."""
        answers = self._cluster.metadata_answers(
            MetadataRequest((name,), allow_auto_topic_creation=False)
        ).values()
        return bool(answers) and all(
            t.error is Errors.UNKNOWN_TOPIC_OR_PARTITION for a in answers for t in a.topics
        )

    def _wait_led(self, name: str, partitions: int | None, timeout_s: float) -> None:
        self._cluster.wait_for(
            lambda: self._led_everywhere(name, partitions),
            timeout_s,
            f"every broker to know a leader for every partition of {name!r}",
        )

    def _led_everywhere(self, name: str, partitions: int | None = None) -> bool:
        """Whether every broker that answers knows a leader for each partition of ``name`` (and
        knows at least ``partitions`` of them), so that whichever broker a client asks next finds
        the topic (a broker silent for METADATA_GRACE_S, paused or dying, is not waited for)."""
        answers = self._cluster.metadata_answers(
            MetadataRequest((name,), allow_auto_topic_creation=False)
        ).values()
        briefed = [a for a in answers if a.briefed]
        return bool(briefed) and all(
            t.led and len(t.partitions) >= (partitions or 0) for a in briefed for t in a.topics
        )

    def list_topics(self) -> list[str]:
        """Names of every topic."""
        return sorted(t.name for t in self._cluster.refresh_metadata(None).topics)

    def describe_topic(self, name: str) -> TopicDescription:
        """Leader, replicas and ISR of each partition (UNKNOWN_TOPIC_OR_PARTITION if there is no
        such topic)."""
        metadata = self._cluster.topic(name, refresh=True, allow_auto_topic_creation=False)
        return TopicDescription(
            name, metadata.partitions, self._topic_config(name), metadata.is_internal
        )

    def _topic_config(self, name: str) -> dict[str, str]:
        for broker_id in self._cluster.broker_ids():
            try:
                config: dict[str, str] = self._cluster.request(
                    self._cluster.broker(broker_id), "topic_config", name, timeout_s=self._timeout_s
                )
            except TransportError:
                continue
            return config
        return {}

    def list_offsets(
        self, partitions: Iterable[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """ListOffsets at each partition's leader: ``timestamp`` is EARLIEST_TIMESTAMP (the log
        start), LATEST_TIMESTAMP (the high watermark), or a time in ms whose first offset is wanted
        (-1 if no record is that new)."""
        found = list_offsets(
            self._cluster, [TopicPartition(*tp) for tp in partitions], timestamp, self._timeout_s
        )
        return {
            tp: OffsetAndTimestamp(offset, found_ts) for tp, (offset, found_ts) in found.items()
        }

    def describe_cluster(self) -> ClusterDescription:
        """Live brokers, the controller and the cluster id."""
        response = self._cluster.refresh_metadata([])
        return ClusterDescription(response.cluster_id, response.controller_id, response.brokers)

    def wait_for_cluster(self, brokers: int, timeout_ms: int = 60_000) -> ClusterDescription:
        """Block until ``brokers`` brokers are live and a controller is elected."""

        def ready() -> ClusterDescription | None:
            description = self.describe_cluster()
            return (
                description
                if len(description.brokers) >= brokers and description.controller_id >= 0
                else None
            )

        found: ClusterDescription = self._cluster.wait_for(
            ready, timeout_ms / 1000, f"{brokers} live brokers and a controller"
        )
        return found

    def close(self) -> None:
        """Release nothing: endpoints hold no connections. Kept for kafka-python compatibility."""


KafkaAdminClient = Admin
"""kafka-python's name for the admin client."""
