"""Kafka's state-change log: one ``state-change.log`` per broker, in its log directory.

Every process of a broker (the broker actor, its controller and its partition replicas) appends to
the same file through the ``rafka.state_change`` logger: controller elections and resignations,
broker registrations and deaths, every partition state the controller writes (with its epoch and the
event that caused it), LeaderAndIsr sent, received and acted on, ISR shrinks and expansions, and
truncations. A line reads

    1764099001.234 broker=1 epoch=3 correlation=17 partition=t-0 [Controller id=1 epoch=3] ...

its wall-clock time in seconds, then the fields that apply (the broker whose process decided, the
controller epoch, the correlation id of the control request, the topic-partition; a field that does
not apply is left out), then the transition. The files of all brokers merge into one timeline
(``rafka state-change-log-merger``) that explains, after the fact, why a partition stopped taking
writes. The file is shared and rolled as ``server.log`` is (``actors/server_log.py``: at 10 MB into
``state-change.log.1`` .. ``.10``), and its lines go there only, not to ``server.log`` too, as
Kafka's state-change logger is not additive.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rafka.actors.server_log import BACKUP_COUNT, MAX_BYTES, attach_shared_file, log_files
from rafka.protocol.messages.control import LeaderAndIsrPartitionState

STATE_CHANGE_FILE = "state-change.log"
STATE_CHANGE_LOGGER = "rafka.state_change"

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
"""Kafka's ``yyyy-MM-dd HH:mm:ss`` (local time); milliseconds follow after a comma."""

_FIELDS = re.compile(r"(broker|epoch|correlation|partition)=(\S+) ")
_CONTROLLER_EPOCH = re.compile(r"^\[Controller id=-?\d+ epoch=(\d+)\]")
_PARTITION_WORD = re.compile(r"^[A-Za-z0-9._-]+-\d+$")

state_change_logger = logging.getLogger(STATE_CHANGE_LOGGER)
"""Where every state-change line goes; ``open_state_change_log`` gives it its file."""


def open_state_change_log(
    log_dir: str | os.PathLike[str],
    max_bytes: int = MAX_BYTES,
    backup_count: int = BACKUP_COUNT,
) -> logging.Logger:
    """Append this process's state-change lines to ``log_dir/state-change.log`` (idempotent)."""
    state_change_logger.setLevel(logging.INFO)
    state_change_logger.propagate = False
    attach_shared_file(
        state_change_logger,
        Path(log_dir) / STATE_CHANGE_FILE,
        logging.Formatter("%(created).3f %(message)s"),
        max_bytes,
        backup_count,
    )
    return state_change_logger


@dataclass(frozen=True)
class ChangeFields:
    """What a state-change line is about: the broker whose process decided, and where they apply
    the controller epoch, the control request's correlation id and the topic-partition."""

    broker_id: int
    controller_epoch: int | None = None
    correlation_id: int | None = None
    partition: str | None = None

    def prefix(self) -> str:
        """The fields as the line prints them, those that do not apply left out."""
        words = [f"broker={self.broker_id}"] if self.broker_id >= 0 else []
        if self.controller_epoch is not None:
            words.append(f"epoch={self.controller_epoch}")
        if self.correlation_id is not None:
            words.append(f"correlation={self.correlation_id}")
        if self.partition is not None:
            words.append(f"partition={self.partition}")
        return " ".join(words)


def log_state_change(fields: ChangeFields, message: str, *args: object) -> None:
    """Append one line, ``fields`` first, then ``message % args`` (the transition)."""
    state_change_logger.info("%s " + message, fields.prefix(), *args)


def controller_line_fields(broker_id: int, line: str) -> ChangeFields:
    """The fields of a line the controller's core wrote as text (``[Controller id=1 epoch=3]
    ...``): its epoch from that prefix, and the first ``topic-partition`` it names."""
    epoch = _CONTROLLER_EPOCH.match(line)
    named = (
        word.rstrip(":,;)")
        for word in line[epoch.end() if epoch else 0 :].split()
        if _PARTITION_WORD.match(word.rstrip(":,;)"))
    )
    return ChangeFields(
        broker_id, int(epoch.group(1)) if epoch else None, partition=next(named, None)
    )


def describe_state(state: LeaderAndIsrPartitionState) -> str:
    """One partition's LeaderAndIsr state as the log prints it."""
    return (
        f"{state.topic}-{state.partition} leader {state.leader} epoch {state.leader_epoch} "
        f"ISR {list(state.isr)} zk version {state.zk_version}"
    )


def partition_name(state: LeaderAndIsrPartitionState) -> str:
    """``topic-partition`` of a LeaderAndIsr partition state."""
    return f"{state.topic}-{state.partition}"


def format_time(seconds: float) -> str:
    """A wall-clock time as Kafka's tools print it: ``yyyy-MM-dd HH:mm:ss,SSS``, local time."""
    millis = round(seconds * 1000)
    at = datetime.fromtimestamp(millis // 1000)
    return f"{at.strftime(TIME_FORMAT)},{millis % 1000:03d}"


@dataclass(frozen=True)
class StateChange:
    """One line of a state-change log: when, which broker's, the transition, and the fields that
    apply (None where the line has none)."""

    time: float
    broker_id: int
    message: str
    controller_epoch: int | None = None
    correlation_id: int | None = None
    partition: str | None = None

    def mentions(self, partition_name: str) -> bool:
        """Whether the line is about ``partition_name`` (``topic-partition``)."""
        if self.partition == partition_name:
            return True
        return any(
            word.rstrip(":,;)") == partition_name for word in self.message.replace("@", " ").split()
        )

    def render(self) -> str:
        """The line as the merger prints it: Kafka's time in brackets, fields, transition."""
        fields = ChangeFields(
            self.broker_id, self.controller_epoch, self.correlation_id, self.partition
        ).prefix()
        return f"[{format_time(self.time)}] " + (f"{fields} " if fields else "") + self.message


def parse_state_change(line: str, broker_id: int = -1) -> StateChange | None:
    """A line of a state-change log, or None for one that is not (a broken or foreign line); its
    ``broker=`` field, if any, names the broker, else ``broker_id`` does."""
    stamp, _, rest = line.rstrip("\n").partition(" ")
    try:
        time = float(stamp)
    except ValueError:
        return None
    found: dict[str, str] = {}
    while (match := _FIELDS.match(rest)) is not None and match.group(1) not in found:
        found[match.group(1)] = match.group(2)
        rest = rest[match.end() :]
    try:
        return StateChange(
            time,
            int(found.get("broker", broker_id)),
            rest,
            int(found["epoch"]) if "epoch" in found else None,
            int(found["correlation"]) if "correlation" in found else None,
            found.get("partition"),
        )
    except ValueError:
        return None


def read_state_changes(log_dirs: Iterable[tuple[int, Path]]) -> list[StateChange]:
    """The lines of every broker's state-change log (rolled files too), ``(broker id, log dir)``
    pairs, by time."""
    changes: list[StateChange] = []
    for broker_id, log_dir in log_dirs:
        for path in log_files(log_dir, STATE_CHANGE_FILE):
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                change = parse_state_change(line, broker_id)
                if change is not None:
                    changes.append(change)
    return sorted(changes, key=lambda c: c.time)
