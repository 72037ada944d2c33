"""The leader's view of its followers, and Kafka's rules for the in-sync replica set (ISR).

Plain functions over plain state, with no Ray and no clock of their own (the caller passes the
time), so the partition applies them and tests drive them directly. The rules are Kafka's:

- the leader learns a follower's log end offset (LEO) from that follower's fetch offset;
- the high watermark is the smallest LEO over the ISR, the leader's own included;
- a follower is caught up when it fetched at the leader's LEO, or at the LEO the leader had at its
  previous fetch (Kafka's ``updateFetchState``), so a follower keeping pace with a moving LEO stays
  in sync;
- an ISR follower not caught up for ``replica.lag.time.max.ms`` leaves the ISR (``maybeShrinkIsr``);
- an out-of-sync follower whose LEO reached both the high watermark and the start of the leader's
  current epoch joins it again (``maybeExpandIsr``);
- one ISR change is written at a time: a new one is proposed only once the pending one is answered.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass


@dataclass
class FollowerState:
    """What the leader knows of one follower, learnt from its fetches."""

    broker_id: int
    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = -1

    def record_fetch(self, fetch_offset: int, leader_leo: int, now: int) -> None:
        """Take a successful fetch at ``fetch_offset`` while the leader's LEO is ``leader_leo``."""
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = now
        elif fetch_offset >= self.last_fetch_leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.last_fetch_leader_leo = leader_leo
        self.last_fetch_ms = now
        self.log_end_offset = fetch_offset

    def lags(self, now: int, max_lag_ms: int) -> bool:
        """Whether it has not been caught up for longer than ``max_lag_ms``."""
        return now - self.last_caught_up_ms > max_lag_ms


def initial_followers(
    leader_id: int, replicas: Iterable[int], isr: Collection[int], now: int
) -> dict[int, FollowerState]:
    """A new leader's followers: LEOs unknown; ISR members caught up now, so not shrunk at once."""
    return {
        r: FollowerState(r, last_caught_up_ms=now if r in isr else 0)
        for r in replicas
        if r != leader_id
    }


def high_watermark_candidate(
    leader_leo: int, leader_id: int, isr: Iterable[int], followers: Mapping[int, FollowerState]
) -> int:
    """The smallest LEO over the ISR; an ISR member the leader knows nothing of counts as -1."""
    candidate = leader_leo
    for replica in isr:
        if replica != leader_id:
            follower = followers.get(replica)
            candidate = min(candidate, follower.log_end_offset if follower is not None else -1)
    return candidate


def lagging_followers(
    leader_id: int,
    isr: Iterable[int],
    followers: Mapping[int, FollowerState],
    now: int,
    max_lag_ms: int,
) -> list[int]:
    """ISR followers, in ISR order, not caught up within ``max_lag_ms``: candidates to shrink."""
    return [
        r for r in isr if r != leader_id and r in followers and followers[r].lags(now, max_lag_ms)
    ]


def followers_to_add(
    isr: Collection[int],
    followers: Mapping[int, FollowerState],
    high_watermark: int,
    epoch_start: int,
) -> list[int]:
    """Out-of-sync followers whose LEO reached the HW and their epoch's start: candidates to add."""
    bar = max(high_watermark, epoch_start)
    return [r for r, state in followers.items() if r not in isr and state.log_end_offset >= bar]


def expanded_isr(
    replicas: Iterable[int], isr: Collection[int], joining: Collection[int]
) -> tuple[int, ...]:
    """The ISR with ``joining`` added, in assignment order."""
    return tuple(r for r in replicas if r in isr or r in joining)


def shrunk_isr(isr: Iterable[int], leaving: Collection[int]) -> tuple[int, ...]:
    """The ISR without ``leaving``, in its own order."""
    return tuple(r for r in isr if r not in leaving)
