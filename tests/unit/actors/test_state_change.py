"""Tests for rafka.actors.state_change: the per-broker state-change log is written with a time on
every line, shared by the processes of a broker, and read back as one timeline."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from rafka.actors.state_change import (
    STATE_CHANGE_FILE,
    StateChange,
    describe_state,
    open_state_change_log,
    read_state_changes,
)
from rafka.protocol.messages.control import LeaderAndIsrPartitionState


@pytest.fixture
def clean_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("rafka.state_change")
    before = list(logger.handlers)
    yield logger
    for handler in logger.handlers:
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
