"""Per-topic log configuration: Kafka's topic config names in snake_case, validated once.

Every setting is declared once in ``LogConfig`` with its default and allowed range; ``from_dict``
accepts Kafka's dotted names (``retention.ms``) or snake_case (``retention_ms``) and rejects unknown
keys or out-of-range values with INVALID_CONFIG naming the key and what is allowed.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from rafka.protocol.errors import InvalidConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Config = TypeVar("_Config", bound="DataclassInstance")

INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1
INT16_MAX = (1 << 15) - 1
CLEANUP_POLICIES = ("delete", "compact", "compact,delete")
ALL_REPLICAS = "*"
"""A ``*.replication.throttled.replicas`` value naming every replica of the topic."""


@dataclass(frozen=True)
class ThrottledReplicas:
    """A ``leader``/``follower.replication.throttled.replicas`` value (KIP-73): every replica
    (``*``) or the listed ``partition:broker`` pairs; empty throttles none."""

    every: bool = False
    replicas: frozenset[tuple[int, int]] = frozenset()

    @staticmethod
    @functools.lru_cache(maxsize=256)
    def parse(text: str) -> ThrottledReplicas:
        """Read ``*``, ``0:1,1:2`` or ``""``; ValueError says what is wrong."""
        items = [item.strip() for item in text.split(",") if item.strip()]
        if items == [ALL_REPLICAS]:
            return ThrottledReplicas(every=True)
        pairs = set()
        for item in items:
            partition, colon, broker = item.partition(":")
            if not (colon and partition.isdigit() and broker.isdigit()):
                raise ValueError(
                    f"{item!r} is not partition:broker; the value must be the literal '*' or a "
                    "list [partitionId]:[brokerId],[partitionId]:[brokerId],..."
                )
            pairs.add((int(partition), int(broker)))
        return ThrottledReplicas(replicas=frozenset(pairs))

    def includes(self, partition: int, broker: int) -> bool:
        """Whether the replica of ``partition`` on ``broker`` is throttled."""
        return self.every or (partition, broker) in self.replicas

    def __str__(self) -> str:
        if self.every:
            return ALL_REPLICAS
        return ",".join(f"{p}:{b}" for p, b in sorted(self.replicas))


def _throttled_replicas(text: str) -> str:
    """A throttled-replicas value checked and written canonically (sorted, no duplicates)."""
    return str(ThrottledReplicas.parse(text))


def bounded(default: Any, low: float, high: float, doc: str) -> Any:
    """A config field with a default, an allowed range and a one-line description."""
    return field(default=default, metadata={"min": low, "max": high, "doc": doc})


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Settings of one partition log (Kafka's topic-level configs)."""

    segment_bytes: int = bounded(
        1 << 30, 14, INT32_MAX, "roll a new segment once the active one reaches this size"
    )
    segment_ms: int = bounded(
        7 * 24 * 3600 * 1000, 1, INT64_MAX, "roll a new segment after this long even if not full"
    )
    segment_index_bytes: int = bounded(
        10 * 1024 * 1024,
        8,
        INT32_MAX,
        "size at which the offset index is full and the segment rolls",
    )
    index_interval_bytes: int = bounded(
        4096, 0, INT32_MAX, "bytes of log between two sparse index entries"
    )
    retention_ms: int = bounded(
        7 * 24 * 3600 * 1000, -1, INT64_MAX, "delete segments older than this (-1: keep forever)"
    )
    retention_bytes: int = bounded(
        -1, -1, INT64_MAX, "delete old segments while the log is larger than this (-1: no limit)"
    )
    cleanup_policy: str = field(
        default="delete", metadata={"choices": CLEANUP_POLICIES, "doc": "delete, compact, or both"}
    )
    delete_retention_ms: int = bounded(
        24 * 3600 * 1000, 0, INT64_MAX, "how long compaction keeps tombstones"
    )
    min_cleanable_dirty_ratio: float = bounded(
        0.5, 0.0, 1.0, "compact once this share of the log is uncompacted"
    )
    max_message_bytes: int = bounded(1048588, 0, INT32_MAX, "largest batch the log accepts")
    flush_messages: int = bounded(
        INT64_MAX, 1, INT64_MAX, "fsync after this many records (1: every append)"
    )
    flush_ms: int = bounded(
        INT64_MAX, 0, INT64_MAX, "fsync when the oldest unflushed record is this old"
    )
    min_insync_replicas: int = bounded(
        1, 1, INT32_MAX, "acks=all needs at least this many in-sync replicas"
    )
    unclean_leader_election_enable: bool = field(
        default=False, metadata={"doc": "allow an out-of-sync replica to become leader"}
    )
    file_delete_delay_ms: int = bounded(
        60_000, 0, INT64_MAX, "how long a deleted log's directory waits before it is removed"
    )
    leader_replication_throttled_replicas: str = field(
        default="",
        metadata={
            "parse": _throttled_replicas,
            "doc": "replicas (partition:broker or *) whose leader's replication traffic counts "
            "against leader.replication.throttled.rate",
        },
    )
    follower_replication_throttled_replicas: str = field(
        default="",
        metadata={
            "parse": _throttled_replicas,
            "doc": "replicas (partition:broker or *) whose fetches count against "
            "follower.replication.throttled.rate",
        },
    )

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], base: LogConfig | None = None) -> LogConfig:
        """A config from Kafka names (``retention.ms``) or snake_case, over ``base`` defaults."""
        return apply_overrides(base or cls(), values, "topic")

    def to_dict(self) -> dict[str, Any]:
        """The settings under Kafka's dotted names, as ``kafka-configs`` would show them."""
        return {f.name.replace("_", "."): getattr(self, f.name) for f in dataclasses.fields(self)}

    @property
    def leader_throttled(self) -> ThrottledReplicas:
        """The parsed ``leader.replication.throttled.replicas``."""
        return ThrottledReplicas.parse(self.leader_replication_throttled_replicas)

    @property
    def follower_throttled(self) -> ThrottledReplicas:
        """The parsed ``follower.replication.throttled.replicas``."""
        return ThrottledReplicas.parse(self.follower_replication_throttled_replicas)

    @property
    def compact(self) -> bool:
        """Whether the log is compacted."""
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """Whether retention deletes old segments."""
        return "delete" in self.cleanup_policy


def apply_overrides(base: _Config, values: Mapping[str, Any], kind: str) -> _Config:
    """``base`` (a config dataclass) with ``values`` applied, each validated against its field."""
    known = {f.name: f for f in dataclasses.fields(base)}
    changes: dict[str, Any] = {}
    for raw_key, raw_value in values.items():
        name = raw_key.replace(".", "_")
        if name not in known:
            names = ", ".join(sorted(k.replace("_", ".") for k in known))
            raise InvalidConfigError(f"unknown {kind} config {raw_key!r}; known: {names}")
        changes[name] = coerce_value(raw_key, known[name], raw_value)
    return dataclasses.replace(base, **changes)


_LIST_SPACES = re.compile(r"\s*(?<!\\)([,;])\s*")
"""Spaces around a list separator that is not escaped (``\\,`` is a comma inside a principal)."""


def coerce_value(key: str, spec: dataclasses.Field[Any], value: Any) -> Any:
    """Convert a config value (possibly a string from a CLI or Spark option) and check its range.
    An error names a sensitive config's value as ``[hidden]``: it is a secret, even when wrong."""
    shown = "[hidden]" if spec.metadata.get("sensitive") else repr(value)
    kind = spec.type if isinstance(spec.type, str) else spec.type.__name__
    try:
        if kind == "bool":
            if isinstance(value, str):
                if value.lower() not in ("true", "false"):
                    raise ValueError(value)
                converted: Any = value.lower() == "true"
            else:
                converted = bool(value)
        elif kind == "str":
            # Spaces around list separators go (``compact, delete``); those inside a value stay
            # (a path, a certificate principal), and a secret is taken exactly as given.
            text = str(value)
            converted = (
                text if spec.metadata.get("sensitive") else _LIST_SPACES.sub(r"\1", text).strip()
            )
        elif kind == "float":
            converted = float(value)
        else:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            converted = int(value)
    except (TypeError, ValueError):
        raise InvalidConfigError(f"{key}={shown} is not a valid {kind}") from None
    parse = spec.metadata.get("parse")
    if parse is not None:
        try:
            converted = parse(converted)
        except ValueError as exc:
            raise InvalidConfigError(f"{key}={shown} is invalid: {exc}") from None
    choices = spec.metadata.get("choices")
    if choices is not None and converted not in choices:
        raise InvalidConfigError(f"{key}={shown} must be one of {', '.join(choices)}")
    low, high = spec.metadata.get("min"), spec.metadata.get("max")
    if low is not None and not (low <= converted <= high):
        raise InvalidConfigError(f"{key}={shown} is out of range: allowed [{low}, {high}]")
    return converted
