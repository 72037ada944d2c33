"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554): what an admin client asks
a broker about users' SCRAM credentials and what each user gets back.

A password never leaves the client: ``UserScramCredentialUpsertion.from_password`` salts it
there, as Kafka's AdminClient does, and the request carries the salt and the salted password, from
which the broker derives the keys it stores.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TypeAlias

from rafka.protocol.errors import Errors
from rafka.security.scram import (
    DEFAULT_ITERATIONS,
    SALT_BYTES,
    ScramMechanism,
    check_iterations,
    salted_password,
)


@dataclass(frozen=True)
class ScramCredentialInfo:
    """A user's credential for one mechanism as it may be described: never its keys or salt."""

    mechanism: ScramMechanism
    iterations: int


@dataclass(frozen=True)
class UserScramCredentialUpsertion:
    """Create or replace a user's credential for one mechanism."""

    user: str
    mechanism: ScramMechanism
    iterations: int
    salt: bytes = field(repr=False)
    salted_password: bytes = field(repr=False)

    @staticmethod
    def from_password(
        user: str,
        mechanism: ScramMechanism,
        password: str,
        iterations: int = DEFAULT_ITERATIONS,
        salt: bytes | None = None,
    ) -> UserScramCredentialUpsertion:
        """The upsertion of ``password``, salted here with a random salt (or ``salt``);
        UNACCEPTABLE_CREDENTIAL for an iteration count Kafka refuses, before any salting."""
        check_iterations(mechanism, iterations)
        salt = os.urandom(SALT_BYTES) if salt is None else salt
        salted = salted_password(mechanism, password, salt, iterations)
        return UserScramCredentialUpsertion(user, mechanism, iterations, salt, salted)


@dataclass(frozen=True)
class UserScramCredentialDeletion:
    """Remove a user's credential for one mechanism."""

    user: str
    mechanism: ScramMechanism


UserScramCredentialAlteration: TypeAlias = (
    UserScramCredentialUpsertion | UserScramCredentialDeletion
)
"""One change of AlterUserScramCredentials (Kafka's ``UserScramCredentialAlteration``)."""


@dataclass(frozen=True)
class AlterUserScramCredentialsRequest:
    """Change users' credentials; a user's changes are made together or not at all."""

    alterations: tuple[UserScramCredentialAlteration, ...]


@dataclass(frozen=True)
class AlterUserScramCredentialsResult:
    """One user's outcome; on an error none of that user's changes was written."""

    user: str
    error: Errors
    message: str | None = None


@dataclass(frozen=True)
class DescribeUserScramCredentialsRequest:
    """Describe the credentials of ``users``, or of every user that has one (None or empty)."""

    users: tuple[str, ...] | None = None


@dataclass(frozen=True)
class UserScramCredentialsDescription:
    """One user's credentials (by mechanism, with their iteration counts), or why they cannot be
    described."""

    user: str
    error: Errors
    message: str | None = None
    credential_infos: tuple[ScramCredentialInfo, ...] = ()
