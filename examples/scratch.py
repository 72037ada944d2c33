"""Where the examples write: a temporary directory removed on exit unless ``--keep`` is given.

A directory the user names (``--data-dir``, ``--checkpoint``) is theirs and always stays; a default
one is made under the temp folder and removed when the example ends, so a run leaves the temp folder
and the working directory as it found them. ``--keep`` keeps it and says where it is.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def add_keep_argument(parser: argparse.ArgumentParser) -> None:
    """``--keep``: leave the example's temporary directories in place and print where they are."""
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep what this run wrote (default: a temporary directory, removed at the end)",
    )


@contextlib.contextmanager
def directory(given: Path | None, keep: bool, prefix: str, what: str) -> Iterator[Path]:
    """``given`` as it is, or a fresh temporary directory removed on exit unless ``keep``."""
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        yield given
        print(f"{what} stays in {given.resolve()}")
        return
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        if keep:
            print(f"kept {what} in {path} (--keep)")
        else:
            shutil.rmtree(path, ignore_errors=True)
