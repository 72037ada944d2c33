"""Exactly-once end to end on a real cluster: transactional producers, read_committed consumers and
offsets committed in transactions, under zombies, timeouts, and broker and producer kills."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import ray

from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.types import OffsetAndMetadata, TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
NS = "rafka-eos"
CLUSTER = "eos"
FENCED = (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH)


@pytest.fixture(scope="module")
def ecluster(own_cluster: Callable[..., LocalCluster]) -> Iterator[LocalCluster]:
    """Three brokers with one offsets and one transaction-state partition (so one broker is every
    transaction's coordinator), and a coordinator that looks for timed-out transactions twice a
    second."""
    with own_cluster(
        CLUSTER,
        NS,
        transaction_state_log_num_partitions=1,
        transaction_abort_timed_out_transaction_cleanup_interval_ms=500,
    ) as local:
        yield local


def values(consumer: Consumer, expected: int, timeout_s: float = 60) -> list[bytes]:
    """Poll until ``expected`` values came (or the deadline), then once more to catch extras."""
    seen: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(seen) < expected and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            seen += [r.value for r in records if r.value is not None]
    for records in consumer.poll(timeout_ms=500).values():
        seen += [r.value for r in records if r.value is not None]
    return seen


def reader(cluster: LocalCluster, topic: str, partitions: int, isolation: str) -> Consumer:
    """A consumer of every partition of ``topic`` from the beginning, with ``isolation``."""
    consumer: Consumer = cluster.consumer(isolation_level=isolation)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    return consumer


def test_an_aborted_transaction_is_invisible_to_read_committed_only(ecluster: LocalCluster) -> None:
    topic = "aborts"
    ecluster.admin().create_topic(topic, 1, 3)
    producer: Producer = ecluster.producer(transactional_id="abort-then-commit")
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(10):
        producer.send(topic, f"aborted-{i}".encode())
    producer.flush()
    producer.abort_transaction()
    producer.begin_transaction()
    for i in range(10):
        producer.send(topic, f"committed-{i}".encode())
    producer.commit_transaction()
    producer.close()

    committed = reader(ecluster, topic, 1, "read_committed")
    assert values(committed, 10) == [f"committed-{i}".encode() for i in range(10)]
    committed.close()
    everything = reader(ecluster, topic, 1, "read_uncommitted")
    # Every data record, the aborted ones too; the two markers never reach the caller.
    assert values(everything, 20) == [f"aborted-{i}".encode() for i in range(10)] + [
        f"committed-{i}".encode() for i in range(10)
    ]
    everything.close()


def test_a_zombie_producer_is_fenced_and_its_open_transaction_aborted(
    ecluster: LocalCluster,
) -> None:
    topic = "zombies"
    ecluster.admin().create_topic(topic, 2, 3)
    zombie: Producer = ecluster.producer(transactional_id="payments-0")
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(topic, b"from the zombie", partition=0).get(timeout=30)

    successor: Producer = ecluster.producer(transactional_id="payments-0")
    successor.init_transactions()
    successor.begin_transaction()
    successor.send(topic, b"from the successor", partition=1)
    successor.commit_transaction()
    successor.close()

    with pytest.raises(RafkaError) as fenced:
        zombie.send(topic, b"too late", partition=0).get(timeout=30)
        zombie.commit_transaction()
    assert fenced.value.error in FENCED
    zombie.close()
    consumer = reader(ecluster, topic, 2, "read_committed")
    assert values(consumer, 1) == [b"from the successor"]
    consumer.close()


def test_a_transaction_past_its_timeout_is_aborted_by_the_coordinator(
    ecluster: LocalCluster,
) -> None:
    topic = "slow"
    ecluster.admin().create_topic(topic, 1, 3)
    producer: Producer = ecluster.producer(transactional_id="slow", transaction_timeout_ms=2000)
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"never committed").get(timeout=30)
    consumer = reader(ecluster, topic, 1, "read_committed")
    tp = TopicPartition(topic, 0)
    # The open transaction holds the last stable offset at its first record until the abort marker.
    assert consumer.end_offsets([tp])[tp] == 0
    wait_until(
        lambda: consumer.end_offsets([tp])[tp] == 2, 30, "the coordinator to abort the transaction"
    )
    assert values(consumer, 1, timeout_s=2) == []
    with pytest.raises(RafkaError) as fenced:
        producer.commit_transaction()
    assert fenced.value.error in FENCED
    producer.close()
    consumer.close()


def test_a_killed_producers_open_transaction_is_aborted_by_its_successor(
    ecluster: LocalCluster, tmp_path: Path
) -> None:
    topic = "crashes"
    ecluster.admin().create_topic(topic, 1, 3)
    script = tmp_path / "crashing_producer.py"
    script.write_text(
        "import sys, time\n"
        "from rafka.clients.producer import Producer\n"
        f"p = Producer(namespace={NS!r}, ray_address=sys.argv[1], transactional_id='crashy')\n"
        "p.init_transactions()\n"
        "p.begin_transaction()\n"
        f"p.send({topic!r}, b'lost with its producer').get(timeout=30)\n"
        "print('sent', flush=True)\n"
        "time.sleep(600)\n"
    )
    address = ray.get_runtime_context().gcs_address
    process = subprocess.Popen(
        [sys.executable, str(script), address], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "sent"
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    successor: Producer = ecluster.producer(transactional_id="crashy")
    successor.init_transactions()
    successor.begin_transaction()
    successor.send(topic, b"after the crash")
    successor.commit_transaction()
    successor.close()
    consumer = reader(ecluster, topic, 1, "read_committed")
    assert values(consumer, 1) == [b"after the crash"]
    consumer.close()


class Killer(threading.Thread):
    """Kill a broker and start it again, round robin, every ``every_s`` while the test runs."""

    def __init__(self, cluster: LocalCluster, every_s: float, rounds: int) -> None:
        super().__init__(daemon=True)
        self.cluster, self.every_s, self.rounds = cluster, every_s, rounds
        self.stop = threading.Event()
        self.kills = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for round_ in range(self.rounds):
                if self.stop.wait(self.every_s):
                    return
                victim = round_ % self.cluster.num_brokers
                self.cluster.kill_broker(victim)
                self.kills += 1
                self.cluster.start_broker(victim)
                self.cluster.admin().wait_for_cluster(self.cluster.num_brokers, 60_000)
        except BaseException as exc:
            self.error = exc


T = TypeVar("T")


def retried(call: Callable[[], T], deadline: float) -> T:
    """``call()``, again after any retriable error or timeout until ``deadline``: while a broker is
    down its coordinators may be unavailable for a while, which costs time, never correctness."""
    while True:
        try:
            return call()
        except RafkaError as exc:
            if exc.error in FENCED or time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


def transactional_producer(
    cluster: LocalCluster, transactional_id: str, deadline: float
) -> Producer:
    """A new producer for ``transactional_id``, initialised: its epoch fences the previous one,
    whose open transaction the coordinator aborts."""
    producer: Producer = cluster.producer(transactional_id=transactional_id)
    retried(producer.init_transactions, deadline)
    return producer


def transform_all(
    cluster: LocalCluster, source: str, sink: str, group: str, total: int, deadline_s: float
) -> dict[str, int]:
    """Consume-transform-produce ``source`` into ``sink`` in transactions until the group's
    committed offsets cover ``total`` records. On any error the transaction is given up: a new
    producer with the same transactional id fences the old one (aborting its transaction), and the
    consumer rewinds to the committed offsets (Kafka's recipe). Returns how often each outcome
    happened."""
    outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + deadline_s
    consumer: Consumer = cluster.consumer(
        source,
        group_id=group,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    transactional_id = f"{group}-worker"
    producer = transactional_producer(cluster, transactional_id, deadline)

    def committed(tp: TopicPartition) -> int | None:
        offset = retried(lambda: consumer.committed(tp), deadline)
        return offset if isinstance(offset, int) else None

    def done() -> bool:
        offsets = [committed(tp) for tp in consumer.assignment()]
        return bool(offsets) and sum(o for o in offsets if o is not None) >= total

    try:
        while not done():
            assert time.monotonic() < deadline, f"not every record transformed: {outcomes}"
            batch = consumer.poll(timeout_ms=500, max_records=50)
            if not batch:
                continue
            try:
                producer.begin_transaction()
                for records in batch.values():
                    for record in records:
                        assert record.value is not None
                        producer.send(sink, record.value + b"-done", key=record.key)
                offsets = {
                    tp: OffsetAndMetadata(records[-1].offset + 1, "")
                    for tp, records in batch.items()
                }
                producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
                producer.commit_transaction()
                outcomes["committed"] += 1
            except RafkaError as exc:
                if exc.error in FENCED:
                    raise
                outcomes[type(exc).__name__] += 1
                with contextlib.suppress(RafkaError):
                    producer.close(timeout=5)
                producer = transactional_producer(cluster, transactional_id, deadline)
                for tp in batch:
                    offset = committed(tp)
                    if offset is None:
                        consumer.seek_to_beginning(tp)
                    else:
                        consumer.seek(tp, offset)
    finally:
        with contextlib.suppress(RafkaError):
            producer.close(timeout=5)
        consumer.close(autocommit=False)
    return dict(outcomes)


def test_consume_transform_produce_under_broker_kills_writes_each_output_once(
    ecluster: LocalCluster,
) -> None:
    source, sink, total = "payments", "ledger", 600
    admin = ecluster.admin()
    admin.create_topic(source, 3, 3)
    admin.create_topic(sink, 3, 3)
    with ecluster.producer(acks="all") as producer:
        for i in range(total):
            producer.send(source, f"p{i}".encode(), key=str(i).encode())
    killer = Killer(ecluster, every_s=4.0, rounds=3)
    killer.start()
    try:
        outcomes = transform_all(ecluster, source, sink, "ledger-writer", total, 300)
    finally:
        killer.stop.set()
        killer.join(timeout=120)
    assert killer.error is None, killer.error
    assert killer.kills >= 1, outcomes
    ecluster.admin().wait_for_cluster(3, 60_000)
    consumer = reader(ecluster, sink, 3, "read_committed")
    written = Counter(values(consumer, total, timeout_s=120))
    consumer.close()
    assert written == Counter(f"p{i}-done".encode() for i in range(total)), (
        f"missing {sorted(set(f'p{i}-done'.encode() for i in range(total)) - set(written))[:5]}, "
        f"duplicated {[v for v, n in written.items() if n > 1][:5]}, outcomes {outcomes}"
    )


def test_offsets_sent_to_an_aborted_transaction_are_never_committed(
    ecluster: LocalCluster,
) -> None:
    topic, group = "offsets-in-txn", "aborting-group"
    ecluster.admin().create_topic(topic, 1, 3)
    tp = TopicPartition(topic, 0)
    producer: Producer = ecluster.producer(transactional_id="offsets-owner")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send_offsets_to_transaction({tp: OffsetAndMetadata(5, "")}, group)
    producer.abort_transaction()
    producer.begin_transaction()
    producer.send_offsets_to_transaction({tp: OffsetAndMetadata(7, "")}, group)
    producer.commit_transaction()
    producer.close()
    consumer: Consumer = ecluster.consumer(group_id=group)
    committed: Any = consumer.committed(tp)
    consumer.close(autocommit=False)
    assert committed == 7
