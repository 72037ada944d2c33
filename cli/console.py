"""``rafka produce`` and ``rafka consume``: the console producer and consumer.

Like kafka-console-producer.sh, each stdin line is a record (``--property parse.key=true`` with
``key.separator`` splits a key off); like kafka-console-consumer.sh, records print one per line with
optional key, offset and timestamp (``--property print.key=true`` ...).
"""

from __future__ import annotations

import argparse
import sys

from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.protocol.types import TopicPartition


def _properties(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)


def add_produce_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka produce``."""
    parser.add_argument("--topic", required=True)
    parser.add_argument("--acks", default="1", help="0, 1 or all")
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="parse.key=true, key.separator=<sep>",
    )


def add_consume_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka consume``."""
    parser.add_argument("--topic", required=True)
    parser.add_argument(
        "--from-beginning", action="store_true", help="start at the earliest offset"
    )
    parser.add_argument("--partition", type=int, help="only this partition")
    parser.add_argument(
        "--offset", default=None, help="earliest, latest, or an offset (needs --partition)"
    )
    parser.add_argument(
        "--max-messages", type=int, default=None, help="exit after this many records"
    )
    parser.add_argument(
        "--timeout-ms", type=int, default=None, help="exit after this long without a record"
    )
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=(
            "print.key, print.offset, print.timestamp, print.partition (true/false), key.separator"
        ),
    )


def produce(args: argparse.Namespace, namespace: str) -> int:
    """Send each stdin line as a record; ``parse.key=true`` splits a key off at the separator."""
    props = _properties(args.property)
    parse_key = props.get("parse.key", "false") == "true"
    separator = props.get("key.separator", "\t")
    with Producer(namespace=namespace, acks=args.acks) as producer:
        for line in sys.stdin:
            line = line.rstrip("\n")
            key = None
            if parse_key:
                if separator not in line:
                    print(
                        f"skipped line without key separator {separator!r}: {line!r}",
                        file=sys.stderr,
                    )
                    continue
                key_text, line = line.split(separator, 1)
                key = key_text.encode()
            producer.send(args.topic, line.encode(), key=key)
    return 0


def consume(args: argparse.Namespace, namespace: str) -> int:
    """Print records as they arrive."""
    props = _properties(args.property)
    flags = {
        name: props.get(f"print.{name}", "false") == "true"
        for name in ("key", "offset", "timestamp", "partition")
    }
    separator = props.get("key.separator", "\t")
    timeout = args.timeout_ms if args.timeout_ms is not None else float("inf")
    consumer = Consumer(
        namespace=namespace,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        consumer_timeout_ms=timeout,
    )
    if args.partition is not None:
        tp = TopicPartition(args.topic, args.partition)
        consumer.assign([tp])
        if args.offset == "earliest":
            consumer.seek_to_beginning(tp)
        elif args.offset == "latest":
            consumer.seek_to_end(tp)
        elif args.offset is not None:
            consumer.seek(tp, int(args.offset))
    else:
        if args.offset is not None:
            raise SystemExit("--offset needs --partition")
        consumer.subscribe([args.topic])
    count = 0
    try:
        for record in consumer:
            fields = []
            if flags["timestamp"]:
                fields.append(f"CreateTime:{record.timestamp}")
            if flags["partition"]:
                fields.append(f"Partition:{record.partition}")
            if flags["offset"]:
                fields.append(f"Offset:{record.offset}")
            if flags["key"]:
                fields.append(
                    record.key.decode(errors="replace") if record.key is not None else "null"
                )
            fields.append(
                record.value.decode(errors="replace") if record.value is not None else "null"
            )
            print(separator.join(fields), flush=True)
            count += 1
            if args.max_messages is not None and count >= args.max_messages:
                break
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0
