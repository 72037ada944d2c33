"""kcat (librdkafka's command-line client) against rafka's Kafka listeners: it lists the brokers
and topics, what it produces rafka's Consumer reads, and it consumes what rafka's Producer wrote.

When ``kcat`` is not on the PATH the module installs Debian's package with ``apt-get`` (as root);
it is skipped, saying why, only when that is impossible."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster

pytestmark = [pytest.mark.timeout(300)]

KCAT_TIMEOUT_S = 60
ReadTopic = Callable[[str, int, int], list[Any]]
"""The ``read_topic`` fixture of conftest.py."""
RECORDS = 40
PARTITIONS = 2
BASE_TIMESTAMP_MS = 1_700_000_000_000


APT_TIMEOUT_S = 300


@pytest.fixture(scope="module", autouse=True)
def kcat_installed() -> None:
    """kcat on the PATH, installed from Debian's package when it is missing."""
    if shutil.which("kcat") is not None:
        return
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        pytest.skip("kcat is not installed and apt-get cannot install it here (needs root)")

    def apt_get(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["apt-get", *args],
            capture_output=True,
            text=True,
            timeout=APT_TIMEOUT_S,
            check=False,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )

    installed = apt_get("install", "-y", "-q", "kcat")
    if installed.returncode != 0:  # the package lists may be missing on a fresh machine
        apt_get("update", "-q")
        installed = apt_get("install", "-y", "-q", "kcat")
    if installed.returncode != 0 or shutil.which("kcat") is None:
        pytest.skip(f"apt-get install kcat failed: {installed.stderr[-500:]}")


def kcat(bootstrap: str, *args: str, stdin: str | None = None) -> str:
    """Run kcat against ``bootstrap`` and return its standard output; fails on a non-zero exit
    or when it does not finish within KCAT_TIMEOUT_S."""
    path = shutil.which("kcat")
    assert path is not None
    done = subprocess.run(
        [path, "-b", bootstrap, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=KCAT_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"kcat {' '.join(args)} failed: {done.stderr}"
    return done.stdout


def test_kcat_lists_every_broker_and_the_topics_partitions(
    cluster: LocalCluster, admin: Admin, topic_name: str
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    bootstrap = cluster.bootstrap_servers()
    listing = json.loads(kcat(bootstrap, "-L", "-J"))
    assert {b["name"] for b in listing["brokers"]} == set(bootstrap.split(","))
    assert listing["controllerid"] in {b["id"] for b in listing["brokers"]}
    (topic,) = [t for t in listing["topics"] if t["topic"] == topic_name]
    assert sorted(p["partition"] for p in topic["partitions"]) == list(range(PARTITIONS))
    assert all(len(p["replicas"]) == 3 and p["leader"] >= 0 for p in topic["partitions"])


def test_lines_kcat_produces_are_read_by_rafkas_consumer(
    cluster: LocalCluster, admin: Admin, topic_name: str, read_topic: ReadTopic
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    lines = "".join(f"k{i}:line {i}\n" for i in range(RECORDS))
    kcat(
        cluster.bootstrap_servers(),
        "-P",
        "-t",
        topic_name,
        "-K",
        ":",
        "-H",
        "src=kcat",
        stdin=lines,
    )
    read = read_topic(topic_name, PARTITIONS, RECORDS)
    assert sorted((r.key, r.value, tuple(r.headers)) for r in read) == sorted(
        (f"k{i}".encode(), f"line {i}".encode(), (("src", b"kcat"),)) for i in range(RECORDS)
    )
    for partition in range(PARTITIONS):
        offsets = sorted(r.offset for r in read if r.partition == partition)
        assert offsets == list(range(len(offsets)))


def test_kcat_consumes_what_rafkas_producer_wrote(
    cluster: LocalCluster, admin: Admin, topic_name: str, read_topic: ReadTopic
) -> None:
    admin.create_topic(topic_name, PARTITIONS, 3)
    with cluster.producer(acks="all") as producer:
        for i in range(RECORDS):
            producer.send(
                topic_name,
                f"value {i}".encode(),
                key=f"k{i}".encode(),
                headers=[("n", str(i).encode())],
                timestamp_ms=BASE_TIMESTAMP_MS + i,
            )
    written = read_topic(topic_name, PARTITIONS, RECORDS)
    assert len(written) == RECORDS
    out = kcat(
        cluster.bootstrap_servers(),
        "-C",
        "-t",
        topic_name,
        "-e",
        "-q",
        "-o",
        "beginning",
        "-f",
        "%p\t%o\t%k\t%s\t%T\t%h\n",
    )
    printed = sorted(tuple(line.split("\t")) for line in out.splitlines())
    assert printed == sorted(
        (
            str(r.partition),
            str(r.offset),
            r.key.decode(),
            r.value.decode(),
            str(r.timestamp),
            ",".join(f"{k}={v.decode()}" for k, v in r.headers),
        )
        for r in written
    )
    assert {int(ts) for *_, ts, _ in printed} == {BASE_TIMESTAMP_MS + i for i in range(RECORDS)}
