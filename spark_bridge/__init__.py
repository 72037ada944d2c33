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

from typing import Any

__all__ = ["register"]


def register(spark: Any) -> None:
    """Register the ``rafka`` format with a SparkSession (Spark keeps it for the session's life)."""
    from rafka.spark_bridge.source import RafkaDataSource

    spark.dataSource.register(RafkaDataSource)
