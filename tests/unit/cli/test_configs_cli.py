"""Tests for ``rafka configs`` (rafka.cli.configs): kafka-configs' option syntax and output."""

from __future__ import annotations

import re

import pytest

from rafka.cli.configs import format_entry, parse_add_config
from rafka.cli.main import main
from rafka.protocol.configs import ConfigEntry, ConfigSource, ConfigSynonym


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
