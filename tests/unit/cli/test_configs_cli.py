"""Tests for ``rafka configs`` (rafka.cli.configs, rafka.cli.client_quotas): kafka-configs' option
syntax and output, for topics and brokers, and for users' SCRAM credentials and users' and clients'
quotas against a fake cluster."""

from __future__ import annotations

import re

import pytest

from rafka.cli.client_quotas import format_quotas, java_double
from rafka.cli.configs import format_entry, format_user, parse_add_config, parse_scram_config
from rafka.cli.main import main
from rafka.protocol.configs import ConfigEntry, ConfigSource, ConfigSynonym
from rafka.protocol.errors import Errors
from rafka.protocol.messages.quotas import ClientQuotaEntity
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
            "--entity-default applies to --entity-type brokers, users and clients only",
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


APP = ("--entity-type", "clients", "--entity-name", "app-1")
ALICE_APP = (*ALICE, *APP)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1048576, "1048576.0"),
        (200_000.0, "200000.0"),
        (9_999_999, "9999999.0"),
        (10_485_760, "1.048576E7"),  # Java's Double.toString turns to E notation at 10^7
        (10**7, "1.0E7"),
        (2**63 - 1, "9.223372036854776E18"),
    ],
)
def test_a_quota_prints_as_javas_double_to_string_writes_it(value: float, text: str) -> None:
    assert java_double(value) == text


def test_quota_lines_name_users_clients_and_defaults_as_kafka_configs_does() -> None:
    both = ClientQuotaEntity.of({"user": "alice", "client-id": None})
    assert format_quotas(both, {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2e7}) == (
        "Quota configs for user-principal 'alice', the default client-id are "
        "consumer_byte_rate=2.0E7, producer_byte_rate=1024.0"
    )
    assert format_quotas(ClientQuotaEntity.of({"client-id": "app-1"}), {"x": 1.0}) == (
        "Quota configs for client-id 'app-1' are x=1.0"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*ALICE, "--add-config", "producer_byte_rate=-5"], "producer_byte_rate must be greater"),
        ([*APP, "--add-config", "consumer_byte_rate=fast"], "consumer_byte_rate must be a number"),
        ([*APP, "--add-config", "producer_byte_rate=1.5"], "producer_byte_rate must be a Long"),
        ([*APP, "--add-config", "request_percentage=50"], "unknown quota config request_percen"),
        (
            [*APP, "--delete-config", "SCRAM-SHA-256"],
            "a named user's, not a default's or a client's",
        ),
        ([*ALICE_APP, "--add-config", "SCRAM-SHA-256=[password=x]"], "a named user's"),
        (
            ["--entity-type", "users", "--entity-default", "--delete-config", "SCRAM-SHA-256"],
            "a named user's",
        ),
        (["--entity-type", "clients", "--add-config", "producer_byte_rate=1"], "needs --entity"),
        ([*ALICE, "--entity-type", "topics", "--add-config", "x=1"], "users and clients may"),
        ([*ALICE, *ALICE, "--add-config", "producer_byte_rate=1"], "given twice: users, users"),
        ([*APP, "--entity-default", "--add-config", "producer_byte_rate=1"], "more --entity-name"),
    ],
)
def test_a_bad_quota_alteration_is_refused_before_connecting_naming_it(
    args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit, match=re.escape(message)):
        main(["configs", *args, "--alter"])


def test_quotas_are_altered_and_described_like_kafka_configs_does_it(
    fake_cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_cluster.add_brokers(1)
    alter = ("--alter", "--add-config")
    assert main(["configs", *ALICE, *alter, "producer_byte_rate=1048576"]) == 0
    assert main(["configs", *APP, *alter, "consumer_byte_rate=10485760"]) == 0
    assert main(["configs", *ALICE_APP, *alter, "producer_byte_rate=2048"]) == 0
    users_default = ("--entity-type", "users", "--entity-default")
    assert main(["configs", *users_default, *alter, "producer_byte_rate=512"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Completed updating config for user alice.",
        "Completed updating config for client app-1.",
        "Completed updating config for user alice.",
        "Completed updating default config for users in the cluster.",
    ]
    assert fake_cluster.configs.entities == {
        "users/alice": {"producer_byte_rate": "1048576"},
        "clients/app-1": {"consumer_byte_rate": "10485760"},
        "users/alice/clients/app-1": {"producer_byte_rate": "2048"},
        "users/<default>": {"producer_byte_rate": "512"},
    }
    assert main(["configs", *ALICE, "--describe"]) == 0
    assert main(["configs", *APP, "--describe"]) == 0
    assert main(["configs", *ALICE_APP, "--describe"]) == 0
    assert main(["configs", "--entity-type", "users", "--describe"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0",
        "Quota configs for client-id 'app-1' are consumer_byte_rate=1.048576E7",
        "Quota configs for user-principal 'alice', client-id 'app-1' are producer_byte_rate=2048.0",
        "Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0",
        "Quota configs for the default user-principal are producer_byte_rate=512.0",
    ]
    assert main(["configs", *ALICE_APP, "--alter", "--delete-config", "producer_byte_rate"]) == 0
    assert fake_cluster.configs.entities["users/alice/clients/app-1"] == {}


def test_a_users_credentials_and_quotas_are_altered_together_and_each_kept_by_the_other(
    fake_cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_cluster.add_brokers(1)
    both = "SCRAM-SHA-256=[password=alice-secret],producer_byte_rate=4096"
    assert main(["configs", *ALICE, "--alter", "--add-config", both]) == 0
    stored = fake_cluster.configs.entities["users/alice"]
    assert set(stored) == {"SCRAM-SHA-256", "producer_byte_rate"}
    assert main(["configs", *ALICE, "--alter", "--delete-config", "producer_byte_rate"]) == 0
    assert fake_cluster.configs.entities["users/alice"] == {
        "SCRAM-SHA-256": stored["SCRAM-SHA-256"]
    }
    assert main(["configs", *ALICE, "--alter", "--add-config", "consumer_byte_rate=8192"]) == 0
    capsys.readouterr()
    assert main(["configs", *ALICE, "--describe"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Quota configs for user-principal 'alice' are consumer_byte_rate=8192.0",
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096",
    ]


def test_a_user_with_quotas_but_no_credentials_is_described_without_an_error(
    fake_cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_cluster.add_brokers(1)
    assert main(["configs", *BOB, "--alter", "--add-config", "producer_byte_rate=100"]) == 0
    capsys.readouterr()
    assert main(["configs", *BOB, "--describe"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Quota configs for user-principal 'bob' are producer_byte_rate=100.0"
    ]
