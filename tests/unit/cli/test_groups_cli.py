"""Tests for ``rafka groups`` (rafka.cli.groups) through ``main``, against an in-memory fake
cluster: Kafka's tables and lag arithmetic, dry runs against --execute, and refusing to reset an
active group."""

from __future__ import annotations

import time

import pytest

from rafka.cli.groups import format_table, parse_datetime
from rafka.cli.main import main

ACTIVE = ("Stable", "PreparingRebalance", "CompletingRebalance")


@pytest.fixture
def cluster(fake_cluster):
    """One broker; 'events' has partitions [0, 10) and [4, 20), 'logs' one partition [0, 5).

    Records 4, 5 and 6 of events-1 have timestamps 1 s, 2 s and 3 s after the epoch."""
    fake_cluster.add_brokers(1)
    fake_cluster.add_topic(
        "events", [(0, 10), (4, 20)], timestamps={1: {4: 1000, 5: 2000, 6: 3000}}
    )
    fake_cluster.add_topic("logs", [(0, 5)])
    return fake_cluster


def table(text: str, header: str) -> list[list[str]]:
    """The rows of the table under the line starting with ``header``, split into cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    return [line.split() for line in lines[start + 1 :] if line.strip()]


def committed(cluster, group_id: str) -> dict[tuple[str, int], int]:
    return {
        tp: offset for tp, (offset, _) in cluster.coordinator(0).groups[group_id].offsets.items()
    }


# ------------------------------------------------------------------ --list and --describe


def test_list_prints_every_group_id_in_order(cluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.add_group("payments")
    cluster.add_group("audit", state="Stable", members=[cluster.member("m1", [("logs", 0)])])
    assert main(["groups", "--list"]) == 0
    assert capsys.readouterr().out.split() == ["audit", "payments"]


def test_describe_prints_kafkas_columns_with_lag_as_log_end_minus_committed(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    members = [
        cluster.member("m1", [("events", 0)], client_id="app-1", host="/10.0.0.1"),
        cluster.member("m2", [("events", 1)]),
    ]
    # events-1 is owned but has no commit yet; logs-0 has a commit but no owner.
    cluster.add_group(
        "g", state="Stable", members=members, offsets={("events", 0): 7, ("logs", 0): 2}
    )
    assert main(["groups", "--describe", "--group", "g"]) == 0
    out = capsys.readouterr().out
    assert "Consumer group 'g' state: Stable, members: 2, assignor: range, generation: 3" in out
    header = next(line for line in out.splitlines() if line.startswith("GROUP"))
    assert header.split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]
    assert table(out, "GROUP") == [
        ["g", "events", "0", "7", "10", "3", "m1", "/10.0.0.1", "app-1"],
        ["g", "events", "1", "-", "20", "-", "m2", "/127.0.0.1", "rafka-consumer"],
        ["g", "logs", "0", "2", "5", "3", "-", "-", "-"],
    ]


def test_describe_of_an_empty_group_says_it_has_no_active_members(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("idle", offsets={("events", 1): 5})
    assert main(["groups", "--describe", "--group", "idle"]) == 0
    out = capsys.readouterr().out
    assert "Consumer group 'idle' has no active members." in out
    assert table(out, "GROUP") == [["idle", "events", "1", "5", "20", "15", "-", "-", "-"]]


@pytest.mark.timeout(10)
def test_describe_shows_dashes_for_a_topic_that_no_longer_exists(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("idle", offsets={("gone", 0): 4, ("logs", 0): 1})
    assert main(["groups", "--describe", "--group", "idle"]) == 0
    assert table(capsys.readouterr().out, "GROUP") == [
        ["idle", "gone", "0", "4", "-", "-", "-", "-", "-"],
        ["idle", "logs", "0", "1", "5", "4", "-", "-", "-"],
    ]


def test_describe_warns_on_stderr_while_the_group_rebalances(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("g", state="PreparingRebalance", members=[cluster.member("m1", [])])
    assert main(["groups", "--describe", "--group", "g"]) == 0
    assert "Warning: Consumer group 'g' is rebalancing." in capsys.readouterr().err


def test_describe_of_an_unknown_group_fails_saying_it_does_not_exist(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["groups", "--describe", "--group", "nobody"]) == 1
    assert (
        capsys.readouterr().err.strip()
        == "Error: GROUP_ID_NOT_FOUND (69): consumer group 'nobody' does not exist"
    )


def test_format_table_pads_each_column_to_its_widest_cell_one_space_apart() -> None:
    assert format_table(
        ("A", "BB", "C"), [("long-cell", "x", "y"), ("z", "wider-cell", "q")]
    ).splitlines() == [
        "A         BB         C",
        "long-cell x          y",
        "z         wider-cell q",
    ]


# ------------------------------------------------------------------ --reset-offsets


def test_reset_is_a_dry_run_by_default_printing_new_offsets_without_committing(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("idle", offsets={("events", 0): 7, ("events", 1): 15})
    assert (
        main(["groups", "--reset-offsets", "--group", "idle", "--topic", "events", "--to-earliest"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert table(out, "GROUP") == [["idle", "events", "0", "0"], ["idle", "events", "1", "4"]]
    assert committed(cluster, "idle") == {("events", 0): 7, ("events", 1): 15}
    assert cluster.coordinator(0).commits == []


def test_reset_with_execute_commits_the_printed_offsets(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("idle", offsets={("events", 0): 7, ("events", 1): 15})
    assert (
        main(
            [
                "groups",
                "--reset-offsets",
                "--group",
                "idle",
                "--topic",
                "events",
                "--to-earliest",
                "--execute",
            ]
        )
        == 0
    )
    assert table(capsys.readouterr().out, "GROUP") == [
        ["idle", "events", "0", "0"],
        ["idle", "events", "1", "4"],
    ]
    assert committed(cluster, "idle") == {("events", 0): 0, ("events", 1): 4}


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        (["--to-latest"], {0: 10, 1: 20}),
        (["--to-offset", "6"], {0: 6, 1: 6}),
        (
            ["--to-datetime", "1970-01-01T00:00:01.500Z"],
            {0: 10, 1: 5},
        ),  # events-0 has no record that new: log end
        (["--to-datetime", "1970-01-01T02:00:02.000+02:00"], {0: 10, 1: 5}),
        (["--to-datetime", "1970-01-01T00:00:09.000Z"], {0: 10, 1: 20}),
    ],
)
def test_reset_scenarios_compute_each_partitions_new_offset(
    cluster, capsys: pytest.CaptureFixture[str], scenario: list[str], expected: dict[int, int]
) -> None:
    cluster.add_group("idle")
    assert (
        main(
            [
                "groups",
                "--reset-offsets",
                "--group",
                "idle",
                "--topic",
                "events",
                *scenario,
                "--execute",
            ]
        )
        == 0
    )
    assert committed(cluster, "idle") == {("events", p): offset for p, offset in expected.items()}


def test_reset_to_an_offset_outside_the_log_is_clamped_with_a_warning(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("idle")
    assert (
        main(
            [
                "groups",
                "--reset-offsets",
                "--group",
                "idle",
                "--topic",
                "events",
                "--to-offset",
                "2",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert table(captured.out, "GROUP") == [
        ["idle", "events", "0", "2"],
        ["idle", "events", "1", "4"],
    ]
    assert (
        "New offset (2) is lower than earliest offset for topic partition events-1. "
        "Value will be set to 4" in captured.err
    )
    assert "events-0" not in captured.err


def test_reset_all_topics_covers_only_the_groups_committed_partitions(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("idle", offsets={("events", 1): 15, ("logs", 0): 1})
    assert (
        main(["groups", "--reset-offsets", "--group", "idle", "--all-topics", "--to-latest"]) == 0
    )
    assert table(capsys.readouterr().out, "GROUP") == [
        ["idle", "events", "1", "20"],
        ["idle", "logs", "0", "5"],
    ]


def test_reset_topic_with_partitions_resets_only_those(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("idle")
    assert (
        main(
            [
                "groups",
                "--reset-offsets",
                "--group",
                "idle",
                "--topic",
                "events:1",
                "--topic",
                "logs",
                "--to-latest",
                "--execute",
            ]
        )
        == 0
    )
    assert committed(cluster, "idle") == {("events", 1): 20, ("logs", 0): 5}


def test_reset_of_a_partition_the_topic_lacks_fails(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("idle")
    assert (
        main(["groups", "--reset-offsets", "--group", "idle", "--topic", "events:7", "--to-latest"])
        == 1
    )
    assert "UNKNOWN_TOPIC_OR_PARTITION" in capsys.readouterr().err


@pytest.mark.parametrize("state", ACTIVE)
def test_reset_refuses_a_group_with_members_even_with_execute(
    cluster, capsys: pytest.CaptureFixture[str], state: str
) -> None:
    cluster.add_group(
        "busy",
        state=state,
        members=[cluster.member("m1", [("events", 0)])],
        offsets={("events", 0): 7},
    )
    assert (
        main(
            [
                "groups",
                "--reset-offsets",
                "--group",
                "busy",
                "--topic",
                "events",
                "--to-earliest",
                "--execute",
            ]
        )
        == 1
    )
    captured = capsys.readouterr()
    assert captured.err.strip() == (
        f"Error: Assignments can only be reset if the group 'busy' is inactive, "
        f"but the current state is {state}."
    )
    assert captured.out == ""
    assert committed(cluster, "busy") == {("events", 0): 7}


def test_reset_of_a_group_that_does_not_exist_yet_creates_its_offsets(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "groups",
                "--reset-offsets",
                "--group",
                "new",
                "--topic",
                "logs",
                "--to-earliest",
                "--execute",
            ]
        )
        == 0
    )
    assert committed(cluster, "new") == {("logs", 0): 0}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--topic", "events"], "needs one of --to-earliest"),
        (["--to-latest"], "needs --topic or --all-topics"),
    ],
)
def test_reset_without_a_scenario_or_a_scope_exits_with_a_message(
    cluster, argv: list[str], message: str
) -> None:
    cluster.add_group("idle")
    with pytest.raises(SystemExit, match=message):
        main(["groups", "--reset-offsets", "--group", "idle", *argv])


def test_a_malformed_datetime_fails_naming_the_expected_format(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("idle")
    assert (
        main(
            [
                "groups",
                "--reset-offsets",
                "--group",
                "idle",
                "--topic",
                "events",
                "--to-datetime",
                "yesterday",
            ]
        )
        == 1
    )
    assert "YYYY-MM-DDTHH:MM:SS.sss" in capsys.readouterr().err


def test_parse_datetime_reads_kafkas_format_with_zones() -> None:
    assert parse_datetime("2024-01-02T03:04:05.678Z") == 1_704_164_645_678
    assert parse_datetime("2024-01-02T05:04:05.678+02:00") == 1_704_164_645_678


def test_parse_datetime_reads_a_time_without_zone_as_local_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "IST-05:30")  # POSIX spelling of UTC+05:30
    time.tzset()
    try:
        assert parse_datetime("2024-01-02T08:34:05.678") == 1_704_164_645_678
    finally:
        monkeypatch.undo()
        time.tzset()


# ------------------------------------------------------------------ --delete


def test_delete_removes_an_empty_group(cluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.add_group("old", offsets={("logs", 0): 3})
    assert main(["groups", "--delete", "--group", "old"]) == 0
    assert (
        capsys.readouterr().out.strip()
        == "Deletion of requested consumer groups ('old') was successful."
    )
    assert cluster.coordinator(0).groups == {}


def test_delete_of_a_group_with_members_fails_with_non_empty_group(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.add_group("busy", state="Stable", members=[cluster.member("m1", [])])
    assert main(["groups", "--delete", "--group", "busy"]) == 1
    err = capsys.readouterr().err
    assert "NON_EMPTY_GROUP (68)" in err and "group 'busy'" in err
    assert "busy" in cluster.coordinator(0).groups


def test_actions_other_than_list_need_a_group(cluster) -> None:
    with pytest.raises(SystemExit, match="need --group"):
        main(["groups", "--describe"])
