"""Tests for the replica workers' start-up hook (actors/replica/lean_start/sitecustomize.py): a
deferred module runs only when used, once, and Ray still imports with the hook in place."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rafka.actors.replica.lean_start import sitecustomize
from rafka.actors.replica.lean_start.sitecustomize import DeferredModule, defer

# A module body that records each run of it in a file beside it.
COUNTING_BODY = (
    "import time\n"
    "from pathlib import Path\n"
    "with Path(__file__).with_suffix('.runs').open('a') as runs:\n"
    "    runs.write('x')\n"
    "time.sleep(0.05)\n"
    "VALUE = object()\n"
)


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path``; modules imported from it are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _runs(path: Path) -> int:
    runs = path.with_suffix(".runs")
    return len(runs.read_text()) if runs.exists() else 0


def test_import_binds_the_stand_in_and_first_use_runs_the_module_once(module_dir: Path) -> None:
    source = module_dir / "lean_probe_a.py"
    source.write_text(COUNTING_BODY)
    defer("lean_probe_a")

    import lean_probe_a  # type: ignore[import-not-found]

    assert isinstance(lean_probe_a, DeferredModule)
    assert _runs(source) == 0
    value = lean_probe_a.VALUE
    assert _runs(source) == 1
    assert sys.modules["lean_probe_a"].VALUE is value
    assert not isinstance(sys.modules["lean_probe_a"], DeferredModule)
    assert lean_probe_a.VALUE is value
    assert _runs(source) == 1


def test_concurrent_first_uses_run_the_module_once(module_dir: Path) -> None:
    source = module_dir / "lean_probe_b.py"
    source.write_text(COUNTING_BODY)
    defer("lean_probe_b")
    stand_in = sys.modules["lean_probe_b"]
    start = threading.Barrier(8)
    seen: list[object] = []

    def use() -> None:
        start.wait()
        seen.append(stand_in.VALUE)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _runs(source) == 1
    assert len(seen) == 8 and all(value is seen[0] for value in seen)


def test_submodules_of_a_deferred_package_import(module_dir: Path) -> None:
    package = module_dir / "lean_probe_c"
    package.mkdir()
    (package / "__init__.py").write_text("NAME = 'c'\n")
    (package / "sub.py").write_text("NAME = 'sub'\n")
    defer("lean_probe_c")

    import lean_probe_c.sub  # type: ignore[import-not-found]
    from lean_probe_c import sub  # type: ignore[import-not-found]

    assert lean_probe_c.NAME == "c"
    assert lean_probe_c.sub.NAME == sub.NAME == "sub"


def test_defer_leaves_an_imported_module_alone(module_dir: Path) -> None:
    (module_dir / "lean_probe_d.py").write_text("VALUE = 1\n")
    import lean_probe_d  # type: ignore[import-not-found]

    defer("lean_probe_d")
    assert sys.modules["lean_probe_d"] is lean_probe_d


def test_ray_imports_with_the_hook_and_keeps_the_modules_out() -> None:
    """Ray imports the deferred modules at module level: a Ray upgrade that used one at import
    time would load it again here (or fail), and a replica worker with it."""
    lean_start = Path(sitecustomize.__file__).parent
    python_path = os.pathsep.join(filter(None, [str(lean_start), os.environ.get("PYTHONPATH")]))
    probe = (
        "import sys, ray, ray._private.accelerators.tpu as tpu\n"
        "print(sorted(n for n in ('pyarrow', 'pydantic', 'wcwidth') if sys.modules[n] is None))\n"
        "print(sorted(n for n in ('requests', 'jsonschema', 'yaml')\n"
        "             if type(sys.modules[n]).__name__ == 'DeferredModule'))\n"
        "print(tpu.requests.codes.ok, type(sys.modules['requests']).__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": python_path},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert result.stdout.splitlines() == [
        "['pyarrow', 'pydantic', 'wcwidth']",
        "['jsonschema', 'requests', 'yaml']",
        "200 module",
    ]
