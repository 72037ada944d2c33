# The two commands of the README: `make demo` and `make test` (plus `make bench`).
# Each creates .venv if missing and installs the project once; later runs reuse it.
# `make lint` (ruff and mypy) and `make unit` (the unit tests alone) are the quick checks.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.rafka-installed
BENCH_STAMP := $(VENV)/.rafka-bench-installed

.PHONY: setup demo test unit lint bench bench-setup bench-recovery clean

setup: $(STAMP)

$(STAMP): pyproject.toml pyspark_rafka.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@# PySpark lists pyspark_* modules with pkgutil, which cannot see an editable install's hook.
	cp pyspark_rafka.py "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
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

bench: bench-setup
	$(PY) bench/run.py

# The bench extra (.[bench]) and a redis-server for the Redis Streams comparison: Debian's, with
# apt-get, when none is on PATH. If it cannot be installed the bench still runs and says why.
bench-setup: $(BENCH_STAMP)
	@command -v redis-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	    echo "bench-setup: redis-server is not on PATH and apt-get cannot install it here (needs root on Debian); the Redis rows will show -"; \
	  elif ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }; then \
	    echo "bench-setup: apt-get install redis-server failed; the Redis rows will show -"; \
	  fi; }

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	@touch $(BENCH_STAMP)

bench-recovery: setup
	$(PY) bench/recovery.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
