"""Ray Data to Spark through rafka: rows ``Dataset.write_kafka`` sends to a broker's Kafka
listener are read back by the ``rafka`` Spark source."""

from __future__ import annotations

import json
from typing import Any

import pytest
import ray

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
# Ray Data needs the ray[data] extra (pandas, numpy, fsspec) beside ray itself.
pytest.importorskip("pandas", reason="ray.data needs the ray[data] extra")


def test_spark_source_reads_the_rows_ray_data_wrote_over_the_kafka_protocol(
    spark: Any, rafka_options: dict[str, str], cluster: LocalCluster, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, num_partitions=2, replication_factor=3)
    items = [{"id": i, "name": f"row-{i}"} for i in range(40)]
    ray.data.from_items(items).write_kafka(
        topic_name, cluster.bootstrap_servers(), key_field="id", producer_config={"acks": "all"}
    )
    rows = spark.read.format("rafka").options(**rafka_options, subscribe=topic_name).load()
    got = rows.select("key", "value", "partition", "offset").collect()
    assert sorted((int(r["key"]), json.loads(r["value"])) for r in got) == [
        (item["id"], item) for item in items
    ]
    for partition in range(2):
        offsets = sorted(r["offset"] for r in got if r["partition"] == partition)
        assert offsets == list(range(len(offsets)))
