"""PySpark's entry point for the ``rafka`` format, found without ``register(spark)``.

PySpark 4 looks for Python data sources once per JVM, on the first data source call: a Python
worker imports every top-level module named ``pyspark_*`` that ``pkgutil.iter_modules`` lists and
registers each one's ``DefaultSource`` under its ``name()``. That worker, and the planner and task
workers of a source found this way, run ``PYSPARK_PYTHON`` (or ``PYSPARK_DRIVER_PYTHON``) from the
environment the JVM started with, else ``python3`` on PATH: that interpreter must have rafka
installed (an activated venv, or ``PYSPARK_PYTHON`` set).

A wheel installs this module into site-packages. ``pkgutil`` cannot see modules served by an
editable install's import hook, so ``make setup`` copies it there too.
"""

from __future__ import annotations

from rafka.spark_bridge.source import RafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
