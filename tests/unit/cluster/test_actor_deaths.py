"""Tests for rafka.cluster.actor_deaths: Ray's crash report of a rafka actor becomes nothing (a
death rafka caused) or one line in rafka's words (any other), and Ray's other messages pass."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from rafka.cluster.actor_deaths import (
    ExpectedDeaths,
    Notice,
    NoticePrinter,
    Verdict,
    WorkerDeath,
    notice_for,
    parse_worker_death,
)

# What Ray 2.60's raylet sent a LocalCluster's driver when broker 1's replica of t-0 was killed.
RAY_REPORT = (
    "A worker died or was killed while executing a task by an unexpected system error. To "
    "troubleshoot the problem, check the logs for the dead worker. Lease ID: 05000000edd698f2 "
    "Worker ID: d27469113b86683714bd1091 Node ID: e9c7d92a5a1c6e9e84c491858 Worker IP address: "
    "127.0.0.1 Worker port: 33127 Worker PID: 601 Worker exit type: SYSTEM_ERROR Worker exit "
    "detail: Worker unexpectedly exits with a connection error code 2. End of file. Some common "
    "causes include: (1) the process was killed by the OOM killer due to high memory usage, (2) "
    "ray stop --force was called, or (3) the worker crashed unexpectedly due to SIGSEGV or "
    "another unexpected error."
)
OTHER_MESSAGE = (
    "3 PYTHON worker processes have been started on node ... maximum startup concurrency"
)
ACTORS = {601: "replica-t-0@1", 700: "broker-1", 800: "my-own-actor", 900: ""}


def test_a_death_report_names_the_process_and_ray_s_first_sentence_of_why() -> None:
    assert parse_worker_death(RAY_REPORT) == WorkerDeath(
        601, "SYSTEM_ERROR", "Worker unexpectedly exits with a connection error code 2."
    )
    assert parse_worker_death(OTHER_MESSAGE) is None
    assert parse_worker_death("Worker PID: 5 but no report") is None


def test_an_expected_death_is_silent_without_looking_the_process_up() -> None:
    expected = ExpectedDeaths()
    expected.expect([601, 602])

    def no_lookup(pid: int) -> str | None:
        raise AssertionError("an expected death needs no lookup")

    assert notice_for(RAY_REPORT, no_lookup, expected) == Notice(
        Verdict.SILENT, "Ray's report of pid 601's death left out: expected"
    )


def test_an_unexpected_death_of_a_rafka_actor_is_one_line_naming_it() -> None:
    notice = notice_for(RAY_REPORT, ACTORS.get, ExpectedDeaths())
    assert notice == Notice(
        Verdict.REPORT,
        "replica t-0 of broker 1 died unexpectedly (pid 601): "
        "Worker unexpectedly exits with a connection error code 2.",
    )
    broker = notice_for(RAY_REPORT.replace("PID: 601", "PID: 700"), ACTORS.get, ExpectedDeaths())
    assert broker.line.startswith("broker 1 died unexpectedly (pid 700): ")


@pytest.mark.parametrize("pid", [800, 900, 1000])
def test_deaths_of_processes_that_ran_no_rafka_actor_are_left_to_ray(pid: int) -> None:
    report = RAY_REPORT.replace("PID: 601", f"PID: {pid}")
    assert notice_for(report, ACTORS.get, ExpectedDeaths()) == Notice(Verdict.RAY)


def test_other_messages_are_left_to_ray() -> None:
    assert notice_for(OTHER_MESSAGE, ACTORS.get, ExpectedDeaths()) == Notice(Verdict.RAY)


def test_the_raylets_startup_concurrency_warning_is_left_out() -> None:
    warning = (
        "WARNING: 16 PYTHON worker processes have been started on node: 8bbf with address: "
        "127.0.0.1, which is 8x the maximum expected startup concurrency (2). This could be ..."
    )
    notice = notice_for(warning, ACTORS.get, ExpectedDeaths())
    assert notice.verdict is Verdict.SILENT and "startup-concurrency" in notice.line


def test_expected_deaths_remember_the_most_recent_pids() -> None:
    expected = ExpectedDeaths(remembered=3)
    expected.expect([1, 2])
    expected.expect([2, 3, 4])
    assert [pid in expected for pid in (1, 2, 3, 4)] == [False, True, True, True]


class Fallback:
    """The printer that was in place: what reached it."""

    def __init__(self) -> None:
        self.printed: list[dict[str, Any]] = []

    def __call__(self, data: dict[str, Any], ignore_prefix: bool) -> None:
        self.printed.append(data)


def test_the_printer_says_rafkas_line_and_passes_the_rest_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fallback = Fallback()
    expected = ExpectedDeaths()
    expected.expect([700])
    printer = NoticePrinter(fallback, ACTORS.get, expected)
    worker_lines = {"pid": 4242, "is_err": True, "lines": ["a worker's own stderr line"]}
    caplog.set_level(logging.DEBUG, logger="rafka.cluster.actor_deaths")
    printer(worker_lines)
    printer(
        {
            "pid": "raylet",
            "is_err": False,
            "lines": [RAY_REPORT, RAY_REPORT.replace("PID: 601", "PID: 700"), OTHER_MESSAGE],
        }
    )
    assert fallback.printed == [
        worker_lines,
        {"pid": "raylet", "is_err": False, "lines": [OTHER_MESSAGE]},
    ]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "replica t-0 of broker 1 died unexpectedly (pid 601): "
        "Worker unexpectedly exits with a connection error code 2."
    ]
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert debug == ["Ray's report of pid 700's death left out: expected"]


def test_the_printer_prints_nothing_when_every_line_was_rafkas() -> None:
    fallback = Fallback()
    printer = NoticePrinter(fallback, ACTORS.get, ExpectedDeaths())
    printer({"pid": "raylet", "is_err": False, "lines": [RAY_REPORT]})
    assert fallback.printed == []
