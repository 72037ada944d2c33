"""Quickstart: a three-broker rafka cluster, one topic, JSON records in and out.

    .venv/bin/python examples/quickstart.py

It starts ZooKeeper, a local Ray instance (127.0.0.1 only) and three brokers with their logs under a
temporary directory, creates a topic with 3 partitions and replication factor 3, produces keyed JSON
records with acks=all, reads them back with a consumer (assign + seek_to_beginning + poll), looks up
offsets by timestamp, and shuts everything down.
"""

from __future__ import annotations

import json
import tempfile
import time

import rafka

TOPIC = "orders"
PARTITIONS = 3
# Explicit record timestamps one second apart, so offsets_for_times has something to find.
BASE_TS = (int(time.time()) - 60) * 1000


def main() -> None:
    """Run the quickstart."""
    with tempfile.TemporaryDirectory(prefix="rafka-quickstart-") as data_dir:
        print(f"starting ZooKeeper, Ray and 3 brokers (data in {data_dir})")
        with rafka.LocalCluster(brokers=3, data_dir=data_dir):
            admin = rafka.Admin()
            cluster = admin.describe_cluster()
            print(
                f"brokers {[b.broker_id for b in cluster.brokers]}, controller "
                f"{cluster.controller_id}"
            )

            topic = admin.create_topic(
                TOPIC,
                num_partitions=PARTITIONS,
                replication_factor=3,
                config={"retention.ms": 86_400_000},
            )  # topic configs use Kafka's names
            for p in topic.partitions:
                print(
                    f"  {TOPIC}-{p.partition}: leader {p.leader}, "
                    f"replicas {list(p.replicas)}, isr {list(p.isr)}"
                )

            # Produce: keys pick the partition (murmur2, as in
            # Kafka), so one customer's orders stay in order.
            producer = rafka.Producer(
                acks="all",
                key_serializer=str.encode,
                value_serializer=lambda value: json.dumps(value).encode(),
            )
            futures = []
            for i in range(12):
                order = {"order": i, "customer": f"c{i % 4}", "amount": 10 * (i + 1)}
                futures.append(
                    producer.send(
                        TOPIC, value=order, key=order["customer"], timestamp_ms=BASE_TS + i * 1000
                    )
                )
            for future in futures:
                meta = future.get(timeout=30)  # RecordMetadata(topic, partition, offset, timestamp)
            print(
                "produced 12 records; the last went to "
                f"{meta.topic}-{meta.partition} at offset {meta.offset}"
            )
            producer.close()

            # Consume: assign every partition, start at the beginning, poll until all 12 are back.
            consumer = rafka.Consumer(
                key_deserializer=bytes.decode,
                value_deserializer=json.loads,
            )
            partitions = [
                rafka.TopicPartition(TOPIC, p) for p in sorted(consumer.partitions_for_topic(TOPIC))
            ]
            consumer.assign(partitions)
            consumer.seek_to_beginning()
            received: list[rafka.ConsumerRecord] = []
            while len(received) < 12:
                for records in consumer.poll(timeout_ms=1000).values():
                    received.extend(records)
            for record in sorted(received, key=lambda r: r.value["order"]):
                print(
                    f"  {record.topic}-{record.partition}@{record.offset} key={record.key} "
                    f"value={record.value}"
                )

            # Offsets by timestamp: the first record at or after BASE_TS + 6 s, per partition.
            found = consumer.offsets_for_times({tp: BASE_TS + 6000 for tp in partitions})
            for tp, offset_and_ts in sorted(found.items()):
                print(
                    f"  first record at or after ts+6s in {tp.topic}-{tp.partition}: "
                    f"{offset_and_ts}"
                )
            print(
                "end offsets: {"
                + ", ".join(
                    f"{tp.partition}: {o}"
                    for tp, o in sorted(consumer.end_offsets(partitions).items())
                )
                + "}"
            )
            consumer.close()
        print("cluster stopped")


if __name__ == "__main__":
    main()
