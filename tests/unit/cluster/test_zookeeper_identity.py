"""Tests for rafka.cluster.zookeeper_identity: the identity a cluster's data directory keeps."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from rafka.cluster.secret_file import SecretFileError
from rafka.cluster.zookeeper_identity import (
    IDENTITY_FILE,
    create_identity,
    identity_config,
    read_identity,
)
from rafka.protocol.errors import InvalidConfigError


def test_without_set_acl_nothing_is_added_or_written(tmp_path: Path) -> None:
    assert identity_config(tmp_path, {}) == {}
    assert not (tmp_path / IDENTITY_FILE).exists()


def test_set_acl_makes_an_owner_only_identity_that_the_next_start_reuses(tmp_path: Path) -> None:
    first = identity_config(tmp_path, {"zookeeper_set_acl": True})
    credentials = first["zookeeper_digest_credentials"]
    assert credentials.startswith("rafka:") and len(credentials) > 30
    assert "zookeeper_set_acl" not in first  # the caller's own setting stands
    identity = tmp_path / IDENTITY_FILE
    assert stat.S_IMODE(identity.stat().st_mode) == 0o600
    assert identity_config(tmp_path, {"zookeeper.set.acl": "true"}) == first


def test_a_directory_with_an_identity_keeps_set_acl_on_unless_told_otherwise(
    tmp_path: Path,
) -> None:
    credentials = create_identity(tmp_path)
    assert identity_config(tmp_path, {}) == {
        "zookeeper_digest_credentials": credentials,
        "zookeeper_set_acl": True,
    }
    assert identity_config(tmp_path, {"zookeeper_set_acl": False}) == {
        "zookeeper_digest_credentials": credentials
    }


def test_credentials_given_in_the_broker_config_win_and_nothing_is_stored(tmp_path: Path) -> None:
    overrides = {"zookeeper_set_acl": True, "zookeeper_digest_credentials": "ops:pw"}
    assert identity_config(tmp_path, overrides) == {}
    assert read_identity(tmp_path) is None


def test_a_second_creation_returns_the_first_identity(tmp_path: Path) -> None:
    assert create_identity(tmp_path) == create_identity(tmp_path) == read_identity(tmp_path)


def test_an_empty_identity_file_is_reported_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / IDENTITY_FILE).write_text("")
    (tmp_path / IDENTITY_FILE).chmod(0o600)
    with pytest.raises(SecretFileError, match="is empty"):
        create_identity(tmp_path)


def test_a_bad_identity_is_refused_without_echoing_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        identity_config(tmp_path, {"zookeeper_digest_credentials": "no-colon-secret"})
    assert "no-colon-secret" not in str(raised.value)


def test_an_identity_file_others_may_read_is_refused(tmp_path: Path) -> None:
    create_identity(tmp_path)
    (tmp_path / IDENTITY_FILE).chmod(0o644)
    with pytest.raises(SecretFileError, match="can be read by others"):
        identity_config(tmp_path, {})
