"""Tests for rafka.cluster.timeline: parsing actor log lines and reducing recovery timelines."""

from __future__ import annotations

import math
import re
from datetime import datetime

from rafka.cluster.timeline import (
    FaultTimeline,
    LogLine,
    StateVersion,
    first_ack_after,
    first_line,
    first_new_leader,
    first_whole_isr,
    parse_log_line,
    percentile,
    summarise,
)


def _ms(stamp: str) -> int:
    return round(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").timestamp() * 1000)


def test_a_server_log_line_parses_to_its_local_time_logger_level_and_message() -> None:
    line = parse_log_line(
        "[2026-11-25 19:30:01,234] WARN broker 1 is controller (at epoch 3) "
        "(rafka.actors.controller.controller)\n"
    )
    assert line == LogLine(
        _ms("2026-11-25 19:30:01.234"),
        "rafka.actors.controller.controller",
        "WARN",
        "broker 1 is controller (at epoch 3)",
    )


def test_lines_not_in_the_server_log_layout_are_skipped() -> None:
    assert parse_log_line("Traceback (most recent call last):") is None
    assert parse_log_line("") is None
    assert parse_log_line("[2026-11-25 19:30:01] INFO no milliseconds (rafka)") is None
    assert parse_log_line("2026-11-25 19:30:01,234 rafka.x INFO the old layout") is None


def test_first_line_takes_the_earliest_match_at_or_after_the_fault() -> None:
    lines = [
        LogLine(900, "rafka.state_change", "INFO", "brokers [0] failed"),
        LogLine(1500, "rafka.state_change", "INFO", "brokers [2] failed"),
        LogLine(1200, "rafka.state_change", "INFO", "brokers [0, 2] failed"),
        LogLine(1100, "rafka.state_change", "INFO", "brokers [1] started"),
    ]
    assert first_line(lines, 1000, re.compile(r"brokers \[[^\]]*\b2\b[^\]]*\] failed")) == 1200
    assert first_line(lines, 1000, re.compile("controller")) is None


def test_the_new_leader_is_the_first_version_naming_another_live_leader() -> None:
    versions = [
        StateVersion(500, 0, (0, 1, 2)),
        StateVersion(1100, -1, (0,)),
        StateVersion(1300, 1, (1, 2)),
        StateVersion(1400, 1, (1, 2, 0)),
    ]
    assert first_new_leader(versions, 1000, old_leader=0) == versions[2]
    assert first_new_leader(versions[:2], 1000, old_leader=0) is None


def test_the_isr_is_whole_at_the_first_full_version_after_the_replica_came_back() -> None:
    versions = [
        StateVersion(500, 0, (0, 1, 2)),
        StateVersion(1100, 1, (1, 2)),
        StateVersion(2100, 1, (1, 2, 0)),
        StateVersion(2500, 2, (2, 1, 0)),
    ]
    assert first_whole_isr(versions, 2000, 3) == versions[2]
    assert first_whole_isr(versions[:2], 1000, 3) is None


def test_an_isr_that_never_shrank_is_whole_from_its_last_earlier_version() -> None:
    versions = [StateVersion(500, 0, (0, 1)), StateVersion(700, 0, (0, 1, 2))]
    assert first_whole_isr(versions, 1000, 3) == versions[1]
    assert first_whole_isr(versions[:1], 1000, 3) is None


def test_the_first_ack_counts_only_records_sent_after_the_fault() -> None:
    acks = [(9.0, 10.5), (10.2, 13.0), (10.1, 12.0), (11.0, 12.5)]
    assert first_ack_after(acks, 10.0) == 12.0
    assert first_ack_after(acks, 20.0) is None


def test_percentile_is_the_nearest_rank_and_nan_when_empty() -> None:
    assert percentile([3.0, 1.0, 2.0, 4.0], 0.5) == 3.0
    assert percentile([3.0, 1.0, 2.0, 4.0], 1.0) == 4.0
    assert percentile([5.0], 0.99) == 5.0
    assert math.isnan(percentile([], 0.5))


def test_summary_gives_p50_and_max_per_stage_and_counts_missed_samples() -> None:
    first = FaultTimeline("kill", "broker 0", {})
    first.add("detected", 0.1)
    first.add("first ack, led", 0.5)
    first.add("first ack, led", None)
    second = FaultTimeline("kill", "broker 1", {})
    second.add("detected", 0.3)
    second.add("first ack, led", 1.5)
    other = FaultTimeline("pause", "broker 2", {})
    other.add("detected", 9.0)
    cells = summarise([first, second, other], "kill")
    assert cells["detected"] == "0.30 / 0.30"
    assert cells["first ack, led"] == "1.50 / 1.50 (1 missed)"
    assert cells["leader in ZooKeeper"] == "-"
    never = FaultTimeline("pause", "broker 2", {"ISR whole": [None]})
    assert summarise([never], "pause")["ISR whole"] == "never"
