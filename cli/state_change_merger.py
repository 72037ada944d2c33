"""``rafka state-change-log-merger``: the state-change logs of several brokers as one history.

Kafka's kafka.tools.StateChangeLogMerger, on rafka's log format (``actors/state_change.py``): the
files are named one by one (``--logs``) or by a regular expression on their names
(``--logs-regex /data/broker-.*/state-change.log.*``: a directory part, then a pattern the file
names must contain), their lines are filtered by topic, partitions and a time window, and printed
merged in time order with Kafka's ``yyyy-MM-dd HH:mm:ss,SSS`` times. Lines about no partition (a
broker failed, a controller elected) are kept unless ``--topic`` narrows the history to a topic, as
Kafka's tool keeps only lines naming a partition. No Ray: the files are read where they lie.
"""

from __future__ import annotations

import argparse
import heapq
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rafka.actors.state_change import TIME_FORMAT, StateChange, parse_state_change

TIME_SYNTAX = "yyyy-MM-dd HH:mm:ss,SSS"
"""How ``--start-time`` and ``--end-time`` are written (Kafka's SimpleDateFormat pattern)."""

_TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka state-change-log-merger`` (Kafka's StateChangeLogMerger's names)."""
    files = parser.add_mutually_exclusive_group(required=True)
    files.add_argument(
        "--logs", metavar="FILE1,FILE2", help="comma-separated list of state-change log files"
    )
    files.add_argument(
        "--logs-regex",
        metavar="REGEX",
        help="regex to match the state-change log files, e.g. /data/state-change.log.*",
    )
    parser.add_argument("--topic", help="the topic whose state changes are merged")
    parser.add_argument(
        "--partitions", metavar="0,1,2", help="comma-separated partition ids (needs --topic)"
    )
    parser.add_argument(
        "--start-time", metavar="TIME", help=f"earliest line to merge, as {TIME_SYNTAX}"
    )
    parser.add_argument(
        "--end-time", metavar="TIME", help=f"latest line to merge, as {TIME_SYNTAX}"
    )


@dataclass(frozen=True)
class Selection:
    """Which lines to keep: a topic (None: all, and lines about no partition too), its partitions
    (empty: all), and an inclusive window in epoch seconds (None: open)."""

    topic: str | None = None
    partitions: frozenset[int] = frozenset()
    start: float | None = None
    end: float | None = None

    def keeps(self, change: StateChange) -> bool:
        """Whether ``change`` is inside the window and about the selected partitions."""
        if self.start is not None and change.time < self.start:
            return False
        if self.end is not None and change.time > self.end:
            return False
        if self.topic is None:
            return True
        if change.partition is None:
            return False
        topic, _, partition = change.partition.rpartition("-")
        return topic == self.topic and (not self.partitions or int(partition) in self.partitions)


def parse_time(text: str, option: str) -> float:
    """A ``yyyy-MM-dd HH:mm:ss,SSS`` local time as epoch seconds; ValueError naming ``option``."""
    cleaned = text.replace('"', " ").strip()
    try:
        if not _TIME.match(cleaned):
            raise ValueError(cleaned)
        day, millis = cleaned.split(",")
        return datetime.strptime(day, TIME_FORMAT).timestamp() + int(millis) / 1000
    except ValueError:
        raise ValueError(f"{option} {text!r} is not a time in the format {TIME_SYNTAX}") from None


def parse_partitions(text: str) -> frozenset[int]:
    """``0,1,2`` as partition ids; ValueError for a non-number, a negative id or a repeat."""
    ids: list[int] = []
    for word in text.split(","):
        if not word.strip().isdigit():
            raise ValueError(
                f"--partitions {text!r}: {word.strip()!r} is not a partition id "
                "(a comma-separated list of numbers, e.g. 0,1,2)"
            )
        ids.append(int(word))
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(
            "The list of partitions contains repeated entries: " + ",".join(map(str, repeated))
        )
    return frozenset(ids)


def files_matching(regex: str) -> list[Path]:
    """The files whose path the regex matches, as Kafka's tool selects them: the part before the
    last ``/`` names the directory and the rest must be found in a file's name. A directory part
    with regex characters (``data/broker-.*/state-change.log``, one directory per broker here)
    is matched one component at a time below the longest part that names a directory.
    ValueError if the regex is bad or matches nothing."""
    *folders, pattern = regex.split("/")

    def folder(count: int) -> Path:
        return Path("/".join(folders[:count]) or ("/" if regex.startswith("/") else "."))

    literal = 0
    while literal < len(folders) and folder(literal + 1).is_dir():
        literal += 1
    base = folder(literal)
    try:
        compiled = [re.compile(c) for c in [*folders[literal:], pattern]]
    except re.error as exc:
        raise ValueError(f"--logs-regex {regex!r} is not a regular expression: {exc}") from None
    candidates = [base]
    for component in compiled[:-1]:
        candidates = [
            child
            for parent in candidates
            for child in sorted(parent.iterdir())
            if child.is_dir() and component.fullmatch(child.name)
        ]
    found = [
        child
        for parent in candidates
        for child in sorted(parent.iterdir())
        if child.is_file() and compiled[-1].search(child.name)
    ]
    if not found:
        raise ValueError(f"--logs-regex {regex!r} matched no file")
    return found


def listed_files(logs: str) -> list[Path]:
    """The comma-separated ``--logs`` files; ValueError naming one that is missing."""
    paths = [Path(name.strip()) for name in logs.split(",") if name.strip()]
    if not paths:
        raise ValueError("--logs names no file")
    for path in paths:
        if not path.is_file():
            raise ValueError(f"--logs: no such file {str(path)!r}")
    return paths


def read_file(path: Path, selection: Selection) -> list[StateChange]:
    """The selected lines of one file, by time; OSError naming the file if it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise OSError(f"cannot read state-change log {str(path)!r}: {exc.strerror}") from None
    changes = (parse_state_change(line) for line in text.splitlines())
    return sorted(
        (c for c in changes if c is not None and selection.keeps(c)), key=lambda c: c.time
    )


def merge(paths: Sequence[Path], selection: Selection) -> Iterator[StateChange]:
    """The selected lines of every file in time order (a file's own order kept for equal times)."""
    return heapq.merge(*(read_file(p, selection) for p in paths), key=lambda c: c.time)


def check(args: argparse.Namespace) -> tuple[list[Path], Selection]:
    """The files and the selection the options name; ValueError naming what is wrong."""
    if args.partitions is not None and args.topic is None:
        raise ValueError("--partitions needs --topic")
    selection = Selection(
        args.topic,
        parse_partitions(args.partitions) if args.partitions is not None else frozenset(),
        parse_time(args.start_time, "--start-time") if args.start_time is not None else None,
        parse_time(args.end_time, "--end-time") if args.end_time is not None else None,
    )
    paths = listed_files(args.logs) if args.logs is not None else files_matching(args.logs_regex)
    return paths, selection


def run(args: argparse.Namespace) -> int:
    """Execute ``rafka state-change-log-merger``: print the merged lines."""
    paths, selection = check(args)
    for change in merge(paths, selection):
        print(change.render())
    return 0
