"""Exactly once: a consume-transform-produce loop with transactions and read_committed.

    .venv/bin/python examples/exactly_once.py

It starts a three-broker cluster under a temporary directory, writes 100 payments, then turns each
into a ledger entry: a consumer in group "ledger" reads payments (read_committed, no auto-commit), a
transactional producer writes the entries and commits the consumer's offsets in the same
transaction. Each transaction's output and offsets become visible together or not at all; one
transaction is aborted on purpose to show that a read_committed reader never sees its records.
"""

from __future__ import annotations

import tempfile

import rafka

PAYMENTS, LEDGER, GROUP = "payments", "ledger", "ledger"
COUNT = 100


def transform(consumer: rafka.Consumer, producer: rafka.Producer) -> int:
    """Turn every payment into a ledger entry, one transaction per poll; return how many."""
    done = 0
    while done < COUNT:
        batch = consumer.poll(timeout_ms=1000)
        if not batch:
            continue
        producer.begin_transaction()
        for records in batch.values():
            for record in records:
                producer.send(LEDGER, key=record.key, value=b"ledger:" + (record.value or b""))
                done += 1
        # The consumer's next offsets commit in the same transaction as the entries they produced.
        producer.send_offsets_to_transaction(
            {tp: rafka.OffsetAndMetadata(rs[-1].offset + 1, "") for tp, rs in batch.items()},
            consumer.group_metadata(),
        )
        producer.commit_transaction()
    return done


def main() -> None:
    """Run the example."""
    with tempfile.TemporaryDirectory(prefix="rafka-eos-") as data_dir:
        print(f"starting ZooKeeper, Ray and 3 brokers (data in {data_dir})")
        with rafka.LocalCluster(brokers=3, data_dir=data_dir):
            admin = rafka.Admin()
            admin.create_topic(PAYMENTS, num_partitions=3, replication_factor=3)
            admin.create_topic(LEDGER, num_partitions=3, replication_factor=3)
            with rafka.Producer() as payments:  # idempotent by default: retries never duplicate
                for i in range(COUNT):
                    payments.send(PAYMENTS, key=f"account-{i % 10}".encode(), value=f"{i}".encode())

            consumer = rafka.Consumer(
                PAYMENTS,
                group_id=GROUP,
                isolation_level="read_committed",
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            producer = rafka.Producer(transactional_id="ledger-writer")
            producer.init_transactions()  # fences any older instance with this transactional id
            print(f"transformed {transform(consumer, producer)} payments in transactions")

            producer.begin_transaction()
            producer.send(LEDGER, value=b"ledger:never-committed")
            producer.abort_transaction()
            producer.close()
            consumer.close()

            reader = rafka.Consumer(isolation_level="read_committed")
            partitions = [rafka.TopicPartition(LEDGER, p) for p in range(3)]
            reader.assign(partitions)
            reader.seek_to_beginning()
            entries: list[bytes] = []
            while len(entries) < COUNT:
                for records in reader.poll(timeout_ms=1000).values():
                    entries += [r.value for r in records if r.value is not None]
            entries += [
                r.value
                for records in reader.poll(timeout_ms=1000).values()
                for r in records
                if r.value is not None
            ]
            reader.close()
            group = rafka.Consumer(group_id=GROUP)
            offsets = 0
            for p in range(3):
                committed = group.committed(rafka.TopicPartition(PAYMENTS, p))
                offsets += committed if isinstance(committed, int) else 0
            group.close()
            print(
                f"a read_committed reader sees {len(entries)} ledger entries, "
                f"{len(set(entries))} distinct"
            )
            print(f"the aborted entry is visible: {b'ledger:never-committed' in entries}")
            print(f"group {GROUP!r} committed offsets covering {offsets} payments")
        print("cluster stopped")


if __name__ == "__main__":
    main()
