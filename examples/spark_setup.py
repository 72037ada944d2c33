"""What both Spark examples share: the cluster (``--local`` starts one) and a SparkSession.

Spark's Python workers reach the cluster through Ray with the data source options built
here (``rafka.ray.address``, ``rafka.namespace``). On a Ray cluster in token mode, pass
the token to the executors as Spark configuration:
``spark.executorEnv.RAY_AUTH_MODE=token`` and ``spark.executorEnv.RAY_AUTH_TOKEN=<token>``
(``--conf`` with spark-submit, or ``--ray-token`` here). With ``--local`` the cluster's data goes to
a temporary directory, removed at the end unless ``--keep`` (or ``--data-dir``) is given.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import scratch


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """Cluster options: ``--local`` (with ``--data-dir``, ``--keep``) or ``--ray-address``,
    ``--namespace`` and ``--ray-token``."""
    parser.add_argument(
        "--local", action="store_true", help="start a 3-broker LocalCluster inside this script"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="LocalCluster data (with --local; default: a temporary directory)",
    )
    scratch.add_keep_argument(parser)
    parser.add_argument(
        "--ray-address",
        default=os.environ.get("RAY_ADDRESS"),
        help="Ray cluster address (default RAY_ADDRESS)",
    )
    parser.add_argument("--namespace", default="rafka", help="the rafka cluster's Ray namespace")
    parser.add_argument(
        "--ray-token",
        default=os.environ.get("RAY_AUTH_TOKEN"),
        help="Ray auth token for the executors",
    )


@contextlib.contextmanager
def cluster(args: argparse.Namespace) -> Iterator[dict[str, str]]:
    """Yield the data source options; with ``--local``, run a LocalCluster meanwhile."""
    import ray

    if not args.local:
        yield {
            "rafka.namespace": args.namespace,
            **({"rafka.ray.address": args.ray_address} if args.ray_address else {}),
        }
        return
    from rafka.cluster.local_cluster import LocalCluster

    with (
        scratch.directory(
            args.data_dir, args.keep, "rafka-spark-example-", "the cluster's data"
        ) as data_dir,
        LocalCluster(brokers=3, data_dir=data_dir, namespace=args.namespace),
    ):
        yield {
            "rafka.namespace": args.namespace,
            "rafka.ray.address": ray.get_runtime_context().gcs_address,
        }


def spark_session(app: str, ray_token: str | None = None) -> Any:
    """A local[2] SparkSession with the ``rafka`` format registered (loopback only, UTC); its Python
    workers run this interpreter unless PYSPARK_PYTHON names another (``register`` sees to it)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from rafka.spark_bridge import register

    builder = (
        SparkSession.builder.master(os.environ.get("SPARK_MASTER", "local[2]"))
        .appName(app)
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
    )
    if ray_token:
        builder = builder.config("spark.executorEnv.RAY_AUTH_MODE", "token").config(
            "spark.executorEnv.RAY_AUTH_TOKEN", ray_token
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


def ensure_topics(options: dict[str, str], *topics: str, partitions: int = 3) -> None:
    """Create the topics that do not exist yet, with replication factor 1."""
    from rafka.clients.admin import Admin
    from rafka.protocol.errors import TopicAlreadyExistsError

    admin = Admin(
        namespace=options["rafka.namespace"], ray_address=options.get("rafka.ray.address")
    )
    for topic in topics:
        with contextlib.suppress(TopicAlreadyExistsError):
            admin.create_topic(topic, num_partitions=partitions, replication_factor=1)
