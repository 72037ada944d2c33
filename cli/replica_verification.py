"""``rafka replica-verification``: check that every replica of a partition holds the same batches.

Kafka's ReplicaVerificationTool, batch by batch: each replica of every partition whose topic matches
``--topic-white-list`` is read directly (its own log, as a follower reads it, not through the
leader), and the replicas' batches below each one's high watermark are compared in order: base
offset, last offset and CRC. After each round it prints Kafka's line ``<time>: max lag is N for
partition [t,p] at offset O among K partitions`` (lag: the highest high watermark among a
partition's replicas minus the offset up to which all of them agree). The first disagreement is
printed as Kafka prints it and the command exits 1.

This module holds the rules and the output and needs no cluster: the replicas come through a
``ReplicaSource`` (``replica_reader`` reads them over Ray).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from rafka.protocol.records.batch import iter_batches
from rafka.protocol.types import TopicPartition, now_ms

DEFAULT_REPORT_INTERVAL_MS = 30_000
"""Kafka's default time between two lag reports."""

DEFAULT_FETCH_SIZE = 1 << 20
"""Bytes read from one replica per call (Kafka's ``--fetch-size`` default)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka replica-verification`` (kafka-replica-verification.sh's names)."""
    parser.add_argument(
        "--topic-white-list",
        required=True,
        metavar="REGEX",
        help="verify the topics whose whole name matches this regular expression",
    )
    parser.add_argument(
        "--report-interval-ms",
        type=int,
        default=DEFAULT_REPORT_INTERVAL_MS,
        help="time between two rounds of verification, each ending with a lag report",
    )
    parser.add_argument(
        "--reports",
        type=int,
        default=1,
        help="rounds to run before exiting (default 1; 0 runs until interrupted, as Kafka's tool)",
    )
    parser.add_argument(
        "--fetch-size",
        type=int,
        default=DEFAULT_FETCH_SIZE,
        help="bytes read from one replica per request",
    )


def check(args: argparse.Namespace) -> re.Pattern[str]:
    """The compiled topic pattern; refuse options that cannot run, before connecting."""
    try:
        pattern = re.compile(args.topic_white_list)
    except re.error as exc:
        raise SystemExit(
            f"--topic-white-list {args.topic_white_list!r} is not a valid regular expression: {exc}"
        ) from None
    if args.report_interval_ms < 0:
        raise SystemExit("--report-interval-ms must not be negative")
    if args.reports < 0:
        raise SystemExit("--reports must not be negative")
    if args.fetch_size <= 0:
        raise SystemExit("--fetch-size must be positive")
    return pattern


@dataclass(frozen=True)
class ReplicaState:
    """Where one replica's log starts and how far it is committed."""

    log_start_offset: int
    high_watermark: int


@dataclass(frozen=True)
class BatchInfo:
    """What the comparison looks at in one batch."""

    base_offset: int
    last_offset: int
    crc: int

    @property
    def next_offset(self) -> int:
        """The offset right after the batch."""
        return self.last_offset + 1


@dataclass(frozen=True)
class ReplicaChunk:
    """Consecutive batches read from one replica, none at or above its high watermark."""

    broker_id: int
    batches: tuple[BatchInfo, ...]


@dataclass(frozen=True)
class Mismatch:
    """The first place two replicas of a partition disagree."""

    partition: TopicPartition
    offset: int
    expected: int  # the first replica's broker id
    actual: int  # the disagreeing replica's broker id
    expected_batch: BatchInfo
    actual_batch: BatchInfo

    def describe(self) -> str:
        """Kafka's line for the disagreement: offsets first, else checksums."""
        ours, theirs = self.expected_batch, self.actual_batch
        if ours.base_offset != theirs.base_offset or ours.last_offset != theirs.last_offset:
            # Batches that start together but end apart differ at their last offsets.
            same_start = ours.base_offset == theirs.base_offset
            mine = ours.last_offset if same_start else ours.base_offset
            other = theirs.last_offset if same_start else theirs.base_offset
            return (
                f"Partition {bracketed(self.partition)}: replica {self.expected}'s offset {mine} "
                f"doesn't match replica {self.actual}'s offset {other}"
            )
        return (
            f"Partition {bracketed(self.partition)} has unmatched checksum at offset "
            f"{self.offset}; replica {self.expected}'s checksum {ours.crc}; "
            f"replica {self.actual}'s checksum {theirs.crc}"
        )


@dataclass(frozen=True)
class Comparison:
    """What comparing one chunk per replica found: where agreement ends, and any mismatch."""

    next_offset: int
    mismatch: Mismatch | None = None


@dataclass(frozen=True)
class Lag:
    """One partition after a round: the offset all replicas agree up to, and its lag."""

    partition: TopicPartition
    offset: int
    lag: int


def bracketed(tp: TopicPartition) -> str:
    """A partition as Kafka's tool prints it: ``[topic,partition]``."""
    return f"[{tp.topic},{tp.partition}]"


def batches_below(data: bytes, high_watermark: int) -> tuple[BatchInfo, ...]:
    """The whole batches in ``data`` that end below ``high_watermark``."""
    found = []
    for _, header in iter_batches(data):
        if header.last_offset >= high_watermark:
            break
        found.append(BatchInfo(header.base_offset, header.last_offset, header.crc))
    return tuple(found)


def compare(tp: TopicPartition, offset: int, chunks: Sequence[ReplicaChunk]) -> Comparison:
    """Compare the replicas' batches from ``offset`` in order, as far as every replica has some.

    The first chunk is the reference; the first batch another replica holds differently is the
    mismatch.
    """
    reference = chunks[0]
    depth = min(len(chunk.batches) for chunk in chunks)
    for index in range(depth):
        expected = reference.batches[index]
        for other in chunks[1:]:
            actual = other.batches[index]
            if actual != expected:
                where = min(expected.base_offset, actual.base_offset)
                mismatch = Mismatch(
                    tp, where, reference.broker_id, other.broker_id, expected, actual
                )
                return Comparison(offset, mismatch)
        offset = expected.next_offset
    return Comparison(offset)


class ReplicaSource(Protocol):
    """Where the tool finds topics and reads replicas (a Ray cluster, or a fake in tests)."""

    def topics(self) -> list[str]:
        """Every topic's name."""

    def replicas(self, topic: str) -> dict[int, tuple[int, ...]]:
        """Partition -> the broker ids of its replicas."""

    def state(self, tp: TopicPartition, broker_id: int) -> ReplicaState:
        """The log start offset and high watermark of the replica on ``broker_id``."""

    def read(self, tp: TopicPartition, broker_id: int, offset: int, max_bytes: int) -> bytes:
        """Whole batches of that replica's own log from ``offset`` (one at least)."""


class ReplicaVerifier:
    """Verifies a fixed set of partitions round after round, from where the last round stopped."""

    def __init__(
        self,
        source: ReplicaSource,
        partitions: dict[TopicPartition, tuple[int, ...]],
        fetch_size: int = DEFAULT_FETCH_SIZE,
    ) -> None:
        self.source = source
        self.partitions = partitions
        self.fetch_size = fetch_size
        self.verified: dict[TopicPartition, int] = {}

    def verify_round(self) -> list[Lag] | Mismatch:
        """Bring every partition up to its replicas' high watermarks: each one's lag, or the first
        mismatch."""
        lags = []
        for tp in sorted(self.partitions):
            found = self._verify(tp)
            if isinstance(found, Mismatch):
                return found
            lags.append(found)
        return lags

    def _verify(self, tp: TopicPartition) -> Lag | Mismatch:
        brokers = self.partitions[tp]
        states = {broker: self.source.state(tp, broker) for broker in brokers}
        offset = max([self.verified.get(tp, 0), *(s.log_start_offset for s in states.values())])
        while True:
            chunks = [self._chunk(tp, broker, states[broker], offset) for broker in brokers]
            comparison = compare(tp, offset, chunks)
            if comparison.mismatch is not None:
                return comparison.mismatch
            if comparison.next_offset == offset:
                break
            offset = comparison.next_offset
        self.verified[tp] = offset
        highest = max(s.high_watermark for s in states.values())
        return Lag(tp, offset, max(0, highest - offset))

    def _chunk(
        self, tp: TopicPartition, broker: int, state: ReplicaState, offset: int
    ) -> ReplicaChunk:
        if state.high_watermark <= offset:
            return ReplicaChunk(broker, ())
        data = self.source.read(tp, broker, offset, self.fetch_size)
        return ReplicaChunk(broker, batches_below(data, state.high_watermark))


def time_string(ms: int) -> str:
    """Local time as Kafka's tool prints it: ``yyyy-MM-dd HH:mm:ss,SSS``."""
    return f"{datetime.fromtimestamp(ms / 1000):%Y-%m-%d %H:%M:%S},{ms % 1000:03d}"


def lag_line(lags: Sequence[Lag], ms: int) -> str:
    """Kafka's report line for the partition with the largest lag (the first one on a tie)."""
    worst = max(lags, key=lambda lag: lag.lag)
    return (
        f"{time_string(ms)}: max lag is {worst.lag} for partition {bracketed(worst.partition)} "
        f"at offset {worst.offset} among {len(lags)} partitions"
    )


def matching_partitions(
    source: ReplicaSource, pattern: re.Pattern[str]
) -> dict[TopicPartition, tuple[int, ...]]:
    """Every partition of the topics whose whole name matches ``pattern``, with its replicas."""
    topics = [t for t in source.topics() if pattern.fullmatch(t)]
    if not topics:
        raise LookupError(f"no topic matches --topic-white-list {pattern.pattern!r}")
    return {
        TopicPartition(topic, partition): tuple(replicas)
        for topic in topics
        for partition, replicas in source.replicas(topic).items()
    }


def run(
    args: argparse.Namespace,
    source: ReplicaSource,
    clock: Callable[[], int] = now_ms,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Execute ``rafka replica-verification``: 0 when the replicas agree, 1 at a mismatch."""
    pattern = check(args)
    verifier = ReplicaVerifier(source, matching_partitions(source, pattern), args.fetch_size)
    print(f"{time_string(clock())}: verification process is started.", flush=True)
    rounds = 0
    while True:
        found = verifier.verify_round()
        if isinstance(found, Mismatch):
            print(found.describe(), flush=True)
            return 1
        print(lag_line(found, clock()), flush=True)
        rounds += 1
        if rounds == args.reports:
            return 0
        sleep(args.report_interval_ms / 1000)
