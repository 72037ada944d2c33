"""Tests for LeaderEpochCache: assignment, OffsetsForLeaderEpoch, truncation and persistence."""

from __future__ import annotations

import pytest

from rafka.log.checkpoint import LEADER_EPOCH_FILE
from rafka.log.leader_epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_OFFSET,
    EpochEntry,
    LeaderEpochCache,
)

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_OFFSET)


def _pairs(cache: LeaderEpochCache) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in cache.entries]


@pytest.fixture
def cache(tmp_path) -> LeaderEpochCache:
    """Epochs 1 (from 0), 3 (from 10) and 5 (from 20)."""
    cache = LeaderEpochCache(tmp_path)
    for epoch, start in [(1, 0), (3, 10), (5, 20)]:
        assert cache.assign(epoch, start)
    return cache


def test_empty_cache_has_no_epoch_and_answers_undefined(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    assert cache.entries == [] and cache.latest_epoch == UNDEFINED_EPOCH
    assert cache.end_offset_for(0, 100) == UNDEFINED
    assert not (tmp_path / LEADER_EPOCH_FILE).exists(), (
        "nothing is written until an epoch is assigned"
    )


def test_assign_ignores_older_equal_and_negative_epochs(cache):
    assert not cache.assign(5, 30)
    assert not cache.assign(4, 30)
    assert not cache.assign(-1, 30)
    assert _pairs(cache) == [(1, 0), (3, 10), (5, 20)]
    assert cache.latest_epoch == 5


def test_assign_of_a_newer_epoch_appends_an_entry(cache):
    assert cache.assign(6, 25)
    assert _pairs(cache) == [(1, 0), (3, 10), (5, 20), (6, 25)]
    assert cache.latest_epoch == 6


def test_assign_replaces_entries_starting_at_or_after_the_new_start(cache):
    # A new leader whose epoch starts at 10 overrides what epochs 3 and 5 claimed from there on.
    assert cache.assign(7, 10)
    assert _pairs(cache) == [(1, 0), (7, 10)]


def test_end_offset_for_the_latest_epoch_is_the_log_end_offset(cache):
    assert cache.end_offset_for(5, 42) == (5, 42)


def test_end_offset_for_a_middle_epoch_is_the_next_epochs_start(cache):
    assert cache.end_offset_for(1, 42) == (1, 10)
    assert cache.end_offset_for(3, 42) == (3, 20)


def test_end_offset_for_an_unknown_epoch_between_known_ones_uses_the_epoch_below(cache):
    # KIP-279: the follower learns the largest epoch both know and where it ends.
    assert cache.end_offset_for(2, 42) == (1, 10)
    assert cache.end_offset_for(4, 42) == (3, 20)


def test_end_offset_for_an_epoch_above_the_latest_is_the_latest_epochs_end(cache):
    assert cache.end_offset_for(9, 42) == (5, 42)


def test_end_offset_for_an_epoch_below_the_first_is_undefined(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    cache.assign(3, 7)
    assert cache.end_offset_for(2, 42) == UNDEFINED
    assert cache.end_offset_for(0, 42) == UNDEFINED
    assert cache.end_offset_for(3, 42) == (3, 42)


def test_truncate_from_end_drops_epochs_starting_at_or_after_the_offset(cache):
    cache.truncate_from_end(21)
    assert _pairs(cache) == [(1, 0), (3, 10), (5, 20)]
    cache.truncate_from_end(20)
    assert _pairs(cache) == [(1, 0), (3, 10)]
    assert cache.end_offset_for(5, 20) == (3, 20)
    cache.truncate_from_end(0)
    assert cache.entries == []


def test_truncate_from_start_moves_the_first_kept_epoch_to_the_new_start(cache):
    cache.truncate_from_start(0)
    assert _pairs(cache) == [(1, 0), (3, 10), (5, 20)]
    cache.truncate_from_start(15)
    assert _pairs(cache) == [(3, 15), (5, 20)]
    cache.truncate_from_start(20)
    assert _pairs(cache) == [(5, 20)]
    cache.truncate_from_start(35)
    assert _pairs(cache) == [(5, 35)]
    assert cache.end_offset_for(3, 40) == UNDEFINED


def test_truncate_from_start_at_an_epoch_boundary_drops_the_epoch_before_it(cache):
    cache.truncate_from_start(10)
    assert _pairs(cache) == [(3, 10), (5, 20)]


def test_clear_forgets_everything_durably(cache, tmp_path):
    cache.clear()
    assert cache.entries == []
    assert LeaderEpochCache(tmp_path).entries == []


def test_entries_are_a_copy(cache):
    cache.entries.append(EpochEntry(9, 99))
    assert _pairs(cache)[-1] == (5, 20)


def test_every_change_persists_across_reopen(cache, tmp_path):
    assert _pairs(LeaderEpochCache(tmp_path)) == [(1, 0), (3, 10), (5, 20)]
    cache.assign(8, 30)
    cache.truncate_from_start(12)
    assert _pairs(LeaderEpochCache(tmp_path)) == [(3, 12), (5, 20), (8, 30)]
    cache.truncate_from_end(20)
    reopened = LeaderEpochCache(tmp_path)
    assert _pairs(reopened) == [(3, 12)]
    assert reopened.end_offset_for(3, 19) == (3, 19)


def test_checkpoint_file_is_kafkas_text_format(cache, tmp_path):
    assert (tmp_path / LEADER_EPOCH_FILE).read_text() == "0\n3\n1 0\n3 10\n5 20\n"


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage", b"0\n3\n1 0\n", b"0\n1\n1 0 7\n", b"1\n1\n1 0\n", b"0\nx\n", b"\xff\xfe\x00"],
    ids=["empty", "text", "short", "wide-entry", "unknown-version", "bad-count", "binary"],
)
def test_malformed_checkpoint_is_tolerated_as_empty_and_rebuilt(tmp_path, content):
    (tmp_path / LEADER_EPOCH_FILE).write_bytes(content)
    cache = LeaderEpochCache(tmp_path)
    assert cache.entries == []
    assert cache.assign(2, 5)
    assert _pairs(LeaderEpochCache(tmp_path)) == [(2, 5)]


def test_log_rebuilds_a_malformed_epoch_checkpoint_from_new_appends(harness):
    log = harness.open()
    harness.append([[(b"k", b"v", 1)]], epoch=3)
    log.close()
    (harness.directory / LEADER_EPOCH_FILE).write_text("not a checkpoint")
    log = harness.open()
    assert log.epoch_cache.entries == [] and log.end_offset_for_epoch(3) == UNDEFINED
    harness.append([[(b"k", b"v", 2)]], epoch=4)
    assert log.end_offset_for_epoch(4) == (4, 2)
    assert harness.read_all() == harness.records
