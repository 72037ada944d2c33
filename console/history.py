"""What the console's charts and rates are drawn from: the last samples of each series, in a ring.

A series is named by a key such as ``("messages_in", "broker", "0")`` and holds (time, value)
points, oldest first, at most ``capacity`` of them: the console keeps minutes, not a database. A
counter's series holds its running total, and its rate is read from the last two points; a gauge's
(lag, a latency percentile) is charted as it is.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

SeriesKey = tuple[str, ...]
"""A series' name: the quantity first, then what it is of (``("lag", "orders-app")``)."""

DEFAULT_REFRESH_MS = 5_000
"""How often the console samples the cluster into its history (and its charts redraw)."""

DEFAULT_CAPACITY = 360
"""Points kept per series: half an hour at the default refresh."""


@dataclass(frozen=True)
class Point:
    """One sample of a series: seconds since the epoch and the value then."""

    at: float
    value: float


class History:
    """Ring buffers of samples, one per series key; not thread-safe (the console's event loop
    alone records and reads)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 2:
            raise ValueError(f"a history needs room for two points to give a rate, not {capacity}")
        self.capacity = capacity
        self._series: dict[SeriesKey, deque[Point]] = {}

    def record(self, at: float, values: Mapping[SeriesKey, float]) -> None:
        """Add one point at time ``at`` to each series of ``values``; a series seen for the first
        time starts here."""
        for key, value in values.items():
            points = self._series.get(key)
            if points is None:
                points = self._series[key] = deque(maxlen=self.capacity)
            points.append(Point(at, float(value)))

    def points(self, key: SeriesKey) -> list[Point]:
        """The series' points, oldest first (none if it was never recorded)."""
        return list(self._series.get(key, ()))

    def latest(self, key: SeriesKey) -> float | None:
        """The series' last value, None if it has none."""
        points = self._series.get(key)
        return points[-1].value if points else None

    def rate(self, key: SeriesKey) -> float | None:
        """A counter's increase per second between its last two points; None before it has two,
        or when it went down (its broker restarted and counts from zero again)."""
        points = self._series.get(key)
        if points is None or len(points) < 2:
            return None
        return _per_second(points[-2], points[-1])

    def rates(self, key: SeriesKey) -> list[Point]:
        """A counter's rate between each two consecutive points, at the later one's time; a reset
        leaves a gap rather than a negative rate."""
        points = self.points(key)
        found = []
        for before, after in itertools.pairwise(points):
            rate = _per_second(before, after)
            if rate is not None:
                found.append(Point(after.at, rate))
        return found

    def keys(self, *prefix: str) -> Iterator[SeriesKey]:
        """The recorded keys that start with ``prefix``, in sorted order."""
        return iter(sorted(k for k in self._series if k[: len(prefix)] == prefix))


def _per_second(before: Point, after: Point) -> float | None:
    elapsed = after.at - before.at
    increase = after.value - before.value
    if elapsed <= 0 or increase < 0:
        return None
    return increase / elapsed
