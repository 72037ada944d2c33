"""Tests for rafka.actors.server_log: a broker's server.log in Kafka's layout, shared and rolled by
size, and read back (its tail, then what follows, across a roll) as ``rafka logs`` reads it."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rafka.actors.process import configure_actor_logging
from rafka.actors.server_log import (
    SERVER_LOG_FILE,
    LogPosition,
    SharedRotatingFileHandler,
    log_files,
    open_server_log,
    read_new,
    tail,
)
from rafka.actors.state_change import STATE_CHANGE_FILE, open_state_change_log

KAFKA_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] [A-Z]+ .* \([\w.]+\)$")


@pytest.fixture
def actor_process() -> Iterator[logging.Logger]:
    """The root logger as an actor's process has it; its own handlers and level come back after."""
    root = logging.getLogger()
    state_change = logging.getLogger("rafka.state_change")
    saved = (list(root.handlers), root.level, list(state_change.handlers), state_change.propagate)
    yield root
    for logger, before in ((root, saved[0]), (state_change, saved[2])):
        for handler in list(logger.handlers):
            if handler not in before:
                handler.close()
                logger.removeHandler(handler)
    root.setLevel(saved[1])
    state_change.propagate = saved[3]


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[logging.Logger]:
    """A logger of its own writing ``tmp_path/server.log`` through a small rolling handler."""
    logger = logging.getLogger(f"test.server_log.{tmp_path.name}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = SharedRotatingFileHandler(str(tmp_path / SERVER_LOG_FILE), 400, 3)
    logger.addHandler(handler)
    yield logger
    handler.close()
    logger.removeHandler(handler)


def test_records_of_every_logger_go_to_server_log_in_kafkas_layout(
    tmp_path: Path, actor_process: logging.Logger
) -> None:
    open_server_log(tmp_path)
    open_server_log(tmp_path)
    logging.getLogger("rafka.actors.broker.broker").info("broker %d registered", 1)
    logging.getLogger("kazoo.client").warning("Connection dropped")
    logging.getLogger("rafka.x").debug("below INFO")
    lines = (tmp_path / SERVER_LOG_FILE).read_text().splitlines()
    assert len(lines) == 2, lines
    assert all(KAFKA_LINE.match(line) for line in lines), lines
    assert lines[0].endswith("] INFO broker 1 registered (rafka.actors.broker.broker)")
    assert lines[1].endswith("] WARN Connection dropped (kazoo.client)")


def test_state_change_lines_stay_out_of_server_log(
    tmp_path: Path, actor_process: logging.Logger
) -> None:
    open_server_log(tmp_path)
    open_state_change_log(tmp_path).info("[Broker id=1] registered")
    assert "registered" in (tmp_path / STATE_CHANGE_FILE).read_text()
    assert "registered" not in (tmp_path / SERVER_LOG_FILE).read_text()


def test_the_log_rolls_by_size_keeping_its_backup_count(
    tmp_path: Path, writer: logging.Logger
) -> None:
    for i in range(40):
        writer.info("line %02d %s", i, "x" * 40)
    assert [p.name for p in log_files(tmp_path)] == [
        "server.log.3",
        "server.log.2",
        "server.log.1",
        "server.log",
    ]
    assert all(p.stat().st_size <= 400 for p in log_files(tmp_path))
    assert tail(tmp_path, 1).text.startswith("line 39 ")


def test_two_handlers_on_one_file_follow_each_others_rollover(tmp_path: Path) -> None:
    # Two processes of a broker share the file: the one that did not roll must write to the new
    # file, not keep appending to the rolled one.
    path = str(tmp_path / SERVER_LOG_FILE)
    first = SharedRotatingFileHandler(path, 100, 5)
    second = SharedRotatingFileHandler(path, 100, 5)
    try:
        for i in range(6):
            for name, handler in (("a", first), ("b", second)):
                handler.emit(logging.makeLogRecord({"msg": f"{name}{i} " + "y" * 30}))
    finally:
        first.close()
        second.close()
    texts = [p.read_text() for p in log_files(tmp_path)]
    words = [line.split()[0] for text in texts for line in text.splitlines()]
    assert words == [f"{n}{i}" for i in range(6) for n in "ab"]


def test_tail_gives_the_live_file_or_its_last_lines_reaching_into_rolled_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "server.log.2").write_text("a\nb\n")
    (tmp_path / "server.log.1").write_text("c\n")
    (tmp_path / SERVER_LOG_FILE).write_text("d\ne\nhalf a li")
    whole = tail(tmp_path)
    assert whole.text == "d\ne\n"
    assert whole.position == LogPosition((tmp_path / SERVER_LOG_FILE).stat().st_ino, b"d\n", 4)
    assert tail(tmp_path, 1).text == "e\n"
    assert tail(tmp_path, 4).text == "b\nc\nd\ne\n"
    assert tail(tmp_path, 9).text == "a\nb\nc\nd\ne\n"
    assert tail(tmp_path, 0).text == ""
    assert tail(tmp_path / "nothing-yet", 5).text == ""


def test_read_new_gives_whole_new_lines_once(tmp_path: Path) -> None:
    live = tmp_path / SERVER_LOG_FILE
    live.write_text("old\n")
    start = tail(tmp_path).position
    with live.open("a") as out:
        out.write("new 1\nnew 2\nhalf")
    first = read_new(tmp_path, start)
    assert first.text == "new 1\nnew 2\n"
    with live.open("a") as out:
        out.write(" done\n")
    second = read_new(tmp_path, first.position)
    assert second.text == "half done\n"
    assert read_new(tmp_path, second.position).text == ""


def test_read_new_follows_the_file_across_rolls(tmp_path: Path, writer: logging.Logger) -> None:
    writer.info("before")
    position = tail(tmp_path).position
    seen: list[str] = []
    for i in range(30):
        writer.info("line %02d %s", i, "z" * 40)  # about 50 bytes: a roll every 8 lines
        if i % 5 == 4:
            chunk = read_new(tmp_path, position)
            seen.extend(chunk.text.splitlines())
            position = chunk.position
    assert len(log_files(tmp_path)) == 4
    assert [line.split()[1] for line in seen] == [f"{i:02d}" for i in range(30)]


def test_a_reader_left_behind_by_more_rolls_than_backups_starts_at_the_live_file(
    tmp_path: Path, writer: logging.Logger
) -> None:
    writer.info("first")
    position = tail(tmp_path).position
    for i in range(60):
        writer.info("line %02d %s", i, "z" * 40)
    chunk = read_new(tmp_path, position)
    assert chunk.text == (tmp_path / SERVER_LOG_FILE).read_text()


def test_a_truncated_file_is_read_again_from_its_start(tmp_path: Path) -> None:
    live = tmp_path / SERVER_LOG_FILE
    live.write_text("a long first line\n")
    position = tail(tmp_path).position
    live.write_text("short\n")
    assert read_new(tmp_path, position).text == "short\n"


def test_read_new_hands_out_a_large_backlog_in_pieces_that_add_up(tmp_path: Path) -> None:
    (tmp_path / "server.log.1").write_text("".join(f"old {i}\n" for i in range(50)))
    (tmp_path / SERVER_LOG_FILE).write_text("".join(f"new {i}\n" for i in range(50)))
    old = (tmp_path / "server.log.1").stat().st_ino
    position, pieces = LogPosition(old, b"old 0\n", 0), []
    while chunk := read_new(tmp_path, position, max_bytes=64).text:
        assert len(chunk.encode()) <= 64
        pieces.append(chunk)
        position = read_new(tmp_path, position, max_bytes=64).position
    expected = (tmp_path / "server.log.1").read_text() + (tmp_path / SERVER_LOG_FILE).read_text()
    assert "".join(pieces) == expected


def test_a_later_file_given_a_rolled_away_files_inode_is_not_taken_for_it(tmp_path: Path) -> None:
    live = tmp_path / SERVER_LOG_FILE
    live.write_text("[second file] first line\nmore\n")
    # As if the reader had stopped in a file since deleted whose inode the live file now has.
    reused = LogPosition(live.stat().st_ino, b"[first file] first line\n", 12)
    assert read_new(tmp_path, reused).text == live.read_text()
    same = LogPosition(live.stat().st_ino, b"[second file] first line\n", 25)
    assert read_new(tmp_path, same).text == "more\n"


def test_outside_an_actor_process_logging_is_left_as_it_is(tmp_path: Path) -> None:
    # A unit test that builds an actor class in its own process must not get a server.log.
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    configure_actor_logging(tmp_path)
    assert (list(root.handlers), root.level) == before
    assert not (tmp_path / SERVER_LOG_FILE).exists()
