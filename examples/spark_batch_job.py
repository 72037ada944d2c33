"""Spark batch job: aggregate a topic of JSON events with Spark SQL into another topic.

    # start a LocalCluster and write sample events:
    python examples/spark_batch_job.py --local
    # or use a running cluster:
    python examples/spark_batch_job.py --ray-address 127.0.0.1:6379 --namespace rafka \
        --events events

The source reads ``events`` from its earliest to its latest offsets (Spark's batch defaults), the
values are parsed with ``from_json``, and the per-action totals go to ``event-stats`` keyed by
action, as JSON. Running it twice appends a second set of totals: the sink is at-least-once, so a
consumer of ``event-stats`` keeps the latest value per key (a compacted topic does that for it).
"""

from __future__ import annotations

import argparse
import json
import random
import time

import spark_setup

EVENT_SCHEMA = "user string, action string, amount double, ts long"


def write_sample_events(options: dict[str, str], topic: str, count: int) -> None:
    """Produce ``count`` JSON events with the plain producer."""
    from rafka.clients.producer import Producer

    rng = random.Random(7)
    with Producer(
        namespace=options["rafka.namespace"],
        ray_address=options.get("rafka.ray.address"),
        linger_ms=5,
    ) as producer:
        for _ in range(count):
            user = f"u{rng.randrange(50)}"
            event = {
                "user": user,
                "action": rng.choice(["view", "click", "buy"]),
                "amount": round(rng.uniform(1, 100), 2),
                "ts": int(time.time() * 1000),
            }
            producer.send(topic, json.dumps(event).encode(), key=user.encode())


def main() -> None:
    """Parse arguments, run the job, print the totals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    spark_setup.add_cluster_arguments(parser)
    parser.add_argument("--events", default="events", help="topic of JSON events")
    parser.add_argument("--stats", default="event-stats", help="topic the totals go to")
    parser.add_argument(
        "--sample", type=int, default=10_000, help="sample events to write first (with --local)"
    )
    args = parser.parse_args()
    with spark_setup.cluster(args) as options:
        spark_setup.ensure_topics(options, args.events, args.stats)
        if args.local:
            write_sample_events(options, args.events, args.sample)
        spark = spark_setup.spark_session("rafka-batch-job", args.ray_token)
        events = (
            spark.read.format("rafka").options(**options).option("subscribe", args.events).load()
        )
        events.selectExpr(f"from_json(cast(value as string), '{EVENT_SCHEMA}') as e").select(
            "e.*"
        ).createOrReplaceTempView("events")
        totals = spark.sql("""
            SELECT action, count(*) AS events, count(DISTINCT user) AS users,
                round(sum(amount), 2) AS amount
            FROM events WHERE action IS NOT NULL GROUP BY action ORDER BY action
        """)
        totals.show()
        (
            totals.selectExpr("action AS key", "to_json(struct(*)) AS value")
            .write.format("rafka")
            .options(**options)
            .option("topic", args.stats)
            .option("acks", "all")
            .mode("append")
            .save()
        )
        spark.read.format("rafka").options(**options).option(
            "subscribe", args.stats
        ).load().createOrReplaceTempView("stats")
        # One key always lands in one partition, so its highest offset holds its latest value.
        spark.sql("""
            SELECT cast(key AS string) AS action, cast(max_by(value, offset) AS string) AS latest,
                count(*) AS versions
            FROM stats GROUP BY key ORDER BY action
        """).show(truncate=False)
        spark.stop()


if __name__ == "__main__":
    main()
