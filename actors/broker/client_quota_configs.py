"""Client quotas in ZooKeeper: where each quota entity's configs live, and AlterClientQuotas and
DescribeClientQuotas as a broker answers them (Kafka's ZkAdminManager, KIP-546).

A user's quotas are keys of ``/config/users/<user>``, the znode that also holds the user's SCRAM
credentials; a client id's are in ``/config/clients/<client-id>`` and a user's client id's in
``/config/users/<user>/clients/<client-id>``, each name sanitized as Kafka does and ``<default>``
standing for the type's default. Altering quotas keeps every other key of the znode (the
credentials), as altering credentials keeps the quotas. A bad key or value is INVALID_CONFIG
naming it, and that entity's changes are not written.

Decisions only, over any store that reads and writes config entities (``ConfigStore``, which
writes an entity with its change notification in one transaction; a dict in unit tests).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from rafka.actors.broker.user_scram_credentials import EntityStore
from rafka.actors.zk import data as zd
from rafka.actors.zk.config_store import entity_user, sanitize
from rafka.protocol.errors import Errors, InvalidRequestError, RafkaError
from rafka.protocol.messages.quotas import (
    CLIENT_ID,
    ENTITY_TYPES,
    QUOTA_KEYS,
    USER,
    AlterClientQuotasRequest,
    AlterClientQuotasResult,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaEntry,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    MatchType,
    check_quota_key,
    check_quota_value,
)

logger = logging.getLogger(__name__)

DEFAULT = zd.DEFAULT_BROKER_ENTITY
"""Kafka's ``<default>`` entity name, for users and client ids as for brokers."""


def _znode_name(name: str | None) -> str:
    return DEFAULT if name is None else sanitize(name)


def _entity_name(znode: str) -> str | None:
    return None if znode == DEFAULT else entity_user(znode)


def quota_entity_path(entity: ClientQuotaEntity) -> str:
    """The ``/config`` entity path of a quota entity; INVALID_REQUEST for an entity naming no
    user or client id, another entity type, or an empty name."""
    names = entity.as_dict()
    unknown = sorted(set(names) - set(ENTITY_TYPES))
    if unknown or not names:
        raise InvalidRequestError(
            f"a client quota entity names a user, a client-id or both, not {sorted(names)}"
        )
    if "" in names.values():
        raise InvalidRequestError(f"{entity}: an empty name (None is the type's default)")
    if USER not in names:
        return f"clients/{_znode_name(names[CLIENT_ID])}"
    user = f"users/{_znode_name(names[USER])}"
    if CLIENT_ID not in names:
        return user
    return f"{user}/clients/{_znode_name(names[CLIENT_ID])}"


def path_entity(path: str) -> ClientQuotaEntity | None:
    """The quota entity of a ``/config`` entity path (None for a topic's or broker's)."""
    parts = path.split("/")
    if len(parts) == 2 and parts[0] == "users":
        return ClientQuotaEntity.of({USER: _entity_name(parts[1])})
    if len(parts) == 2 and parts[0] == "clients":
        return ClientQuotaEntity.of({CLIENT_ID: _entity_name(parts[1])})
    if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
        return ClientQuotaEntity.of(
            {USER: _entity_name(parts[1]), CLIENT_ID: _entity_name(parts[3])}
        )
    return None


def quota_values(config: Mapping[str, str], where: str) -> dict[str, float]:
    """The quotas among an entity's configs (its other keys, SCRAM credentials among them, are
    not quotas); a bad value (written by hand, say) is logged and left out."""
    found = {}
    for key in QUOTA_KEYS:
        if key in config:
            try:
                found[key] = float(check_quota_value(key, config[key]))
            except RafkaError as exc:
                logger.warning("ignoring %s in %s", exc.message, where)
    return found


def quota_entity_paths(children: Callable[[str], Iterable[str]]) -> list[str]:
    """Every entity path that may hold client quotas, found with ``children`` (the names below an
    entity path, as ``ConfigStore.children`` lists them)."""
    paths = [f"clients/{name}" for name in children("clients")]
    for user in children("users"):
        paths.append(f"users/{user}")
        paths += [f"users/{user}/clients/{name}" for name in children(f"users/{user}/clients")]
    return sorted(paths)


def alter_client_quotas(
    store: EntityStore, request: AlterClientQuotasRequest
) -> list[AlterClientQuotasResult]:
    """Check each entity's changes and write its entity (not with ``validate_only``); one result
    per entity, in the request's order."""
    results = []
    for alteration in request.entries:
        try:
            _alter(store, alteration, request.validate_only)
        except RafkaError as exc:
            results.append(AlterClientQuotasResult(alteration.entity, exc.error, exc.message))
        else:
            results.append(AlterClientQuotasResult(alteration.entity, Errors.NONE))
    return results


def _alter(store: EntityStore, alteration: ClientQuotaAlteration, validate_only: bool) -> None:
    path = quota_entity_path(alteration.entity)
    keys = [op.key for op in alteration.ops]
    if len(keys) != len(set(keys)):
        raise InvalidRequestError(f"{alteration.entity}: a quota key is altered twice: {keys}")
    changes: dict[str, str | None] = {}
    for op in alteration.ops:
        check_quota_key(op.key)
        changes[op.key] = None if op.value is None else str(check_quota_value(op.key, op.value))
    if validate_only:
        return
    config = store.read(path)
    updated = {k: v for k, v in config.items() if changes.get(k, v) is not None}
    updated.update({k: v for k, v in changes.items() if v is not None})
    if updated != config:
        store.write(path, updated)


def describe_client_quotas(
    store: EntityStore,
    entity_paths: Callable[[], Iterable[str]],
    request: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse:
    """The quotas of every entity the request's filter matches, by entity path; INVALID_REQUEST
    for a filter on an unknown entity type, a type named twice, or an exact match without a
    name."""
    kinds = [component.entity_type for component in request.components]
    for component in request.components:
        if component.entity_type not in ENTITY_TYPES:
            return DescribeClientQuotasResponse(
                Errors.INVALID_REQUEST, f"unknown client quota entity type {component.entity_type}"
            )
        if component.match_type is MatchType.EXACT and not component.name:
            return DescribeClientQuotasResponse(
                Errors.INVALID_REQUEST, f"an exact match of {component.entity_type} needs a name"
            )
    if len(kinds) != len(set(kinds)):
        return DescribeClientQuotasResponse(
            Errors.INVALID_REQUEST, f"an entity type is filtered twice: {kinds}"
        )
    entries = []
    for path in entity_paths():
        entity = path_entity(path)
        if entity is None or not request.matches(entity):
            continue
        values = quota_values(store.read(path), path)
        if values:
            entries.append(ClientQuotaEntry(entity, tuple(sorted(values.items()))))
    return DescribeClientQuotasResponse(Errors.NONE, entries=tuple(entries))
