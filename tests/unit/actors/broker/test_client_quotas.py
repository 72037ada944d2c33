"""Tests for rafka.actors.broker.client_quotas: Kafka's sampled rate, its throttle time, and which
configured quota a client is held to, against figures worked out by hand."""

from __future__ import annotations

import pytest

from rafka.actors.broker.client_quotas import (
    ClientQuotaManager,
    ClientQuotaType,
    QuotaMatch,
    Rate,
    resolve_quota,
    throttle_time_ms,
)
from rafka.protocol.messages.quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    USER,
    ClientQuotaEntity,
)

PRODUCE = ClientQuotaType.PRODUCE


class Clock:
    """A clock the test moves by hand, in seconds."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def entity(**names: str | None) -> ClientQuotaEntity:
    """``entity(user="alice", client_id=None)``: alice's default client id."""
    kinds = {"user": USER, "client_id": CLIENT_ID}
    return ClientQuotaEntity.of({kinds[k]: v for k, v in names.items()})


def manager(clock: Clock, *quotas: tuple[ClientQuotaEntity, float]) -> ClientQuotaManager:
    """Kafka's default windows (11 of 1 s), producer quotas as given."""
    quota_manager = ClientQuotaManager(clock=clock)
    for quota_entity, bound in quotas:
        quota_manager.update(quota_entity, {PRODUCER_BYTE_RATE: bound})
    return quota_manager


def test_a_first_burst_is_measured_over_ten_whole_windows_not_over_the_time_it_took() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(10_000, now_ms=0)
    assert rate.window_size_ms(0) == 10_000
    assert rate.measure(0) == 1000.0


def test_the_window_grows_with_elapsed_time_once_samples_span_more_than_ten_windows() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(10_000, now_ms=0)
    rate.record(5_000, now_ms=2_500)  # a second sample: 2.5 s elapsed, 2 whole windows
    assert rate.window_size_ms(2_500) == 2_500 + 8 * 1000
    assert rate.measure(2_500) == pytest.approx(15_000 / 10.5)
    rate.record(1_000, now_ms=10_800)
    assert rate.window_size_ms(10_800) == 10_800  # 10 whole windows: no padding
    assert rate.measure(10_800) == pytest.approx(16_000 / 10.8)


def test_a_sample_is_forgotten_once_eleven_windows_passed_since_it_started() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(10_000, now_ms=0)
    rate.record(3_000, now_ms=5_000)
    assert rate.measure(10_999) == pytest.approx(13_000 / 10.999)
    # At 11 s the first sample is purged; the oldest left started at 5 s: 6 s and 4 padded.
    assert rate.measure(11_000) == pytest.approx(3_000 / 10)


@pytest.mark.parametrize(
    ("observed", "quota", "window_ms", "expected"),
    [
        (100.0, 50.0, 2_000, 2_000),  # Kafka's own QuotaUtils test figure
        (1_500.0, 1_000.0, 10_000, 5_000),
        (55.0, 50.0, 1_000, 100),
        (1_000.0, 1_000.0, 10_000, 0),
        (900.0, 1_000.0, 10_000, 0),
    ],
)
def test_the_throttle_time_brings_the_observed_rate_back_to_the_quota(
    observed: float, quota: float, window_ms: float, expected: int
) -> None:
    assert throttle_time_ms(observed, quota, window_ms) == expected


def test_a_client_over_its_quota_is_throttled_for_kafkas_time_and_one_at_it_is_not() -> None:
    clock = Clock()
    quotas = manager(clock, (entity(client_id="app"), 1000))
    # 10,000 bytes over the 10 s a first burst is measured over: exactly the quota.
    assert quotas.record(PRODUCE, "ANONYMOUS", "app", 10_000) == 0
    # 15,000 bytes over 10 s is 1,500/s: (1500 - 1000) / 1000 * 10 s.
    assert quotas.record(PRODUCE, "ANONYMOUS", "app", 5_000) == 5_000
    clock.now += 5.0
    # 5 s on, 15,010 bytes over 10 s (5 s elapsed, 5 windows padded) is still over.
    assert quotas.record(PRODUCE, "ANONYMOUS", "app", 10) == round(5_010 / 1000 * 1000)


def test_a_client_without_a_quota_is_never_throttled() -> None:
    clock = Clock()
    quotas = manager(clock, (entity(client_id="app"), 1000))
    assert quotas.record(PRODUCE, "ANONYMOUS", "other", 10**9) == 0
    assert quotas.record(ClientQuotaType.FETCH, "ANONYMOUS", "app", 10**9) == 0


def test_the_rate_is_shared_by_every_client_id_of_a_user_with_a_user_quota() -> None:
    quotas = manager(Clock(), (entity(user="alice"), 1000))
    assert quotas.record(PRODUCE, "alice", "app-1", 10_000) == 0
    assert quotas.record(PRODUCE, "alice", "app-2", 5_000) == 5_000


def test_a_default_quota_holds_each_user_to_a_rate_of_its_own() -> None:
    quotas = manager(Clock(), (entity(user=None), 1000))
    assert quotas.record(PRODUCE, "alice", "app", 10_000) == 0
    assert quotas.record(PRODUCE, "bob", "app", 10_000) == 0
    assert quotas.record(PRODUCE, "bob", "app", 5_000) == 5_000


def test_a_removed_quota_stops_throttling_and_a_new_one_applies_to_the_next_request() -> None:
    clock = Clock()
    quotas = manager(clock, (entity(client_id="app"), 1000))
    assert quotas.record(PRODUCE, "ANONYMOUS", "app", 15_000) == 5_000
    quotas.update(entity(client_id="app"), {})
    assert quotas.record(PRODUCE, "ANONYMOUS", "app", 15_000) == 0
    quotas.update(entity(client_id="app"), {PRODUCER_BYTE_RATE: 3000.0})
    # The rate measured so far is kept: 30,000 bytes over 10 s is the new quota exactly.
    assert quotas.record(PRODUCE, "ANONYMOUS", "app", 0) == 0


def test_a_fetch_is_bounded_by_the_quota_over_ten_windows_and_unbounded_without_one() -> None:
    quotas = ClientQuotaManager(clock=Clock())
    quotas.update(entity(client_id="app"), {CONSUMER_BYTE_RATE: 1000.0})
    assert quotas.max_value_in_quota_window(ClientQuotaType.FETCH, "u", "app") == 10_000
    assert quotas.max_value_in_quota_window(ClientQuotaType.FETCH, "u", "x") == float("inf")


def test_a_rate_idle_for_an_hour_is_dropped_and_starts_afresh() -> None:
    clock = Clock()
    quotas = manager(clock, (entity(client_id="a"), 1000), (entity(client_id="b"), 1000))
    quotas.record(PRODUCE, "u", "a", 10_000)
    clock.now += 3601
    # Recording for another client sweeps the idle rate away; a's next burst starts anew.
    quotas.record(PRODUCE, "u", "b", 1)
    assert quotas.record(PRODUCE, "u", "a", 10_000) == 0


def test_a_greedy_client_waiting_out_each_throttle_gets_its_quota_and_at_most_a_burst_more() -> (
    None
):
    clock = Clock()
    quota, size = 200_000, 16_384
    quotas = manager(clock, (entity(client_id="app"), quota))
    start, sent = clock.now, 0
    while clock.now - start < 60:
        throttle = quotas.record(PRODUCE, "ANONYMOUS", "app", size)
        sent += size
        elapsed = clock.now - start
        # Kafka's window lets an idle client burst 10 windows' worth, and never more.
        assert sent <= quota * (elapsed + 10) + size
        if elapsed > 11:  # once the burst's sample is gone, the client is never held below
            assert sent >= quota * elapsed
        clock.now += 0.005 + throttle / 1000  # 5 ms per request, then the throttle time


BOUNDS = {
    ("alice", "app"): 1.0,
    ("alice", None): 2.0,
    ("alice", "-"): 3.0,
    (None, "app"): 4.0,
    (None, None): 5.0,
    (None, "-"): 6.0,
    ("-", "app"): 7.0,
    ("-", None): 8.0,
}
"""One quota per level: (user, client id), None a default, "-" the type not named."""
TAGS = [
    ("alice", "app"),
    ("alice", "app"),
    ("alice", ""),
    ("alice", "app"),
    ("alice", "app"),
    ("alice", ""),
    ("", "app"),
    ("", "app"),
]
"""The rate each level's quota is measured in (Kafka's metric tags), in precedence order."""


def _level(user: str | None, client_id: str | None) -> ClientQuotaEntity:
    names = {USER: user, CLIENT_ID: client_id}
    return ClientQuotaEntity.of({k: v for k, v in names.items() if v != "-"})


@pytest.mark.parametrize("removed", range(len(BOUNDS)))
def test_the_most_specific_configured_level_wins_in_kafkas_precedence_order(removed: int) -> None:
    levels = list(BOUNDS.items())
    quotas = {_level(*level): {PRODUCER_BYTE_RATE: bound} for level, bound in levels[removed:]}
    assert resolve_quota(quotas, PRODUCER_BYTE_RATE, "alice", "app") == QuotaMatch(
        levels[removed][1], *TAGS[removed]
    )


def test_another_users_or_client_ids_quota_does_not_apply() -> None:
    quotas = {
        entity(user="bob"): {PRODUCER_BYTE_RATE: 1.0},
        entity(client_id="other"): {PRODUCER_BYTE_RATE: 2.0},
        entity(user="bob", client_id="app"): {PRODUCER_BYTE_RATE: 3.0},
        entity(user="alice"): {CONSUMER_BYTE_RATE: 4.0},
    }
    assert resolve_quota(quotas, PRODUCER_BYTE_RATE, "alice", "app") is None
