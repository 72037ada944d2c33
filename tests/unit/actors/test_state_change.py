"""Tests for rafka.actors.state_change: the per-broker state-change log is written with a time on
every line, shared by the processes of a broker, and read back as one timeline."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rafka.actors.server_log import log_files
from rafka.actors.state_change import (
    STATE_CHANGE_FILE,
    ChangeFields,
    StateChange,
    controller_line_fields,
    describe_state,
    log_state_change,
    open_state_change_log,
    parse_state_change,
    read_state_changes,
)
from rafka.protocol.messages.control import LeaderAndIsrPartitionState


@pytest.fixture
def clean_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("rafka.state_change")
    before, propagate = list(logger.handlers), logger.propagate
    yield logger
    logger.propagate = propagate
    for handler in list(logger.handlers):
        if handler not in before:
            handler.close()
            logger.removeHandler(handler)


def test_lines_go_to_the_log_dir_with_their_time(
    tmp_path: Path, clean_logger: logging.Logger
) -> None:
    logger = open_state_change_log(tmp_path)
    logger.info("[Broker id=1] registered")
    line = (tmp_path / STATE_CHANGE_FILE).read_text().strip()
    stamp, message = line.split(" ", 1)
    assert float(stamp) > 1.6e9
    assert message == "[Broker id=1] registered"


def test_opening_twice_writes_each_line_once(tmp_path: Path, clean_logger: logging.Logger) -> None:
    open_state_change_log(tmp_path)
    open_state_change_log(tmp_path).info("once")
    assert (tmp_path / STATE_CHANGE_FILE).read_text().count("once") == 1


def test_brokers_logs_merge_into_one_timeline(tmp_path: Path) -> None:
    for broker, lines in ((0, ["3.0 c", "1.0 a"]), (1, ["2.0 b", "not a line"])):
        (tmp_path / f"b{broker}").mkdir()
        (tmp_path / f"b{broker}" / STATE_CHANGE_FILE).write_text("\n".join(lines) + "\n")
    changes = read_state_changes([(0, tmp_path / "b0"), (1, tmp_path / "b1"), (2, tmp_path)])
    assert changes == [
        StateChange(1.0, 0, "a"),
        StateChange(2.0, 1, "b"),
        StateChange(3.0, 0, "c"),
    ]


def test_a_line_mentions_a_partition_by_its_whole_name() -> None:
    line = StateChange(0.0, 1, "[Replica chaos-1@2] became leader: chaos-1 leader 2, ISR [1]")
    assert line.mentions("chaos-1")
    assert not line.mentions("chaos-10")
    assert not StateChange(0.0, 1, "chaos-10 leader 2").mentions("chaos-1")


def test_a_partition_state_prints_leader_epoch_isr_and_version() -> None:
    state = LeaderAndIsrPartitionState("t", 0, 3, 2, 7, (2, 1), 9, (1, 2))
    assert describe_state(state) == "t-0 leader 2 epoch 7 ISR [2, 1] zk version 9"


def test_a_line_carries_the_fields_that_apply_and_reads_back(
    tmp_path: Path, clean_logger: logging.Logger
) -> None:
    open_state_change_log(tmp_path)
    log_state_change(ChangeFields(1, 3, 17, "t-0"), "[Controller id=%d] sending", 1)
    log_state_change(ChangeFields(2), "[Broker id=2] registered")
    lines = (tmp_path / STATE_CHANGE_FILE).read_text().splitlines()
    assert lines[0].split(" ", 1)[1] == (
        "broker=1 epoch=3 correlation=17 partition=t-0 [Controller id=1] sending"
    )
    assert lines[1].split(" ", 1)[1] == "broker=2 [Broker id=2] registered"
    first, second = read_state_changes([(1, tmp_path)])
    assert (first.broker_id, first.controller_epoch, first.correlation_id, first.partition) == (
        1,
        3,
        17,
        "t-0",
    )
    assert first.message == "[Controller id=1] sending"
    assert (second.broker_id, second.controller_epoch, second.partition) == (2, None, None)


def test_a_field_names_the_partition_a_line_is_about() -> None:
    change = parse_state_change("5.0 broker=0 partition=chaos-1 [Broker id=0] received")
    assert change is not None and change.mentions("chaos-1")
    assert not change.mentions("chaos-10")


def test_a_line_that_is_not_a_state_change_parses_to_none() -> None:
    assert parse_state_change("Traceback (most recent call last):") is None
    assert parse_state_change("5.0 epoch=x [Broker id=0] odd") is None


def test_the_log_rolls_by_size_and_rolled_files_are_read_oldest_first(
    tmp_path: Path, clean_logger: logging.Logger
) -> None:
    logger = open_state_change_log(tmp_path, max_bytes=200, backup_count=3)
    for i in range(12):
        logger.info("line %02d %s", i, "x" * 40)
    assert [p.name for p in log_files(tmp_path, STATE_CHANGE_FILE)] == [
        "state-change.log.3",
        "state-change.log.2",
        "state-change.log.1",
        "state-change.log",
    ]
    assert all(p.stat().st_size <= 200 for p in log_files(tmp_path, STATE_CHANGE_FILE))
    kept = [c.message.split()[1] for c in read_state_changes([(0, tmp_path)])]
    assert kept == sorted(kept) and kept[-1] == "11"


def test_a_controller_line_gives_its_epoch_and_the_partition_it_names() -> None:
    line = "[Controller id=0 epoch=3] broker 2 failed leader_and_isr for events-1: STORAGE"
    assert controller_line_fields(0, line) == ChangeFields(0, 3, None, "events-1")
    assert controller_line_fields(1, "[Controller id=1 epoch=4] brokers [0] failed") == (
        ChangeFields(1, 4)
    )


def test_a_rendered_line_has_kafkas_time_format() -> None:
    change = StateChange(0.5, 1, "[Broker id=1] x", 2, None, "t-0")
    assert re.fullmatch(
        r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,500\] broker=1 epoch=2 partition=t-0 \[Broker id=1\] x",
        change.render(),
    )
