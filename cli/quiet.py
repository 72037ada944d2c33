"""Ray's own output in the ``rafka`` command goes to a log file, not the user's terminal.

Ray writes two kinds of lines into a driver's terminal: its Python logger's (to stderr, e.g. while
it looks for a running cluster) and what the cluster publishes to every driver (to stdout, e.g. the
raylet's "N PYTHON worker processes ... maximum expected startup concurrency" warning, which a
cluster of many replica actors triggers by design). The terminal is for the command's own output,
so ``divert_ray_output`` sends both to ``rafka-cli.log`` in the command's data directory, or drops
them for a command without one (the raylet's warnings are in the cluster's own Ray logs anyway);
``rafka --verbose`` leaves them on the terminal.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

LOG_FILE = "rafka-cli.log"
"""The log file's name, in the command's data directory."""

CLUSTER_LOGGER = "rafka.cli.ray"
"""The logger the cluster's published lines go to."""


def _handler(log_file: Path | None) -> logging.Handler:
    if log_file is None:
        return logging.NullHandler()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    return handler


def _log_published(data: dict[str, Any], ignore_prefix: bool = False) -> None:
    """Ray's ``print_to_stdstream``, writing to the log file instead."""
    logger = logging.getLogger(CLUSTER_LOGGER)
    for line in data.get("lines", ()):
        logger.warning("(%s) %s", data.get("pid", "ray"), line)


def divert_ray_output(log_file: Path | None) -> None:
    """Send Ray's logger and the lines the cluster publishes to this driver to ``log_file`` (or
    nowhere when it is None)."""
    import ray._private.worker as ray_worker  # imports Ray, whose logger is configured at import

    handler = _handler(log_file)
    ray_logger = logging.getLogger("ray")
    for existing in list(ray_logger.handlers):
        ray_logger.removeHandler(existing)
    ray_logger.addHandler(handler)
    ray_logger.propagate = False
    published = logging.getLogger(CLUSTER_LOGGER)
    published.addHandler(handler)
    published.setLevel(logging.INFO)
    published.propagate = False
    # The driver's error listener prints through this module-level function; with
    # log_to_driver=False (rafka's clients) it prints nothing else.
    ray_worker.print_to_stdstream = _log_published
