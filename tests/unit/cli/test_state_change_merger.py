"""Tests for rafka.cli.state_change_merger: several brokers' state-change logs merge into one
history in time order, filtered like Kafka's StateChangeLogMerger, and bad input is one line."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from rafka.cli.main import main
from rafka.cli.state_change_merger import Selection, parse_partitions, parse_time


def at(text: str) -> float:
    """Epoch seconds of a local ``yyyy-MM-dd HH:mm:ss`` time."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").timestamp()


T0 = at("2026-11-25 10:00:00")


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """Two brokers' logs under ``tmp_path/broker-N``, broker 0's rolled once."""
    lines = {
        "broker-0/state-change.log.1": [
            f"{T0 + 1:.3f} broker=0 epoch=1 [Controller id=0 epoch=1] brokers [1] failed",
            f"{T0 + 2:.3f} broker=0 epoch=1 partition=t-0 [Controller id=0 epoch=1] t-0 elected",
        ],
        "broker-0/state-change.log": [
            f"{T0 + 4:.3f} broker=0 epoch=1 correlation=5 partition=t-1 [Controller id=0] send",
        ],
        "broker-2/state-change.log": [
            f"{T0 + 3:.3f} broker=2 epoch=1 correlation=4 partition=t-0 [Broker id=2] received",
            "not a state-change line",
            f"{T0 + 5:.3f} broker=2 partition=u-0 [Replica u-0@2] became follower",
        ],
    }
    for name, content in lines.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("\n".join(content) + "\n")
    return tmp_path


def merged(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["state-change-log-merger", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_files_listed_merge_in_time_order_with_kafkas_time_format(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = ",".join(
        str(logs / n)
        for n in (
            "broker-2/state-change.log",
            "broker-0/state-change.log.1",
            "broker-0/state-change.log",
        )
    )
    out = merged(capsys, "--logs", files)
    assert [line.split("] ", 1)[1] for line in out] == [
        "broker=0 epoch=1 [Controller id=0 epoch=1] brokers [1] failed",
        "broker=0 epoch=1 partition=t-0 [Controller id=0 epoch=1] t-0 elected",
        "broker=2 epoch=1 correlation=4 partition=t-0 [Broker id=2] received",
        "broker=0 epoch=1 correlation=5 partition=t-1 [Controller id=0] send",
        "broker=2 partition=u-0 [Replica u-0@2] became follower",
    ]
    assert out[0].startswith("[2026-11-25 10:00:01,000] ")


def test_a_regex_across_broker_directories_picks_every_log_and_rolled_file(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = merged(capsys, "--logs-regex", f"{logs}/broker-.*/state-change.log.*")
    assert len(out) == 5


def test_a_regex_on_one_directory_matches_file_names_as_kafka_does(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = merged(capsys, "--logs-regex", f"{logs}/broker-0/state-change")
    assert [line.split()[-1] for line in out] == ["failed", "elected", "send"]


def test_topic_and_partitions_keep_only_those_partitions_lines(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    regex = f"{logs}/broker-.*/state-change.log.*"
    assert [line.split()[-1] for line in merged(capsys, "--logs-regex", regex, "--topic", "t")] == [
        "elected",
        "received",
        "send",
    ]
    only_1 = merged(capsys, "--logs-regex", regex, "--topic", "t", "--partitions", "1")
    assert [line.split()[-1] for line in only_1] == ["send"]


def test_start_and_end_time_bound_the_history_inclusively(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = merged(
        capsys,
        "--logs-regex",
        f"{logs}/broker-.*/state-change.log.*",
        "--start-time",
        "2026-11-25 10:00:02,000",
        "--end-time",
        '"2026-11-25 10:00:04,000"',
    )
    assert [line.split()[-1] for line in out] == ["elected", "received", "send"]


def test_a_time_parses_with_milliseconds_in_local_time() -> None:
    assert parse_time("2026-11-25 10:00:01,250", "--start-time") == T0 + 1.25


def test_a_topic_partition_name_with_dashes_is_split_at_its_last_dash() -> None:
    from rafka.actors.state_change import StateChange

    change = StateChange(0.0, 0, "x", partition="my-topic-12")
    assert Selection("my-topic", frozenset({12})).keeps(change)
    assert not Selection("my", frozenset()).keeps(change)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--logs-regex", "{d}/nothing-here.*"], "matched no file"),
        (["--logs", "{d}/missing.log"], "no such file '{d}/missing.log'"),
        (["--logs-regex", "{d}/broker-0/("], "is not a regular expression"),
        (
            ["--logs", "{d}/broker-0/state-change.log", "--start-time", "2026-11-25 10:00"],
            "--start-time '2026-11-25 10:00' is not a time in the format yyyy-MM-dd HH:mm:ss,SSS",
        ),
        (
            ["--logs", "{d}/broker-0/state-change.log", "--end-time", "2026-13-45 10:00:00,000"],
            "--end-time",
        ),
        (
            ["--logs", "{d}/broker-0/state-change.log", "--topic", "t", "--partitions", "0,x"],
            "'x' is not a partition id",
        ),
        (
            ["--logs", "{d}/broker-0/state-change.log", "--topic", "t", "--partitions", "1,0,1"],
            "repeated entries: 1",
        ),
        (["--logs", "{d}/broker-0/state-change.log", "--partitions", "0"], "needs --topic"),
    ],
)
def test_bad_input_is_one_line_naming_what_is_wrong_and_exit_1(
    logs: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code = main(["state-change-log-merger", *(a.format(d=logs) for a in argv)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("Error: ") and err.count("\n") == 1, err
    assert message.format(d=logs) in err


def test_an_unreadable_file_is_named(
    logs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    unreadable = logs / "broker-0" / "state-change.log"

    def refuse(self: Path, *args: object, **kwargs: object) -> str:
        raise PermissionError(13, "Permission denied", str(self))

    # The file system refuses the read (chmod cannot, for root, so the refusal is faked).
    monkeypatch.setattr(Path, "read_text", refuse)
    code = main(["state-change-log-merger", "--logs", str(unreadable)])
    err = capsys.readouterr().err
    assert code == 1
    assert err == f"Error: cannot read state-change log '{unreadable}': Permission denied\n"


def test_neither_logs_nor_regex_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["state-change-log-merger", "--topic", "t"])
    assert exit_.value.code == 2
    assert "one of the arguments --logs --logs-regex is required" in capsys.readouterr().err


def test_partition_ids_parse_to_a_set() -> None:
    assert parse_partitions("0, 2,1") == frozenset({0, 1, 2})
