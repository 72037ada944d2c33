"""Tests for Admin's SCRAM user operations (rafka.clients.user_admin) against an in-memory fake
cluster whose broker answers with its own decisions."""

from __future__ import annotations

import pytest

from rafka.clients.admin import Admin
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.users import (
    AlterUserScramCredentialsResult,
    ScramCredentialInfo,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from rafka.security.scram import ScramMechanism

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


@pytest.fixture
def admin(fake_cluster) -> Admin:
    """An admin client of two fake brokers sharing one /config."""
    fake_cluster.add_brokers(2)
    return Admin(request_timeout_ms=2000)


def test_alterations_answer_one_result_per_user_and_describe_lists_them(admin: Admin) -> None:
    assert admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion.from_password("bob", SHA512, "b"),
            UserScramCredentialUpsertion.from_password("alice", SHA256, "a", 8192),
            UserScramCredentialUpsertion.from_password("alice", SHA512, "a"),
        ]
    ) == [
        AlterUserScramCredentialsResult("bob", Errors.NONE),
        AlterUserScramCredentialsResult("alice", Errors.NONE),
    ]
    described = admin.describe_user_scram_credentials()
    assert [(d.user, d.credential_infos) for d in described] == [
        ("alice", (ScramCredentialInfo(SHA256, 8192), ScramCredentialInfo(SHA512, 4096))),
        ("bob", (ScramCredentialInfo(SHA512, 4096),)),
    ]


def test_the_first_failed_user_raises_its_error_and_the_others_are_altered(
    fake_cluster, admin: Admin
) -> None:
    with pytest.raises(RafkaError, match=r"RESOURCE_NOT_FOUND \(91\): user 'ghost'") as raised:
        admin.alter_user_scram_credentials(
            [
                UserScramCredentialDeletion("ghost", SHA256),
                UserScramCredentialUpsertion.from_password("alice", SHA256, "a"),
            ]
        )
    assert raised.value.error is Errors.RESOURCE_NOT_FOUND
    assert list(fake_cluster.configs.entities) == ["users/alice"]
    with pytest.raises(RafkaError, match="user 'ghost'") as described:
        admin.describe_user_scram_credentials(["alice", "ghost"])
    assert described.value.error is Errors.RESOURCE_NOT_FOUND
