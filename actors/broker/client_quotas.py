"""Client quotas as a broker enforces them (Kafka's ClientQuotaManager, KIP-13 and KIP-55), with no
Ray and no sockets: the byte rate of each quota entity, and how long a client over its quota is
throttled.

Each quota type (produce, fetch) keeps a ``Rate`` per entity: Kafka's sampled rate, the bytes of
its last ``quota_window_num`` samples of ``quota_window_size_seconds`` each over the time they
span, never counted as less than ``quota_window_num - 1`` whole windows. A request is recorded
first; if that puts the rate over the quota, the client is throttled for Kafka's
``(observed - quota) / quota * window``: the time that, with nothing more recorded, brings the
rate back to the quota.

Which quota applies is Kafka's precedence over the configured entities, most specific first:
user and client id, user and default client id, user, default user and client id, default user
and default client id, default user, client id, default client id. The entity that supplies the
quota decides who shares its rate: a user's quota is shared by all the user's clients, a default
one is each user's (or client id's) own.
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rafka.protocol.messages.quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    USER,
    ClientQuotaEntity,
)

DEFAULT_QUOTA_WINDOW_NUM = 11
"""Kafka's ``quota.window.num``: 10 whole windows and the current one."""
DEFAULT_QUOTA_WINDOW_SIZE_SECONDS = 1
"""Kafka's ``quota.window.size.seconds``."""
INACTIVE_SENSOR_EXPIRATION_S = 3600.0
"""A rate nothing was recorded in for an hour is dropped, as Kafka drops its quota sensors."""


class ClientQuotaType(enum.Enum):
    """What a quota bounds (Kafka's QuotaType), by the config key that sets it."""

    PRODUCE = PRODUCER_BYTE_RATE
    FETCH = CONSUMER_BYTE_RATE


class Rate:
    """Kafka's ``Rate`` over a ``SampledStat``: ``samples`` windows of ``window_ms``, the newest
    one current. A sample is purged once ``samples`` windows have passed since it started."""

    def __init__(self, samples: int, window_ms: float) -> None:
        self.samples = samples
        self.window_ms = window_ms
        # Each sample's start and the bytes recorded in it, oldest first once all are in use.
        self._starts: list[float] = []
        self._values: list[float] = []
        self._current = 0
        self.last_record_ms = -math.inf

    def record(self, value: float, now_ms: float) -> None:
        """Add ``value`` to the current sample, starting a new one if its window is over."""
        self.last_record_ms = now_ms
        if not self._starts:
            self._starts.append(now_ms)
            self._values.append(0.0)
        if now_ms - self._starts[self._current] >= self.window_ms:
            self._current = (self._current + 1) % self.samples
            if self._current == len(self._starts):
                self._starts.append(now_ms)
                self._values.append(0.0)
            else:
                self._starts[self._current], self._values[self._current] = now_ms, 0.0
        self._values[self._current] += value

    def _purge(self, now_ms: float) -> None:
        for index, start in enumerate(self._starts):
            if now_ms - start >= self.samples * self.window_ms:
                self._starts[index], self._values[index] = now_ms, 0.0

    def window_size_ms(self, now_ms: float) -> float:
        """The time the rate is measured over: since the oldest sample started, but at least
        ``samples - 1`` whole windows (so a first burst is not measured over a few
        milliseconds), and at least 1 ms."""
        self._purge(now_ms)
        elapsed = now_ms - min(self._starts, default=now_ms)
        full_windows = int(elapsed // self.window_ms)
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_ms
        return max(elapsed, 1.0)

    def measure(self, now_ms: float) -> float:
        """Bytes per second over the window."""
        window = self.window_size_ms(now_ms)
        return sum(self._values) * 1000 / window


def throttle_time_ms(observed: float, quota: float, window_ms: float) -> int:
    """Kafka's throttle time: the delay X that brings a rate ``observed`` over a window
    ``window_ms`` down to ``quota`` were nothing more recorded (observed * W / (W + X) = quota,
    so X = (observed - quota) / quota * W); 0 under the quota."""
    if observed <= quota:
        return 0
    return round((observed - quota) / quota * window_ms)


@dataclass(frozen=True)
class QuotaMatch:
    """The quota a client is held to: its bound in bytes per second, and the rate it is measured
    in, named by the user and client id the supplying entity singles out ("" for neither, as
    Kafka's metric tags)."""

    bound: float
    user: str
    client_id: str


def resolve_quota(
    quotas: Mapping[ClientQuotaEntity, Mapping[str, float]],
    key: str,
    user: str,
    client_id: str,
) -> QuotaMatch | None:
    """The quota ``key`` of a client (user, client id), by Kafka's precedence; None if no
    configured entity sets it."""
    candidates = (
        ({USER: user, CLIENT_ID: client_id}, user, client_id),
        ({USER: user, CLIENT_ID: None}, user, client_id),
        ({USER: user}, user, ""),
        ({USER: None, CLIENT_ID: client_id}, user, client_id),
        ({USER: None, CLIENT_ID: None}, user, client_id),
        ({USER: None}, user, ""),
        ({CLIENT_ID: client_id}, "", client_id),
        ({CLIENT_ID: None}, "", client_id),
    )
    for entries, user_tag, client_tag in candidates:
        bound = quotas.get(ClientQuotaEntity.of(entries), {}).get(key)
        if bound is not None:
            return QuotaMatch(bound, user_tag, client_tag)
    return None


class ClientQuotaManager:
    """A broker's produce and fetch quotas: the configured quota entities, a rate per throttled
    (user, client id), and the throttle time of each recording."""

    def __init__(
        self,
        quota_window_num: int = DEFAULT_QUOTA_WINDOW_NUM,
        quota_window_size_seconds: int = DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.samples = quota_window_num
        self.window_ms = quota_window_size_seconds * 1000.0
        self.clock = clock
        self._quotas: dict[ClientQuotaEntity, dict[str, float]] = {}
        # Each quota type's rates, by the (user, client id) the supplying entity singles out.
        self._rates: dict[ClientQuotaType, dict[tuple[str, str], Rate]] = {
            kind: {} for kind in ClientQuotaType
        }
        self._last_expiry_ms = -math.inf

    def update(self, entity: ClientQuotaEntity, quotas: Mapping[str, float]) -> None:
        """Take an entity's configured quotas (none: it has no quota any more); rates already
        measured are held to the new bounds from the next request on."""
        if quotas:
            self._quotas[entity] = dict(quotas)
        else:
            self._quotas.pop(entity, None)

    def quota(self, kind: ClientQuotaType, user: str, client_id: str) -> QuotaMatch | None:
        """The quota of a client (user, client id), None if it has none."""
        if not self._quotas:
            return None  # the common case, at no cost to each request
        return resolve_quota(self._quotas, kind.value, user, client_id)

    def record(self, kind: ClientQuotaType, user: str, client_id: str, value: float) -> int:
        """Record ``value`` bytes of a client (user, client id) and return how long it is to be
        throttled, in milliseconds (0: not; always 0 for a client without a quota)."""
        match = self.quota(kind, user, client_id)
        if match is None:
            return 0
        now_ms = self.clock() * 1000
        self._expire(now_ms)
        rates = self._rates[kind]
        tags = (match.user, match.client_id)
        rate = rates.get(tags)
        if rate is None:
            rate = rates[tags] = Rate(self.samples, self.window_ms)
        rate.record(value, now_ms)
        window_ms = rate.window_size_ms(now_ms)
        return throttle_time_ms(rate.measure(now_ms), match.bound, window_ms)

    def max_value_in_quota_window(self, kind: ClientQuotaType, user: str, client_id: str) -> float:
        """The most a client may take at once without being throttled even after an idle
        window (Kafka bounds a fetch's size by it): its quota over ``quota_window_num - 1``
        windows; unbounded without a quota."""
        match = self.quota(kind, user, client_id)
        if match is None:
            return math.inf
        return match.bound * (self.samples - 1) * self.window_ms / 1000

    def _expire(self, now_ms: float) -> None:
        """Drop the rates idle for an hour, looking at most once a minute."""
        if now_ms - self._last_expiry_ms < 60_000:
            return
        self._last_expiry_ms = now_ms
        idle = now_ms - INACTIVE_SENSOR_EXPIRATION_S * 1000
        for rates in self._rates.values():
            for tags in [t for t, rate in rates.items() if rate.last_record_ms < idle]:
                del rates[tags]
