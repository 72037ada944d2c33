"""The replica verification tool's rules and output, against replicas held in memory."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

import pytest

from rafka.cli.main import main
from rafka.cli.replica_verification import (
    BatchInfo,
    Lag,
    ReplicaChunk,
    ReplicaState,
    ReplicaVerifier,
    batches_below,
    compare,
    lag_line,
    matching_partitions,
    run,
)
from rafka.protocol.records.batch import stamp
from rafka.protocol.records.builder import build_batch
from rafka.protocol.types import TopicPartition

TP = TopicPartition("orders", 0)


def batch(base_offset: int, values: list[bytes]) -> bytes:
    """A batch of ``values`` stamped at ``base_offset``."""
    data = bytearray(build_batch((None, value, 1_000) for value in values))
    stamp(data, 0, base_offset, 0)
    return bytes(data)


def log_of(*batches: list[bytes]) -> list[bytes]:
    """Batches of the given values, at consecutive offsets from 0."""
    found, offset = [], 0
    for values in batches:
        found.append(batch(offset, values))
        offset += len(values)
    return found


@dataclass
class Replica:
    """One replica in memory: its batches and its high watermark."""

    batches: list[bytes]
    high_watermark: int
    log_start_offset: int = 0


@dataclass
class FakeSource:
    """A cluster of in-memory replicas: topic -> partition -> broker -> replica."""

    logs: dict[str, dict[int, dict[int, Replica]]]
    reads: list[tuple[int, int]] = field(default_factory=list)

    def topics(self) -> list[str]:
        return sorted(self.logs)

    def replicas(self, topic: str) -> dict[int, tuple[int, ...]]:
        return {p: tuple(brokers) for p, brokers in self.logs[topic].items()}

    def state(self, tp: TopicPartition, broker_id: int) -> ReplicaState:
        replica = self.logs[tp.topic][tp.partition][broker_id]
        return ReplicaState(replica.log_start_offset, replica.high_watermark)

    def read(self, tp: TopicPartition, broker_id: int, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``, one at least, at most ``max_bytes``."""
        self.reads.append((broker_id, offset))
        out = b""
        for data in self.logs[tp.topic][tp.partition][broker_id].batches:
            infos = batches_below(data, 1 << 62)
            if infos[0].last_offset < offset:
                continue
            if out and len(out) + len(data) > max_bytes:
                break
            out += data
        return out


def options(**given: object) -> argparse.Namespace:
    defaults: dict[str, object] = dict(
        topic_white_list="orders", report_interval_ms=0, reports=1, fetch_size=1 << 20
    )
    return argparse.Namespace(**{**defaults, **given})


def clock() -> int:
    return 1_700_000_000_123


def test_batches_below_the_high_watermark_are_kept_with_offsets_and_crc() -> None:
    data = b"".join(log_of([b"a", b"b"], [b"c"], [b"d"]))
    infos = batches_below(data, 3)
    assert [(b.base_offset, b.last_offset) for b in infos] == [(0, 1), (2, 2)]
    assert infos[0].crc != infos[1].crc


def test_replicas_with_equal_batches_agree_up_to_the_last_common_batch() -> None:
    a = ReplicaChunk(0, (BatchInfo(0, 4, 11), BatchInfo(5, 9, 12)))
    b = ReplicaChunk(1, (BatchInfo(0, 4, 11),))
    comparison = compare(TP, 0, [a, b])
    assert comparison.next_offset == 5 and comparison.mismatch is None


def test_a_different_checksum_is_a_mismatch_at_that_batch() -> None:
    a = ReplicaChunk(0, (BatchInfo(0, 4, 11), BatchInfo(5, 9, 12)))
    b = ReplicaChunk(2, (BatchInfo(0, 4, 11), BatchInfo(5, 9, 99)))
    mismatch = compare(TP, 0, [a, b]).mismatch
    assert mismatch is not None and mismatch.offset == 5
    assert mismatch.describe() == (
        "Partition [orders,0] has unmatched checksum at offset 5; "
        "replica 0's checksum 12; replica 2's checksum 99"
    )


def test_batches_with_different_offsets_are_a_mismatch_named_by_offsets() -> None:
    a = ReplicaChunk(0, (BatchInfo(0, 4, 11),))
    b = ReplicaChunk(1, (BatchInfo(0, 2, 11),))
    mismatch = compare(TP, 0, [a, b]).mismatch
    assert mismatch is not None and mismatch.offset == 0
    assert mismatch.describe() == "Partition [orders,0]: replica 0's offset 4 doesn't match " + (
        "replica 1's offset 2"
    )


def test_the_report_names_the_partition_with_the_largest_lag() -> None:
    lags = [Lag(TP, 10, 0), Lag(TopicPartition("orders", 1), 4, 6)]
    line = lag_line(lags, clock())
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,123: max lag is 6 for partition \[orders,1\] "
        r"at offset 4 among 2 partitions",
        line,
    )


def test_a_follower_below_the_leaders_high_watermark_is_reported_as_lag() -> None:
    batches = log_of([b"a"], [b"b", b"c"], [b"d"])
    source = FakeSource(
        {
            "orders": {
                0: {0: Replica(batches, 4), 1: Replica(batches[:2], 3), 2: Replica(batches, 4)}
            }
        }
    )
    verifier = ReplicaVerifier(source, matching_partitions(source, re.compile("orders")))
    found = verifier.verify_round()
    assert found == [Lag(TP, 3, 1)]


def test_a_round_reads_in_fetch_size_chunks_and_continues_where_the_last_stopped() -> None:
    batches = log_of(*([bytes([i])] for i in range(5)))
    leader = Replica(batches[:3], 3)
    source = FakeSource({"orders": {0: {0: leader, 1: Replica(batches[:3], 3)}}})
    verifier = ReplicaVerifier(source, {TP: (0, 1)}, fetch_size=1)
    assert verifier.verify_round() == [Lag(TP, 3, 0)]
    assert [offset for broker, offset in source.reads if broker == 0] == [0, 1, 2]
    for replica in source.logs["orders"][0].values():
        replica.batches, replica.high_watermark = batches, 5
    source.reads.clear()
    assert verifier.verify_round() == [Lag(TP, 5, 0)]
    assert [offset for broker, offset in source.reads if broker == 0] == [3, 4]


def test_verification_starts_at_the_highest_log_start_offset() -> None:
    batches = log_of([b"a"], [b"b"], [b"c"])
    source = FakeSource(
        {"orders": {0: {0: Replica(batches, 3), 1: Replica(batches[1:], 3, log_start_offset=1)}}}
    )
    assert ReplicaVerifier(source, {TP: (0, 1)}).verify_round() == [Lag(TP, 3, 0)]
    assert {offset for _, offset in source.reads} == {1}


def test_data_above_a_replicas_high_watermark_is_not_compared() -> None:
    batches = log_of([b"a"], [b"b"])
    diverged = log_of([b"a"], [b"X"])
    source = FakeSource({"orders": {0: {0: Replica(batches, 1), 1: Replica(diverged, 1)}}})
    assert ReplicaVerifier(source, {TP: (0, 1)}).verify_round() == [Lag(TP, 1, 0)]


def test_run_prints_the_start_and_the_lag_and_exits_0_when_replicas_agree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    batches = log_of([b"a", b"b"], [b"c"])
    source = FakeSource(
        {
            "orders": {0: {0: Replica(batches, 3), 1: Replica(batches, 3)}},
            "other": {0: {0: Replica(log_of([b"x"]), 1), 1: Replica(log_of([b"y"]), 1)}},
        }
    )
    assert run(options(topic_white_list="ord.*"), source, clock) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(",123: verification process is started.")
    assert lines[1].endswith(
        ": max lag is 0 for partition [orders,0] at offset 3 among 1 partitions"
    )


def test_run_prints_the_first_disagreement_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    good = log_of([b"a"], [b"b", b"c"], [b"d"])
    bad = log_of([b"a"], [b"b", b"X"], [b"d"])
    source = FakeSource({"orders": {0: {1: Replica(good, 4), 0: Replica(bad, 4)}}})
    assert run(options(), source, clock) == 1
    assert (
        capsys.readouterr()
        .out.splitlines()[-1]
        .startswith(
            "Partition [orders,0] has unmatched checksum at offset 1; replica 1's checksum "
        )
    )


def test_run_repeats_rounds_with_the_report_interval_between_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = FakeSource({"orders": {0: {0: Replica(log_of([b"a"]), 1)}}})
    slept: list[float] = []
    assert run(options(reports=3, report_interval_ms=250), source, clock, slept.append) == 0
    assert slept == [0.25, 0.25]
    assert capsys.readouterr().out.count("max lag is 0") == 3


def test_no_matching_topic_is_an_error_naming_the_pattern() -> None:
    source = FakeSource({"orders": {0: {0: Replica([], 0)}}})
    with pytest.raises(LookupError, match=r"no topic matches --topic-white-list 'ord'"):
        run(options(topic_white_list="ord"), source, clock)


def test_a_bad_regex_is_one_error_line_before_any_connection(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["replica-verification", "--topic-white-list", "orders["])
    assert str(exited.value.code).startswith(
        "Error: --topic-white-list 'orders[' is not a valid regular expression"
    )


def test_the_topic_white_list_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["replica-verification"])
    assert exited.value.code == 2
    assert "--topic-white-list" in capsys.readouterr().err
