"""Redis Streams side by side: what a Python user would pick instead of rafka, on the same data.

A local redis-server (127.0.0.1, a free port, a temporary directory, AOF with ``appendfsync
everysec`` and no RDB snapshots) takes the records as one stream: XADD pipelined from redis-py,
``PIPELINE`` commands per round trip; they are read back with XRANGE and with XREAD, ``READ_COUNT``
entries per call, each read touching every value once as rafka's consumer bench does. Then a
3-broker rafka cluster (6 partitions) takes the same records from rafka's ``Producer``, with RF 1
and acks=1 (one copy acknowledged by its leader before it reaches the disk, which is what Redis's
single node with AOF everysec gives), and with RF 3 and acks=all (stricter than Redis) for honesty,
and one ``Consumer`` reads the RF 1 topic back with ``poll``. Redis runs first and is stopped before
the cluster starts, so neither side's processes take CPU from the other's measurement. Both
clients run in this process, with the heap it had before them frozen (see ``frozen_heap``).

When redis-server cannot be found or started (or redis-py is missing), one line says why, and the
table still shows rafka's figures with "-" in the Redis column.

Run it alone: ``.venv/bin/python bench/redis_streams.py --records 1000000``.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from cluster import PRODUCER
from rafka.cli.perf import consumer_perf, producer_perf
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import free_loopback_port
from rafka.testing import wait_until

NAMESPACE = "rafka-bench-redis"
HEADER = ("what", "Redis records/s", "rafka records/s", "rafka/Redis", "target")
VALUE = b"x" * 100
FIELD = b"v"
STREAM = "bench"
PIPELINE = 1_000
READ_COUNT = 10_000
PRODUCE_TARGET = 3.0
READ_TARGET = 5.0
START_TIMEOUT_S = 15.0


class RedisUnavailable(Exception):
    """redis-server or redis-py could not be used; the message says why."""


@dataclass(frozen=True)
class RedisFigures:
    """records/s of the Redis side."""

    xadd: float
    xrange: float
    xread: float


@dataclass(frozen=True)
class RafkaFigures:
    """records/s of the rafka side."""

    produce_rf1: float
    produce_rf3_all: float
    consume: float


def redis_config(port: int, directory: Path) -> str:
    """The redis.conf of the benchmark's server.

    AOF with fsync once a second is Redis's durable setting that costs least; RDB snapshots are off
    so a background save cannot fork in the middle of a measurement (the AOF is the persistence
    measured). Everything else keeps Redis's defaults.
    """
    return (
        f"bind 127.0.0.1\n"
        f"port {port}\n"
        f'dir "{directory}"\n'
        f'logfile "{directory / "redis.log"}"\n'
        "daemonize no\n"
        "appendonly yes\n"
        "appendfsync everysec\n"
        'save ""\n'
    )


def parser_name() -> str:
    """The reply parser redis-py uses: hiredis's C parser when installed, else its Python one."""
    try:
        from redis.utils import HIREDIS_AVAILABLE
    except ImportError:
        return "none (redis-py missing)"
    return "hiredis" if HIREDIS_AVAILABLE else "Python"


def ratio(rafka: float, redis: float | None) -> str:
    """rafka's figure over Redis's, or "-" without a Redis figure."""
    if not redis:
        return "-"
    return f"{rafka / redis:.2f}×"


def target(wanted: float, rafka: float, redis: float | None) -> str:
    """The target and whether this run met it."""
    goal = f">= {wanted:g}×"
    if not redis:
        return goal
    return f"{goal} ({'met' if rafka / redis >= wanted else 'not met'})"


def rows(redis: RedisFigures | None, rafka: RafkaFigures) -> list[tuple[str, ...]]:
    """The table's rows (``HEADER``); a missing Redis side shows "-"."""

    def figure(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    xadd = redis.xadd if redis else None
    xrange = redis.xrange if redis else None
    xread = redis.xread if redis else None
    produce = f"produce: XADD pipelined ×{PIPELINE:,} vs Producer"
    # (what, Redis's figure, rafka's, the ratio wanted or None where none is asked)
    cases: list[tuple[str, float | None, float, float | None]] = [
        (f"{produce} RF 1, acks=1", xadd, rafka.produce_rf1, PRODUCE_TARGET),
        (f"{produce} RF 3, acks=all", xadd, rafka.produce_rf3_all, None),
        (f"read: XRANGE COUNT {READ_COUNT:,} vs Consumer.poll", xrange, rafka.consume, READ_TARGET),
        (f"read: XREAD COUNT {READ_COUNT:,} vs Consumer.poll", xread, rafka.consume, READ_TARGET),
    ]
    return [
        (
            what,
            figure(theirs),
            figure(ours),
            ratio(ours, theirs),
            "- (3 copies, stricter than Redis)" if wanted is None else target(wanted, ours, theirs),
        )
        for what, theirs, ours, wanted in cases
    ]


def _server_version(binary: str) -> str:
    """``redis-server --version``'s version field (``v=7.0.15``), or "?"."""
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    return next((w[2:] for w in out.split() if w.startswith("v=")), "?")


def _log_tail(log: Path, lines: int = 3) -> str:
    try:
        return " / ".join(log.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "no log"


@contextmanager
def redis_server(directory: Path) -> Iterator[Any]:
    """Start redis-server in ``directory`` and yield a redis-py client of it; stop it on exit."""
    try:
        import redis
    except ImportError as exc:
        raise RedisUnavailable(
            "redis-py is not installed (pip install -e '.[bench]' installs it)"
        ) from exc
    binary = shutil.which("redis-server")
    if binary is None:
        raise RedisUnavailable("redis-server is not on PATH (make bench-setup installs it)")
    port = free_loopback_port()
    config = directory / "redis.conf"
    config.write_text(redis_config(port, directory))
    process = subprocess.Popen(
        [binary, str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        try:
            # Refused connections count as "not yet"; an exited server ends the wait at once.
            wait_until(
                lambda: process.poll() is not None or client.ping(),
                START_TIMEOUT_S,
                "redis-server to answer PING",
            )
        except AssertionError as exc:
            raise RedisUnavailable(
                f"redis-server did not answer within {START_TIMEOUT_S:g} s: "
                f"{_log_tail(directory / 'redis.log')}"
            ) from exc
        if process.returncode is not None:
            raise RedisUnavailable(
                f"redis-server exited with {process.returncode}: "
                f"{_log_tail(directory / 'redis.log')}"
            )
        yield client
    finally:
        client.close()
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _xadd(client: Any, records: int) -> float:
    """records/s of XADD, ``PIPELINE`` commands per round trip, until the last reply."""
    fields = {FIELD: VALUE}
    pipe = client.pipeline(transaction=False)
    started = time.perf_counter()
    for i in range(1, records + 1):
        pipe.xadd(STREAM, fields)
        if i % PIPELINE == 0:
            pipe.execute()
    pipe.execute()
    return records / (time.perf_counter() - started)


def _read(fetch: Callable[[bytes | None], list[Any]], records: int) -> float:
    """records/s of ``fetch(last id read, None at first)`` calls until ``records`` entries came."""
    count = size = 0
    last: bytes | None = None
    started = time.perf_counter()
    while count < records:
        entries = fetch(last)
        if not entries:
            break
        count += len(entries)
        # Every value is touched once, as rafka's consumer bench sums its records' value sizes.
        size += sum(len(fields[FIELD]) for _, fields in entries)
        last = entries[-1][0]
    return count / (time.perf_counter() - started)


def _xrange(client: Any, records: int) -> float:
    """records/s of XRANGE from the start, ``READ_COUNT`` per call, after the last id read."""

    def fetch(last: bytes | None) -> list[Any]:
        # "(" makes the start exclusive (Redis >= 6.2).
        start = "-" if last is None else b"(" + last
        return cast(list[Any], client.xrange(STREAM, min=start, count=READ_COUNT))

    return _read(fetch, records)


def _xread(client: Any, records: int) -> float:
    """records/s of XREAD from id 0, ``READ_COUNT`` per call."""

    def fetch(last: bytes | None) -> list[Any]:
        reply = cast(list[Any], client.xread({STREAM: last or "0-0"}, count=READ_COUNT))
        return reply[0][1] if reply else []

    return _read(fetch, records)


def measure_redis(records: int) -> RedisFigures:
    """XADD, XRANGE and XREAD of ``records`` values on a fresh redis-server."""
    with tempfile.TemporaryDirectory(prefix="rafka-bench-redis-") as directory:
        with redis_server(Path(directory)) as client:
            xadd = _xadd(client, records)
            return RedisFigures(xadd, _xrange(client, records), _xread(client, records))


def measure_rafka(records: int) -> RafkaFigures:
    """rafka's produce (RF 1 acks=1, RF 3 acks=all) and ``poll`` consume of ``records`` values."""
    with tempfile.TemporaryDirectory(prefix="rafka-bench-") as data_dir:
        with LocalCluster(brokers=3, data_dir=data_dir, namespace=NAMESPACE) as cluster:
            admin = cluster.admin()
            admin.create_topic("rf1", 6, 1)
            admin.create_topic("rf3", 6, 3)
            produced = {
                acks: producer_perf(
                    NAMESPACE, topic, records, len(VALUE), -1, {**PRODUCER, "acks": acks}, False
                ).records_per_s
                for topic, acks in (("rf1", 1), ("rf3", "all"))
            }
            consumed = consumer_perf(NAMESPACE, "rf1", records, progress=False)
    return RafkaFigures(produced[1], produced["all"], consumed.records_per_s)


def title(records: int) -> str:
    """The table's title."""
    binary = shutil.which("redis-server")
    server = f"redis-server {_server_version(binary)}" if binary else "no redis-server"
    return (
        f"Redis Streams side by side ({records:,} records of 100 bytes; {server}, AOF everysec, "
        f"redis-py with the {parser_name()} parser; rafka 3 brokers, 6 partitions)"
    )


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the objects alive so far out of Python's cyclic garbage collector while measuring.

    Both clients allocate container objects per record read (redis-py three: hiredis's list, a
    tuple and a dict), and each full collection walks every tracked object of the process, so with
    the heap of everything ``make bench`` imports, XRANGE measured 190-230K records/s against
    1.0-1.1M with that heap frozen. Freezing it makes neither side's figure depend on what else
    the process loaded; objects made while measuring are collected as usual.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def run(records: int = 1_000_000) -> list[tuple[str, ...]]:
    """Measure both sides; return the table's rows."""
    redis: RedisFigures | None
    with frozen_heap():
        try:
            redis = measure_redis(records)
        except RedisUnavailable as exc:
            print(f"Redis Streams: not measured: {exc}")
            redis = None
        rafka = measure_rafka(records)
    return rows(redis, rafka)


def main() -> None:
    """Print the rows as a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records per side")
    records = parser.parse_args().records
    from run import print_table

    print_table(title(records), HEADER, run(records))


if __name__ == "__main__":
    main()
