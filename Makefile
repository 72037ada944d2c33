# The two commands of the README: `make demo` and `make test` (plus `make bench`).
# Each creates .venv if missing and installs the project once; later runs reuse it.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.rafka-installed

.PHONY: setup demo test bench clean

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

bench: setup
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
