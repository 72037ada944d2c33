# The two commands of the README: `make demo` and `make test` (plus `make bench`).
# Each creates .venv if missing and installs the project once; later runs reuse it.
# `make lint` (ruff and mypy) and `make unit` (the unit tests alone) are the quick checks.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.rafka-installed

.PHONY: setup demo test unit lint bench bench-recovery clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

demo: setup
	$(PY) examples/demo.py

test: setup
	$(PY) -m pytest

unit: setup
	$(PY) -m pytest tests/unit -q

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) .ci/typecheck.py

bench: setup
	$(PY) bench/run.py

bench-recovery: setup
	$(PY) bench/recovery.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
