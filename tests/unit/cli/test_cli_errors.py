"""Every failure of the `rafka` command is one line on stderr with a non-zero exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from rafka.cli.errors import error_line, usage_exit
from rafka.cli.main import main
from rafka.protocol.errors import GroupIdNotFoundError, UnknownTopicOrPartitionError


def test_a_kafka_error_reads_name_code_and_what_was_wrong() -> None:
    line = error_line(UnknownTopicOrPartitionError("topic 'nosuch' does not exist"))
    assert line == "Error: UNKNOWN_TOPIC_OR_PARTITION (3): topic 'nosuch' does not exist"
    assert error_line(GroupIdNotFoundError()).startswith("Error: GROUP_ID_NOT_FOUND (69): ")


def test_a_multi_line_message_is_cut_to_its_first_line() -> None:
    assert error_line(RuntimeError("first\nsecond\nthird")) == "Error: first"


def test_an_unexpected_failure_is_named_by_its_type() -> None:
    assert error_line(KeyError("x")) == "Error: 'x'"
    assert error_line(ZeroDivisionError("division by zero")) == (
        "Error: ZeroDivisionError: division by zero"
    )
    assert error_line(ZeroDivisionError()) == "Error: ZeroDivisionError"


def test_a_commands_missing_option_message_becomes_an_error_line() -> None:
    assert usage_exit(SystemExit("--create needs --topic")).code == "Error: --create needs --topic"
    assert usage_exit(SystemExit(0)).code == 0


def test_a_bad_option_is_one_error_line_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["up", "--brokers", "x"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("Error: argument --brokers: invalid int value: 'x'")


def test_a_command_failure_is_one_line_and_status_1_with_a_traceback_only_when_verbose(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["status", "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("Error: no rafka cluster is running")
    assert main(["--verbose", "status", "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("Error: no rafka cluster")
