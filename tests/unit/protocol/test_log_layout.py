"""Tests for rafka.protocol.log_layout: Kafka's line layout, and rafka's one-line warnings on a
terminal that step aside once the application configured logging."""

from __future__ import annotations

import logging
import re

import pytest

from rafka.protocol.log_layout import ConsoleHandler, KafkaLayout, install_console

KAFKA_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (\w+) (.*) \((\S+)\)$")


def _record(
    level: int, message: str, *args: object, exc: BaseException | None = None
) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("rafka.test.where", level, __file__, 1, message, args, exc_info)


def _raised() -> BaseException:
    try:
        raise ValueError("bad\nthings")
    except ValueError as exc:
        return exc


def test_a_line_has_kafkas_time_level_message_and_logger() -> None:
    line = KafkaLayout().format(_record(logging.INFO, "broker %d registered", 1))
    match = KAFKA_LINE.match(line)
    assert match is not None, line
    assert match.groups() == ("INFO", "broker 1 registered", "rafka.test.where")


@pytest.mark.parametrize(
    ("level", "name"),
    [
        (logging.DEBUG, "DEBUG"),
        (logging.WARNING, "WARN"),
        (logging.ERROR, "ERROR"),
        (logging.CRITICAL, "FATAL"),
    ],
)
def test_levels_read_as_log4j_names_them(level: int, name: str) -> None:
    match = KAFKA_LINE.match(KafkaLayout().format(_record(level, "x")))
    assert match is not None and match.group(1) == name


def test_a_traceback_follows_the_line_in_a_file_but_is_one_clause_on_a_terminal() -> None:
    exc = _raised()
    in_file = KafkaLayout().format(_record(logging.ERROR, "write failed", exc=exc)).splitlines()
    assert KAFKA_LINE.match(in_file[0]) and in_file[0].endswith("write failed (rafka.test.where)")
    assert in_file[1] == "Traceback (most recent call last):"
    assert in_file[-2:] == ["ValueError: bad", "things"]
    on_terminal = KafkaLayout(one_line=True).format(
        _record(logging.ERROR, "write failed\n  at the end", exc=exc)
    )
    assert "\n" not in on_terminal
    assert on_terminal.endswith(
        "ERROR write failed at the end: ValueError: bad things (rafka.test.where)"
    )


@pytest.fixture
def console(monkeypatch: pytest.MonkeyPatch) -> logging.Logger:
    """A logger with only rafka's console handler."""
    logger = logging.getLogger("rafka.test.console")
    monkeypatch.setattr(logger, "handlers", [])
    monkeypatch.setattr(logger, "propagate", False)
    logger.addHandler(ConsoleHandler())
    return logger


def _unconfigured(monkeypatch: pytest.MonkeyPatch) -> list[logging.Handler]:
    """The root logger's handlers as an application that configured no logging has them: none
    (pytest adds its own when the test's call starts, hence in the test's body)."""
    handlers: list[logging.Handler] = []
    monkeypatch.setattr(logging.getLogger(), "handlers", handlers)
    return handlers


def test_the_console_prints_warnings_as_one_line_on_the_current_stderr(
    console: logging.Logger, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _unconfigured(monkeypatch)
    console.info("not shown")
    console.warning("broker %d stopped:\nkilled by the operator", 1)
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert KAFKA_LINE.match(err.rstrip("\n"))
    assert "WARN broker 1 stopped: killed by the operator (rafka.test.console)" in err


def test_the_console_steps_aside_once_the_application_configured_logging(
    console: logging.Logger, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root_handlers = _unconfigured(monkeypatch)
    console.warning("printed")
    root_handlers.append(logging.NullHandler())
    console.warning("the application's handlers print this")
    err = capsys.readouterr().err
    assert "printed" in err and "application" not in err


def test_installing_the_console_twice_adds_one_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    rafka_logger = logging.getLogger("rafka")
    monkeypatch.setattr(rafka_logger, "handlers", [])
    install_console()
    install_console()
    assert [type(h) for h in rafka_logger.handlers] == [ConsoleHandler]
    assert rafka_logger.handlers[0].level == logging.WARNING
