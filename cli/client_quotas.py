"""``rafka configs`` for client quotas: kafka-configs.sh's users and clients entities, their quota
configs, and the lines it prints for them.

``--entity-type users --entity-name alice``, ``--entity-type clients --entity-name app-1``, both
together (a user's client id), and ``--entity-default`` in place of a name (the type's default):
each pair of ``--entity-type`` and name names one ``ClientQuotaEntity``, and ``producer_byte_rate``
and ``consumer_byte_rate`` are its quotas, in bytes per second.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

from rafka.protocol.errors import RafkaError
from rafka.protocol.messages.quotas import (
    CLIENT_ID,
    USER,
    ClientQuotaAlterationOp,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    check_quota_key,
    check_quota_value,
)

USERS = "users"
"""The entity type of users: their SCRAM credentials and quotas."""
CLIENTS = "clients"
"""The entity type of client ids: their quotas."""
QUOTA_ENTITY_TYPES = {USERS: USER, CLIENTS: CLIENT_ID}
"""kafka-configs' quota entity types, with Kafka's ``ClientQuotaEntity`` type of each."""

EntityArgs = list[tuple[str, str | None]]
"""Each ``--entity-type`` with its name: "" for ``--entity-default``, None for none given."""


def quota_entity(pairs: EntityArgs) -> ClientQuotaEntity:
    """The entity an ``--alter`` names (every type given a name or ``--entity-default``)."""
    return ClientQuotaEntity.of({QUOTA_ENTITY_TYPES[kind]: name or None for kind, name in pairs})


def quota_filter(pairs: EntityArgs) -> list[ClientQuotaFilterComponent]:
    """What a ``--describe`` asks for, as kafka-configs asks it: a type without a name matches
    any of its entities, ``--entity-default`` the default, a name that name."""
    components = []
    for kind, name in pairs:
        entity_type = QUOTA_ENTITY_TYPES[kind]
        if name is None:
            components.append(ClientQuotaFilterComponent.of_entity_type(entity_type))
        elif not name:
            components.append(ClientQuotaFilterComponent.of_default_entity(entity_type))
        else:
            components.append(ClientQuotaFilterComponent.of_entity(entity_type, name))
    return components


def quota_ops(
    added: Mapping[str, str], deleted: Iterable[str]
) -> tuple[ClientQuotaAlterationOp, ...]:
    """The quota changes of ``--add-config`` and ``--delete-config``; a key that is no quota or
    a value that is no positive whole number of bytes per second is a usage error naming it."""
    try:
        ops = [ClientQuotaAlterationOp(k, float(check_quota_value(k, v))) for k, v in added.items()]
        for key in deleted:
            check_quota_key(key)
            ops.append(ClientQuotaAlterationOp(key, None))
    except RafkaError as exc:
        raise SystemExit(f"--add-config/--delete-config: {exc.message}") from None
    return tuple(ops)


def java_double(value: float) -> str:
    """A number as Java's ``Double.toString`` writes it (``1048576.0``, ``1.048576E7``), the form
    kafka-configs prints quotas in."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))
    # repr gives the shortest digits that read back as the same double, as Java's does.
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    text = "".join(map(str, digits))
    mantissa = f"{text[0]}.{text[1:] or '0'}"
    return f"{'-' if sign else ''}{mantissa}E{len(digits) - 1 + int(exponent)}"


def format_quotas(entity: ClientQuotaEntity, values: Mapping[str, float]) -> str:
    """An entity's quotas as kafka-configs --describe prints them."""
    names = entity.as_dict()
    described = []
    for entity_type, label in ((USER, "user-principal"), (CLIENT_ID, "client-id")):
        if entity_type in names:
            name = names[entity_type]
            described.append(f"the default {label}" if name is None else f"{label} '{name}'")
    configs = ", ".join(f"{key}={java_double(values[key])}" for key in sorted(values))
    return f"Quota configs for {', '.join(described)} are {configs}"


def completed(pairs: EntityArgs) -> str:
    """The line kafka-configs prints once an ``--alter`` of users or clients is done: it names the
    first entity type given."""
    kind, name = pairs[0]
    if name:
        return f"Completed updating config for {kind[:-1]} {name}."
    return f"Completed updating default config for {kind} in the cluster."
