"""Kafka's state-change log: one ``state-change.log`` per broker, in its log directory.

Every process of a broker (the broker actor, its controller and its partition replicas) appends to
the same file through the ``rafka.state_change`` logger: controller elections and resignations,
broker registrations and deaths, every partition state the controller writes (with its epoch and the
event that caused it), LeaderAndIsr sent, received and acted on, ISR shrinks and expansions, and
truncations. Each line starts with its wall-clock time in seconds, so the files of all brokers can
be merged into one timeline that explains, after the fact, why a partition stopped taking writes.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rafka.protocol.messages.control import LeaderAndIsrPartitionState

STATE_CHANGE_FILE = "state-change.log"
STATE_CHANGE_LOGGER = "rafka.state_change"

state_change_logger = logging.getLogger(STATE_CHANGE_LOGGER)
"""Where every state-change line goes; ``open_state_change_log`` gives it its file."""


def open_state_change_log(log_dir: str | os.PathLike[str]) -> logging.Logger:
    """Append this process's state-change lines to ``log_dir/state-change.log`` (idempotent)."""
    path = os.path.abspath(Path(log_dir) / STATE_CHANGE_FILE)
    state_change_logger.setLevel(logging.INFO)
    if not any(getattr(h, "baseFilename", None) == path for h in state_change_logger.handlers):
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(created).3f %(message)s"))
        state_change_logger.addHandler(handler)
    return state_change_logger


def describe_state(state: LeaderAndIsrPartitionState) -> str:
    """One partition's LeaderAndIsr state as the log prints it."""
    return (
        f"{state.topic}-{state.partition} leader {state.leader} epoch {state.leader_epoch} "
        f"ISR {list(state.isr)} zk version {state.zk_version}"
    )


@dataclass(frozen=True)
class StateChange:
    """One line of a state-change log: when, which broker's file, and what happened."""

    time: float
    broker_id: int
    message: str

    def mentions(self, partition_name: str) -> bool:
        """Whether the line is about ``partition_name`` (``topic-partition``)."""
        return any(
            word.rstrip(":,;)") == partition_name for word in self.message.replace("@", " ").split()
        )


def read_state_changes(log_dirs: Iterable[tuple[int, Path]]) -> list[StateChange]:
    """The lines of every broker's state-change log, ``(broker id, log dir)`` pairs, by time."""
    changes: list[StateChange] = []
    for broker_id, log_dir in log_dirs:
        path = Path(log_dir) / STATE_CHANGE_FILE
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            stamp, _, message = line.partition(" ")
            try:
                changes.append(StateChange(float(stamp), broker_id, message))
            except ValueError:
                continue
    return sorted(changes, key=lambda c: c.time)
