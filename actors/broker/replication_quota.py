"""Replication quotas (KIP-73, Kafka's ReplicationQuotaManager), with no Ray: a byte-rate bound per
broker for its leaders and one for its followers.

Only the traffic of throttled replicas is recorded against a quota and only it is held back (which
replicas are throttled is the partition's decision, from the ``*.replication.throttled.replicas``
topic configs). A throttled replica asks its broker for a ``Throttle`` before each fetch: over the
bound it waits (a follower leaves the fetch out, a leader answers with nothing); under it, it reads
at most ``BURST_S`` worth of bytes, reserved at once so that replicas asking together cannot all
spend the same budget; afterwards it settles what it moved against what it was granted.

The bound is kept as a byte budget that refills at the rate: a fetch spends it, possibly into debt,
and a debt is a wait of debt / rate. An idle quota saves up at most ``BURST_S`` worth, so the rate
holds from a throttled replica's first fetch on. (Kafka's sampled rate credits up to its whole
window of idle time, a burst as large as a few MB at the start of a catch-up.)
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass

from rafka.actors.broker.config import BrokerConfig
from rafka.log.config import INT64_MAX

UNLIMITED = INT64_MAX
"""The rate of a quota that is not set (Kafka's default for ``*.replication.throttled.rate``)."""
BURST_S = 0.1
"""Seconds' worth of bytes an idle quota saves up, and the most one throttled fetch reads."""
MAX_WAIT_S = 1.0
"""Longest wait handed out at once: a throttle removed or raised meanwhile applies within it."""
MIN_WAIT_S = 0.001
"""The shortest wait handed out: a quota with nothing left waits at least this long."""


class QuotaType(enum.Enum):
    """Which side of replication a quota bounds (Kafka's QuotaType)."""

    LEADER = "leader"
    FOLLOWER = "follower"


@dataclass(frozen=True)
class Throttle:
    """A quota's answer to a throttled replica about to fetch: wait ``wait_s`` first (over the
    quota; ``max_bytes`` is then 0), else move at most ``max_bytes`` now."""

    wait_s: float
    max_bytes: int

    @property
    def allowed(self) -> bool:
        """Whether the replica may fetch now."""
        return self.wait_s <= 0


class ReplicationQuota:
    """One byte-rate bound: a budget of bytes refilled at ``rate`` per second."""

    def __init__(self, rate: int = UNLIMITED, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.clock = clock
        self._updated = clock()
        self._budget = self._burst()

    @property
    def unlimited(self) -> bool:
        """Whether no bound is set."""
        return self.rate >= UNLIMITED

    def _burst(self) -> float:
        return self.rate * BURST_S

    def _refill(self) -> None:
        now = self.clock()
        self._budget = min(self._burst(), self._budget + self.rate * (now - self._updated))
        self._updated = now

    def update_rate(self, rate: int) -> None:
        """A new bound, effective at once; a debt already run up is kept."""
        self._refill()
        self.rate = rate
        self._budget = min(self._budget, self._burst())

    def settle(self, granted: int, moved: int) -> None:
        """A throttled fetch granted ``granted`` bytes moved ``moved``: give back what it did not
        use, or count what it moved past its grant (a batch larger than the grant)."""
        if self.unlimited:
            return
        self._refill()
        self._budget += granted - moved

    def throttle_time(self) -> float:
        """Seconds until the quota has budget again if nothing more is moved (0: it has some; a
        zero rate never has)."""
        if self.unlimited:
            return 0.0
        self._refill()
        if self._budget > 0:
            return 0.0
        if self.rate <= 0:
            return MAX_WAIT_S
        return max(-self._budget / self.rate, MIN_WAIT_S)

    def is_exceeded(self) -> bool:
        """Whether throttled replicas must wait now."""
        return self.throttle_time() > 0

    def throttle(self, max_bytes: int) -> Throttle:
        """What a throttled replica that would fetch up to ``max_bytes`` may do now; the bytes
        granted are taken from the budget until ``settle``."""
        wait_s = self.throttle_time()
        if wait_s > 0:
            return Throttle(min(wait_s, MAX_WAIT_S), 0)
        granted = min(max_bytes, max(int(self._burst()), 1))
        if not self.unlimited:
            self._budget -= granted
        return Throttle(0.0, granted)


class ReplicationQuotas:
    """A broker's leader and follower replication quotas, bounded by its effective config."""

    def __init__(self, config: BrokerConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self._quotas = {kind: ReplicationQuota(UNLIMITED, clock) for kind in QuotaType}
        self.update(config)

    def update(self, config: BrokerConfig) -> None:
        """Take the rates of a (dynamically changed) broker config."""
        self._quotas[QuotaType.LEADER].update_rate(config.leader_replication_throttled_rate)
        self._quotas[QuotaType.FOLLOWER].update_rate(config.follower_replication_throttled_rate)

    def __getitem__(self, kind: QuotaType) -> ReplicationQuota:
        return self._quotas[kind]
