"""A real local[2] SparkSession for the Spark bridge tests, over the session's rafka cluster.

The session starts after the ``cluster`` fixture, so Ray is initialised before the JVM is launched
(fork+exec), and Spark's Python workers inherit this process's environment (RAY_TMPDIR included).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import ray

from rafka.cluster.local_cluster import LocalCluster


@pytest.fixture(scope="package")
def spark(cluster: LocalCluster) -> Iterator[Any]:
    """A local[2] SparkSession with the ``rafka`` format registered."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from rafka.spark_bridge import register

    session = (
        SparkSession.builder.master("local[2]")
        .appName("rafka-spark-tests")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stopTimeout", "60s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def rafka_options(cluster: LocalCluster) -> dict[str, str]:
    """Data source options that point Spark's Python workers at the session's cluster."""
    return {
        "rafka.ray.address": ray.get_runtime_context().gcs_address,
        "rafka.namespace": cluster.namespace,
    }


def wait_until(condition: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Poll ``condition`` until it is truthy; fail the test naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(scope="session")
def eventually() -> Callable[..., Any]:
    """``wait_until`` as a fixture (test modules cannot import a conftest under importlib mode)."""
    return wait_until
