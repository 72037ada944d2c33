"""Helpers for tests of code that uses rafka: waiting on a cluster condition with a deadline.

A cluster changes asynchronously (elections, rebalances, replication), so a test waits for the state
it expects instead of sleeping a fixed time; the failure names what never happened and the last error.
"""

from __future__ import annotations

import time
from typing import Any, Callable

POLL_INTERVAL_S = 0.1


def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Call ``predicate`` until it returns something other than None or False, and return that.

    0 and empty values count as answers (0 is a broker id). Exceptions count as "not yet", since the
    cluster may be mid-failover; the last one is named in the AssertionError raised after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except Exception as exc:  # noqa: BLE001 - any failure of the probe means "not yet"
            value, last = None, exc
        if value is not None and value is not False:
            return value
        time.sleep(POLL_INTERVAL_S)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last error: {last!r})")
