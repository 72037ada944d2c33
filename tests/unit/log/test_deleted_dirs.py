"""Tests for rafka.log.deleted_dirs and ``Log.rename_for_deletion``: a deleted partition's directory
is renamed at once and removed after its delay."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from rafka.log.deleted_dirs import (
    DelayedDirRemover,
    pending_deletions,
    rename_for_deletion,
)
from rafka.log.log import Log

DELETED = re.compile(r"^events-3\.[0-9a-f]{32}-delete$")


def test_a_deleted_log_is_renamed_at_once_so_the_name_is_free_for_a_new_topic(
    tmp_path: Path,
) -> None:
    log = Log(tmp_path / "events-3")
    renamed = log.rename_for_deletion()
    assert DELETED.match(renamed.name)
    assert not (tmp_path / "events-3").exists()
    assert renamed.is_dir() and log.directory == renamed
    fresh = Log(tmp_path / "events-3")
    assert fresh.log_end_offset == 0
    assert pending_deletions(tmp_path) == [renamed]


def test_renaming_a_missing_directory_is_nothing_to_do(tmp_path: Path) -> None:
    assert rename_for_deletion(tmp_path / "events-3", "events", 3) is None
    assert pending_deletions(tmp_path / "absent") == []


def test_a_renamed_directory_is_removed_only_after_its_delay(tmp_path: Path) -> None:
    directory = tmp_path / "events-3"
    directory.mkdir()
    (directory / "00000000000000000000.log").write_bytes(b"x")
    renamed = rename_for_deletion(directory, "events", 3)
    assert renamed is not None

    async def scenario() -> tuple[bool, bool]:
        remover = DelayedDirRemover(asyncio.get_running_loop())
        remover.schedule(renamed, 300)
        remover.schedule(renamed, 300)
        await asyncio.sleep(0.05)
        early = renamed.exists()
        deadline = asyncio.get_running_loop().time() + 5
        while renamed.exists() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        return early, renamed.exists()

    early, late = asyncio.run(scenario())
    assert early and not late
