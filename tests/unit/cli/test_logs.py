"""Tests for ``rafka logs``: a broker's server.log printed whole or by its last lines, followed
across a roll of the file, and a broker the cluster does not have as one clear error."""

from __future__ import annotations

import argparse
import io
import logging
import threading
from pathlib import Path

import pytest

from rafka.actors.server_log import SERVER_LOG_FILE, SharedRotatingFileHandler
from rafka.cli import logs
from rafka.cli.main import build_parser
from rafka.cluster.launcher import ClusterState
from rafka.testing import wait_until


class Terminal(io.StringIO):
    """What the command printed, readable while another thread prints."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            return super().write(text)

    def text(self) -> str:
        with self.lock:
            return self.getvalue()


@pytest.fixture
def broker_dir(tmp_path: Path) -> Path:
    """``rafka-data/broker-0`` of a cluster ``rafka up`` started with brokers 0 and 1."""
    data_dir = tmp_path / "rafka-data"
    data_dir.mkdir()
    ClusterState("rafka", "rafka", "127.0.0.1:1", [0, 1], "127.0.0.1:9", True, True).save(data_dir)
    log_dir = logs.broker_log_dir(data_dir, 0)
    log_dir.mkdir()
    (log_dir / SERVER_LOG_FILE).write_text("one\ntwo\nthree\n")
    return log_dir


def _args(data_dir: Path, *options: str) -> argparse.Namespace:
    return build_parser().parse_args(["logs", "--data-dir", str(data_dir), *options])


def test_the_command_takes_kafka_tail_like_options(tmp_path: Path) -> None:
    args = _args(tmp_path, "--broker", "2", "-f", "-n", "50")
    assert (args.command, args.broker, args.follow, args.lines) == ("logs", 2, True, 50)
    plain = build_parser().parse_args(["logs", "--broker", "0"])
    assert (plain.follow, plain.lines, plain.data_dir) == (False, None, Path("rafka-data"))


def test_a_local_log_is_printed_whole_or_by_its_last_lines(broker_dir: Path) -> None:
    source = logs.source_of(_args(broker_dir.parent, "--broker", "0"), 1000)
    assert source == logs.LocalLog(broker_dir)
    whole, last = Terminal(), Terminal()
    logs.print_log(source, None, False, whole)
    logs.print_log(source, 2, False, last)
    assert (whole.text(), last.text()) == ("one\ntwo\nthree\n", "two\nthree\n")


def test_following_prints_each_new_line_once_across_rolls(broker_dir: Path) -> None:
    # As a broker's processes write: through the shared handler, rolled every five lines or so.
    writer = SharedRotatingFileHandler(str(broker_dir / SERVER_LOG_FILE), 200, 3)
    terminal, stop = Terminal(), threading.Event()
    follower = threading.Thread(
        target=logs.print_log, args=(logs.LocalLog(broker_dir), 1, True, terminal, stop)
    )
    follower.start()
    try:
        wait_until(lambda: terminal.text() == "three\n", 10, "the tail to be printed")
        expected = ["three"]
        for i in range(12):
            writer.emit(logging.makeLogRecord({"msg": f"followed line {i:02d} {'f' * 20}"}))
            expected.append(f"followed line {i:02d} {'f' * 20}")
            if i % 4 == 3:
                wait_until(
                    lambda: terminal.text().splitlines() == expected, 10, f"line {i} printed"
                )
    finally:
        writer.close()
        stop.set()
        follower.join(timeout=10)
    assert len(list(broker_dir.glob(SERVER_LOG_FILE + ".*"))) == 3
    assert terminal.text().splitlines() == expected


def test_a_broker_the_cluster_does_not_have_is_one_error_naming_its_brokers(
    broker_dir: Path,
) -> None:
    data_dir = broker_dir.parent
    with pytest.raises(LookupError) as refused:
        logs.source_of(_args(data_dir, "--broker", "7"), 1000)
    assert str(refused.value) == f"no broker 7 in the cluster of {data_dir} (its brokers: 0, 1)"


def test_check_broker_lists_the_brokers_there_are() -> None:
    logs.check_broker(1, [0, 1], "the cluster")
    with pytest.raises(LookupError, match=r"^no broker 3 in nowhere \(its brokers: none\)$"):
        logs.check_broker(3, [], "nowhere")


def test_a_negative_line_count_is_refused(broker_dir: Path) -> None:
    with pytest.raises(ValueError, match="--lines must be 0 or more"):
        logs.run(_args(broker_dir.parent, "--broker", "0", "-n", "-1"), 1000)
