"""Dynamic configs: which configs exist, how a change is validated, and how a topic's effective
config is resolved from its levels, with no Ray and no ZooKeeper.

Every topic config is a ``LogConfig`` field; every broker config a ``BrokerConfig`` field. A topic
config's broker-level synonym (``log.retention.ms`` for ``retention.ms``) is its default for every
topic, and is dynamic: it may be overridden for one broker (``/config/brokers/<id>``) or the whole
cluster (``/config/brokers/<default>``). Precedence, as in Kafka: topic override, broker override,
cluster default, static broker config, built-in default.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rafka.actors.broker.config import BrokerConfig
from rafka.log.config import LogConfig, coerce_value
from rafka.protocol.configs import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigSource,
    ConfigSynonym,
)
from rafka.protocol.errors import InvalidConfigError

logger = logging.getLogger(__name__)

TOPIC_TO_BROKER: Mapping[str, str] = {
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "segment.index.bytes": "log.index.size.max.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "cleanup.policy": "log.cleanup.policy",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "max.message.bytes": "message.max.bytes",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
}
"""Each topic config's broker-level synonym (Kafka's LogConfig.TopicConfigSynonyms); the
replication throttle lists have none, as in Kafka."""

BROKER_ONLY_DYNAMIC = frozenset(
    {"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
)
"""Dynamic broker configs that are no topic config's default (KIP-73's replication quotas)."""

LIST_CONFIGS = frozenset(
    {
        "cleanup.policy",
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    }
)
"""Configs whose value is a comma-separated list (the only ones APPEND and SUBTRACT apply to)."""


@dataclass(frozen=True)
class ConfigDefinition:
    """One config: its Kafka name, the dataclass field that holds it, and for a topic config the
    broker config it defaults to; a broker config is dynamic if it is such a synonym. A sensitive
    one (a password) is described without its value, as Kafka's PASSWORD configs are."""

    name: str
    spec: dataclasses.Field[Any]
    broker_name: str | None = None
    dynamic: bool = False

    @property
    def sensitive(self) -> bool:
        """Whether the value is a secret that DescribeConfigs must not return."""
        return bool(self.spec.metadata.get("sensitive", False))

    @property
    def attribute(self) -> str:
        """The field's snake_case name."""
        return self.spec.name


def kafka_name(key: str) -> str:
    """A config name as Kafka spells it (``retention_ms`` -> ``retention.ms``)."""
    return key.replace("_", ".")


def _definitions(cls: type[Any], kind: str) -> dict[str, ConfigDefinition]:
    dynamic = set(TOPIC_TO_BROKER.values()) | BROKER_ONLY_DYNAMIC
    table = {}
    for spec in dataclasses.fields(cls):
        name = kafka_name(spec.name)
        if kind == "topic":
            table[name] = ConfigDefinition(name, spec, TOPIC_TO_BROKER.get(name), dynamic=True)
        else:
            table[name] = ConfigDefinition(name, spec, dynamic=name in dynamic)
    return table


TOPIC_CONFIGS: Mapping[str, ConfigDefinition] = _definitions(LogConfig, "topic")
BROKER_CONFIGS: Mapping[str, ConfigDefinition] = _definitions(BrokerConfig, "broker")
_TOPIC_OF_BROKER = {broker: topic for topic, broker in TOPIC_TO_BROKER.items()}


def format_value(value: Any) -> str:
    """A config value as Kafka writes it (``true``, ``60000``, ``0.5``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _checked(name: str, definition: ConfigDefinition, value: Any) -> str:
    """``value`` converted, range-checked and written back as text; INVALID_CONFIG if bad."""
    if value is None:
        raise InvalidConfigError(f"{name} needs a value")
    spec = definition.spec
    topic_name = _TOPIC_OF_BROKER.get(name, name)
    if topic_name in TOPIC_CONFIGS:
        # A broker synonym obeys its topic config's rules (choices, ranges).
        spec = TOPIC_CONFIGS[topic_name].spec
    if topic_name in LIST_CONFIGS:
        value = ",".join(sorted({v.strip() for v in str(value).split(",") if v.strip()}))
    return format_value(coerce_value(name, spec, value))


def validate_topic_config(values: Mapping[str, Any]) -> dict[str, str]:
    """Topic overrides under Kafka's names as text; INVALID_CONFIG naming the first unknown name or
    bad value."""
    checked = {}
    for key, value in values.items():
        name = kafka_name(key)
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise InvalidConfigError(
                f"unknown topic config {key}={value!r}; known: {', '.join(sorted(TOPIC_CONFIGS))}"
            )
        checked[name] = _checked(name, definition, value)
    return checked


def validate_broker_config(values: Mapping[str, Any]) -> dict[str, str]:
    """Dynamic broker overrides under Kafka's names as text; INVALID_CONFIG for an unknown name, a
    bad value or a config that cannot change while brokers run."""
    checked = {}
    for key, value in values.items():
        name = kafka_name(key)
        definition = BROKER_CONFIGS.get(name)
        if definition is None:
            raise InvalidConfigError(f"unknown broker config {key}={value!r}")
        if not definition.dynamic:
            dynamic = ", ".join(sorted(d.name for d in BROKER_CONFIGS.values() if d.dynamic))
            raise InvalidConfigError(
                f"broker config {key}={value!r} cannot be changed dynamically; "
                f"dynamic broker configs: {dynamic}"
            )
        checked[name] = _checked(name, definition, value)
    return checked


def apply_ops(
    current: Mapping[str, str],
    ops: Mapping[str, AlterConfigOp],
    effective: Mapping[str, str],
) -> dict[str, str]:
    """The override set after incremental ``ops`` (Kafka's IncrementalAlterConfigs): SET replaces
    a value, DELETE drops the override, APPEND and SUBTRACT add or remove items of a list config,
    starting from its ``effective`` value when it has no override. Values are validated later."""
    result = dict(current)
    for key, op in ops.items():
        name = kafka_name(key)
        if op.op_type is AlterConfigOpType.DELETE:
            result.pop(name, None)
        elif op.op_type is AlterConfigOpType.SET:
            if op.value is None:
                raise InvalidConfigError(f"SET {name} needs a value")
            result[name] = op.value
        else:
            topic_name = _TOPIC_OF_BROKER.get(name, name)
            if topic_name not in LIST_CONFIGS:
                raise InvalidConfigError(
                    f"{op.op_type.name} {name}={op.value!r}: only list configs "
                    f"({', '.join(sorted(LIST_CONFIGS))}) can be appended to or subtracted from"
                )
            items = [v for v in result.get(name, effective.get(name, "")).split(",") if v]
            changed = [v.strip() for v in (op.value or "").split(",") if v.strip()]
            if op.op_type is AlterConfigOpType.APPEND:
                items += [v for v in changed if v not in items]
            else:
                items = [v for v in items if v not in changed]
            result[name] = ",".join(items)
    return result


@dataclass(frozen=True)
class DynamicOverrides:
    """The dynamic broker-level overrides one broker sees: its own and the cluster default."""

    broker: Mapping[str, str] = dataclasses.field(default_factory=dict)
    cluster_default: Mapping[str, str] = dataclasses.field(default_factory=dict)


def _apply_valid(base: Any, values: Mapping[str, str], where: str) -> Any:
    """``base`` with each valid value applied; an invalid one (written by an older version, say)
    is logged and skipped, so it can never keep a replica from starting."""
    changes = {}
    known = {kafka_name(f.name): f for f in dataclasses.fields(base)}
    for name, value in values.items():
        spec = known.get(name)
        if spec is None:
            logger.warning("ignoring unknown config %s=%r in %s", name, value, where)
            continue
        try:
            changes[spec.name] = coerce_value(name, spec, value)
        except InvalidConfigError as exc:
            logger.warning("ignoring %s in %s", exc.message, where)
    return dataclasses.replace(base, **changes)


def effective_broker_config(static: BrokerConfig, overrides: DynamicOverrides) -> BrokerConfig:
    """The static config with the cluster default, then the broker's own overrides, applied."""
    merged = {**overrides.cluster_default, **overrides.broker}
    return _apply_valid(static, merged, "dynamic broker configs")  # type: ignore[no-any-return]


def effective_log_config(
    static: BrokerConfig, overrides: DynamicOverrides, topic_overrides: Mapping[str, str]
) -> LogConfig:
    """A topic's config on a broker: its overrides over the broker's effective defaults."""
    base = effective_broker_config(static, overrides).log_config()
    return _apply_valid(base, topic_overrides, "topic configs")  # type: ignore[no-any-return]


def _levels(
    broker_name: str, static: BrokerConfig, overrides: DynamicOverrides
) -> list[ConfigSynonym]:
    """The broker levels that set ``broker_name``, highest precedence first; the built-in default
    last, always."""
    definition = BROKER_CONFIGS[broker_name]
    levels = []
    if broker_name in overrides.broker:
        levels.append(
            ConfigSynonym(
                broker_name, overrides.broker[broker_name], ConfigSource.DYNAMIC_BROKER_CONFIG
            )
        )
    if broker_name in overrides.cluster_default:
        levels.append(
            ConfigSynonym(
                broker_name,
                overrides.cluster_default[broker_name],
                ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
            )
        )
    value = getattr(static, definition.attribute)
    default = definition.spec.default
    if value != default:
        levels.append(
            ConfigSynonym(broker_name, format_value(value), ConfigSource.STATIC_BROKER_CONFIG)
        )
    levels.append(ConfigSynonym(broker_name, format_value(default), ConfigSource.DEFAULT_CONFIG))
    return levels


def describe_topic_configs(
    static: BrokerConfig, overrides: DynamicOverrides, topic_overrides: Mapping[str, str]
) -> tuple[ConfigEntry, ...]:
    """Every topic config with its effective value and source."""
    effective = effective_log_config(static, overrides, topic_overrides)
    entries = []
    for name, definition in sorted(TOPIC_CONFIGS.items()):
        if definition.broker_name is None:
            default = format_value(definition.spec.default)
            levels = [ConfigSynonym(name, default, ConfigSource.DEFAULT_CONFIG)]
        else:
            levels = _levels(definition.broker_name, static, overrides)
        if name in topic_overrides:
            levels.insert(0, ConfigSynonym(name, topic_overrides[name], ConfigSource.TOPIC_CONFIG))
        value = format_value(getattr(effective, definition.attribute))
        entries.append(ConfigEntry(name, value, levels[0].source, False, tuple(levels)))
    return tuple(entries)


def describe_broker_configs(
    static: BrokerConfig, overrides: DynamicOverrides
) -> tuple[ConfigEntry, ...]:
    """Every broker config with its effective value and source; static-only ones are read-only."""
    effective = effective_broker_config(static, overrides)
    entries = []
    for name, definition in sorted(BROKER_CONFIGS.items()):
        levels = _levels(name, static, overrides)
        value: str | None = format_value(getattr(effective, definition.attribute))
        if definition.sensitive:
            value = None
            levels = [ConfigSynonym(s.name, None, s.source) for s in levels]
        entries.append(
            ConfigEntry(
                name,
                value,
                levels[0].source,
                not definition.dynamic,
                tuple(levels),
                definition.sensitive,
            )
        )
    return tuple(entries)
