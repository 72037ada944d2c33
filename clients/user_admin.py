"""The admin client's SCRAM user operations (KIP-554; kafka-python's and confluent-kafka's names):
``alter_user_scram_credentials`` and ``describe_user_scram_credentials``.

A user's credentials are configs of the user's entity (``/config/users/<name>``), so any live
broker checks and writes them, as it does topic configs. Passwords are salted here, by
``UserScramCredentialUpsertion.from_password``: the broker receives the salt and the salted
password only, and stores the keys derived from them. A failed user raises its Kafka error
(UNACCEPTABLE_CREDENTIAL, DUPLICATE_RESOURCE, RESOURCE_NOT_FOUND, ...), and none of that user's
alterations is made.
"""

from __future__ import annotations

from collections.abc import Sequence

from rafka.clients.config_admin import ConfigAdminMixin
from rafka.protocol.errors import Errors
from rafka.protocol.messages.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsRequest,
    UserScramCredentialAlteration,
    UserScramCredentialsDescription,
)


class UserAdminMixin(ConfigAdminMixin):
    """SCRAM user operations of ``Admin``, asked of any live broker as config operations are."""

    def alter_user_scram_credentials(
        self, alterations: Sequence[UserScramCredentialAlteration]
    ) -> list[AlterUserScramCredentialsResult]:
        """Create, replace (``UserScramCredentialUpsertion``) and delete
        (``UserScramCredentialDeletion``) users' credentials; one result per user, in the order
        the users first appear."""
        results: list[AlterUserScramCredentialsResult] = self._ask(
            None,
            "alter_user_scram_credentials",
            AlterUserScramCredentialsRequest(tuple(alterations)),
        )
        _raise_first_failure(results)
        return results

    def describe_user_scram_credentials(
        self, users: Sequence[str] | None = None
    ) -> list[UserScramCredentialsDescription]:
        """The mechanisms and iteration counts of each user named, or of every user with a
        credential (by name) when ``users`` is None; a named user without one raises
        RESOURCE_NOT_FOUND."""
        results: list[UserScramCredentialsDescription] = self._ask(
            None,
            "describe_user_scram_credentials",
            DescribeUserScramCredentialsRequest(None if users is None else tuple(users)),
        )
        _raise_first_failure(results)
        return results


def _raise_first_failure(
    results: Sequence[AlterUserScramCredentialsResult | UserScramCredentialsDescription],
) -> None:
    """Raise the first failed user's Kafka error, naming the user."""
    for result in results:
        if result.error is not Errors.NONE:
            raise result.error.exception(
                f"user {result.user!r}: {result.message or result.error.message}"
            )
