"""KafkaUserApis: Kafka's SCRAM user requests (KIP-554) answered with the requests rafka's own
Admin sends.

DescribeUserScramCredentials and AlterUserScramCredentials become this broker's
``describe_user_scram_credentials`` and ``alter_user_scram_credentials``, which check and write
``/config/users`` as Kafka's ZkAdminManager does. An upsertion carries the client's salt and
salted password (never the password), and a mechanism travels as Kafka's ScramMechanism byte; a
user with an alteration of a mechanism rafka does not know (Kafka's UNKNOWN, 0, included) is
UNSUPPORTED_SASL_MECHANISM and none of that user's alterations is made. ``KafkaAdminApis`` serves
these handlers beside its own.

With an authorizer, as in Kafka, describing needs DESCRIBE on the cluster and altering ALTER on
it; a refused request is CLUSTER_AUTHORIZATION_FAILED for each user it names, and nothing is read
or written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from rafka.actors.broker.request_authorization import AuthorizingSide, cluster_authorized
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsRequest,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from rafka.protocol.wire.admin_apis import (
    ALTER_USER_SCRAM_CREDENTIALS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
)
from rafka.protocol.wire.headers import RequestHeader
from rafka.security.acl import ACLOperation
from rafka.security.scram import ScramMechanism

Body = Mapping[str, Any]
Handler = Callable[[RequestHeader, Body], Awaitable[Body]]


class UserSide(AuthorizingSide, Protocol):
    """What the user APIs need of their broker (the broker actor, or a fake in unit tests)."""

    async def describe_user_scram_credentials(
        self, request: DescribeUserScramCredentialsRequest
    ) -> list[UserScramCredentialsDescription]:
        """Each user's SCRAM mechanisms and iteration counts."""

    async def alter_user_scram_credentials(
        self, request: AlterUserScramCredentialsRequest
    ) -> list[AlterUserScramCredentialsResult]:
        """Check and write each user's SCRAM credentials; one result per user."""


class KafkaUserApis:
    """Handles the SCRAM user requests of the Kafka listener for one broker."""

    def __init__(self, broker: UserSide) -> None:
        self._broker = broker

    def handlers(self) -> dict[int, Handler]:
        """The handler of each user API, by api key."""
        return {
            DESCRIBE_USER_SCRAM_CREDENTIALS.key: self._describe_user_scram_credentials,
            ALTER_USER_SCRAM_CREDENTIALS.key: self._alter_user_scram_credentials,
        }

    async def _describe_user_scram_credentials(self, _header: RequestHeader, body: Body) -> Body:
        users = body["users"]
        if not cluster_authorized(self._broker, ACLOperation.DESCRIBE):
            refused = Errors.CLUSTER_AUTHORIZATION_FAILED
            return {
                "error_code": int(refused),
                "error_message": refused.message,
                "results": [
                    {
                        "user": u["name"],
                        "error_code": int(refused),
                        "error_message": refused.message,
                    }
                    for u in users or ()
                ],
            }
        described = await self._broker.describe_user_scram_credentials(
            DescribeUserScramCredentialsRequest(
                None if users is None else tuple(u["name"] for u in users)
            )
        )
        return {
            "error_code": int(Errors.NONE),
            "results": [
                {
                    "user": d.user,
                    "error_code": int(d.error),
                    "error_message": d.message,
                    "credential_infos": [
                        {"mechanism": i.mechanism.code, "iterations": i.iterations}
                        for i in d.credential_infos
                    ],
                }
                for d in described
            ],
        }

    async def _alter_user_scram_credentials(self, _header: RequestHeader, body: Body) -> Body:
        if not cluster_authorized(self._broker, ACLOperation.ALTER):
            error = Errors.CLUSTER_AUTHORIZATION_FAILED
            named = {w["name"] for w in (*body["deletions"], *body["upsertions"])}
            return {
                "results": [
                    {"user": user, "error_code": int(error), "error_message": error.message}
                    for user in sorted(named)
                ]
            }
        refused: dict[str, RafkaError] = {}
        alterations: list[UserScramCredentialAlteration] = []
        for wire, make in [
            *((d, _deletion) for d in body["deletions"]),
            *((u, _upsertion) for u in body["upsertions"]),
        ]:
            try:
                alterations.append(make(wire))
            except RafkaError as exc:
                refused.setdefault(wire["name"], exc)
        asked = tuple(a for a in alterations if a.user not in refused)
        altered = (
            await self._broker.alter_user_scram_credentials(AlterUserScramCredentialsRequest(asked))
            if asked
            else []
        )
        outcomes = [(r.user, r.error, r.message) for r in altered]
        outcomes += [(user, exc.error, exc.message) for user, exc in refused.items()]
        return {
            "results": [
                {"user": user, "error_code": int(error), "error_message": message}
                for user, error, message in outcomes
            ]
        }


def _deletion(wire: Body) -> UserScramCredentialAlteration:
    return UserScramCredentialDeletion(wire["name"], _scram_mechanism(wire["mechanism"]))


def _upsertion(wire: Body) -> UserScramCredentialAlteration:
    return UserScramCredentialUpsertion(
        wire["name"],
        _scram_mechanism(wire["mechanism"]),
        wire["iterations"],
        wire["salt"],
        wire["salted_password"],
    )


def _scram_mechanism(code: int) -> ScramMechanism:
    """The mechanism of Kafka's ScramMechanism byte; UNSUPPORTED_SASL_MECHANISM for any other
    (Kafka's UNKNOWN, 0, included)."""
    for mechanism in ScramMechanism:
        if mechanism.code == code:
            return mechanism
    raise Errors.UNSUPPORTED_SASL_MECHANISM.exception(f"Unknown SCRAM mechanism {code}")
