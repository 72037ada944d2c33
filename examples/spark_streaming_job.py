"""Structured Streaming job: windowed counts of JSON events into another topic, restartable.

    # a LocalCluster and a sample event producer:
    python examples/spark_streaming_job.py --local --seconds 60
    # or a running cluster:
    python examples/spark_streaming_job.py --ray-address 127.0.0.1:6379 --checkpoint rafka-data/ck

Counts per action and 10-second window (by the records' timestamps, with a 5-second watermark) go to
``event-counts`` as JSON keyed by ``action@window-start``, in append mode: each window's final count
is written once, when the watermark passes the window's end. (PySpark's Python data sources take
the append and complete output modes; update mode is refused by Spark.) Stop it (Ctrl-C or
``--seconds``) and start it again with the same ``--checkpoint``: it continues from the offsets and
window state in the checkpoint, with no gap and nothing read twice. Without ``--checkpoint`` the
checkpoint is a temporary directory, removed at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import threading
import time
from pathlib import Path

import scratch
import spark_setup

EVENT_SCHEMA = "user string, action string, amount double"


def sample_events(
    options: dict[str, str], topic: str, stop: threading.Event, per_second: int = 200
) -> None:
    """Produce a steady trickle of JSON events until ``stop`` is set (the --local demo's input)."""
    from rafka.clients.producer import Producer

    rng = random.Random()
    with Producer(
        namespace=options["rafka.namespace"],
        ray_address=options.get("rafka.ray.address"),
        linger_ms=20,
    ) as producer:
        while not stop.wait(1 / 10):
            for _ in range(per_second // 10):
                user = f"u{rng.randrange(50)}"
                event = {
                    "user": user,
                    "action": rng.choice(["view", "click", "buy"]),
                    "amount": rng.uniform(1, 100),
                }
                producer.send(topic, json.dumps(event).encode(), key=user.encode())


def main() -> None:
    """Parse arguments and run the query until stopped."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    spark_setup.add_cluster_arguments(parser)
    parser.add_argument("--events", default="events", help="topic of JSON events")
    parser.add_argument("--counts", default="event-counts", help="topic the windowed counts go to")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="Spark checkpoint directory (default: a temporary one)",
    )
    parser.add_argument(
        "--max-offsets-per-trigger", default="10000", help="cap on records per micro-batch"
    )
    parser.add_argument(
        "--seconds", type=float, default=None, help="stop after this long (default: until Ctrl-C)"
    )
    args = parser.parse_args()
    with (
        spark_setup.cluster(args) as options,
        scratch.directory(args.checkpoint, args.keep, "rafka-checkpoint-", "the checkpoint") as ck,
    ):
        spark_setup.ensure_topics(options, args.events, args.counts)
        stop = threading.Event()
        if args.local:
            threading.Thread(
                target=sample_events, args=(options, args.events, stop), daemon=True
            ).start()
        spark = spark_setup.spark_session("rafka-streaming-job", args.ray_token)
        from pyspark.sql.functions import window

        counts = (
            spark.readStream.format("rafka")
            .options(**options)
            .option("subscribe", args.events)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", args.max_offsets_per_trigger)
            .load()
            .selectExpr("timestamp", f"from_json(cast(value as string), '{EVENT_SCHEMA}') AS e")
            .withWatermark("timestamp", "5 seconds")
            .groupBy("e.action", window("timestamp", "10 seconds"))
            .count()
        )
        query = (
            counts.selectExpr(
                "concat(action, '@', cast(window.start AS string)) AS key",
                "to_json(struct(action, window.start AS window_start, count)) AS value",
            )
            .writeStream.format("rafka")
            .options(**options)
            .option("topic", args.counts)
            .option("checkpointLocation", str(ck))
            .outputMode("append")
            .trigger(processingTime="2 seconds")
            .start()
        )
        print(f"query {query.id} running; checkpoint {ck.resolve()}")
        with contextlib.suppress(KeyboardInterrupt):
            started = time.monotonic()
            while query.isActive and (
                args.seconds is None or time.monotonic() - started < args.seconds
            ):
                query.awaitTermination(5)
                progress = query.lastProgress
                if progress:
                    print(
                        f"batch {progress['batchId']}: {progress['numInputRows']} events in, end "
                        f"offsets {progress['sources'][0]['endOffset']}"
                    )
        stop.set()
        query.stop()
        spark.stop()


if __name__ == "__main__":
    main()
