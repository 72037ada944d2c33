"""Tests for ``rafka preferred-replica-election`` (rafka.cli.preferred_replica_election): the JSON
file is checked before any cluster is asked, and the report reads as Kafka's tool's."""

from __future__ import annotations

from pathlib import Path

import pytest

from rafka.cli.main import main
from rafka.cli.preferred_replica_election import format_results, read_partitions
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import ElectLeadersResult
from rafka.protocol.types import TopicPartition


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "partitions.json"
    path.write_text(text)
    return path


def test_the_json_file_names_the_partitions_to_elect(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"version": 1, "partitions": [{"topic": "t", "partition": 1}, '
        '{"topic": "t", "partition": 0}]}',
    )
    assert read_partitions(path) == [TopicPartition("t", 1), TopicPartition("t", 0)]
    assert read_partitions(None) is None


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("{", "not valid JSON"),
        ('{"partitions": []}', "names no partition"),
        (
            '{"partitions": [{"topic": "t", "partition": 2}, {"topic": "t", "partition": 2}]}',
            "duplicate partitions: t-2",
        ),
    ],
)
def test_a_bad_json_file_is_refused_naming_the_problem(
    tmp_path: Path, text: str, complaint: str
) -> None:
    with pytest.raises(SystemExit, match=complaint):
        read_partitions(write(tmp_path, text))


def test_a_missing_file_is_refused_by_the_command_before_it_connects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "absent.json"
    with pytest.raises(SystemExit) as exited:
        main(["preferred-replica-election", "--path-to-json-file", str(missing)])
    assert exited.value.code == f"Error: cannot read {missing}: No such file or directory"


def test_the_report_lists_moved_and_unneeded_elections_and_each_reason() -> None:
    results = {
        TopicPartition("t", 2): ElectLeadersResult(
            Errors.PREFERRED_LEADER_NOT_AVAILABLE, "preferred replica 2 of t-2 is down"
        ),
        TopicPartition("t", 1): ElectLeadersResult(Errors.NONE),
        TopicPartition("t", 0): ElectLeadersResult(Errors.ELECTION_NOT_NEEDED, "leads"),
        TopicPartition("t", 3): ElectLeadersResult(Errors.NONE),
    }
    assert format_results(results) == [
        "Successfully started preferred replica election for partitions t-1, t-3",
        "Preferred replica already elected for partitions t-0",
        "Preferred replica election for partition t-2 not done: "
        "PREFERRED_LEADER_NOT_AVAILABLE: preferred replica 2 of t-2 is down",
    ]
