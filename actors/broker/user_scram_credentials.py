"""AlterUserScramCredentials and DescribeUserScramCredentials as a broker answers them (Kafka's
ZkAdminManager, KIP-554): the checks, one result per user, and the ``/config/users`` entries
written.

A user's credentials are the mechanism keys of their ``/config/users/<name>`` entry, each holding
Kafka's credential text (salt, stored key, server key, iterations); the entry's other keys (quotas,
in Kafka) are kept as they are. A user's alterations are made together or not at all: an empty
name or an iteration count out of Kafka's bounds is UNACCEPTABLE_CREDENTIAL, the same mechanism
twice is DUPLICATE_RESOURCE, and deleting a credential the user does not have is
RESOURCE_NOT_FOUND.

Decisions only, over any store that reads and writes config entities (``ConfigStore``, which
writes an entry with its change notification in one transaction; a dict in unit tests).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from rafka.actors.zk.config_store import user_entity
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsRequest,
    ScramCredentialInfo,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
)
from rafka.security.scram import ScramCredential, check_iterations, user_credentials


class EntityStore(Protocol):
    """Config entities by their path below ``/config`` (``users/<sanitized name>``)."""

    def read(self, entity: str) -> dict[str, str]:
        """An entity's config ({} if it has none)."""

    def write(self, entity: str, config: dict[str, str]) -> None:
        """Replace an entity's config and announce the change."""


def alter_user_scram_credentials(
    store: EntityStore, request: AlterUserScramCredentialsRequest
) -> list[AlterUserScramCredentialsResult]:
    """Make each user's alterations and write the user's entry once; one result per user, in the
    order the users first appear. A refused user's entry is left as it was."""
    refused = _refusals(request.alterations)
    results = []
    for user in dict.fromkeys(a.user for a in request.alterations):
        refusal = refused.get(user)
        if refusal is None:
            try:
                _alter(store, user, [a for a in request.alterations if a.user == user])
            except RafkaError as exc:
                refusal = exc
        if refusal is None:
            results.append(AlterUserScramCredentialsResult(user, Errors.NONE))
        else:
            results.append(AlterUserScramCredentialsResult(user, refusal.error, refusal.message))
    return results


def _refusals(alterations: Sequence[UserScramCredentialAlteration]) -> dict[str, RafkaError]:
    """The first fault of each user whose alterations cannot be made, as far as the request itself
    tells."""
    found: dict[str, RafkaError] = {}
    for alteration in alterations:
        if not alteration.user:
            found.setdefault(
                alteration.user,
                Errors.UNACCEPTABLE_CREDENTIAL.exception("Username must not be empty"),
            )
        elif not isinstance(alteration, UserScramCredentialDeletion):
            try:
                check_iterations(alteration.mechanism, alteration.iterations)
            except RafkaError as exc:
                found.setdefault(alteration.user, exc)
    pairs = Counter((a.user, a.mechanism) for a in alterations)
    for (user, mechanism), count in pairs.items():
        if count > 1:
            found.setdefault(
                user,
                Errors.DUPLICATE_RESOURCE.exception(
                    "A user credential cannot be altered twice in the same request: "
                    f"{mechanism.value}"
                ),
            )
    return found


def _alter(
    store: EntityStore, user: str, alterations: Sequence[UserScramCredentialAlteration]
) -> None:
    """Apply one user's alterations (each to a different mechanism) to their entry and write it;
    RESOURCE_NOT_FOUND, with nothing written, for a credential to delete that is not there."""
    entity = user_entity(user)
    config = store.read(entity)
    for alteration in alterations:
        name = alteration.mechanism.value
        if isinstance(alteration, UserScramCredentialDeletion):
            if config.pop(name, None) is None:
                raise Errors.RESOURCE_NOT_FOUND.exception(
                    f"Attempt to delete a user credential that does not exist: {name}"
                )
        else:
            config[name] = ScramCredential.from_salted_password(
                alteration.mechanism,
                alteration.salted_password,
                alteration.salt,
                alteration.iterations,
            ).to_text()
    store.write(entity, config)


def describe_user_scram_credentials(
    store: EntityStore,
    all_users: Callable[[], Iterable[str]],
    request: DescribeUserScramCredentialsRequest,
) -> list[UserScramCredentialsDescription]:
    """The credentials of each user named once (in the request's order), or of every user that
    has one (by name) when none is named. A named user without credentials is
    RESOURCE_NOT_FOUND; one named twice is DUPLICATE_RESOURCE."""
    if not request.users:
        every = (_description(store, user) for user in sorted(all_users()))
        return [d for d in every if d.credential_infos or d.error is not Errors.NONE]
    named = Counter(request.users)
    results = []
    for user in named:
        if not user:
            results.append(
                UserScramCredentialsDescription(
                    user,
                    Errors.RESOURCE_NOT_FOUND,
                    "Cannot describe SCRAM credentials for empty username",
                )
            )
        elif named[user] > 1:
            results.append(
                UserScramCredentialsDescription(
                    user,
                    Errors.DUPLICATE_RESOURCE,
                    "Cannot describe SCRAM credentials for the same user twice in a single request",
                )
            )
        else:
            described = _description(store, user)
            if described.error is Errors.NONE and not described.credential_infos:
                described = UserScramCredentialsDescription(
                    user,
                    Errors.RESOURCE_NOT_FOUND,
                    "Attempt to describe a user credential that does not exist",
                )
            results.append(described)
    return results


def _description(store: EntityStore, user: str) -> UserScramCredentialsDescription:
    """A user's credential infos (none if the user has no credential); an entry that does not hold
    Kafka's credential text (written by hand, say) is UNKNOWN_SERVER_ERROR."""
    try:
        credentials = user_credentials(store.read(user_entity(user)))
    except ValueError as exc:
        return UserScramCredentialsDescription(
            user,
            Errors.UNKNOWN_SERVER_ERROR,
            f"Error retrieving credential info: {exc}",
        )
    infos = tuple(ScramCredentialInfo(m, c.iterations) for m, c in credentials.items())
    return UserScramCredentialsDescription(user, Errors.NONE, credential_infos=infos)
