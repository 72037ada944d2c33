"""Operations the console runs once confirmed, and how far each has got.

A job is one confirmed operation running in a worker thread: it reports steps (lines of text), a
status line that each report replaces (where a long step stands) and, when it can measure it, the
fraction done, through its ``Progress``; it ends succeeded or failed with the error's one line
(Kafka's ``NAME (code): message`` for a Kafka error). The job page reads snapshots of it while it
runs. The board keeps the last ``limit`` jobs.
"""

from __future__ import annotations

import enum
import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, replace

from rafka.cli.errors import error_line

DEFAULT_LIMIT = 100
"""Jobs kept for their pages; the oldest finished ones go first."""


class JobState(enum.Enum):
    """Where a job stands."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class JobView:
    """A job as its page shows it at one moment."""

    job_id: str
    title: str
    state: JobState
    steps: tuple[str, ...]
    status: str | None
    fraction: float | None
    error: str | None
    started_at: float
    ended_at: float | None

    @property
    def done(self) -> bool:
        """Whether the job has ended, either way."""
        return self.state is not JobState.RUNNING


class Progress:
    """What a running job reports through: its steps and the fraction done (thread-safe)."""

    def __init__(self, job_id: str, title: str, clock: Callable[[], float]) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._view = JobView(job_id, title, JobState.RUNNING, (), None, None, None, clock(), None)

    def step(self, text: str) -> None:
        """Report a step done or under way."""
        with self._lock:
            self._view = replace(self._view, steps=(*self._view.steps, text))

    def status(self, text: str) -> None:
        """Replace the line that says where a long step stands (a progress bar's text)."""
        with self._lock:
            self._view = replace(self._view, status=text)

    def fraction(self, value: float) -> None:
        """Report how much is done, from 0 to 1."""
        with self._lock:
            self._view = replace(self._view, fraction=min(1.0, max(0.0, value)))

    def finish(self, error: BaseException | None) -> None:
        """End the job: succeeded without ``error``, failed with it."""
        with self._lock:
            self._view = replace(
                self._view,
                state=JobState.SUCCEEDED if error is None else JobState.FAILED,
                error=None if error is None else error_line(error).removeprefix("Error: "),
                fraction=1.0 if error is None else self._view.fraction,
                ended_at=self._clock(),
            )

    def view(self) -> JobView:
        """The job now."""
        with self._lock:
            return self._view


class JobBoard:
    """Starts jobs on an executor and keeps them for their pages."""

    def __init__(
        self,
        executor: Executor,
        limit: int = DEFAULT_LIMIT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.executor = executor
        self.limit = limit
        self.clock = clock
        self._jobs: OrderedDict[str, Progress] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, title: str, work: Callable[[Progress], None]) -> JobView:
        """Run ``work`` in a worker thread as a new job; its view as it starts."""
        progress = Progress(str(next(self._ids)), title, self.clock)

        def run() -> None:
            try:
                work(progress)
            # Any failure ends the job, shown on its page as one line.
            except Exception as exc:
                progress.finish(exc)
            else:
                progress.finish(None)

        with self._lock:
            self._jobs[progress.view().job_id] = progress
            finished = [k for k, p in self._jobs.items() if p.view().done]
            for job_id in finished[: max(0, len(self._jobs) - self.limit)]:
                del self._jobs[job_id]
        self.executor.submit(run)
        return progress.view()

    def get(self, job_id: str) -> JobView | None:
        """A job's view, None if there is no such job (any more)."""
        with self._lock:
            progress = self._jobs.get(job_id)
        return None if progress is None else progress.view()

    def recent(self) -> list[JobView]:
        """Every kept job, newest first."""
        with self._lock:
            kept = list(self._jobs.values())
        return [p.view() for p in reversed(kept)]
