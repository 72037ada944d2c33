"""PySpark finds the ``rafka`` format by itself (the top-level ``pyspark_rafka`` module): a user's
script in the activated venv reads and writes with no ``register(spark)`` call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import ray

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.types import TopicPartition
from rafka.testing import user_env

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SCRIPT = """
import sys
from pyspark.sql import SparkSession

address, namespace, topic, copy = sys.argv[1:]
spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .getOrCreate()
)
options = {"rafka.ray.address": address, "rafka.namespace": namespace}
df = spark.read.format("rafka").options(**options).option("subscribe", topic).load()
writer = df.select("value").write.format("rafka").options(**options).mode("append")
writer.option("topic", copy).save()
print("copied", df.count())
spark.stop()
"""


def test_a_script_reads_and_writes_the_rafka_format_without_registering_it(
    cluster: LocalCluster, admin: Admin, topic_name: str, tmp_path: Path
) -> None:
    copy = f"{topic_name}-copy"
    admin.create_topic(topic_name, 2, 1)
    admin.create_topic(copy, 1, 1)
    with cluster.producer(acks="all") as producer:
        for i in range(25):
            producer.send(topic_name, f"v{i}".encode())
        producer.flush()
    address = ray.get_runtime_context().gcs_address
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, address, cluster.namespace, topic_name, copy],
        cwd=tmp_path,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "copied 25" in done.stdout
    with cluster.consumer(group_id=None, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(copy, 0)])
        seen: list[bytes] = []
        for _ in range(60):
            for records in consumer.poll(timeout_ms=500).values():
                seen.extend(r.value for r in records)
            if len(seen) >= 25:
                break
    assert sorted(seen) == sorted(f"v{i}".encode() for i in range(25))
