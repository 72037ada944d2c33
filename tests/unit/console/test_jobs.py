"""The console's jobs (rafka.console.jobs): a confirmed operation runs in a worker thread, reports
its steps, status and fraction, and ends succeeded or with Kafka's one-line error."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from rafka.console.jobs import JobBoard, JobState, JobView, Progress
from rafka.console.operations import OPERATIONS
from rafka.testing import wait_until

from .conftest import FakeAdmin


def ended(board: JobBoard, job_id: str) -> JobView:
    """The job once it has ended."""
    found: JobView = wait_until(
        lambda: (job := board.get(job_id)) is not None and job.done and job, 10, "the job to end"
    )
    return found


def test_a_job_reports_its_steps_and_ends_with_kafkas_error_line() -> None:
    board = JobBoard(ThreadPoolExecutor(2))
    release = threading.Event()

    def work(report: Progress) -> None:
        report.step("asked")
        release.wait(10)
        OPERATIONS["delete-topic"].run("ghost", FakeAdmin(), report)

    job = board.start("Delete topic: ghost", work)
    assert job.state is JobState.RUNNING and not job.done
    wait_until(lambda: board.recent()[0].steps == ("asked",), 10, "the first step")
    release.set()
    failed = ended(board, job.job_id)
    assert failed.state is JobState.FAILED
    assert failed.error is not None
    assert failed.error.startswith("UNKNOWN_TOPIC_OR_PARTITION (3): topic 'ghost'")
    assert failed.steps == ("asked", "Asked the controller to delete topic ghost.")
    assert board.get("nope") is None


def test_a_job_that_succeeds_is_complete_with_its_last_status() -> None:
    board = JobBoard(ThreadPoolExecutor(1), clock=lambda: 42.0)

    def work(report: Progress) -> None:
        report.fraction(1.7)
        report.fraction(0.25)
        report.status("[##--] 25%")

    done = ended(board, board.start("Reassign partitions", work).job_id)
    assert (done.state, done.error, done.fraction, done.status) == (
        JobState.SUCCEEDED,
        None,
        1.0,
        "[##--] 25%",
    )
    assert (done.started_at, done.ended_at) == (42.0, 42.0)


def test_the_board_keeps_the_newest_jobs_and_drops_the_oldest_finished() -> None:
    board = JobBoard(ThreadPoolExecutor(1), limit=2)
    first = board.start("one", lambda report: None)
    ended(board, first.job_id)
    second = board.start("two", lambda report: None)
    ended(board, second.job_id)
    third = board.start("three", lambda report: None)
    assert [j.job_id for j in board.recent()] == [third.job_id, second.job_id]
    assert board.get(first.job_id) is None
