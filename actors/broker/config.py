"""Broker configuration: Kafka's broker config names in snake_case, with the defaults Kafka uses.

Topic-level settings (``log_*`` here) are the broker defaults that topic configs override; the
``log_config()`` method turns them into the ``LogConfig`` a new partition starts from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rafka.actors.broker.authorizer import authorizer_class_text, super_users_text
from rafka.actors.broker.client_quotas import (
    DEFAULT_QUOTA_WINDOW_NUM,
    DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
)
from rafka.actors.broker.security_protocols import (
    security_protocol_map_text,
    tls_versions_text,
)
from rafka.actors.zk.acl import ZkSecurity, parse_digest_credentials
from rafka.log.config import (
    INT16_MAX,
    INT32_MAX,
    INT64_MAX,
    LogConfig,
    apply_overrides,
    bounded,
)
from rafka.security.sasl import sasl_mechanisms_text


@dataclass(frozen=True)
class BrokerConfig:
    """Settings shared by every broker of a cluster (``broker_id`` aside)."""

    broker_id: int = bounded(0, 0, INT32_MAX, "this broker's id")
    zookeeper_connect: str = field(
        default="127.0.0.1:2181", metadata={"doc": "host:port[,host:port][/chroot]"}
    )
    zookeeper_session_timeout_ms: int = bounded(
        6000, 1000, 600_000, "ZooKeeper session timeout: bounds failure detection"
    )
    # The identity is a setting rather than a path to a file holding it (Kafka's JAAS file): the
    # config travels with every broker and controller actor to whichever Ray node runs it, where
    # a file would have to be copied to each node first. DescribeConfigs never shows it.
    zookeeper_digest_credentials: str = field(
        default="",
        repr=False,
        metadata={
            "doc": "user:password every ZooKeeper session of the cluster authenticates with "
            "(digest scheme; empty: none)",
            "sensitive": True,
            "parse": parse_digest_credentials,
        },
    )
    zookeeper_set_acl: bool = field(
        default=False,
        metadata={
            "doc": "give every znode rafka creates an ACL granting all permissions to the "
            "zookeeper_digest_credentials identity only (Kafka's zookeeper.set.acl)"
        },
    )
    zookeeper_acl_world_readable: bool = field(
        default=True,
        metadata={
            "doc": "with zookeeper_set_acl, let anyone read the znodes (not the sensitive ones "
            "under /config/brokers and /config/users), as Kafka does"
        },
    )
    cluster_name: str = field(
        default="rafka", metadata={"doc": "names the ZooKeeper chroot /rafka/<cluster_name>"}
    )
    broker_rack: str = field(
        default="",
        metadata={
            "doc": "the rack this broker is on, for rack-aware replica placement (empty: none)"
        },
    )
    listeners: str = field(
        default="PLAINTEXT://:9092",
        metadata={
            "doc": "Kafka-protocol listeners, NAME://host:port with distinct names (empty host: "
            "this node's address; port 0: any free port; empty: none)"
        },
    )
    advertised_listeners: str = field(
        default="",
        metadata={"doc": "listeners as clients should reach them (empty: the bound listeners)"},
    )
    listener_security_protocol_map: str = field(
        default="PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        metadata={
            "doc": "NAME:PROTOCOL pairs: the security protocol of each listener name "
            "(PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)",
            "parse": security_protocol_map_text,
        },
    )
    ssl_keystore_type: str = field(
        default="PEM",
        metadata={"doc": "format of the keystore: PEM only", "choices": ("PEM",)},
    )
    ssl_keystore_location: str = field(
        default="",
        metadata={
            "doc": "PEM file with the private key and certificate chain SSL listeners present"
        },
    )
    ssl_key_password: str = field(
        default="",
        # Kafka's PASSWORD type: DescribeConfigs reports it as sensitive, without its value.
        metadata={
            "doc": "password of the keystore's private key (empty: not encrypted)",
            "sensitive": True,
        },
    )
    ssl_truststore_location: str = field(
        default="",
        metadata={"doc": "PEM bundle of the CAs that client certificates must chain to"},
    )
    ssl_client_auth: str = field(
        default="none",
        metadata={
            "doc": "whether SSL listeners ask clients for a certificate: none, requested, required",
            "choices": ("none", "requested", "required"),
        },
    )
    ssl_enabled_protocols: str = field(
        default="TLSv1.2,TLSv1.3",
        metadata={
            "doc": "TLS versions SSL listeners accept (TLSv1.2, TLSv1.3)",
            "parse": tls_versions_text,
        },
    )
    authorizer_class_name: str = field(
        default="",
        metadata={
            "doc": "the ACL authorizer that checks every Kafka-protocol request: "
            "kafka.security.authorizer.AclAuthorizer (empty: none, every request is allowed)",
            "parse": authorizer_class_text,
        },
    )
    super_users: str = field(
        default="",
        metadata={
            "doc": "principals the authorizer allows everything, separated by semicolons "
            "(User:admin;User:ops)",
            "parse": super_users_text,
        },
    )
    allow_everyone_if_no_acl_found: bool = field(
        default=False,
        metadata={"doc": "with an authorizer, allow a resource that no ACL names to everyone"},
    )
    sasl_enabled_mechanisms: str = field(
        default="SCRAM-SHA-256,SCRAM-SHA-512",
        metadata={
            "doc": "SASL mechanisms SASL listeners offer: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 "
            "(each checks the users' SCRAM credentials)",
            "parse": sasl_mechanisms_text,
        },
    )
    sasl_server_max_receive_size: int = bounded(
        524_288, 1, INT32_MAX, "largest request a SASL listener reads before a connection logs in"
    )
    connection_failed_authentication_delay_ms: int = bounded(
        100, 0, INT32_MAX, "how long a connection whose login failed is held before it is closed"
    )
    socket_request_max_bytes: int = bounded(
        100 * 1024 * 1024, 1, INT32_MAX, "largest Kafka-protocol request a listener accepts"
    )
    log_dirs: str = field(
        default="/tmp/rafka-logs",
        metadata={"doc": "directory holding this broker's partition directories"},
    )
    replica_lag_time_max_ms: int = bounded(
        10_000, 1, INT64_MAX, "a follower this far behind leaves the ISR"
    )
    replica_fetch_wait_max_ms: int = bounded(
        500, 0, INT32_MAX, "longest a follower fetch waits at the leader"
    )
    replica_fetch_min_bytes: int = bounded(1, 1, INT32_MAX, "bytes a follower fetch waits for")
    replica_fetch_max_bytes: int = bounded(
        1 << 20, 0, INT32_MAX, "bytes a follower fetches per request"
    )
    replica_fetch_backoff_ms: int = bounded(
        1000, 0, INT32_MAX, "pause after a failed follower fetch"
    )
    replica_socket_timeout_ms: int = bounded(
        30_000, 1, INT32_MAX, "longest a follower waits for a fetch answer"
    )
    leader_replication_throttled_rate: int = bounded(
        INT64_MAX,
        0,
        INT64_MAX,
        "bytes/s this broker's leaders send to followers of the replicas in "
        "leader.replication.throttled.replicas (KIP-73)",
    )
    follower_replication_throttled_rate: int = bounded(
        INT64_MAX,
        0,
        INT64_MAX,
        "bytes/s this broker's followers fetch for the replicas in "
        "follower.replication.throttled.replicas (KIP-73)",
    )
    quota_window_num: int = bounded(
        DEFAULT_QUOTA_WINDOW_NUM,
        1,
        INT32_MAX,
        "samples a client quota's byte rate is measured over (KIP-13)",
    )
    quota_window_size_seconds: int = bounded(
        DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
        1,
        INT32_MAX,
        "seconds each sample of a client quota's byte rate spans",
    )
    replica_high_watermark_checkpoint_interval_ms: int = bounded(
        5000, 1, INT64_MAX, "how often the HW is checkpointed"
    )
    log_retention_check_interval_ms: int = bounded(
        300_000, 1, INT64_MAX, "how often retention and compaction run"
    )
    log_segment_bytes: int = bounded(1 << 30, 14, INT32_MAX, "default segment.bytes")
    log_roll_ms: int = bounded(7 * 24 * 3600 * 1000, 1, INT64_MAX, "default segment.ms")
    log_retention_ms: int = bounded(7 * 24 * 3600 * 1000, -1, INT64_MAX, "default retention.ms")
    log_retention_bytes: int = bounded(-1, -1, INT64_MAX, "default retention.bytes")
    log_cleanup_policy: str = field(default="delete", metadata={"doc": "default cleanup.policy"})
    log_index_interval_bytes: int = bounded(4096, 0, INT32_MAX, "default index.interval.bytes")
    log_index_size_max_bytes: int = bounded(
        10 * 1024 * 1024, 8, INT32_MAX, "default segment.index.bytes"
    )
    log_cleaner_delete_retention_ms: int = bounded(
        24 * 3600 * 1000, 0, INT64_MAX, "default delete.retention.ms"
    )
    log_cleaner_min_cleanable_ratio: float = bounded(
        0.5, 0.0, 1.0, "default min.cleanable.dirty.ratio"
    )
    log_segment_delete_delay_ms: int = bounded(60_000, 0, INT64_MAX, "default file.delete.delay.ms")
    log_flush_interval_messages: int = bounded(INT64_MAX, 1, INT64_MAX, "default flush.messages")
    log_flush_interval_ms: int = bounded(INT64_MAX, 0, INT64_MAX, "default flush.ms")
    message_max_bytes: int = bounded(1048588, 0, INT32_MAX, "default max.message.bytes")
    min_insync_replicas: int = bounded(1, 1, INT32_MAX, "default min.insync.replicas")
    unclean_leader_election_enable: bool = field(
        default=False, metadata={"doc": "default unclean.leader.election.enable"}
    )
    controlled_shutdown_enable: bool = field(
        default=True, metadata={"doc": "move leadership away before stopping"}
    )
    ray_failure_detection_enable: bool = field(
        default=True,
        metadata={
            "doc": "fail a broker over as soon as Ray reports its process dead, "
            "before its ZooKeeper session expires"
        },
    )
    auto_create_topics_enable: bool = field(
        default=True,
        metadata={"doc": "create a topic the first time a client asks for its metadata"},
    )
    delete_topic_enable: bool = field(
        default=True, metadata={"doc": "allow deleting topics (else TOPIC_DELETION_DISABLED)"}
    )
    auto_leader_rebalance_enable: bool = field(
        default=True,
        metadata={"doc": "the controller moves leadership back to preferred replicas by itself"},
    )
    leader_imbalance_check_interval_seconds: int = bounded(
        300, 1, INT32_MAX, "how often the controller checks the leader balance"
    )
    leader_imbalance_per_broker_percentage: int = bounded(
        10, 0, 100, "share of a broker's preferred partitions led elsewhere that triggers a balance"
    )
    num_partitions: int = bounded(1, 1, INT32_MAX, "partitions of an auto-created topic")
    default_replication_factor: int = bounded(
        1, 1, INT16_MAX, "replication factor of an auto-created topic"
    )
    offsets_topic_num_partitions: int = bounded(
        50, 1, INT32_MAX, "partitions of __consumer_offsets (fixed once created)"
    )
    offsets_topic_replication_factor: int = bounded(
        3, 1, INT16_MAX, "replication factor of __consumer_offsets (at most the live brokers)"
    )
    offsets_topic_segment_bytes: int = bounded(
        100 * 1024 * 1024, 14, INT32_MAX, "segment.bytes of __consumer_offsets"
    )
    offsets_commit_timeout_ms: int = bounded(
        5000, 1, INT32_MAX, "how long a commit waits for every in-sync offsets replica"
    )
    offset_metadata_max_bytes: int = bounded(
        4096, 0, INT32_MAX, "longest metadata string an offset commit may carry"
    )
    group_min_session_timeout_ms: int = bounded(
        6000, 0, INT32_MAX, "shortest session timeout a consumer may ask for"
    )
    group_max_session_timeout_ms: int = bounded(
        300_000, 0, INT32_MAX, "longest session timeout a consumer may ask for"
    )
    group_initial_rebalance_delay_ms: int = bounded(
        3000, 0, INT32_MAX, "how long a new group waits for more members before its first rebalance"
    )
    transaction_state_log_num_partitions: int = bounded(
        50, 1, INT32_MAX, "partitions of __transaction_state (fixed once created)"
    )
    transaction_state_log_replication_factor: int = bounded(
        3, 1, INT16_MAX, "replication factor of __transaction_state (at most the live brokers)"
    )
    transaction_state_log_min_isr: int = bounded(
        2, 1, INT32_MAX, "min.insync.replicas of __transaction_state"
    )
    transaction_state_log_segment_bytes: int = bounded(
        100 * 1024 * 1024, 14, INT32_MAX, "segment.bytes of __transaction_state"
    )
    transaction_max_timeout_ms: int = bounded(
        900_000, 1, INT32_MAX, "longest transaction.timeout.ms a producer may ask for"
    )
    transactional_id_expiration_ms: int = bounded(
        604_800_000, 1, INT32_MAX, "forget a transactional id unused this long"
    )
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = bounded(
        10_000, 1, INT32_MAX, "how often the coordinator looks for transactions past their timeout"
    )
    transaction_remove_expired_transaction_cleanup_interval_ms: int = bounded(
        3_600_000, 1, INT32_MAX, "how often the coordinator forgets expired transactional ids"
    )
    producer_id_expiration_ms: int = bounded(
        86_400_000, 1, INT32_MAX, "forget an idle producer id's sequence state after this long"
    )
    producer_id_expiration_check_interval_ms: int = bounded(
        600_000, 1, INT32_MAX, "how often replicas look for idle producer ids to forget"
    )
    metrics_enabled: bool = field(
        default=True,
        metadata={"doc": "record the broker's metrics (off only to measure what recording costs)"},
    )
    metrics_export_interval_ms: int = bounded(
        5_000, 100, INT32_MAX, "how often a broker hands its metrics to Ray's metrics system"
    )

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], base: BrokerConfig | None = None) -> BrokerConfig:
        """Build from Kafka names (``log.retention.ms``) or snake_case; INVALID_CONFIG on bad
        input."""
        return apply_overrides(base or cls(), values, "broker")

    def zk_security(self) -> ZkSecurity:
        """The ZooKeeper identity and ACL settings of this broker's sessions."""
        return ZkSecurity(
            self.zookeeper_digest_credentials,
            self.zookeeper_set_acl,
            self.zookeeper_acl_world_readable,
        )

    def with_broker_id(self, broker_id: int) -> BrokerConfig:
        """The same settings for another broker."""
        return dataclasses.replace(self, broker_id=broker_id)

    def log_config(self) -> LogConfig:
        """Topic defaults derived from the broker's ``log_*`` settings."""
        return LogConfig(
            segment_bytes=self.log_segment_bytes,
            segment_ms=self.log_roll_ms,
            retention_ms=self.log_retention_ms,
            retention_bytes=self.log_retention_bytes,
            cleanup_policy=self.log_cleanup_policy,
            index_interval_bytes=self.log_index_interval_bytes,
            segment_index_bytes=self.log_index_size_max_bytes,
            delete_retention_ms=self.log_cleaner_delete_retention_ms,
            min_cleanable_dirty_ratio=self.log_cleaner_min_cleanable_ratio,
            file_delete_delay_ms=self.log_segment_delete_delay_ms,
            flush_messages=self.log_flush_interval_messages,
            flush_ms=self.log_flush_interval_ms,
            max_message_bytes=self.message_max_bytes,
            min_insync_replicas=self.min_insync_replicas,
            unclean_leader_election_enable=self.unclean_leader_election_enable,
        )


LAUNCH_DEFAULTS: dict[str, Any] = {
    "listeners": "PLAINTEXT://:0",
    "offsets_topic_num_partitions": 8,
    "transaction_state_log_num_partitions": 4,
}
"""Defaults ``LocalCluster`` and ``rafka up`` use instead of Kafka's: several brokers share one
machine, so each listener takes a free port; and every replica is a process, so Kafka's 50 offsets
(or transaction state) partitions at replication factor 3 would start 150 of them on a group's (or
transactional producer's) first use."""
