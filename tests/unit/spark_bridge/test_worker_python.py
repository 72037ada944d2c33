"""Which interpreter Spark's Python workers run (rafka.spark_bridge.worker_python): the user's
choice if they made one, else the driver's own, never whatever ``python3`` is first on PATH."""

from __future__ import annotations

from rafka.spark_bridge import worker_python

DRIVER = "/home/me/rafka/.venv/bin/python"


def test_without_a_choice_the_workers_run_the_drivers_interpreter() -> None:
    assert worker_python(None, None, DRIVER) == DRIVER


def test_pyspark_python_wins_over_everything() -> None:
    assert (
        worker_python("/opt/py/bin/python", "/usr/bin/python3.12", DRIVER) == "/opt/py/bin/python"
    )


def test_spark_pyspark_python_is_used_when_the_environment_names_none() -> None:
    assert worker_python(None, "/usr/bin/python3.12", DRIVER) == "/usr/bin/python3.12"


def test_an_empty_pyspark_python_counts_as_unset() -> None:
    assert worker_python("", None, DRIVER) == DRIVER
