"""DescribeClientQuotas and AlterClientQuotas (KIP-546): the client quotas an admin client sets on
users and client ids, and the checks every quota value passes.

A ``ClientQuotaEntity`` names a user, a client id, or a user's client id, each by its name or as
its type's default (None), as Kafka's ``ClientQuotaEntity`` does with its map of entity types
(``user``, ``client-id``) to names. The quotas rafka enforces are Kafka's byte rates,
``producer_byte_rate`` and ``consumer_byte_rate``, in bytes per second.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass

from rafka.protocol.errors import Errors, InvalidConfigError

USER = "user"
"""Kafka's entity type of a user principal's name."""
CLIENT_ID = "client-id"
"""Kafka's entity type of a client id."""
ENTITY_TYPES = (USER, CLIENT_ID)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
QUOTA_KEYS = (CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE)
"""The quota configs rafka enforces (Kafka's ``request_percentage`` and
``controller_mutation_rate`` are not among them)."""


@dataclass(frozen=True)
class ClientQuotaEntity:
    """Who a quota applies to: each entity type named, with a name or None for the type's default
    (``{"user": "alice", "client-id": None}`` is every client id of alice without one of its
    own). ``entries`` is kept sorted by type, so equal entities compare and hash equal."""

    entries: tuple[tuple[str, str | None], ...]

    @staticmethod
    def of(entries: Mapping[str, str | None]) -> ClientQuotaEntity:
        """The entity of a map of entity types to names (None: the default)."""
        return ClientQuotaEntity(tuple(sorted(entries.items())))

    def as_dict(self) -> dict[str, str | None]:
        """The entity types to names (None: the default)."""
        return dict(self.entries)

    def __str__(self) -> str:
        names = self.as_dict()
        parts = [
            f"{kind} {'<default>' if names[kind] is None else repr(names[kind])}"
            for kind in ENTITY_TYPES
            if kind in names
        ]
        return ", ".join(parts) or "no entity"


@dataclass(frozen=True)
class ClientQuotaAlterationOp:
    """Set ``key`` to ``value``, or remove it (None)."""

    key: str
    value: float | None


@dataclass(frozen=True)
class ClientQuotaAlteration:
    """The changes to one entity's quotas."""

    entity: ClientQuotaEntity
    ops: tuple[ClientQuotaAlterationOp, ...]


@dataclass(frozen=True)
class AlterClientQuotasRequest:
    """Change the quotas of entities; with ``validate_only`` only check the changes."""

    entries: tuple[ClientQuotaAlteration, ...]
    validate_only: bool = False


@dataclass(frozen=True)
class AlterClientQuotasResult:
    """One entity's outcome; on an error none of its changes was written."""

    entity: ClientQuotaEntity
    error: Errors
    message: str | None = None


class MatchType(enum.IntEnum):
    """How a filter component matches an entity's name (DescribeClientQuotas' match_type)."""

    EXACT = 0
    DEFAULT = 1
    ANY = 2
    """Any name of the type, its default included."""


@dataclass(frozen=True)
class ClientQuotaFilterComponent:
    """One entity type an entity must name, and how its name must match (Kafka's
    ``ClientQuotaFilterComponent``)."""

    entity_type: str
    match_type: MatchType
    name: str | None = None

    @staticmethod
    def of_entity(entity_type: str, name: str) -> ClientQuotaFilterComponent:
        """Entities whose ``entity_type`` is ``name``."""
        return ClientQuotaFilterComponent(entity_type, MatchType.EXACT, name)

    @staticmethod
    def of_default_entity(entity_type: str) -> ClientQuotaFilterComponent:
        """Entities whose ``entity_type`` is its default."""
        return ClientQuotaFilterComponent(entity_type, MatchType.DEFAULT)

    @staticmethod
    def of_entity_type(entity_type: str) -> ClientQuotaFilterComponent:
        """Entities that name ``entity_type`` at all."""
        return ClientQuotaFilterComponent(entity_type, MatchType.ANY)

    def matches(self, entity: ClientQuotaEntity) -> bool:
        """Whether ``entity`` names this component's type as it asks."""
        names = entity.as_dict()
        if self.entity_type not in names:
            return False
        name = names[self.entity_type]
        if self.match_type is MatchType.EXACT:
            return name == self.name
        if self.match_type is MatchType.DEFAULT:
            return name is None
        return True


@dataclass(frozen=True)
class DescribeClientQuotasRequest:
    """The quotas of every entity matching all ``components``; with ``strict`` only entities
    naming no other entity type."""

    components: tuple[ClientQuotaFilterComponent, ...]
    strict: bool = False

    def matches(self, entity: ClientQuotaEntity) -> bool:
        """Whether the filter selects ``entity``."""
        if not all(component.matches(entity) for component in self.components):
            return False
        named = {component.entity_type for component in self.components}
        return not self.strict or {kind for kind, _ in entity.entries} <= named


@dataclass(frozen=True)
class ClientQuotaEntry:
    """One entity's quotas, by config key."""

    entity: ClientQuotaEntity
    values: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class DescribeClientQuotasResponse:
    """The matching entities' quotas, or why they cannot be described."""

    error: Errors
    message: str | None = None
    entries: tuple[ClientQuotaEntry, ...] = ()


def check_quota_key(key: str) -> None:
    """INVALID_CONFIG naming ``key`` unless it is a quota rafka enforces."""
    if key not in QUOTA_KEYS:
        raise InvalidConfigError(
            f"unknown quota config {key}; rafka enforces {', '.join(QUOTA_KEYS)}"
        )


def check_quota_value(key: str, value: object) -> int:
    """A quota's value as the whole number of bytes per second it must be; INVALID_CONFIG naming
    the key for an unknown key, a value that is not a number, one with a fraction, or one not
    greater than 0."""
    check_quota_key(key)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidConfigError(
            f"Quota {key} must be a number of bytes per second, not {value!r}"
        ) from None
    if not math.isfinite(number) or number >= 2**63:  # more than a Java long holds
        raise InvalidConfigError(f"Quota {key} must be a number of bytes per second, not {value!r}")
    if number <= 0:
        raise InvalidConfigError(f"Quota {key} must be greater than 0, not {value!r}")
    if not number.is_integer():
        raise InvalidConfigError(f"Configuration {key} must be a Long value, not {value!r}")
    return int(number)
