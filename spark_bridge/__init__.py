"""The Spark bridge: a PySpark data source named ``rafka``, like Spark's Kafka source and sink.

Register it once per SparkSession, then use Spark's Kafka options::

    from rafka.spark_bridge import register
    register(spark)
    df = (spark.read.format("rafka")
          .option("rafka.ray.address", "127.0.0.1:6379").option("rafka.namespace", "rafka")
          .option("subscribe", "events").load())
    df.selectExpr("key", "upper(cast(value as string)) as value").write.format("rafka") \\
        .option("topic", "events-upper").mode("append").save()

Reading (batch and streaming) yields Spark's Kafka schema (``key``, ``value``, ``topic``,
``partition``, ``offset``, ``timestamp``, ``timestampType`` and, with ``includeHeaders``,
``headers``); writing takes the same columns. Spark's Python workers reach the cluster through Ray,
once per worker process, on first use (never at import: PySpark forks its workers). See ``options``
for every option.

May import ``rafka.clients``, ``rafka.protocol`` and ``rafka.actors.names``. Writers use the
clients' producer; a reader task's ``range_reader`` sends its fetches to the leader replica itself.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["register"]


def worker_python(pyspark_python: str | None, conf_python: str | None, driver: str) -> str:
    """The interpreter Spark's Python workers run: ``PYSPARK_PYTHON``, else the session's
    ``spark.pyspark.python``, else the driver's own (Spark's default, ``python3``, is whatever
    comes first on PATH, which may not have rafka installed)."""
    return pyspark_python or conf_python or driver


def register(spark: Any) -> None:
    """Register the ``rafka`` format with a SparkSession (Spark keeps it for the session's life).

    The data source's planner and task workers start the interpreter the session's context names,
    so it is set here to the driver's unless the user chose one.
    """
    from rafka.spark_bridge.source import RafkaDataSource

    context = spark.sparkContext
    context.pythonExec = worker_python(
        os.environ.get("PYSPARK_PYTHON"),
        context.getConf().get("spark.pyspark.python"),
        sys.executable,
    )
    spark.dataSource.register(RafkaDataSource)
