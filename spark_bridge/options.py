"""The rafka data source's options: parsed and validated once, with Spark's Kafka names and rules.

Spark hands a data source its options as a case-insensitive map of strings. Everything here is pure
(no Spark, no Ray), so it runs the same in the planner process, on the driver and in unit tests. A
bad value raises ``InvalidConfigError`` (Kafka's INVALID_CONFIG) whose message starts with the
option's name as Spark users spell it, e.g. ``option 'startingOffsets': ...``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from rafka.actors.names import DEFAULT_NAMESPACE
from rafka.clients.transaction_filter import ISOLATION_LEVELS
from rafka.protocol.errors import InvalidConfigError
from rafka.protocol.messages.fetch import READ_UNCOMMITTED
from rafka.protocol.types import TopicPartition

EARLIEST = -2  # Kafka's sentinel offsets in startingOffsets / endingOffsets JSON
LATEST = -1


# Canonical spelling of every option, for messages: Spark lower-cases the keys it hands over.
SOURCE_OPTIONS = (
    "assign",
    "subscribe",
    "subscribePattern",
    "startingOffsets",
    "endingOffsets",
    "startingTimestamp",
    "endingTimestamp",
    "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "minPartitions",
    "failOnDataLoss",
    "includeHeaders",
    "kafkaConsumer.pollTimeoutMs",
    "kafka.max.partition.fetch.bytes",
    "kafka.fetch.max.wait.ms",
    "kafka.isolation.level",
)
SINK_OPTIONS = ("transactional.id.prefix",)
CLUSTER_OPTIONS = (
    "rafka.ray.address",
    "rafka.namespace",
    "rafka.cluster.id",
    "kafka.request.timeout.ms",
)
_CANONICAL = {name.lower(): name for name in SOURCE_OPTIONS + SINK_OPTIONS + CLUSTER_OPTIONS}

# Spark's Kafka source and sink refuse these, because the data source itself owns what they control.
_REFUSED = {
    "kafka.auto.offset.reset": "set the source option 'startingOffsets' instead",
    "kafka.enable.auto.commit": (
        "Spark tracks offsets in its checkpoint and never commits them to the cluster"
    ),
    "kafka.key.deserializer": (
        "keys are always binary; use DataFrame operations to deserialize them"
    ),
    "kafka.value.deserializer": (
        "values are always binary; use DataFrame operations to deserialize them"
    ),
    "kafka.key.serializer": (
        "keys must be string or binary columns; use DataFrame operations to serialize them"
    ),
    "kafka.value.serializer": (
        "values must be string or binary columns; use DataFrame operations to serialize them"
    ),
    "kafka.partitioner": (
        "give a 'partition' column, or leave it null for the producer's partitioner"
    ),
}
_IGNORED = {"kafka.bootstrap.servers"}  # rafka clients find brokers through Ray, by namespace
_DURATION = re.compile(r"^\s*(\d+)\s*(us|ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_DURATION_MS = {
    "us": 0.001,
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
}


@functools.cache
def producer_defaults() -> dict[str, Any]:
    """The producer's settings and defaults, imported on first use."""
    from rafka.clients.config import PRODUCER_CONFIG

    return dict(PRODUCER_CONFIG)


@functools.cache
def producer_options() -> dict[str, str]:
    """Producer settings a sink accepts: Kafka name (``linger.ms``) to keyword (``linger_ms``)."""
    skipped = (
        "key_serializer",
        "value_serializer",
        "partitioner",
        "bootstrap_servers",
        "request_timeout_ms",
    )
    return {name.replace("_", "."): name for name in producer_defaults() if name not in skipped}


def option_error(option: str, problem: str) -> InvalidConfigError:
    """An INVALID_CONFIG error whose message names the option first."""
    return InvalidConfigError(f"option '{_CANONICAL.get(option.lower(), option)}': {problem}")


@dataclass(frozen=True)
class ClusterSettings:
    """Where the cluster is: a Ray address (None: RAY_ADDRESS or 'auto') and a namespace."""

    ray_address: str | None = None
    namespace: str = DEFAULT_NAMESPACE
    cluster_id: str | None = None
    request_timeout_ms: int = 30_000


@dataclass(frozen=True)
class TopicSelection:
    """Which partitions a source reads: one of ``assign``, ``subscribe`` or ``subscribePattern``."""

    option: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assignment: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class OffsetSpec:
    """A starting or ending point: ``earliest``, ``latest``, offsets per partition, or timestamps.

    ``option`` is the option it came from, so resolution errors can name it.
    """

    kind: str  # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps"
    option: str
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int | None = None


@dataclass(frozen=True)
class SourceOptions:
    """Everything a reader needs, already validated."""

    cluster: ClusterSettings
    selection: TopicSelection
    starting: OffsetSpec
    ending: OffsetSpec
    timestamp_strategy: str = "error"
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    max_partition_fetch_bytes: int = 1 << 20
    fetch_max_wait_ms: int = 500
    poll_timeout_ms: int = 120_000
    isolation_level: int = READ_UNCOMMITTED


@dataclass(frozen=True)
class SinkOptions:
    """Everything a writer needs: the cluster, a default topic and the producer's config; with a
    ``transactional_id_prefix`` each task writes its rows in one transaction."""

    cluster: ClusterSettings
    topic: str | None
    producer_config: tuple[tuple[str, Any], ...]
    transactional_id_prefix: str | None = None
    transaction_timeout_ms: int | None = None


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


@overload
def _int(options: Mapping[str, str], name: str, default: int, minimum: int) -> int: ...
@overload
def _int(options: Mapping[str, str], name: str, default: None, minimum: int) -> int | None: ...
def _int(options: Mapping[str, str], name: str, default: int | None, minimum: int) -> int | None:
    """The integer option ``name`` (at least ``minimum``), or ``default`` if it is not set."""
    raw = options.get(name.lower())
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise option_error(name, f"{raw!r} is not an integer") from None
    if value < minimum:
        raise option_error(name, f"must be >= {minimum}, got {value}")
    return value


def _bool(options: dict[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise option_error(name, f"{raw!r} must be 'true' or 'false'")
    return raw.strip().lower() == "true"


def parse_duration_ms(name: str, raw: str) -> int:
    """Spark's time strings (``15m``, ``30s``, ``100ms``; a bare number is milliseconds)."""
    match = _DURATION.match(raw)
    if match is None:
        raise option_error(name, f"{raw!r} is not a duration such as '15m', '30s' or '500ms'")
    return int(int(match.group(1)) * _DURATION_MS[(match.group(2) or "ms").lower()])


def _json_object(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise option_error(
            name, f"malformed JSON ({exc.msg} at character {exc.pos}): {raw!r}"
        ) from None
    if not isinstance(value, dict):
        raise option_error(name, f"expected a JSON object, got {raw!r}")
    return value


def parse_partition_json(name: str, raw: str) -> dict[TopicPartition, int]:
    """``{"topic": {"0": 23, "1": -2}}`` (Spark's JSON) to ``{(topic, 0): 23, ...}``."""
    result: dict[TopicPartition, int] = {}
    for topic, partitions in _json_object(name, raw).items():
        if not isinstance(partitions, dict):
            raise option_error(
                name, f"topic {topic!r} must map partition numbers to values, got {partitions!r}"
            )
        for partition, value in partitions.items():
            try:
                number = int(partition)
            except ValueError:
                raise option_error(
                    name, f"partition {partition!r} of topic {topic!r} is not a number"
                ) from None
            if type(value) is not int:
                raise option_error(
                    name, f"value for {topic}-{partition} must be an integer, got {value!r}"
                )
            result[TopicPartition(topic, number)] = value
    return result


def _selection(options: dict[str, str]) -> TopicSelection:
    given = [
        name for name in ("assign", "subscribe", "subscribePattern") if name.lower() in options
    ]
    if len(given) != 1:
        found = f"got {', '.join(repr(g) for g in given)}" if given else "none was given"
        raise option_error(
            given[-1] if given else "subscribe",
            f"exactly one of 'assign', 'subscribe' or 'subscribePattern' must be set ({found})",
        )
    name = given[0]
    raw = options[name.lower()]
    if name == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise option_error(name, f"no topic names in {raw!r}")
        return TopicSelection(name, topics=topics)
    if name == "subscribePattern":
        if not raw.strip():
            raise option_error(name, "the pattern is empty")
        try:
            re.compile(raw)
        except re.error as exc:
            raise option_error(name, f"{raw!r} is not a valid regular expression: {exc}") from None
        return TopicSelection(name, pattern=raw)
    assignment: list[TopicPartition] = []
    for topic, partitions in _json_object(name, raw).items():
        if not isinstance(partitions, list) or not all(
            type(p) is int and p >= 0 for p in partitions
        ):
            raise option_error(
                name, f"topic {topic!r} must map to a list of partition numbers, got {partitions!r}"
            )
        assignment.extend(TopicPartition(topic, p) for p in partitions)
    if not assignment:
        raise option_error(name, f"no partitions in {raw!r}")
    return TopicSelection(name, assignment=tuple(dict.fromkeys(assignment)))


def _offset_spec(options: dict[str, str], which: str, streaming: bool) -> OffsetSpec:
    """Starting or ending point; timestamp options win over offsets options, as in Spark."""
    timestamp_name, by_timestamp_name, offsets_name = (
        f"{which}Timestamp",
        f"{which}OffsetsByTimestamp",
        f"{which}Offsets",
    )
    if timestamp_name.lower() in options:
        timestamp = _int(options, timestamp_name, None, 0)
        return OffsetSpec("timestamp", timestamp_name, timestamp=timestamp)
    if by_timestamp_name.lower() in options:
        stamps = parse_partition_json(by_timestamp_name, options[by_timestamp_name.lower()])
        negative = [f"{t}-{p}" for (t, p), ts in stamps.items() if ts < 0]
        if negative:
            raise option_error(
                by_timestamp_name, f"timestamps must be >= 0 (see {', '.join(negative)})"
            )
        return OffsetSpec("timestamps", by_timestamp_name, offsets=stamps)
    default = "latest" if (which == "ending" or streaming) else "earliest"
    raw = options.get(offsets_name.lower(), default).strip()
    if raw.lower() in ("earliest", "latest"):
        kind = raw.lower()
        if not streaming and which == "starting" and kind == "latest":
            raise option_error(
                offsets_name, "'latest' is not allowed for batch queries (it would read nothing)"
            )
        if which == "ending" and kind == "earliest":
            raise option_error(offsets_name, "'earliest' is not allowed as an ending offset")
        return OffsetSpec(kind, offsets_name)
    offsets = parse_partition_json(offsets_name, raw)
    for (topic, partition), offset in offsets.items():
        if offset < EARLIEST:
            raise option_error(offsets_name, f"offset {offset} for {topic}-{partition} is below -2")
        if not streaming and which == "starting" and offset == LATEST:
            raise option_error(
                offsets_name,
                f"-1 (latest) for {topic}-{partition} is not allowed for batch queries",
            )
        if which == "ending" and offset == EARLIEST:
            raise option_error(
                offsets_name,
                f"-2 (earliest) for {topic}-{partition} is not allowed as an ending offset",
            )
    return OffsetSpec("offsets", offsets_name, offsets=offsets)


def _check_kafka_keys(options: dict[str, str], allowed: set[str]) -> None:
    for key in options:
        if key in _REFUSED:
            raise option_error(key, f"not supported: {_REFUSED[key]}")
        if key.startswith("kafka.") and key not in allowed and key not in _IGNORED:
            raise option_error(
                key, f"unknown Kafka client setting; supported: {', '.join(sorted(allowed))}"
            )


def include_headers(options: Mapping[str, str]) -> bool:
    """Just ``includeHeaders``: the schema depends on it, and Spark
    asks for the schema before it knows whether the query is a batch
    or a streaming one (which decides what the other options may say)."""
    return _bool(_lower(options), "includeHeaders", False)


def parse_cluster(options: Mapping[str, str]) -> ClusterSettings:
    """The ``rafka.*`` options that say where the cluster is."""
    lowered = _lower(options)
    address = lowered.get("rafka.ray.address", "").strip() or None
    namespace = lowered.get("rafka.namespace", DEFAULT_NAMESPACE).strip()
    if not namespace:
        raise option_error("rafka.namespace", "the namespace is empty")
    cluster_id = lowered.get("rafka.cluster.id", "").strip() or None
    timeout = _int(lowered, "kafka.request.timeout.ms", 30_000, 1)
    return ClusterSettings(address, namespace, cluster_id, timeout)


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Validate a reader's options (batch or streaming) the way Spark's Kafka source does."""
    lowered = _lower(options)
    _check_kafka_keys(
        lowered,
        {
            "kafka.max.partition.fetch.bytes",
            "kafka.fetch.max.wait.ms",
            "kafka.request.timeout.ms",
            "kafka.isolation.level",
        },
    )
    if streaming:
        for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
            if name.lower() in lowered:
                raise option_error(name, "ending offsets are not valid in streaming queries")
    if "topic" in lowered:
        raise option_error(
            "topic", "only the sink takes 'topic'; use 'subscribe' or 'assign' to read"
        )
    strategy = lowered.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise option_error(
            "startingOffsetsByTimestampStrategy", f"{strategy!r} must be 'error' or 'latest'"
        )
    max_offsets = _int(lowered, "maxOffsetsPerTrigger", None, 1)
    min_offsets = _int(lowered, "minOffsetsPerTrigger", None, 1)
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise option_error(
            "minOffsetsPerTrigger", f"{min_offsets} exceeds maxOffsetsPerTrigger {max_offsets}"
        )
    delay = lowered.get("maxtriggerdelay")
    return SourceOptions(
        cluster=parse_cluster(options),
        selection=_selection(lowered),
        starting=_offset_spec(lowered, "starting", streaming),
        ending=_offset_spec(lowered, "ending", streaming),
        timestamp_strategy=strategy,
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=15 * 60_000
        if delay is None
        else parse_duration_ms("maxTriggerDelay", delay),
        min_partitions=_int(lowered, "minPartitions", None, 1),
        fail_on_data_loss=_bool(lowered, "failOnDataLoss", True),
        include_headers=_bool(lowered, "includeHeaders", False),
        max_partition_fetch_bytes=_int(lowered, "kafka.max.partition.fetch.bytes", 1 << 20, 1),
        fetch_max_wait_ms=_int(lowered, "kafka.fetch.max.wait.ms", 500, 0),
        poll_timeout_ms=_int(lowered, "kafkaConsumer.pollTimeoutMs", 120_000, 1),
        isolation_level=_isolation_level(lowered),
    )


def _isolation_level(options: dict[str, str]) -> int:
    """``kafka.isolation.level`` (or bare ``isolation.level``; the prefixed one wins):
    ``read_committed`` reads committed transactional records only, up to the last stable
    offset."""
    for name in ("kafka.isolation.level", "isolation.level"):
        raw = options.get(name)
        if raw is not None:
            level = ISOLATION_LEVELS.get(raw.strip().lower())
            if level is None:
                raise option_error(name, f"{raw!r} must be 'read_committed' or 'read_uncommitted'")
            return level
    return READ_UNCOMMITTED


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Validate a writer's options: ``topic``, cluster settings and producer settings.

    Producer settings use Kafka's names, bare (``linger.ms``) or as Spark
    writes them (``kafka.linger.ms``); other options
    (``checkpointLocation``, ``path``) belong to Spark and are ignored here.
    ``transactional.id.prefix`` (bare or ``kafka.``-prefixed) makes each task's output one
    transaction of the producer ``<prefix>-<Spark partition id>``, which the driver commits once
    every task prepared; ``transaction.timeout.ms`` (bare or prefixed, only with a prefix) is those
    producers' transaction timeout, and must exceed the job's duration.
    """
    lowered = _lower(options)
    known = producer_options()
    _check_kafka_keys(
        lowered,
        {f"kafka.{name}" for name in known}
        | {
            "kafka.request.timeout.ms",
            "kafka.transactional.id.prefix",
            "kafka.transaction.timeout.ms",
        },
    )
    config: dict[str, Any] = {}
    for key, raw in lowered.items():
        name = key.removeprefix("kafka.")
        if name not in known:
            continue
        snake = known[name]
        if snake in config and not key.startswith("kafka."):
            continue  # 'kafka.linger.ms' and 'linger.ms' both given: the prefixed one wins
        config[snake] = _producer_value(key, snake, raw)
    cluster = parse_cluster(options)
    config["request_timeout_ms"] = cluster.request_timeout_ms
    topic = lowered.get("topic", "").strip() or None
    prefix = _transactional_prefix(lowered)
    return SinkOptions(
        cluster,
        topic,
        tuple(sorted(config.items())),
        prefix,
        _transaction_timeout(lowered, prefix is not None),
    )


def _transactional_prefix(options: dict[str, str]) -> str | None:
    """``kafka.transactional.id.prefix`` or ``transactional.id.prefix`` (the prefixed one wins)."""
    for name in ("kafka.transactional.id.prefix", "transactional.id.prefix"):
        raw = options.get(name)
        if raw is not None:
            if not raw.strip():
                raise option_error(name, "the prefix is empty")
            return raw.strip()
    return None


def _transaction_timeout(options: dict[str, str], transactional: bool) -> int | None:
    """``kafka.transaction.timeout.ms`` or ``transaction.timeout.ms`` (the prefixed one wins), which
    only a transactional sink has a use for."""
    for name in ("kafka.transaction.timeout.ms", "transaction.timeout.ms"):
        if name in options:
            if not transactional:
                raise option_error(name, "only applies with the option 'transactional.id.prefix'")
            return _int(options, name, None, 1)
    return None


def _producer_value(key: str, snake: str, raw: str) -> Any:
    default = producer_defaults()[snake]
    value = raw.strip()
    if snake == "acks":
        if value.lower() not in ("all", "-1", "0", "1"):
            raise option_error(key, f"{raw!r} must be 0, 1, -1 or 'all'")
        return value.lower()
    if snake == "compression_type":
        if value.lower() not in ("none", "gzip", "snappy", "lz4", "zstd"):
            raise option_error(key, f"{raw!r} is not one of none, gzip, snappy, lz4, zstd")
        return value.lower()
    if isinstance(default, int) and not isinstance(default, bool):
        try:
            number = int(value)
        except ValueError:
            raise option_error(key, f"{raw!r} is not an integer") from None
        if number < 0:
            raise option_error(key, f"must be >= 0, got {number}")
        return number
    return value
