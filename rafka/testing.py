"""Helpers for tests of code that uses rafka: waiting on a cluster condition with a deadline, and
the environment of a user's shell for tests that run commands as a user does.

A cluster changes asynchronously (elections, rebalances, replication),
so a test waits for the state it expects instead of sleeping a fixed
time; the failure names what never happened and the last error.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

POLL_INTERVAL_S = 0.1
# What a user's login shell has; the suite's RAY_*, PYSPARK_*, PYTEST_* and the like are left out.
USER_VARIABLES = ("HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "JAVA_HOME")


def user_env(venv_bin: Path | None = None) -> dict[str, str]:
    """A user's shell with the venv activated (``venv_bin``, by default this interpreter's folder,
    first on PATH): nothing of what the test suite or Ray set."""
    bin_dir = venv_bin or Path(sys.executable).parent
    kept = {name: os.environ[name] for name in USER_VARIABLES if name in os.environ}
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    return {**kept, "VIRTUAL_ENV": str(bin_dir.parent), "PATH": path}


def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Call ``predicate`` until it returns something other than None or False, and return that.

    0 and empty values count as answers (0 is a broker id). Exceptions
    count as "not yet", since the cluster may be mid-failover; the last
    one is named in the AssertionError raised after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except Exception as exc:
            value, last = None, exc
        if value is not None and value is not False:
            return value
        time.sleep(POLL_INTERVAL_S)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last error: {last!r})")


def serving_replica(
    topic: str, partition: int, broker_id: int, namespace: str, timeout_s: float = 30.0
) -> Any:
    """The replica actor of ``topic``-``partition`` on ``broker_id`` once it has taken a role.

    Metadata names a partition's replicas as soon as the controller decided them, a moment before
    each broker has started the replica actor and applied its LeaderAndIsr; a test that talks to the
    actor directly waits for that instead of racing it.
    """
    import ray  # here, not at the top: waiting on conditions must not need Ray

    from rafka.actors.names import replica_actor_name

    def ready() -> Any:
        replica = ray.get_actor(
            replica_actor_name(topic, partition, broker_id), namespace=namespace
        )
        return replica if ray.get(replica.ping.remote(), timeout=5) != "none" else None

    return wait_until(
        ready, timeout_s, f"replica {topic}-{partition} on broker {broker_id} to take a role"
    )


def listener_address(admin: Any, listener: str) -> str:
    """``host:port`` of the only broker's listener called ``listener``, from ``admin`` (a
    ``rafka.clients.admin.Admin``)."""
    (broker,) = admin.describe_cluster().brokers
    address = broker.listener(listener)
    assert address is not None, broker.endpoints
    return f"{address[0]}:{address[1]}"


def confluent_round_trip(client: dict[str, Any], topic: str, count: int) -> list[bytes]:
    """Produce ``count`` values (``c0``, ``c1``, ...) to partition 0 of ``topic`` with
    confluent-kafka's settings ``client`` and read them back; every delivery must succeed."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    delivered: list[Any] = []
    producer = Producer({**client, "acks": "all"})
    for i in range(count):
        producer.produce(topic, f"c{i}".encode(), on_delivery=lambda e, m: delivered.append(e))
    assert producer.flush(60) == 0
    assert delivered == [None] * count, delivered
    consumer = Consumer({**client, "group.id": "round-trip", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            values.append(message.value() or b"")
    consumer.close()
    return values
