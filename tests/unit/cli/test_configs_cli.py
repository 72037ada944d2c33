"""Tests for ``rafka configs`` (rafka.cli.configs): kafka-configs' option syntax and output, for
topics and brokers, and for users' SCRAM credentials against a fake cluster."""

from __future__ import annotations

import re

import pytest

from rafka.cli.configs import format_entry, format_user, parse_add_config, parse_scram_config
from rafka.cli.main import main
from rafka.protocol.configs import ConfigEntry, ConfigSource, ConfigSynonym
from rafka.protocol.errors import Errors
from rafka.protocol.messages.users import ScramCredentialInfo, UserScramCredentialsDescription
from rafka.security.scram import ScramCredential, ScramMechanism

ALICE = ("--entity-type", "users", "--entity-name", "alice")
BOB = ("--entity-type", "users", "--entity-name", "bob")


def test_add_config_splits_on_commas_outside_brackets() -> None:
    assert parse_add_config("retention.ms=1000, cleanup.policy=[compact,delete],a=") == {
        "retention.ms": "1000",
        "cleanup.policy": "compact,delete",
        "a": "",
    }


def test_add_config_without_an_equals_sign_is_refused() -> None:
    with pytest.raises(SystemExit, match=r"retention\.ms"):
        parse_add_config("retention.ms")


def test_an_entry_prints_as_kafka_configs_prints_it() -> None:
    entry = ConfigEntry(
        "retention.ms",
        "1000",
        ConfigSource.TOPIC_CONFIG,
        synonyms=(
            ConfigSynonym("retention.ms", "1000", ConfigSource.TOPIC_CONFIG),
            ConfigSynonym("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG),
        ),
    )
    assert format_entry(entry) == (
        "  retention.ms=1000 sensitive=false synonyms={TOPIC_CONFIG:retention.ms=1000, "
        "DEFAULT_CONFIG:log.retention.ms=604800000}"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--entity-type", "topics", "--describe"], "give exactly one of --entity-name"),
        (
            ["--entity-type", "topics", "--entity-default", "--describe"],
            "--entity-default applies to --entity-type brokers only",
        ),
        (["--entity-type", "topics", "--entity-name", "t", "--alter"], "--alter needs"),
    ],
)
def test_options_that_cannot_run_are_refused_before_connecting(
    args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit, match=re.escape(f"Error: {message}")):
        main(["configs", *args])


def test_a_sensitive_entry_prints_null_values_and_sensitive_true() -> None:
    entry = ConfigEntry(
        "ssl.key.password",
        None,
        ConfigSource.STATIC_BROKER_CONFIG,
        read_only=True,
        synonyms=(ConfigSynonym("ssl.key.password", None, ConfigSource.STATIC_BROKER_CONFIG),),
        is_sensitive=True,
    )
    assert format_entry(entry) == (
        "  ssl.key.password=null sensitive=true "
        "synonyms={STATIC_BROKER_CONFIG:ssl.key.password=null}"
    )


def test_a_users_scram_configs_parse_to_password_and_iterations_4096_unless_given() -> None:
    assert parse_scram_config(
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret],scram-sha-512=[password=a=b]"
    ) == {
        ScramMechanism.SCRAM_SHA_256: ("alice-secret", 8192),
        ScramMechanism.SCRAM_SHA_512: ("a=b", 4096),
    }


@pytest.mark.parametrize(
    ("add_config", "message"),
    [
        ("SCRAM-SHA-1=[password=x]", "'SCRAM-SHA-1' is not a SCRAM mechanism"),
        ("producer_byte_rate=1024", "users take SCRAM credentials only"),
        ("SCRAM-SHA-256=[iterations=8192]", "SCRAM-SHA-256 needs a password"),
        ("SCRAM-SHA-256=[salt=abc,password=x]", "not 'salt=abc'"),
        ("SCRAM-SHA-256=[iterations=many,password=x]", "must be a number, not 'many'"),
        ("SCRAM-SHA-256=[iterations=100,password=x]", "between 4096 and 16384, not 100"),
    ],
)
def test_a_bad_scram_config_is_refused_before_connecting_naming_it(
    add_config: str, message: str
) -> None:
    with pytest.raises(SystemExit, match=re.escape(message)):
        main(["configs", *ALICE, "--alter", "--add-config", add_config])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--entity-type", "users", "--alter", "--add-config", "x=1"], "needs --entity-name"),
        (["--entity-type", "users", "--entity-default", "--describe"], "brokers only"),
        ([*("--entity-type", "users", "--entity-name", "a"), "--alter"], "--alter needs"),
        ([*ALICE, "--alter", "--delete-config", "SCRAM-SHA-384"], "--delete-config: users take"),
    ],
)
def test_user_options_that_cannot_run_are_refused_before_connecting(
    args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit, match=re.escape(message)):
        main(["configs", *args])


def test_a_users_credentials_print_as_kafka_configs_prints_them() -> None:
    description = UserScramCredentialsDescription(
        "alice",
        Errors.NONE,
        credential_infos=(
            ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
            ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
        ),
    )
    assert format_user(description) == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    )


def test_users_are_altered_and_described_like_kafka_configs_does_it(
    fake_cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_cluster.add_brokers(1)
    scram = "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=pw]"
    assert main(["configs", *ALICE, "--alter", "--add-config", scram]) == 0
    assert main(["configs", *BOB, "--alter", "--add-config", "SCRAM-SHA-512=[password=b]"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Completed updating config for user alice.",
        "Completed updating config for user bob.",
    ]
    stored = fake_cluster.configs.entities["users/alice"]
    assert "alice-secret" not in str(stored)
    credential = ScramCredential.from_text(stored["SCRAM-SHA-256"])
    assert credential.matches(ScramMechanism.SCRAM_SHA_256, "alice-secret")
    assert main(["configs", *ALICE, "--describe"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    ]
    assert main(["configs", *ALICE, "--alter", "--delete-config", "SCRAM-SHA-512"]) == 0
    assert main(["configs", "--entity-type", "users", "--describe"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Completed updating config for user alice.",
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192",
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096",
    ]


def test_a_user_without_credentials_is_kafkas_error_and_exits_1(
    fake_cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_cluster.add_brokers(1)
    assert main(["configs", *BOB, "--describe"]) == 1
    assert main(["configs", *BOB, "--alter", "--delete-config", "SCRAM-SHA-256"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "Error: RESOURCE_NOT_FOUND (91): user 'bob': Attempt to describe a user credential "
        "that does not exist",
        "Error: RESOURCE_NOT_FOUND (91): user 'bob': Attempt to delete a user credential "
        "that does not exist: SCRAM-SHA-256",
    ]
