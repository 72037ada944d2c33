"""The examples run as a user runs them and leave no litter: afterwards the temp folder and the
repository root hold what they held before, unless ``--keep``, which keeps the run's directory and
says where it is.

Each example runs with ``.venv/bin/python`` from the repository root, in an environment without the
suite's variables, with ``TMPDIR`` pointing at a fresh folder that is compared before and after.
Ray keeps its own session logs under its temp folder (``RAY_TMPDIR``), which is a separate one here:
they are Ray's, as for any Ray program.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
PYTHON = REPO / ".venv" / "bin" / "python"
NOT_A_USERS = ("RAY_", "PYSPARK_", "SPARK_", "PYTEST_", "VIRTUAL_ENV", "PYTHONPATH")


@dataclass
class Run:
    """Where an example runs: its temp folder and environment."""

    temp: Path
    env: dict[str, str]

    def example(self, *argv: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
        """Run ``examples/<argv>`` from the repository root; fail on a non-zero exit."""
        result = subprocess.run(
            [str(PYTHON), *argv],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        assert result.returncode == 0, f"{argv}\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
        return result


@pytest.fixture
def run() -> Iterator[Run]:
    """A fresh temp folder (short paths: Ray's socket paths must stay under 108 bytes) and the
    repository root, each checked to hold after the test exactly what it held before."""
    base = Path(tempfile.mkdtemp(prefix="rfx-", dir="/tmp"))
    temp = base / "tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_A_USERS)}
    env.update(TMPDIR=str(temp), RAY_TMPDIR=str(base))
    root_before = sorted(os.listdir(REPO))
    try:
        yield Run(temp, env)
        assert sorted(os.listdir(temp)) == []
        assert sorted(os.listdir(REPO)) == root_before
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.timeout(900)
def test_make_demo_removes_its_cluster_data(run: Run) -> None:
    result = run.example("examples/demo.py", "--records", "20000")
    assert "Spark read 20,000 records" in result.stdout


@pytest.mark.timeout(300)
def test_storage_demo_removes_its_log_unless_kept(run: Run) -> None:
    result = run.example("examples/storage_demo.py", "--records", "200000")
    assert "the log now holds 200,000 records" in result.stdout
    assert os.listdir(run.temp) == []
    kept = run.example("examples/storage_demo.py", "--records", "200000", "--keep")
    where = Path(kept.stdout.strip().splitlines()[-1].removeprefix("kept the log in ").split()[0])
    assert where.parent == run.temp and (where / "demo-0").is_dir()
    shutil.rmtree(where)


@pytest.mark.timeout(900)
def test_spark_streaming_job_keeps_its_checkpoint_out_of_the_repository(run: Run) -> None:
    result = run.example("examples/spark_streaming_job.py", "--local", "--seconds", "20")
    assert "running; checkpoint" in result.stdout


@pytest.mark.timeout(900)
def test_spark_batch_job_writes_nothing_into_the_repository(run: Run) -> None:
    result = run.example("examples/spark_batch_job.py", "--local", "--sample", "1000")
    assert "versions" in result.stdout


@pytest.mark.timeout(600)
def test_the_exactly_once_example_writes_each_entry_once_and_hides_the_aborted_one(
    run: Run,
) -> None:
    result = run.example("examples/exactly_once.py")
    assert "transformed 100 payments in transactions" in result.stdout
    assert "a read_committed reader sees 100 ledger entries, 100 distinct" in result.stdout
    assert "the aborted entry is visible: False" in result.stdout
    assert "committed offsets covering 100 payments" in result.stdout
