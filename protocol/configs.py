"""Dynamic config values shared by the admin client and the brokers, with kafka-python's and
Kafka's names: ``ConfigResource`` names a topic or a broker (the empty name is the cluster-wide
broker default), ``AlterConfigOp`` is one incremental change, and ``ConfigEntry`` is one described
value with the level it comes from (``ConfigSource``, the DescribeConfigs protocol's names).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

DEFAULT_BROKER = ""
"""The broker resource name that stands for the cluster-wide default (``--entity-default``)."""


class ConfigResourceType(IntEnum):
    """What a config resource names (Kafka's resource type codes)."""

    TOPIC = 2
    BROKER = 4


class AlterConfigOpType(IntEnum):
    """The operation of one incremental config change (Kafka's AlterConfigOp.OpType)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigSource(IntEnum):
    """Where a described value comes from, highest precedence first."""

    UNKNOWN_CONFIG = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@dataclass(frozen=True)
class AlterConfigOp:
    """One incremental change: SET or APPEND/SUBTRACT a value (list configs), or DELETE the
    override."""

    op_type: AlterConfigOpType
    value: str | None = None


@dataclass(frozen=True)
class ConfigResource:
    """A topic or broker whose configs are described or altered (kafka-python's name).

    ``configs`` maps config names to new values for ``alter_configs``, or to ``AlterConfigOp`` for
    ``incremental_alter_configs``; ``resource_type`` may be given as ``"topic"`` or ``"broker"``.
    """

    resource_type: ConfigResourceType | str
    name: str
    configs: Mapping[str, object] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.resource_type, ConfigResourceType):
            kind = ConfigResourceType[str(self.resource_type).upper()]
            object.__setattr__(self, "resource_type", kind)

    @property
    def is_default_broker(self) -> bool:
        """Whether this names the cluster-wide broker default."""
        return self.resource_type is ConfigResourceType.BROKER and self.name == DEFAULT_BROKER

    def describe(self) -> str:
        """``topic t``, ``broker 0`` or ``the broker default``, as kafka-configs names them."""
        if self.resource_type is ConfigResourceType.TOPIC:
            return f"topic {self.name}"
        return "the broker default" if self.is_default_broker else f"broker {self.name}"


@dataclass(frozen=True)
class ConfigSynonym:
    """A value a config has at one level (a broker's ``log.retention.ms`` for ``retention.ms``)."""

    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    """One described config: its effective value, where it comes from, and every level that sets
    it (highest precedence first)."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()
    is_sensitive: bool = False
    """A secret (a password): ``value`` and the synonyms' values are None."""

    @property
    def is_default(self) -> bool:
        """Whether nothing overrides the built-in default."""
        return self.source is ConfigSource.DEFAULT_CONFIG
