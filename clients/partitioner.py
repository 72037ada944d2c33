"""The producer's default partitioner, wire-compatible with Apache Kafka's Java client.

Keyed records are placed by ``murmur2(key)`` exactly as Kafka's Java client and
kafka-python place them, so producers written against any of the three agree on
which partition holds a key (and therefore on per-key ordering). Unkeyed records
use KIP-480 sticky partitioning: stay on one partition until its batch is sent,
which fills batches faster than round-robin and so lowers latency.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from struct import unpack_from

__all__ = [
    "DefaultPartitioner",
    "StickyPartitioner",
    "murmur2",
    "partition_for_key",
    "to_positive",
]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Return Kafka's ``Utils.murmur2`` of ``data`` as Java's signed 32-bit int.

    Kafka's default partitioner is defined by this exact hash, so any deviation
    would route keys to different partitions than other Kafka clients do.
    """
    # Locals are the cheapest names to load in this per-record loop.
    m = _M
    mask = _MASK32
    length = len(data)
    h = _SEED ^ length
    nwords = length >> 2
    if nwords:
        # One C-level unpack of every little-endian word beats slicing bytes in Python.
        for k in unpack_from(f"<{nwords}I", data):
            k = (k * m) & mask
            # (a ^ b) & mask == (a & mask) ^ (b & mask): one mask covers Java's two wraps.
            h = ((h * m) ^ ((k ^ (k >> 24)) * m)) & mask
    tail = length & 3
    if tail:
        i = nwords << 2
        if tail == 3:
            h ^= data[i + 2] << 16
        if tail >= 2:
            h ^= data[i + 1] << 8
        h = ((h ^ data[i]) * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Return Kafka's ``Utils.toPositive``: ``n`` with the sign bit cleared.

    Kafka masks rather than taking ``abs`` because ``abs(-2**31)`` overflows in
    Java; masking is also what decides the partition, so it must match exactly.
    """
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """Return the partition Kafka's default partitioner assigns ``key`` to.

    Raises ``ValueError`` if ``num_partitions`` is less than 1.
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitioner:
    """Per-topic sticky partition choice for unkeyed records (KIP-480).

    Records without a key go to one randomly chosen available partition until
    the producer reports, via :meth:`on_new_batch`, that the batch for that
    partition is done; then a different partition is chosen. Mirrors Kafka's
    ``StickyPartitionCache``.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        """Create an empty cache; pass ``rng`` to make choices reproducible."""
        self._rng = rng if rng is not None else random.Random()
        self._sticky: dict[str, int] = {}
        # Only switching needs the lock; the per-record read path stays lock-free.
        self._lock = threading.Lock()

    def partition(
        self, topic: str, num_partitions: int, available: Sequence[int] | None = None
    ) -> int:
        """Return the current sticky partition of ``topic``, choosing one if none yet."""
        current = self._sticky.get(topic)
        # A cached choice out of range means the topic was recreated with fewer partitions.
        if current is not None and current < num_partitions:
            return current
        return self._switch(topic, num_partitions, current, available)

    def on_new_batch(
        self,
        topic: str,
        num_partitions: int,
        previous_partition: int,
        available: Sequence[int] | None = None,
    ) -> int:
        """Move ``topic`` off ``previous_partition`` after its batch filled or was sent.

        Only switches if ``previous_partition`` is still the sticky one, so several
        batches completing at once cause one switch, not several. Returns the
        sticky partition in effect afterwards.
        """
        current = self._sticky.get(topic)
        if current is not None and current != previous_partition and current < num_partitions:
            return current
        return self._switch(topic, num_partitions, current, available)

    def _switch(
        self,
        topic: str,
        num_partitions: int,
        expected: int | None,
        available: Sequence[int] | None,
    ) -> int:
        """Replace ``expected`` with a new random partition unless another caller already did."""
        if num_partitions < 1:
            raise ValueError(f"num_partitions must be >= 1, got {num_partitions}")
        # Partitions without a leader would only make the batch wait, but if none has
        # a leader, waiting on any partition beats refusing to produce.
        candidates: Sequence[int] = available if available else range(num_partitions)
        with self._lock:
            current = self._sticky.get(topic)
            if current is not None and current != expected:
                return current  # a concurrent caller already switched
            others = [p for p in candidates if p != current]
            chosen = self._rng.choice(others) if others else candidates[0]
            self._sticky[topic] = chosen
            return chosen


class DefaultPartitioner:
    """Kafka's default producer partitioner: murmur2 for keyed records, sticky otherwise.

    Keyed records hash over all partitions, ignoring availability, because a
    key's partition must not move when a leader is briefly missing.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        """Create a partitioner; ``rng`` seeds the sticky choice for unkeyed records."""
        self._sticky = StickyPartitioner(rng)

    def __call__(
        self,
        topic: str,
        key: bytes | None,
        num_partitions: int,
        available: Sequence[int] | None = None,
    ) -> int:
        """Return the partition for a record of ``topic`` with ``key``."""
        if key is None:
            return self._sticky.partition(topic, num_partitions, available)
        return partition_for_key(key, num_partitions)

    def on_new_batch(
        self,
        topic: str,
        num_partitions: int,
        previous_partition: int,
        available: Sequence[int] | None = None,
    ) -> int:
        """Tell the sticky partitioner the batch for ``previous_partition`` is done."""
        return self._sticky.on_new_batch(topic, num_partitions, previous_partition, available)
