"""Tests for rafka.actors.broker.replication_quota: the byte-rate bound of KIP-73's replication
quotas, driven by a clock moved by hand."""

from __future__ import annotations

import pytest

from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.replication_quota import (
    MAX_WAIT_S,
    UNLIMITED,
    QuotaType,
    ReplicationQuota,
    ReplicationQuotas,
    Throttle,
)

RATE = 200_000
BATCH = 16_500


class Clock:
    """Seconds moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def replicate(quota: ReplicationQuota, clock: Clock, seconds: float, fetch_s: float = 0.005) -> int:
    """A throttled replica fetching as fast as ``quota`` lets it for ``seconds``: each fetch moves
    one batch in ``fetch_s``; return the bytes moved."""
    end, moved = clock.now + seconds, 0
    while clock.now < end:
        throttle = quota.throttle(1 << 20)
        if not throttle.allowed:
            clock.now += throttle.wait_s
            continue
        quota.settle(throttle.max_bytes, BATCH)
        moved += BATCH
        clock.now += fetch_s
    return moved


def test_an_unlimited_quota_never_throttles_and_passes_the_whole_fetch(clock: Clock) -> None:
    quota = ReplicationQuota(clock=clock)
    quota.settle(0, 1 << 30)
    assert not quota.is_exceeded()
    assert quota.throttle(1 << 20) == Throttle(0.0, 1 << 20)


@pytest.mark.parametrize("fetch_s", [0.001, 0.005, 0.05])
def test_a_replica_fetching_flat_out_moves_at_the_rate_from_its_first_fetch(
    clock: Clock, fetch_s: float
) -> None:
    quota = ReplicationQuota(RATE, clock=clock)
    assert replicate(quota, clock, 2.0, fetch_s) / 2.0 == pytest.approx(RATE, rel=0.1)
    assert replicate(quota, clock, 20.0, fetch_s) / 20.0 == pytest.approx(RATE, rel=0.01)


def test_an_idle_quota_saves_up_no_more_than_a_tenth_of_a_second(clock: Clock) -> None:
    quota = ReplicationQuota(RATE, clock=clock)
    replicate(quota, clock, 1.0)
    clock.now += 60.0
    assert replicate(quota, clock, 1.0) <= RATE * 1.1 + BATCH


def test_replicas_sharing_a_quota_move_the_rate_between_them(clock: Clock) -> None:
    quota = ReplicationQuota(RATE, clock=clock)
    moved = [0, 0]
    end, tick = clock.now + 20.0, 0
    while clock.now < end:
        tick += 1
        for index in (0, 1) if tick % 2 else (1, 0):
            throttle = quota.throttle(1 << 20)
            if throttle.allowed:
                quota.settle(throttle.max_bytes, BATCH)
                moved[index] += BATCH
        clock.now += 0.01
    assert sum(moved) / 20.0 == pytest.approx(RATE, rel=0.02)
    assert moved[0] == pytest.approx(moved[1], rel=0.1)


def test_replicas_asking_together_cannot_spend_the_same_budget(clock: Clock) -> None:
    """Grants are reserved when given: four replicas asking before any has fetched get one
    tenth of a second's worth between them, not four."""
    quota = ReplicationQuota(RATE, clock=clock)
    grants = [quota.throttle(1 << 20) for _ in range(4)]
    assert [g.max_bytes for g in grants] == [RATE // 10, 0, 0, 0]
    assert all(g.wait_s > 0 for g in grants[1:])
    quota.settle(grants[0].max_bytes, 1000)
    assert quota.throttle(1 << 20).allowed


def test_a_debt_is_a_wait_of_debt_over_rate(clock: Clock) -> None:
    quota = ReplicationQuota(RATE, clock=clock)
    quota.settle(0, RATE // 10 + RATE // 2)
    assert quota.is_exceeded()
    throttle = quota.throttle(1 << 20)
    assert (throttle.max_bytes, throttle.wait_s) == (0, pytest.approx(0.5))
    clock.now += 0.501
    assert quota.throttle(1 << 20).allowed


def test_a_fetch_under_the_quota_reads_a_tenth_of_a_seconds_worth(clock: Clock) -> None:
    quota = ReplicationQuota(RATE, clock=clock)
    assert quota.throttle(1000) == Throttle(0.0, 1000)
    assert quota.throttle(1 << 20) == Throttle(0.0, RATE // 10)


def test_waits_are_capped_so_a_lifted_throttle_applies_soon(clock: Clock) -> None:
    quota = ReplicationQuota(1000, clock=clock)
    quota.settle(0, 1 << 20)
    assert quota.throttle(1 << 20) == Throttle(MAX_WAIT_S, 0)
    quota.update_rate(UNLIMITED)
    assert quota.throttle(1 << 20).allowed


def test_a_lowered_rate_keeps_no_more_savings_than_it_allows(clock: Clock) -> None:
    quota = ReplicationQuota(clock=clock)
    clock.now += 10.0
    quota.update_rate(RATE)
    quota.settle(0, RATE // 10 + RATE)
    assert quota.throttle(1 << 20).wait_s == pytest.approx(MAX_WAIT_S)


def test_a_zero_rate_stops_throttled_traffic(clock: Clock) -> None:
    quota = ReplicationQuota(0, clock=clock)
    assert quota.throttle(1 << 20) == Throttle(MAX_WAIT_S, 0)
    clock.now += 3600.0
    assert quota.throttle(1 << 20) == Throttle(MAX_WAIT_S, 0)


def test_a_brokers_quotas_follow_its_dynamic_rates(clock: Clock) -> None:
    quotas = ReplicationQuotas(BrokerConfig(follower_replication_throttled_rate=RATE), clock)
    assert quotas[QuotaType.LEADER].unlimited
    assert quotas[QuotaType.FOLLOWER].rate == RATE
    quotas.update(BrokerConfig(leader_replication_throttled_rate=5))
    assert (quotas[QuotaType.LEADER].rate, quotas[QuotaType.FOLLOWER].unlimited) == (5, True)
