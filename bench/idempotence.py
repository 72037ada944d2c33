"""Exactly-once benchmark: what idempotence and transactions cost a producer.

One cluster of 3 brokers, a 6-partition topic at RF 3 with min.insync.replicas 2, 100-byte records,
1 MiB batches. Four producers send the same number of records: a plain acks=all producer
(``enable_idempotence=False``), an idempotent one, and a transactional one committing every 100 ms
and every 1,000 records. The plain and idempotent runs alternate ``ROUNDS`` times and each keeps its
best, so the ratio compares like with like on a noisy machine. Run it alone:
``.venv/bin/python bench/idempotence.py``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rafka.cli.perf import producer_perf
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster

NAMESPACE = "rafka-bench-eos"
TOPIC = "eos"
RECORDS = 300_000
RECORD = b"x" * 100
ROUNDS = 3
BATCHING: dict[str, Any] = {"batch_size": 1_048_576, "linger_ms": 5, "acks": "all"}
HEADER = ("producer", "records/s", "vs plain acks=all", "target")


def _plain_or_idempotent(records: int, idempotent: bool) -> float:
    """records/s of one unthrottled run."""
    config = {**BATCHING, "enable_idempotence": idempotent}
    return producer_perf(
        NAMESPACE, TOPIC, records, len(RECORD), -1, config, progress=False
    ).records_per_s


def _transactional(records: int, label: str, due: Callable[[int, float], bool]) -> float:
    """records/s of a transactional producer that commits whenever ``due(sent_in_txn,
    txn_started_at)`` says so."""
    with Producer(namespace=NAMESPACE, transactional_id=f"bench-{label}", **BATCHING) as producer:
        producer.init_transactions()
        started = time.perf_counter()
        sent = 0
        while sent < records:
            producer.begin_transaction()
            opened, in_txn = time.perf_counter(), 0
            while sent < records and not due(in_txn, opened):
                producer.send(TOPIC, RECORD)
                sent += 1
                in_txn += 1
            producer.commit_transaction()
        return records / (time.perf_counter() - started)


def run(records: int = RECORDS) -> list[tuple[str, ...]]:
    """Measure the four producers on one cluster; table rows (producer, records/s, ratio,
    target)."""
    with tempfile.TemporaryDirectory(prefix="rafka-bench-eos-") as data_dir:
        with LocalCluster(brokers=3, data_dir=data_dir, namespace=NAMESPACE) as cluster:
            cluster.admin().create_topic(TOPIC, 6, 3, {"min.insync.replicas": "2"})
            _plain_or_idempotent(records // 10, True)  # warm-up: connections, ISR, producer ids
            plain: list[float] = []
            idempotent: list[float] = []
            for _ in range(ROUNDS):
                plain.append(_plain_or_idempotent(records, False))
                idempotent.append(_plain_or_idempotent(records, True))
            every_100_ms = _transactional(
                records, "100ms", lambda _n, opened: time.perf_counter() - opened >= 0.1
            )
            every_1000 = _transactional(records, "1000", lambda n, _opened: n >= 1000)
    base = max(plain)

    def row(label: str, rate: float, target: str) -> tuple[str, ...]:
        return (label, f"{rate:,.0f}", f"{rate / base:.2f}×", target)

    rows: list[tuple[str, ...]] = [
        row("plain, acks=all (enable_idempotence=False)", base, "-"),
        row("idempotent (enable_idempotence=True)", max(idempotent), ">= 0.9×"),
        row("transactional, commit every 100 ms", every_100_ms, "-"),
        row("transactional, commit every 1,000 records", every_1000, "-"),
    ]
    return rows


def main() -> None:
    """Print the rows as a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=RECORDS, help="records per producer run")
    records = parser.parse_args().records
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    print_table(title(records), HEADER, run(records))


def title(records: int) -> str:
    """The table's title."""
    return f"Exactly-once producers (3 brokers, RF 3, {records:,} records of 100 bytes per run)"


if __name__ == "__main__":
    main()
