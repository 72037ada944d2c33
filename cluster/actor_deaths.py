"""What a driver says when one of rafka's actor processes dies: one line in rafka's words.

Ray tells the driver that owns an actor (the process that ran ``LocalCluster`` or ``rafka up``)
when the actor's worker process dies unexpectedly, a paragraph printed by the raylet on the
driver's stdout: "A worker died or was killed while executing a task by an unexpected system
error ... Worker PID: ... Worker exit detail: ... the OOM killer ...". rafka routes those reports
through ``notice_for``:

- a death rafka caused on purpose (``LocalCluster.kill_broker``, the faults of
  ``rafka.cluster.faults``), whose processes it named with ``expect_deaths`` before killing them,
  is silent: the code that killed them already logged its one line ("broker 1 stopped: killed by
  the operator");
- any other death of a rafka actor is one WARN line on the ``rafka`` logger, naming the actor
  ("replica events-0 of broker 1 died unexpectedly (pid 4242): Worker unexpectedly exits with a
  connection error code 2.");
- the raylet's warning that many worker processes started at once is left out (logged at DEBUG):
  rafka starts one process per replica by design;
- everything else (the death of an actor that is not rafka's, Ray's other messages) goes on to
  the printer Ray (or ``rafka`` command's ``quiet`` module) had in place.

A clean stop (``ray.kill``, a controlled shutdown) is never reported by Ray. ``install`` is the thin
part that touches Ray: it takes the place of Ray's printer in this process and looks the dead
process up in Ray's actor table; the rest has no Ray.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from rafka.actors.names import describe_actor

logger = logging.getLogger(__name__)

DEATH_REPORT = "A worker died or was killed"
"""How the raylet's report of a dead worker process begins."""

STARTUP_CONCURRENCY = "maximum expected startup concurrency"
"""Part of the raylet's warning that many worker processes started at once: a cluster starts one
process per partition replica by design, so it tells a rafka user nothing to act on."""

_PID = re.compile(r"Worker PID: (\d+)")
_EXIT_TYPE = re.compile(r"Worker exit type: (\w+)")
_EXIT_DETAIL = re.compile(r"Worker exit detail: (.+?\.)(?:\s|$)")

REMEMBERED = 10_000
"""How many expected process ids are kept: far more than a test session kills."""


@dataclass(frozen=True)
class WorkerDeath:
    """A worker process whose death Ray reported: its pid, Ray's exit type and the first sentence
    of Ray's exit detail."""

    pid: int
    exit_type: str
    detail: str


def parse_worker_death(message: str) -> WorkerDeath | None:
    """The dead worker of one of Ray's messages, or None for a message that is no death report."""
    pid = _PID.search(message)
    if not message.lstrip().startswith(DEATH_REPORT) or pid is None:
        return None
    exit_type = _EXIT_TYPE.search(message)
    detail = _EXIT_DETAIL.search(message)
    return WorkerDeath(
        int(pid.group(1)),
        exit_type.group(1) if exit_type else "",
        detail.group(1) if detail else "",
    )


class ExpectedDeaths:
    """Process ids rafka is about to kill on purpose (thread-safe: Ray reports on its own thread);
    the most recent ``REMEMBERED`` are kept."""

    def __init__(self, remembered: int = REMEMBERED) -> None:
        self._lock = threading.Lock()
        self._order: deque[int] = deque()
        self._pids: set[int] = set()
        self._remembered = remembered

    def expect(self, pids: Iterable[int]) -> None:
        """Remember ``pids`` as processes rafka kills on purpose."""
        with self._lock:
            for pid in pids:
                if pid not in self._pids:
                    self._pids.add(pid)
                    self._order.append(pid)
            while len(self._order) > self._remembered:
                self._pids.discard(self._order.popleft())

    def __contains__(self, pid: object) -> bool:
        with self._lock:
            return pid in self._pids


class Verdict(Enum):
    """What becomes of one of Ray's messages."""

    RAY = "ray"
    """Not about rafka: Ray's own printer shows it."""
    SILENT = "silent"
    """A death rafka caused and already reported."""
    REPORT = "report"
    """An unexpected death of a rafka actor: rafka's one line instead of Ray's paragraph."""


@dataclass(frozen=True)
class Notice:
    """The verdict on one of Ray's messages, with rafka's line about it (a WARN line when it is
    reported, a DEBUG one when it is left out)."""

    verdict: Verdict
    line: str = ""


def notice_for(
    message: str, actor_name_of: Callable[[int], str | None], expected: ExpectedDeaths
) -> Notice:
    """What to say about one of Ray's messages; ``actor_name_of`` names the actor a process ran
    (None for a process that ran no named actor)."""
    if STARTUP_CONCURRENCY in message:
        return Notice(Verdict.SILENT, "Ray's startup-concurrency warning left out: " + message)
    death = parse_worker_death(message)
    if death is None:
        return Notice(Verdict.RAY)
    if death.pid in expected:
        return Notice(Verdict.SILENT, f"Ray's report of pid {death.pid}'s death left out: expected")
    name = actor_name_of(death.pid)
    what = describe_actor(name) if name else None
    if what is None:
        return Notice(Verdict.RAY)
    cause = death.detail or death.exit_type or "no reason given"
    return Notice(Verdict.REPORT, f"{what} died unexpectedly (pid {death.pid}): {cause}")


EXPECTED = ExpectedDeaths()
"""This process's expected deaths."""


def expect_deaths(pids: Iterable[int]) -> None:
    """Say that rafka is about to kill these processes on purpose, so Ray's report of their
    deaths is not printed (call it before sending the signals)."""
    EXPECTED.expect(pids)


class NoticePrinter:
    """A printer of the messages Ray sends a driver (Ray's ``print_to_stdstream``) that gives the
    raylet's death reports rafka's verdict first; ``fallback`` prints the rest."""

    def __init__(
        self,
        fallback: Callable[..., None],
        actor_name_of: Callable[[int], str | None],
        expected: ExpectedDeaths = EXPECTED,
    ) -> None:
        self.fallback = fallback
        self.actor_name_of = actor_name_of
        self.expected = expected

    def __call__(self, data: dict[str, Any], ignore_prefix: bool = False) -> None:
        """Print (or leave out) one batch of lines Ray sends: ``data["lines"]``, from ``pid``."""
        if data.get("pid") != "raylet":
            self.fallback(data, ignore_prefix)
            return
        passed = []
        for line in data.get("lines", ()):
            notice = notice_for(line, self.actor_name_of, self.expected)
            if notice.verdict is Verdict.REPORT:
                logger.warning("%s", notice.line)
            elif notice.verdict is Verdict.SILENT:
                logger.debug("%s", notice.line)
            else:
                passed.append(line)
        if passed:
            self.fallback({**data, "lines": passed}, ignore_prefix)


def _actor_name_of(pid: int) -> str | None:
    """The name of the actor of this driver's job that ran in process ``pid``, from Ray's actor
    table (which keeps dead actors)."""
    import ray._private.state as ray_state
    import ray._private.worker as ray_worker

    try:
        table = ray_state.actors(job_id=ray_worker.global_worker.current_job_id)
    except Exception:  # Ray going down: the message goes to Ray's printer unnamed
        return None
    names: list[str] = [a["Name"] for a in table.values() if a.get("Pid") == pid and a["Name"]]
    return names[0] if names else None


def install() -> None:
    """Put rafka's notices in front of the printer Ray uses for the messages it sends this driver
    (once per process; the printer in place, Ray's or the ``rafka`` command's, keeps the rest)."""
    import ray._private.worker as ray_worker

    if not isinstance(ray_worker.print_to_stdstream, NoticePrinter):
        ray_worker.print_to_stdstream = NoticePrinter(ray_worker.print_to_stdstream, _actor_name_of)
