"""Tests for checkpoint files: Kafka's text format, atomic replacement, missing, malformed files."""

from __future__ import annotations

import os

import pytest

from rafka.log.checkpoint import CheckpointFile, OffsetCheckpoint
from rafka.log.files import atomic_write


def _leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_entries_round_trip_in_kafkas_text_format(tmp_path):
    checkpoint = CheckpointFile(tmp_path / "leader-epoch-checkpoint", 2)
    checkpoint.write([(0, 0), (3, 120), (7, 9000)])
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n3 120\n7 9000\n"
    assert checkpoint.read() == [(0, 0), (3, 120), (7, 9000)]


def test_empty_entry_list_round_trips(tmp_path):
    checkpoint = CheckpointFile(tmp_path / "c", 2)
    checkpoint.write([])
    assert checkpoint.read() == []
    assert (tmp_path / "c").read_text() == "0\n0\n"


def test_write_replaces_the_whole_file_and_leaves_no_temp_file(tmp_path):
    checkpoint = CheckpointFile(tmp_path / "c", 1)
    checkpoint.write([(i,) for i in range(100)])
    checkpoint.write([(42,)])
    assert checkpoint.read() == [(42,)]
    assert _leftovers(tmp_path) == []


def test_a_write_interrupted_before_the_rename_keeps_the_old_content(tmp_path, monkeypatch):
    checkpoint = OffsetCheckpoint(tmp_path / "recovery-point-offset-checkpoint")
    checkpoint.write(10)

    def crash(*_args):
        raise OSError("crash before rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        checkpoint.write(20)
    monkeypatch.undo()
    assert checkpoint.read() == 10, "the old checkpoint is intact: never a torn file"


def test_atomic_write_replaces_content(tmp_path):
    target = tmp_path / "file"
    target.write_bytes(b"old content that is longer")
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert _leftovers(tmp_path) == []


def test_missing_file_reads_as_no_entries_and_offset_default(tmp_path):
    assert CheckpointFile(tmp_path / "absent", 2).read() == []
    assert OffsetCheckpoint(tmp_path / "absent").read() == 0
    assert OffsetCheckpoint(tmp_path / "absent").read(default=17) == 17


MALFORMED = {
    "empty": "",
    "version-only": "0\n",
    "unknown-version": "1\n1\n5\n",
    "non-numeric-count": "0\nmany\n5\n",
    "fewer-entries-than-count": "0\n3\n5\n6\n",
    "entry-too-wide": "0\n1\n5 6\n",
    "non-numeric-entry": "0\n1\nfive\n",
}


@pytest.mark.parametrize("content", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_file_raises_value_error_naming_it(tmp_path, content):
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text(content)
    with pytest.raises(ValueError, match="recovery-point-offset-checkpoint"):
        CheckpointFile(path, 1).read()


@pytest.mark.parametrize("content", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_offset_checkpoint_reads_as_the_default(tmp_path, content):
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_text(content)
    assert OffsetCheckpoint(path).read(default=3) == 3


def test_offset_checkpoint_round_trips_large_offsets(tmp_path):
    checkpoint = OffsetCheckpoint(tmp_path / "replication-offset-checkpoint")
    checkpoint.write((1 << 62) + 5)
    assert checkpoint.read() == (1 << 62) + 5
    checkpoint.write(0)
    assert checkpoint.read(default=99) == 0


def test_offset_checkpoint_with_no_entries_reads_as_the_default(tmp_path):
    path = tmp_path / "c"
    CheckpointFile(path, 1).write([])
    assert OffsetCheckpoint(path).read(default=8) == 8


def test_log_persists_recovery_point_and_start_offset_checkpoints(harness):
    log = harness.open(segment_bytes=2000)
    harness.append([[(b"k", b"v" * 100, 1)] * 3 for _ in range(20)])
    log.advance_log_start_offset(7)
    log.flush()
    log.checkpoint()
    assert (
        OffsetCheckpoint(harness.directory / "recovery-point-offset-checkpoint").read()
        == log.log_end_offset
    )
    assert OffsetCheckpoint(harness.directory / "log-start-offset-checkpoint").read() == 7
    assert _leftovers(harness.directory) == []
