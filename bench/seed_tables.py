"""Seed 000's benchmark tables at this machine's scale, printed beside the figures the seed states.

Seed 000 (section 5) ran 3 brokers and up to 3 producers on 8-vCPU VMs, one topic, 100-byte
records, asynchronous producers, and varied one thing per table: producers 1-3 (6 partitions, no
replication), message size 10-10,000 bytes (3 producers), partitions 1-9 (3 producers) and replicas
1-3 (6 partitions, 3 producers); one more table read with 1-3 consumers. Here one ``LocalCluster``
of 3 brokers on this machine runs the same tables: acks=1 where the seed has no replication, acks=1
and acks=all for the replicas table, 1 MiB batches as in ``bench/cluster.py``. 1-3 consumers read
the producers table's topic after it: its 6 partitions dealt round-robin among them, each consumer
reading every record of its partitions.

Each producer runs ``producer_perf``, each consumer ``consumer_perf``, in its own Ray actor (a
worker process with ``num_cpus=0``, so three can run at once on 2 CPUs), not in threads of this
process, so clients do not share one GIL. A run's throughput is all its records over the time from
the first client's start to the last one's end; a point is the fastest of three runs. Each topic is
created for its table's points and deleted after them, since every partition replica is a process
competing for the 2 cores. Run alone: ``.venv/bin/python bench/seed_tables.py --records 1000000
--repeats 3``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import ray
from seed_charts import Chart, draw

from rafka.cli.perf import ProducerPerf, consumer_perf, producer_perf
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.types import TopicPartition

NAMESPACE = "rafka-bench-seed"
RESULTS = Path(__file__).resolve().parent / "results"
RECORDS = 1_000_000
"""Records per run of a point, shared evenly by the point's producers."""
REPEATS = 3
"""Runs per point; the fastest counts, since other work on the 2 cores only ever slows a run."""
BYTES_PER_POINT = 200_000_000
"""Large messages send fewer records: at most this many payload bytes per point."""
MIN_RECORDS = 6_000
WARM_UP_RECORDS = 5_000
"""Per producer, not measured, on each new topic: opens Ray's connections to its replicas and lets
the followers of a new topic join the ISR."""
# bench/cluster.py's batching, repeated rather than imported: a Ray worker unpickling the producer
# actor imports this module with the repository root first on sys.path, where ``cluster`` is
# rafka's own package folder, not bench/cluster.py.
BATCHING = {"batch_size": 1_048_576, "linger_ms": 5}
PRODUCERS = (1, 2, 3)
CONSUMERS = (1, 2, 3)
SIZES = (10, 20, 40, 60, 80, 100, 150, 200, 400, 800, 1000, 2000, 5000, 10000)
PARTITIONS = tuple(range(1, 10))
REPLICAS = (1, 2, 3)
ACKS = ("1", "all")
BROKERS = 3
TIMEOUT_S = 900

# What the seed's text states (its charts are lost): figures where it gives them, else the shape.
SEED_PRODUCERS = {1: 1_280_000.0, 3: 3_500_000.0}
"""Records/s: "about 1.28 million" for one producer; 3 producers "3.5 million in total"."""
SEED_CONSUMERS = {1: 3_060_000.0}
SEED_SCALING_SHAPE = "linear growth"
"""What the seed states for more producers and for more consumers."""
SEED_SIZE_SHAPE = "records/s falls, MB/s rises as messages grow"
SEED_PARTITIONS_SHAPE = "linear up to 3 (the broker count), then no gain; best at multiples of 3"
SEED_REPLICAS_SHAPE = "falls, not linearly (followers copy in parallel)"


Runs = dict[int, ProducerPerf]
"""A table's points by what the table varies (producers, bytes, partitions, replicas, consumers),
each the fastest run of its point. A consumers run is kept in the same shape (records, seconds,
100-byte records), since only its rates are shown."""


@dataclass(frozen=True)
class Measurements:
    """Every point of the seed's tables as measured here, the fastest of ``repeats`` runs of
    ``records`` each (fewer for large messages; the consumers read every record the producers
    table sent); ``replicas`` maps acks to its points."""

    records: int
    repeats: int
    producers: Runs
    sizes: Runs
    partitions: Runs
    replicas: dict[str, Runs]
    consumers: Runs


@dataclass(frozen=True)
class Table:
    """One printed table; ``chart`` names its PNG in bench/results/ ("" for none)."""

    title: str
    header: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]
    chart: str = ""


def records_for(size: int, records: int) -> int:
    """Records for a point of ``size``-byte messages: ``records``, fewer for large messages."""
    return max(MIN_RECORDS, min(records, BYTES_PER_POINT // size))


def _rates(run: ProducerPerf) -> tuple[str, str]:
    """records/s and MB/s as printed."""
    return f"{run.records_per_s:,.0f}", f"{run.mb_per_s:.1f}"


def _ratio(run: ProducerPerf, runs: Runs) -> str:
    """``run``'s records/s against the first point of its table."""
    return f"{run.records_per_s / runs[min(runs)].records_per_s:.2f}×"


def seed_scaling(stated: Mapping[int, float], clients: int) -> str:
    """The seed column of the producers or consumers table: the figure ``stated`` for ``clients``
    of them (beside its ratio to one), else the shape."""
    figure = stated.get(clients)
    if figure is None:
        return f"{SEED_SCALING_SHAPE} (no figure stated)"
    if clients == 1:
        return f"~{figure:,.0f}"
    return f"~{figure:,.0f} ({figure / stated[1]:.2f}×)"


def seed_partitions(partitions: int) -> str:
    """The seed column of the partitions table: the shape it states for that many partitions."""
    if partitions <= BROKERS:
        return "rises linearly (one more broker serves the topic)"
    if partitions % BROKERS == 0:
        return "higher than its neighbours (a multiple of the broker count)"
    return "no gain, even lower (brokers unevenly loaded)"


def tables(measured: Measurements) -> list[Table]:
    """The four tables of seed 000 (and its consumers table) from what was measured."""
    producer_rows = [
        (str(n), *_rates(run), _ratio(run, measured.producers), seed_scaling(SEED_PRODUCERS, n))
        for n, run in measured.producers.items()
    ]
    size_rows = [
        (f"{size:,}", f"{run.records:,}", *_rates(run), SEED_SIZE_SHAPE if i == 0 else "〃")
        for i, (size, run) in enumerate(measured.sizes.items())
    ]
    partition_rows = [
        (str(n), *_rates(run), _ratio(run, measured.partitions), seed_partitions(n))
        for n, run in measured.partitions.items()
    ]
    replica_rows = [
        (
            str(rf),
            acks,
            *_rates(run),
            _ratio(run, runs),
            "highest (no replication)" if rf == 1 else SEED_REPLICAS_SHAPE,
        )
        for acks, runs in measured.replicas.items()
        for rf, run in runs.items()
    ]
    consumer_rows = [
        (str(n), *_rates(run), _ratio(run, measured.consumers), seed_scaling(SEED_CONSUMERS, n))
        for n, run in measured.consumers.items()
    ]
    best = f"3 brokers, best of {measured.repeats} runs"
    machine = "2 cores; seed: 8-vCPU VMs"
    scale = f"{best} of {measured.records:,} records, {machine}"
    # The consumers read everything the producers table wrote, not ``records``.
    read = measured.consumers[min(measured.consumers)].records
    return [
        Table(
            f"Seed 000: producers (6 partitions, RF 1, acks=1, 100 B; {scale})",
            ("producers", "records/s", "MB/s", "× 1 producer", "seed 000 records/s"),
            producer_rows,
            "producers",
        ),
        Table(
            f"Seed 000: message size (3 producers, 6 partitions, RF 1, acks=1; {scale}, "
            f"at most {BYTES_PER_POINT / 1e6:g} MB per point)",
            ("message size (B)", "records", "records/s", "MB/s", "seed 000"),
            size_rows,
            "message_size",
        ),
        Table(
            f"Seed 000: partitions (3 producers, RF 1, acks=1, 100 B; {scale})",
            ("partitions", "records/s", "MB/s", "× 1 partition", "seed 000"),
            partition_rows,
            "partitions",
        ),
        Table(
            f"Seed 000: replicas (3 producers, 6 partitions, 100 B; {scale})",
            ("replicas", "acks", "records/s", "MB/s", "× RF 1 (same acks)", "seed 000"),
            replica_rows,
            "replicas",
        ),
        Table(
            f"Seed 000: consumers (6 partitions dealt round-robin, RF 1, 100 B; {best} reading "
            f"the producers' {read:,} records, {machine})",
            ("consumers", "records/s", "MB/s", "× 1 consumer", "seed 000 records/s"),
            consumer_rows,
            "consumers",
        ),
    ]


def _scaling_chart(clients: str, runs: Runs, stated: Mapping[int, float]) -> Chart:
    """The producers or consumers chart: records/s by how many ``clients`` ran at once."""
    return Chart(
        f"{clients.capitalize()} vs throughput (6 partitions, RF 1, 100 B)",
        clients,
        "records/s",
        {"rafka, 2 cores": [(n, run.records_per_s) for n, run in runs.items()]},
        seed_points=sorted(stated.items()),
        seed_label="seed 000, 8-vCPU VMs (stated)",
        note=f"seed 000: {SEED_SCALING_SHAPE}",
        x_ticks=tuple(runs),
    )


def charts(measured: Measurements) -> dict[str, Chart]:
    """The chart of each table, by file stem."""
    return {
        "producers": _scaling_chart("producers", measured.producers, SEED_PRODUCERS),
        "message_size": Chart(
            "Message size vs throughput (3 producers, 6 partitions, RF 1)",
            "message size (bytes)",
            "records/s",
            {
                "rafka records/s": [
                    (size, run.records_per_s) for size, run in measured.sizes.items()
                ]
            },
            note=f"seed 000 (no figures stated): {SEED_SIZE_SHAPE}",
            log_x=True,
            right=(
                "rafka MB/s",
                "MB/s",
                [(size, run.mb_per_s) for size, run in measured.sizes.items()],
            ),
        ),
        "partitions": Chart(
            "Partitions vs throughput (3 brokers, 3 producers, RF 1, 100 B)",
            "partitions",
            "records/s",
            {"rafka, 2 cores": [(n, run.records_per_s) for n, run in measured.partitions.items()]},
            note=f"seed 000 (no figures stated): {SEED_PARTITIONS_SHAPE}",
            x_ticks=PARTITIONS,
        ),
        "replicas": Chart(
            "Replicas vs throughput (3 producers, 6 partitions, 100 B)",
            "replication factor",
            "records/s",
            {
                f"rafka acks={acks}": [(rf, run.records_per_s) for rf, run in runs.items()]
                for acks, runs in measured.replicas.items()
            },
            note=f"seed 000 (no figures stated): {SEED_REPLICAS_SHAPE}",
            x_ticks=REPLICAS,
        ),
        "consumers": _scaling_chart("consumers", measured.consumers, SEED_CONSUMERS),
    }


def write_charts(measured: Measurements, directory: Path = RESULTS) -> list[Path]:
    """Write one PNG per table into ``directory``; return their paths."""
    return [draw(chart, directory / f"{name}.png") for name, chart in charts(measured).items()]


@dataclass(frozen=True)
class Window:
    """One client's part of a run: its wall-clock start and end (``time.time()``, comparable
    across the processes of this machine) and the records it sent or read."""

    started: float
    ended: float
    records: int


def span(windows: Sequence[Window]) -> float:
    """Seconds of a run: from the first client's start to the last one's end."""
    return max(w.ended for w in windows) - min(w.started for w in windows)


class ClientProcess:
    """A producer or consumer in its own Ray worker process, so several run in parallel beyond one
    GIL."""

    def pid(self) -> int:
        """The worker's pid (a call that returns once the process is up)."""
        return os.getpid()

    def produce(self, topic: str, records: int, record_size: int, config: dict[str, Any]) -> Window:
        """Send ``records`` records unthrottled."""
        started = time.time()
        producer_perf(NAMESPACE, topic, records, record_size, -1, config, progress=False)
        return Window(started, time.time(), records)

    def consume(self, topic: str, partitions: list[int], records: int) -> Window:
        """Read the ``records`` records of ``partitions`` of ``topic`` from their beginning."""
        read = consumer_perf(NAMESPACE, topic, records, progress=False, partitions=partitions)
        # The window is the reading as consumer_perf timed it, without the consumer's start.
        ended = time.time()
        return Window(ended - read.seconds, ended, read.records)


def records_per_partition(topic: str) -> dict[int, int]:
    """How many records each partition of ``topic`` holds, from its start and end offsets."""
    with Consumer(namespace=NAMESPACE) as consumer:
        partitions = [
            TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())
        ]
        starts = consumer.beginning_offsets(partitions)
        return {
            tp.partition: end - starts[tp] for tp, end in consumer.end_offsets(partitions).items()
        }


def deal(partitions: Sequence[int], consumers: int) -> list[list[int]]:
    """``partitions`` dealt round-robin among ``consumers``."""
    return [list(partitions[i::consumers]) for i in range(consumers)]


class Runner:
    """Runs the points against one cluster with up to three client processes."""

    def __init__(self, admin: Admin, repeats: int) -> None:
        self.admin = admin
        self.repeats = repeats
        self.started = time.monotonic()
        # Actor handles are typed Any: Ray's stubs cannot type methods reached through .remote.
        remote: Any = ray.remote(num_cpus=0)(ClientProcess)
        self.processes: list[Any] = [remote.remote() for _ in range(max(*PRODUCERS, *CONSUMERS))]
        ray.get([p.pid.remote() for p in self.processes], timeout=TIMEOUT_S)

    def produce(
        self, topic: str, producers: int, size: int, acks: str, records: int
    ) -> ProducerPerf:
        """One point, the fastest of ``repeats`` runs of ``records`` shared by ``producers``
        processes; a run lasts from the first producer's start to the last one's end."""
        share = records // producers
        config = {**BATCHING, "acks": acks}
        runs = []
        for _ in range(self.repeats):
            windows = ray.get(
                [p.produce.remote(topic, share, size, config) for p in self.processes[:producers]],
                timeout=TIMEOUT_S,
            )
            runs.append(ProducerPerf(share * producers, span(windows), size, []))
            self.log(
                f"{topic}, {producers} producers, {size} B, acks={acks}: "
                f"{runs[-1].records_per_s:,.0f} records/s"
            )
        return max(runs, key=attrgetter("records_per_s"))

    def consume(self, topic: str, consumers: int) -> ProducerPerf:
        """One point, the fastest of ``repeats`` runs of ``consumers`` processes reading every
        100-byte record of ``topic``, its partitions dealt round-robin among them."""
        counts = records_per_partition(topic)
        shares = deal(sorted(counts), consumers)
        total = sum(counts.values())
        runs = []
        for _ in range(self.repeats):
            windows = ray.get(
                [
                    p.consume.remote(topic, share, sum(counts[q] for q in share))
                    for p, share in zip(self.processes[:consumers], shares, strict=True)
                ],
                timeout=TIMEOUT_S,
            )
            read = sum(w.records for w in windows)
            # consumer_perf gives up after 30 s without data; a short read is no measurement.
            if read != total:
                raise RuntimeError(f"{consumers} consumers read {read:,} of {total:,} records")
            runs.append(ProducerPerf(read, span(windows), 100, []))
            self.log(f"{topic}, {consumers} consumers: {runs[-1].records_per_s:,.0f} records/s")
        return max(runs, key=attrgetter("records_per_s"))

    def log(self, line: str) -> None:
        """Progress on stderr, with the seconds since the start (the area should take ~10 min)."""
        print(f"seed {time.monotonic() - self.started:6.1f} s: {line}", file=sys.stderr)

    def topic(self, name: str, partitions: int, replicas: int) -> None:
        """Create a topic and warm it up with every producer process."""
        self.admin.create_topic(name, partitions, replicas)
        self.log(f"created {name} ({partitions} partitions, RF {replicas})")
        config = {**BATCHING, "acks": "all"}
        ray.get(
            [p.produce.remote(name, WARM_UP_RECORDS, 100, config) for p in self.processes],
            timeout=TIMEOUT_S,
        )

    def drop(self, name: str) -> None:
        """Delete a topic, so its replica processes stop taking CPU from the next points."""
        self.admin.delete_topics([name])
        self.log(f"deleted {name}")

    def close(self) -> None:
        """End the client processes."""
        for process in self.processes:
            ray.kill(process)


def measure(records: int = RECORDS, repeats: int = REPEATS) -> Measurements:
    """Start a 3-broker cluster and measure every point of the seed's tables."""
    with tempfile.TemporaryDirectory(prefix="rafka-bench-seed-") as data_dir:
        with LocalCluster(brokers=BROKERS, data_dir=data_dir, namespace=NAMESPACE) as cluster:
            runner = Runner(cluster.admin(), repeats)
            try:
                return _measure(runner, records)
            finally:
                runner.close()


def _measure(runner: Runner, records: int) -> Measurements:
    """Every table's points: producers, consumers (reading what the producers sent) and message
    sizes share one 6-partition topic; the partitions and replicas tables make a topic per point."""
    runner.topic("seed", 6, 1)
    producers = {n: runner.produce("seed", n, 100, "1", records) for n in PRODUCERS}
    consumers = {n: runner.consume("seed", n) for n in CONSUMERS}
    sizes = {
        size: runner.produce("seed", 3, size, "1", records_for(size, records)) for size in SIZES
    }
    runner.drop("seed")
    partitions = {}
    for n in PARTITIONS:
        runner.topic(f"partitions-{n}", n, 1)
        partitions[n] = runner.produce(f"partitions-{n}", 3, 100, "1", records)
        runner.drop(f"partitions-{n}")
    replicas: dict[str, Runs] = {acks: {} for acks in ACKS}
    for rf in REPLICAS:
        runner.topic(f"replicas-{rf}", 6, rf)
        for acks in ACKS:
            replicas[acks][rf] = runner.produce(f"replicas-{rf}", 3, 100, acks, records)
        runner.drop(f"replicas-{rf}")
    return Measurements(records, runner.repeats, producers, sizes, partitions, replicas, consumers)


def run(records: int = RECORDS, repeats: int = REPEATS, results: Path = RESULTS) -> list[Table]:
    """Measure, write the charts into ``results`` and return the tables."""
    measured = measure(records, repeats)
    write_charts(measured, results)
    return tables(measured)


def main() -> None:
    """Print the tables as Markdown and write the charts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=RECORDS, help="records per run of a point")
    parser.add_argument(
        "--repeats", type=int, default=REPEATS, help="runs per point (fastest counts)"
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder for the PNG charts")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    for table in run(args.records, args.repeats, args.results):
        print_table(table.title, table.header, table.rows)


if __name__ == "__main__":
    main()
