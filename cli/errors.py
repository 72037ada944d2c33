"""How the ``rafka`` command reports a failure: one line on stderr and a non-zero exit.

A Kafka error reads ``Error: <NAME> (<code>): <what was wrong>`` (``RafkaError``'s own form); any
other failure (no cluster running, a port in use, bad options) is ``Error: <sentence>``. The
traceback is printed only with ``--verbose``.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from rafka.protocol.errors import RafkaError

USAGE_EXIT = 2
"""Exit status for bad options, as argparse uses."""

EXPECTED = (RafkaError, OSError, RuntimeError, ValueError, LookupError)
"""Failures whose message speaks for itself; any other type is named in the line."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one ``Error:`` line, not a usage block."""

    def error(self, message: str) -> NoReturn:
        """Print the parse error as one line and exit with status 2."""
        self.exit(USAGE_EXIT, f"Error: {message} (see `{self.prog} --help`)\n")


def error_line(exc: BaseException) -> str:
    """The one line that reports ``exc``: its first line of text, prefixed ``Error: ``."""
    text = str(exc).strip()
    first = text.splitlines()[0].strip() if text else ""
    if isinstance(exc, EXPECTED) and first:
        return f"Error: {first}"
    return f"Error: {type(exc).__name__}: {first}" if first else f"Error: {type(exc).__name__}"


def usage_exit(exc: SystemExit) -> SystemExit:
    """A command's ``SystemExit("<what is missing>")`` as a one-line ``Error:`` exit (status 1)."""
    if isinstance(exc.code, str) and not exc.code.startswith("Error: "):
        return SystemExit(f"Error: {exc.code}")
    return exc


def report(exc: BaseException, verbose: bool) -> None:
    """Print ``exc`` as one line on stderr, after its traceback when ``verbose``."""
    if verbose:
        import traceback

        traceback.print_exception(exc)
    print(error_line(exc), file=sys.stderr)
