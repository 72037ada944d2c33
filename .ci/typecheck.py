"""Run mypy over rafka as it is installed, with messages that name the real files.

The package ``rafka.X`` lives in the folder ``X/`` ([tool.setuptools.package-dir] in
pyproject.toml). The editable install maps those folders with an import hook, which mypy does not
run, so this script mirrors the mapping as a tree of symbolic links under ``build/mypy/rafka``
(rebuilt on every run, so a new module or package is checked at once), runs mypy with the
[tool.mypy] settings of pyproject.toml, and rewrites each ``build/mypy/...`` path in its output to
the file the link points at. Extra arguments are passed on to mypy.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from mypy import api

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy depends on tomli before Python 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
TREE = Path("build/mypy")
TREE_PATH = re.compile(r"^build/mypy/\S+?\.pyi?(?=:)", re.MULTILINE)


def package_dirs() -> dict[str, Path]:
    """Map each ``rafka`` package mapped in pyproject.toml to its folder, ``rafka`` first."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        mapping = tomllib.load(file)["tool"]["setuptools"]["package-dir"]
    return {name: Path(folder) for name, folder in sorted(mapping.items())}


def build_tree() -> None:
    """Link every mapped folder into ``build/mypy``; the root package's files are linked one by one
    because its sub-packages must appear inside it."""
    shutil.rmtree(ROOT / TREE, ignore_errors=True)
    for name, folder in package_dirs().items():
        target = ROOT / TREE / Path(*name.split("."))
        if name == "rafka":
            target.mkdir(parents=True)
            for source in sorted((ROOT / folder).glob("*.py")):
                (target / source.name).symlink_to(os.path.relpath(source, target))
        else:
            target.symlink_to(os.path.relpath(ROOT / folder, target.parent), True)


def real_path(match: re.Match[str]) -> str:
    """The repository-relative path of the file behind a link in the tree."""
    return os.path.relpath(os.path.realpath(ROOT / match.group(0)), ROOT)


def main() -> int:
    """Build the link tree, run mypy from the repository root and print its report."""
    os.chdir(ROOT)
    build_tree()
    stdout, stderr, status = api.run(sys.argv[1:])
    sys.stdout.write(TREE_PATH.sub(real_path, stdout))
    sys.stderr.write(TREE_PATH.sub(real_path, stderr))
    return status


if __name__ == "__main__":
    sys.exit(main())
