"""The README runs as written: its quickstart blocks, in its order, in the environment a user has.

Every fenced block that the README marks with ``<!-- readme-test: STEP -->`` is one step, run with
the exact text the README shows: shell blocks in bash with the project's venv activated, Python
blocks as scripts run by ``.venv/bin/python`` with the venv not activated (so ``python3`` on PATH is
not the venv's). Each runs from a scratch working directory (``--data-dir rafka-data`` lands
there), in an environment without the variables the rest of the suite sets (``RAY_*``,
``PYSPARK_*``, ``SPARK_*``). Before the first client after ``rafka up``, the address rafka hands Ray
must be a loopback one; the example notebooks run against the same cluster before the README's
``rafka down``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
VENV = REPO / ".venv"
MARKED = re.compile(
    r"<!-- readme-test: (?P<step>[\w-]+) -->\n```(?P<lang>bash|python)\n(?P<code>.*?)\n```\n", re.S
)
FENCE = re.compile(r"^```(bash|python)$", re.M)
NOTEBOOKS = ("examples/notebook.ipynb", "examples/spark_notebook.ipynb")
# What the rest of the suite (and a developer's shell) may set that a new user does not have.
NOT_A_USERS = ("RAY_", "PYSPARK_", "SPARK_", "PYTEST_", "VIRTUAL_ENV", "PYTHONPATH")
STEP_TIMEOUT_S = 600
_passed: set[str] = set()  # steps that ran green, so teardown knows whether `rafka down` ran
RUN_NOTEBOOK = """
import sys
import nbclient
import nbformat

notebook = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(
    notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": "."}}
).execute()
"""


@dataclass(frozen=True)
class Step:
    """One thing the test runs: a README block (``lang`` bash or python) or an example notebook."""

    name: str
    lang: str
    code: str


def readme_blocks(text: str) -> list[Step]:
    """The README's marked blocks, in the README's order."""
    return [Step(m["step"], m["lang"], m["code"]) for m in MARKED.finditer(text)]


def steps() -> list[Step]:
    """The README's blocks, with the example notebooks run just before the final ``down``."""
    blocks = readme_blocks(README.read_text())
    notebooks = [Step(f"examples-{Path(path).stem}", "notebook", path) for path in NOTEBOOKS]
    return (
        [b for b in blocks if b.name != "down"]
        + notebooks
        + [b for b in blocks if b.name == "down"]
    )


def user_env(activated: bool) -> dict[str, str]:
    """This process's environment less what a user would not have; ``activated`` as after
    ``source .venv/bin/activate``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_A_USERS)}
    bin_dir = str(VENV / "bin")
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bin_dir]
    if activated:
        env["VIRTUAL_ENV"] = str(VENV)
        path.insert(0, bin_dir)
    env["PATH"] = os.pathsep.join(path)
    return env


def command(step: Step) -> tuple[list[str], dict[str, str]]:
    """How a user runs the step: shell blocks in the activated venv, the rest with its python."""
    python = str(VENV / "bin" / "python")
    if step.lang == "bash":
        # The setup block activates the venv itself; the later ones run in the shell it left.
        activate = "" if step.name == "setup" else f"source {VENV / 'bin' / 'activate'}\n"
        return ["bash", "-c", f"set -eo pipefail\n{activate}{step.code}\n"], user_env(False)
    if step.lang == "python":
        return [python, "-c", step.code], user_env(activated=False)
    return [python, "-c", RUN_NOTEBOOK, str(REPO / step.code)], user_env(activated=False)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user's working directory; a cluster the steps left running is stopped after."""
    directory = tmp_path_factory.mktemp("readme-user")
    yield directory
    if "down" not in _passed and (directory / "rafka-data" / "rafka-cluster.json").exists():
        subprocess.run(
            [str(VENV / "bin" / "rafka"), "down", "--data-dir", "rafka-data"],
            cwd=directory,
            env=user_env(activated=False),
            capture_output=True,
            timeout=STEP_TIMEOUT_S,
        )


def loopback_check(workdir: Path) -> None:
    """The address a client process hands Ray for the cluster ``rafka up`` started is loopback."""
    state = json.loads((workdir / "rafka-data" / "rafka-cluster.json").read_text())
    probe = (
        "from rafka.clients.ray_address import is_loopback, ray_address, split_address\n"
        "address = ray_address('auto')\n"
        "print(address, is_loopback(split_address(address)[0]))\n"
    )
    found = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", probe],
        cwd=workdir,
        env=user_env(activated=False),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.returncode == 0, found.stderr
    address, loopback = found.stdout.split()
    assert loopback == "True", f"rafka hands Ray {address}, not a loopback address"
    assert address == state["ray_address"], (address, state)


def test_every_quickstart_block_is_marked_to_run() -> None:
    text = README.read_text()
    quickstart = text[text.index("## Quickstart\n") : text.index("\n## Configuration\n")]
    marked = readme_blocks(quickstart)
    assert len(FENCE.findall(quickstart)) == len(marked)
    names = [b.name for b in marked]
    assert names[0] == "setup" and names[-1] == "down" and len(set(names)) == len(names)
    assert names.index("up") < min(names.index(n) for n in ("kafka-python", "notebook", "spark"))


@pytest.mark.timeout(STEP_TIMEOUT_S + 60)
@pytest.mark.parametrize("step", steps(), ids=lambda step: step.name)
def test_readme_step_runs_as_written(step: Step, workdir: Path) -> None:
    if step.name == "cli":
        loopback_check(workdir)  # before any client of the cluster `rafka up` started
    argv, env = command(step)
    result = subprocess.run(
        argv,
        cwd=REPO if step.name == "setup" else workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
    )
    assert result.returncode == 0, (
        f"step {step.name} exited {result.returncode}\n--- stdout\n{result.stdout[-3000:]}"
        f"\n--- stderr\n{result.stderr[-5000:]}"
    )
    if step.name == "cli":
        assert "k1\thello" in result.stdout and "billing" in result.stdout
    if step.name == "spark":
        assert result.stdout.split()[-1] == "100002"  # 2 records + 100,000 from `rafka perf`
    if step.name == "down":
        assert "stopped broker 0" in result.stdout
    _passed.add(step.name)
