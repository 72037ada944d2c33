"""Kafka's log line layout, shared by a broker's ``server.log`` and the terminal of a rafka process.

Kafka's brokers and tools log with log4j's pattern ``[%d] %p %m (%c)%n``:

    [2026-11-25 19:30:01,234] INFO broker 1 registered on node 5e2c41 (127.0.0.1) (rafka.actors...)

the local time to the millisecond, the level in log4j's words (``WARN``, not Python's ``WARNING``),
the message and the logger's name; a traceback follows on the next lines. Every process of a broker
writes its ``server.log`` in this layout (``actors/server_log.py``).

A process that uses rafka (a notebook, a Spark driver, the ``rafka`` command) prints rafka's own
records at WARN and above on stderr in the same layout, each folded onto one line
(``ConsoleHandler``; ``import rafka`` installs it on the ``rafka`` logger). It steps aside once the
application has configured logging itself (a handler on the root logger): rafka's records then reach
the application's handlers, as any library's do, and are not printed twice.
"""

from __future__ import annotations

import logging
import sys

LEVEL_NAMES = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO",
    logging.WARNING: "WARN",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "FATAL",
}
"""Python's levels in log4j's words."""

ROOT_LOGGER = "rafka"
"""The logger every rafka module's logger descends from."""


def level_name(levelno: int) -> str:
    """log4j's name of a level (Python's own name for a custom level)."""
    return LEVEL_NAMES.get(levelno) or logging.getLevelName(levelno)


def fold(text: str) -> str:
    """``text`` on one line: its lines stripped and joined by a space, blank ones dropped."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


class KafkaLayout(logging.Formatter):
    """``[yyyy-MM-dd HH:mm:ss,SSS] LEVEL message (logger)``; with ``one_line``, a multi-line message
    is folded and an exception is named after the message instead of its traceback following."""

    def __init__(self, one_line: bool = False) -> None:
        # The default time format is Kafka's: "%Y-%m-%d %H:%M:%S" then ",SSS" milliseconds.
        super().__init__()
        self.one_line = one_line

    def format(self, record: logging.LogRecord) -> str:
        """One record in Kafka's layout."""
        message = record.getMessage()
        if self.one_line:
            message = fold(message)
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                message += f": {type(error).__name__}" + (
                    f": {fold(str(error))}" if str(error) else ""
                )
        line = f"[{self.formatTime(record)}] {level_name(record.levelno)} {message} ({record.name})"
        if self.one_line:
            return line
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line += "\n" + record.exc_text
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class ConsoleHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """rafka's records at WARN and above on the process's current stderr, one line each, while the
    application has configured no logging of its own (no handler on the root logger)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setLevel(logging.WARNING)
        self.setFormatter(KafkaLayout(one_line=True))

    def emit(self, record: logging.LogRecord) -> None:
        """Print the record, unless the root logger's handlers will."""
        if logging.getLogger().handlers:
            return
        # The stderr of now: a notebook kernel or pytest swaps sys.stderr after rafka's import.
        self.stream = sys.stderr
        super().emit(record)


def install_console() -> None:
    """Give the ``rafka`` logger its ``ConsoleHandler`` (once per process)."""
    logger = logging.getLogger(ROOT_LOGGER)
    if not any(isinstance(h, ConsoleHandler) for h in logger.handlers):
        logger.addHandler(ConsoleHandler())
