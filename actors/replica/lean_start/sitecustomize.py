"""Run at interpreter start in a replica worker (its PYTHONPATH names this folder, see spawn.py).

Ray's serialization set-up imports pyarrow (which brings numpy) and pydantic in every worker
whenever they are installed, about 15 MB of private memory per process; a replica never uses them.
Marking them absent before Ray starts makes those imports fail as if the packages were not
installed, which Ray handles. Nothing else is changed.
"""

import sys

for _name in ("pyarrow", "pydantic"):
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]
