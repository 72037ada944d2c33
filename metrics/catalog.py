"""Every metric rafka reports, declared once: Kafka's MBean names in snake_case, ``rafka_`` first.

A Kafka meter (``MessagesInPerSec``) is a Prometheus counter ending in ``_total``, whose rate a
dashboard computes; a Kafka gauge stays a gauge; Kafka's request-time percentiles are a histogram
in milliseconds. Every broker-side sample carries the ``broker`` label; per-topic metrics add
``topic`` (Kafka's BrokerTopicMetrics), per-partition ones add ``partition``.
"""

from __future__ import annotations

from rafka.metrics.registry import MetricKind, MetricSpec

COUNTER = MetricKind.COUNTER
GAUGE = MetricKind.GAUGE
HISTOGRAM = MetricKind.HISTOGRAM

TOPIC = ("broker", "topic")
PARTITION = ("broker", "topic", "partition")
BROKER = ("broker",)

REQUEST_TIME_BUCKETS_MS = (
    0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0,
    30000.0,
)  # fmt: skip
"""Upper bounds of the request-time buckets: sub-millisecond fetches to 30 s long polls."""

BATCH_SIZE_BUCKETS = (100.0, 1_000.0, 4_096.0, 16_384.0, 65_536.0, 262_144.0, 1_048_576.0)
"""Upper bounds, in bytes, of the producer's batch-size buckets."""

# Broker topic metrics (kafka.server:type=BrokerTopicMetrics), counted by partition leaders.
MESSAGES_IN = MetricSpec(
    "rafka_messages_in_total", COUNTER, "Records appended by leaders.", TOPIC, "MessagesInPerSec"
)
BYTES_IN = MetricSpec(
    "rafka_bytes_in_total", COUNTER, "Bytes appended by leaders.", TOPIC, "BytesInPerSec"
)
BYTES_OUT = MetricSpec(
    "rafka_bytes_out_total", COUNTER, "Bytes sent to consumers.", TOPIC, "BytesOutPerSec"
)
REPLICATION_BYTES_OUT = MetricSpec(
    "rafka_replication_bytes_out_total",
    COUNTER,
    "Bytes sent to follower replicas.",
    TOPIC,
    "ReplicationBytesOutPerSec",
)
PRODUCE_REQUESTS = MetricSpec(
    "rafka_total_produce_requests_total",
    COUNTER,
    "Produce requests for a topic's partitions.",
    TOPIC,
    "TotalProduceRequestsPerSec",
)
FETCH_REQUESTS = MetricSpec(
    "rafka_total_fetch_requests_total",
    COUNTER,
    "Fetch requests (consumers' and followers') for a topic's partitions.",
    TOPIC,
    "TotalFetchRequestsPerSec",
)
FAILED_PRODUCE_REQUESTS = MetricSpec(
    "rafka_failed_produce_requests_total",
    COUNTER,
    "Produce requests answered with an error.",
    TOPIC,
    "FailedProduceRequestsPerSec",
)
FAILED_FETCH_REQUESTS = MetricSpec(
    "rafka_failed_fetch_requests_total",
    COUNTER,
    "Fetch requests answered with an error.",
    TOPIC,
    "FailedFetchRequestsPerSec",
)

# Request metrics (kafka.network:type=RequestMetrics), per request type.
REQUESTS = MetricSpec(
    "rafka_requests_total",
    COUNTER,
    "Requests handled, by type (Produce, FetchConsumer, FetchFollower, Metadata, ...).",
    ("broker", "request"),
    "RequestsPerSec",
)
REQUEST_TOTAL_TIME = MetricSpec(
    "rafka_request_total_time_ms",
    HISTOGRAM,
    "Time from a request's arrival to its response, by type, in milliseconds.",
    ("broker", "request"),
    "TotalTimeMs",
    REQUEST_TIME_BUCKETS_MS,
)

# Replica manager (kafka.server:type=ReplicaManager), per broker.
PARTITION_COUNT = MetricSpec(
    "rafka_partition_count", GAUGE, "Partition replicas on the broker.", BROKER, "PartitionCount"
)
LEADER_COUNT = MetricSpec(
    "rafka_leader_count", GAUGE, "Partitions the broker leads.", BROKER, "LeaderCount"
)
UNDER_REPLICATED = MetricSpec(
    "rafka_under_replicated_partitions",
    GAUGE,
    "Partitions led here whose ISR is smaller than their replica set.",
    BROKER,
    "UnderReplicatedPartitions",
)
UNDER_MIN_ISR = MetricSpec(
    "rafka_under_min_isr_partition_count",
    GAUGE,
    "Partitions led here whose ISR is smaller than min.insync.replicas.",
    BROKER,
    "UnderMinIsrPartitionCount",
)
ISR_SHRINKS = MetricSpec(
    "rafka_isr_shrinks_total", COUNTER, "ISR shrinks by leaders here.", BROKER, "IsrShrinksPerSec"
)
ISR_EXPANDS = MetricSpec(
    "rafka_isr_expands_total",
    COUNTER,
    "ISR expansions by leaders here.",
    BROKER,
    "IsrExpandsPerSec",
)
PURGATORY_SIZE = MetricSpec(
    "rafka_purgatory_size",
    GAUGE,
    "Requests parked in a purgatory (Produce: acks=all waits; Fetch: long polls).",
    ("broker", "delayed_operation"),
    "PurgatorySize",
)

# Logs (kafka.log:type=Log), per partition replica.
LOG_SIZE = MetricSpec("rafka_log_size", GAUGE, "Bytes in the replica's log.", PARTITION, "Size")
LOG_START_OFFSET = MetricSpec(
    "rafka_log_start_offset", GAUGE, "The replica's log start offset.", PARTITION, "LogStartOffset"
)
LOG_END_OFFSET = MetricSpec(
    "rafka_log_end_offset", GAUGE, "The replica's log end offset.", PARTITION, "LogEndOffset"
)
HIGH_WATERMARK = MetricSpec(
    "rafka_high_watermark",
    GAUGE,
    "The partition's high watermark, as its leader knows it.",
    PARTITION,
    "HighWatermark",
)

# Controller (kafka.controller:type=KafkaController and ControllerStats).
ACTIVE_CONTROLLER = MetricSpec(
    "rafka_active_controller_count",
    GAUGE,
    "1 on the broker whose controller is active, 0 elsewhere.",
    BROKER,
    "ActiveControllerCount",
)
OFFLINE_PARTITIONS = MetricSpec(
    "rafka_offline_partitions_count",
    GAUGE,
    "Partitions without a live leader (reported by the active controller).",
    BROKER,
    "OfflinePartitionsCount",
)
GLOBAL_PARTITIONS = MetricSpec(
    "rafka_global_partition_count",
    GAUGE,
    "Partitions in the cluster (reported by the active controller).",
    BROKER,
    "GlobalPartitionCount",
)
LEADER_ELECTIONS = MetricSpec(
    "rafka_leader_elections_total",
    COUNTER,
    "Partition leaders elected by this broker's controller.",
    BROKER,
    "LeaderElectionRateAndTimeMs",
)
UNCLEAN_LEADER_ELECTIONS = MetricSpec(
    "rafka_unclean_leader_elections_total",
    COUNTER,
    "Leaders elected from outside the ISR by this broker's controller.",
    BROKER,
    "UncleanLeaderElectionsPerSec",
)

# Group coordinator (kafka.coordinator.group:type=GroupMetadataManager and GroupCoordinator).
GROUPS = MetricSpec(
    "rafka_group_count",
    GAUGE,
    "Consumer groups this broker coordinates, by state.",
    ("broker", "state"),
    "NumGroups<State>",
)
REBALANCES = MetricSpec(
    "rafka_group_rebalances_total",
    COUNTER,
    "Rebalances completed (generations started) by groups coordinated here.",
    BROKER,
    "GroupCompletedRebalancesPerSec",
)
OFFSET_COMMITS = MetricSpec(
    "rafka_offset_commits_total",
    COUNTER,
    "Partition offsets committed to groups coordinated here.",
    BROKER,
    "OffsetCommits",
)
CONSUMER_GROUP_OFFSET = MetricSpec(
    "rafka_consumergroup_current_offset",
    GAUGE,
    "A group's committed offset for a partition.",
    ("broker", "group", "topic", "partition"),
    "(kafka-consumer-groups CURRENT-OFFSET)",
)
CONSUMER_GROUP_LAG = MetricSpec(
    "rafka_consumergroup_lag",
    GAUGE,
    "The partition's high watermark minus the group's committed offset.",
    ("broker", "group", "topic", "partition"),
    "(kafka-consumer-groups LAG)",
)

# Clients (kafka-python's producer-metrics and consumer-fetch-manager-metrics), per client id.
CLIENT_RECORDS_SENT = MetricSpec(
    "rafka_producer_record_send_total",
    COUNTER,
    "Records a producer sent.",
    ("client_id",),
    "record-send-total",
)
CLIENT_BATCH_SIZE = MetricSpec(
    "rafka_producer_batch_size_bytes",
    HISTOGRAM,
    "Sizes of the batches a producer sent, in bytes.",
    ("client_id",),
    "batch-size-avg",
    BATCH_SIZE_BUCKETS,
)
CLIENT_REQUEST_LATENCY = MetricSpec(
    "rafka_producer_request_latency_ms",
    HISTOGRAM,
    "A producer's produce request round trips, in milliseconds.",
    ("client_id",),
    "request-latency-avg",
    REQUEST_TIME_BUCKETS_MS,
)
CLIENT_RETRIES = MetricSpec(
    "rafka_producer_record_retry_total",
    COUNTER,
    "Records a producer sent again after a retriable error.",
    ("client_id",),
    "record-retry-total",
)
CLIENT_RECORD_ERRORS = MetricSpec(
    "rafka_producer_record_error_total",
    COUNTER,
    "Records a producer failed to send (their futures raised).",
    ("client_id",),
    "record-error-total",
)
CLIENT_FETCH_LATENCY = MetricSpec(
    "rafka_consumer_fetch_latency_ms",
    HISTOGRAM,
    "A consumer's fetch round trips (long polls included), in milliseconds.",
    ("client_id",),
    "fetch-latency-avg",
    REQUEST_TIME_BUCKETS_MS,
)
CLIENT_BYTES_CONSUMED = MetricSpec(
    "rafka_consumer_bytes_consumed_total",
    COUNTER,
    "Bytes a consumer fetched.",
    ("client_id",),
    "bytes-consumed-total",
)
CLIENT_RECORDS_CONSUMED = MetricSpec(
    "rafka_consumer_records_consumed_total",
    COUNTER,
    "Records a consumer returned from poll.",
    ("client_id",),
    "records-consumed-total",
)
CLIENT_RECORDS_LAG = MetricSpec(
    "rafka_consumer_records_lag",
    GAUGE,
    "Records between a consumer's position and the high watermark (the last stable offset with "
    "read_committed), per partition.",
    ("client_id", "topic", "partition"),
    "records-lag",
)

ALL: tuple[MetricSpec, ...] = tuple(
    value for value in list(globals().values()) if isinstance(value, MetricSpec)
)
"""Every metric above, for the docs table and the Grafana dashboard test."""
