"""rafka.testing.wait_until: waits on a condition with a deadline, never longer."""

from __future__ import annotations

import itertools

import pytest

from rafka.testing import wait_until


def test_returns_the_first_answer_even_when_it_is_zero() -> None:
    answers = iter([None, False, 0, 5])
    assert wait_until(lambda: next(answers), 5, "an answer") == 0


def test_exceptions_mean_not_yet() -> None:
    calls = itertools.count()

    def flaky() -> str:
        if next(calls) < 2:
            raise ConnectionError("mid-failover")
        return "ready"

    assert wait_until(flaky, 5, "the cluster") == "ready"


def test_timeout_names_what_never_happened_and_the_last_error() -> None:
    def failing() -> None:
        raise ValueError("no leader for events-0")

    with pytest.raises(
        AssertionError, match=r"timed out after 0.3s waiting for a leader .*no leader for events-0"
    ):
        wait_until(failing, 0.3, "a leader")
