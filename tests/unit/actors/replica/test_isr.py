"""Tests for rafka.actors.replica.isr: Kafka's follower fetch state and in-sync replica rules.

The rules take the time as an argument, so these tests pass milliseconds by hand.
"""

from __future__ import annotations

import pytest

from rafka.actors.replica.isr import (
    FollowerState,
    expanded_isr,
    followers_to_add,
    high_watermark_candidate,
    initial_followers,
    lagging_followers,
    shrunk_isr,
)

NOW = 1_700_000_000_000
MAX_LAG_MS = 100
LEADER = 0


def followers(**leos: int) -> dict[int, FollowerState]:
    """Followers by id (``b1=3`` is broker 1 at LEO 3), all caught up at NOW."""
    return {
        int(name[1:]): FollowerState(int(name[1:]), leo, last_caught_up_ms=NOW)
        for name, leo in leos.items()
    }


# ------------------------------------------------------------------ a follower's fetch state


def test_fetch_at_the_leader_leo_is_caught_up_now() -> None:
    follower = FollowerState(1)
    follower.record_fetch(fetch_offset=10, leader_leo=10, now=NOW)
    assert (follower.log_end_offset, follower.last_caught_up_ms) == (10, NOW)
    assert (follower.last_fetch_ms, follower.last_fetch_leader_leo) == (NOW, 10)


def test_fetch_reaching_the_previous_leader_leo_is_caught_up_as_of_the_previous_fetch() -> None:
    follower = FollowerState(1)
    follower.record_fetch(fetch_offset=4, leader_leo=10, now=NOW)
    follower.record_fetch(fetch_offset=10, leader_leo=15, now=NOW + 50)
    assert follower.last_caught_up_ms == NOW
    assert follower.log_end_offset == 10


def test_fetch_behind_the_previous_leader_leo_keeps_the_old_caught_up_time() -> None:
    follower = FollowerState(1, last_caught_up_ms=NOW - 500)
    follower.record_fetch(fetch_offset=4, leader_leo=10, now=NOW)
    follower.record_fetch(fetch_offset=8, leader_leo=15, now=NOW + 50)
    assert follower.last_caught_up_ms == NOW - 500


def test_fetch_offset_is_the_follower_leo_even_when_it_goes_back() -> None:
    follower = FollowerState(1)
    follower.record_fetch(fetch_offset=10, leader_leo=10, now=NOW)
    follower.record_fetch(fetch_offset=3, leader_leo=10, now=NOW + 1)
    assert follower.log_end_offset == 3


def test_a_follower_lags_only_after_more_than_max_lag() -> None:
    follower = FollowerState(1, last_caught_up_ms=NOW)
    assert not follower.lags(NOW + MAX_LAG_MS, MAX_LAG_MS)
    assert follower.lags(NOW + MAX_LAG_MS + 1, MAX_LAG_MS)


def test_a_new_leader_counts_isr_members_caught_up_now_and_others_never() -> None:
    known = initial_followers(LEADER, replicas=(0, 1, 2), isr=(0, 1), now=NOW)
    assert sorted(known) == [1, 2]
    assert (known[1].last_caught_up_ms, known[2].last_caught_up_ms) == (NOW, 0)
    assert known[1].log_end_offset == known[2].log_end_offset == -1


# ------------------------------------------------------------------ high watermark


def test_high_watermark_candidate_is_the_smallest_leo_over_the_isr() -> None:
    known = followers(b1=7, b2=4)
    assert high_watermark_candidate(9, LEADER, (0, 1, 2), known) == 4
    assert high_watermark_candidate(3, LEADER, (0, 1, 2), known) == 3


def test_followers_outside_the_isr_do_not_hold_the_high_watermark_back() -> None:
    assert high_watermark_candidate(9, LEADER, (0, 1), followers(b1=7, b2=0)) == 7


def test_an_isr_member_the_leader_never_heard_of_holds_the_high_watermark_at_minus_one() -> None:
    assert high_watermark_candidate(9, LEADER, (0, 1, 3), followers(b1=7)) == -1


def test_a_leader_alone_in_the_isr_commits_its_whole_log() -> None:
    assert high_watermark_candidate(9, LEADER, (0,), followers(b1=0)) == 9


# ------------------------------------------------------------------ shrink and expand


def test_lagging_followers_are_listed_in_isr_order_without_leader_or_strangers() -> None:
    known = followers(b1=0, b2=0, b3=0)
    known[1].last_caught_up_ms = NOW - MAX_LAG_MS - 1
    known[2].last_caught_up_ms = NOW - MAX_LAG_MS
    known[3].last_caught_up_ms = NOW - 10 * MAX_LAG_MS
    assert lagging_followers(LEADER, (0, 3, 2, 1, 9), known, NOW, MAX_LAG_MS) == [3, 1]


@pytest.mark.parametrize(
    ("leo", "high_watermark", "epoch_start", "joins"),
    [
        (5, 5, 0, True),
        (4, 5, 0, False),  # below the HW
        (5, 5, 6, False),  # below the start of the leader's epoch
        (6, 5, 6, True),
    ],
)
def test_an_out_of_sync_follower_joins_once_past_the_hw_and_the_epoch_start(
    leo: int, high_watermark: int, epoch_start: int, joins: bool
) -> None:
    known = followers(b1=100, b2=leo)
    expected = [2] if joins else []
    assert followers_to_add((0, 1), known, high_watermark, epoch_start) == expected


def test_expanded_isr_follows_the_assignment_order() -> None:
    assert expanded_isr(replicas=(2, 0, 1), isr=(0, 1), joining=[2]) == (2, 0, 1)


def test_shrunk_isr_keeps_the_isr_order() -> None:
    assert shrunk_isr((2, 0, 1, 3), leaving=[1, 2]) == (0, 3)
