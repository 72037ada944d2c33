"""Tests for rafka.cluster.secret_file: owner-only secret files in a cluster's data directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rafka.cluster.secret_file import SecretFileError, create_secret, read_secret


def test_a_secret_is_written_owner_only_even_under_a_permissive_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        assert create_secret(tmp_path / "s", "abc")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "s").stat().st_mode) == 0o600
    assert read_secret(tmp_path / "s") == "abc"


def test_an_existing_secret_is_kept_not_overwritten(tmp_path: Path) -> None:
    assert create_secret(tmp_path / "s", "first")
    assert not create_secret(tmp_path / "s", "second")
    assert read_secret(tmp_path / "s") == "first"


def test_no_file_is_no_secret(tmp_path: Path) -> None:
    assert read_secret(tmp_path / "missing") is None


def test_a_file_others_may_read_is_refused_without_echoing_the_secret(tmp_path: Path) -> None:
    create_secret(tmp_path / "s", "hunter2")
    (tmp_path / "s").chmod(0o640)
    with pytest.raises(SecretFileError, match="chmod 600") as raised:
        read_secret(tmp_path / "s")
    assert "hunter2" not in str(raised.value)


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s").touch(mode=0o600)
    with pytest.raises(SecretFileError, match="empty"):
        read_secret(tmp_path / "s")
