"""Run at interpreter start in a replica worker (its PYTHONPATH names this folder, see spawn.py).

Ray imports, in every worker, packages a replica never uses: pyarrow (which brings numpy) and
pydantic for its serialization set-up, wcwidth for its table printer, requests (for TPU discovery),
jsonschema (runtime_env plugins) and yaml (node labels, conda). Before Ray starts, the optional
ones are marked absent and the others replaced by stand-ins that import the real module on first
use: an idle replica's private memory drops from 64 MB to 40 MB (bench/README.md, "### Scale").
Imported under any other name (as tests do), the module only defines its helpers.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types

# Ray catches the ImportError for these and goes on as if they were not installed.
ABSENT = ("pyarrow", "pydantic", "wcwidth")
# Ray imports these at module level, so they cannot be absent, but calls them only on paths a
# replica does not take; together they are 6.9 MB of a replica's private memory.
DEFERRED = ("requests", "jsonschema", "yaml")

_unplace_lock = threading.Lock()


class DeferredModule(types.ModuleType):
    """Stands in for top-level module ``name`` in ``sys.modules``: ``import name`` binds the
    stand-in without running the module; using any attribute of it imports the real module and
    returns the real attribute."""

    def __getattr__(self, attribute: str) -> object:
        name = self.__name__
        # Only the first user takes the stand-in out, under the lock; concurrent first users then
        # meet in the import system's per-module lock, so the real module runs once.
        with _unplace_lock:
            if sys.modules.get(name) is self:
                del sys.modules[name]
        return getattr(importlib.import_module(name), attribute)


def defer(name: str) -> None:
    """Put a ``DeferredModule`` for top-level module ``name`` in ``sys.modules`` unless the module
    is imported already."""
    sys.modules.setdefault(name, DeferredModule(name))


def keep_out() -> None:
    """Mark ``ABSENT`` modules absent and defer ``DEFERRED`` ones, before anything imports them."""
    for name in ABSENT:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    for name in DEFERRED:
        defer(name)


if __name__ == "sitecustomize":
    keep_out()
