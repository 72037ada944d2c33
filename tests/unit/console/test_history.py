"""The console's ring buffer of samples (rafka.console.history): bounded series, counter rates,
resets."""

from __future__ import annotations

import pytest

from rafka.console.history import History, Point

KEY = ("messages_in", "broker", "0")


def test_a_series_keeps_the_last_capacity_points_oldest_first() -> None:
    history = History(capacity=3)
    for second in range(5):
        history.record(float(second), {KEY: second * 10.0})
    assert history.points(KEY) == [Point(2.0, 20.0), Point(3.0, 30.0), Point(4.0, 40.0)]
    assert history.latest(KEY) == 40.0


def test_rate_is_the_increase_per_second_between_the_last_two_points() -> None:
    history = History()
    history.record(100.0, {KEY: 1_000.0})
    assert history.rate(KEY) is None
    history.record(102.0, {KEY: 1_500.0})
    assert history.rate(KEY) == 250.0
    assert history.rate(("unknown",)) is None


def test_a_counter_that_went_down_has_no_rate_there_instead_of_a_negative_one() -> None:
    history = History()
    for at, total in ((0.0, 10.0), (1.0, 30.0), (2.0, 5.0), (3.0, 9.0)):
        history.record(at, {KEY: total})
    assert history.rates(KEY) == [Point(1.0, 20.0), Point(3.0, 4.0)]
    history.record(4.0, {KEY: 1.0})
    assert history.rate(KEY) is None


def test_keys_are_listed_by_prefix_in_order() -> None:
    history = History()
    history.record(
        0.0, {("lag", "b"): 1.0, ("lag", "a"): 2.0, ("lag", "a", "t", "0"): 2.0, KEY: 1.0}
    )
    assert list(history.keys("lag")) == [("lag", "a"), ("lag", "a", "t", "0"), ("lag", "b")]
    assert list(history.keys("lag", "b")) == [("lag", "b")]


def test_a_history_too_small_for_a_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="two points"):
        History(capacity=1)
