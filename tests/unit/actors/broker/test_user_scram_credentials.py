"""Tests for rafka.actors.broker.user_scram_credentials: AlterUserScramCredentials and
DescribeUserScramCredentials as Kafka's broker answers them, over an in-memory ``/config``."""

from __future__ import annotations

import pytest

from rafka.actors.broker.user_scram_credentials import (
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from rafka.protocol.errors import Errors
from rafka.protocol.messages.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsRequest,
    ScramCredentialInfo,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from rafka.security.scram import ScramCredential, ScramMechanism

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def upsert(
    user: str, mechanism: ScramMechanism = SHA256, password: str = "secret", iterations: int = 4096
) -> UserScramCredentialUpsertion:
    return UserScramCredentialUpsertion.from_password(user, mechanism, password, iterations)


def alter(store, *alterations: UserScramCredentialAlteration) -> list[tuple[str, Errors]]:
    """(user, error) of each result."""
    results = alter_user_scram_credentials(store, AlterUserScramCredentialsRequest(alterations))
    return [(r.user, r.error) for r in results]


def describe(store, users: tuple[str, ...] | None) -> list[UserScramCredentialsDescription]:
    return describe_user_scram_credentials(
        store, store.users, DescribeUserScramCredentialsRequest(users)
    )


def test_an_upsertion_stores_kafkas_credential_text_and_no_password(config_store) -> None:
    assert alter(config_store, upsert("alice", password="alice-secret", iterations=8192)) == [
        ("alice", Errors.NONE)
    ]
    text = config_store.entities["users/alice"]["SCRAM-SHA-256"]
    assert "alice-secret" not in text
    assert [part.split("=", 1)[0] for part in text.split(",")] == [
        "salt",
        "stored_key",
        "server_key",
        "iterations",
    ]
    credential = ScramCredential.from_text(text)
    assert credential.iterations == 8192
    assert credential.matches(SHA256, "alice-secret")
    assert not credential.matches(SHA256, "guess")


def test_a_users_alterations_are_written_once_and_keep_its_other_configs(config_store) -> None:
    config_store.entities["users/alice"] = {"producer_byte_rate": "1024", "SCRAM-SHA-512": "x"}
    assert alter(
        config_store, UserScramCredentialDeletion("alice", SHA512), upsert("alice", SHA256)
    ) == [("alice", Errors.NONE)]
    assert set(config_store.entities["users/alice"]) == {"producer_byte_rate", "SCRAM-SHA-256"}
    assert config_store.entities["users/alice"]["producer_byte_rate"] == "1024"
    assert config_store.writes == ["users/alice"]


def test_each_user_gets_one_result_in_the_order_the_users_first_appear(config_store) -> None:
    assert alter(
        config_store, upsert("bob"), upsert("alice"), upsert("bob", SHA512), upsert("carol")
    ) == [("bob", Errors.NONE), ("alice", Errors.NONE), ("carol", Errors.NONE)]


@pytest.mark.parametrize("iterations", [4095, 16385])
def test_an_iteration_count_outside_kafkas_bounds_is_unacceptable(
    config_store, iterations: int
) -> None:
    # from_password refuses such counts itself: build the upsertion as a wire request would.
    wire = UserScramCredentialUpsertion("alice", SHA256, iterations, b"salt", b"salted")
    results = alter_user_scram_credentials(config_store, AlterUserScramCredentialsRequest((wire,)))
    assert results[0].error is Errors.UNACCEPTABLE_CREDENTIAL
    assert str(iterations) in (results[0].message or "")
    assert config_store.writes == []


def test_an_empty_user_name_is_unacceptable(config_store) -> None:
    results = alter_user_scram_credentials(
        config_store,
        AlterUserScramCredentialsRequest((UserScramCredentialDeletion("", SHA256),)),
    )
    assert results == [
        AlterUserScramCredentialsResult(
            "", Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
        )
    ]


def test_a_mechanism_altered_twice_fails_that_user_only(config_store) -> None:
    assert alter(
        config_store,
        upsert("alice", SHA256),
        upsert("bob"),
        UserScramCredentialDeletion("alice", SHA256),
    ) == [("alice", Errors.DUPLICATE_RESOURCE), ("bob", Errors.NONE)]
    assert config_store.writes == ["users/bob"]


def test_deleting_a_credential_the_user_lacks_is_not_found_and_writes_nothing(
    config_store,
) -> None:
    results = alter_user_scram_credentials(
        config_store,
        AlterUserScramCredentialsRequest(
            (upsert("alice", SHA256), UserScramCredentialDeletion("alice", SHA512))
        ),
    )
    assert [(r.error, r.message) for r in results] == [
        (
            Errors.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist: SCRAM-SHA-512",
        )
    ]
    assert config_store.writes == []


def test_a_user_name_is_sanitized_into_one_znode_as_kafka_names_it(config_store) -> None:
    alter(config_store, upsert("CN=alice/ops@example.com"))
    assert list(config_store.entities) == ["users/CN%3Dalice%2Fops%40example.com"]
    assert [d.user for d in describe(config_store, None)] == ["CN=alice/ops@example.com"]


def test_a_named_user_is_described_by_mechanism_and_iterations(config_store) -> None:
    alter(config_store, upsert("alice", SHA512, iterations=8192), upsert("alice", SHA256))
    assert describe(config_store, ("alice",)) == [
        UserScramCredentialsDescription(
            "alice",
            Errors.NONE,
            credential_infos=(
                ScramCredentialInfo(SHA256, 4096),
                ScramCredentialInfo(SHA512, 8192),
            ),
        )
    ]


@pytest.mark.parametrize("users", [None, ()], ids=["null", "empty"])
def test_describing_no_user_lists_every_user_with_a_credential_by_name(
    config_store, users: tuple[str, ...] | None
) -> None:
    alter(config_store, upsert("carol"), upsert("alice"), upsert("bob"))
    alter(config_store, UserScramCredentialDeletion("bob", SHA256))
    config_store.entities["users/quota-only"] = {"producer_byte_rate": "1024"}
    assert [d.user for d in describe(config_store, users)] == ["alice", "carol"]


def test_a_named_user_without_credentials_is_not_found(config_store) -> None:
    config_store.entities["users/quota-only"] = {"producer_byte_rate": "1024"}
    described = describe(config_store, ("quota-only", "nobody"))
    assert [(d.user, d.error, d.message) for d in described] == [
        (
            user,
            Errors.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist",
        )
        for user in ("quota-only", "nobody")
    ]


def test_a_user_named_twice_is_described_once_as_a_duplicate(config_store) -> None:
    alter(config_store, upsert("alice"))
    described = describe(config_store, ("alice", "", "alice"))
    assert [(d.user, d.error) for d in described] == [
        ("alice", Errors.DUPLICATE_RESOURCE),
        ("", Errors.RESOURCE_NOT_FOUND),
    ]


def test_an_entry_that_is_not_a_credential_is_an_error_of_that_user_only(config_store) -> None:
    alter(config_store, upsert("alice"))
    config_store.entities["users/mallory"] = {"SCRAM-SHA-256": "salt=???"}
    described = describe(config_store, None)
    assert [(d.user, d.error) for d in described] == [
        ("alice", Errors.NONE),
        ("mallory", Errors.UNKNOWN_SERVER_ERROR),
    ]
    assert "not a SCRAM credential" in (described[1].message or "")
