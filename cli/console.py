"""``rafka produce`` and ``rafka consume``: the console producer and consumer.

Like kafka-console-producer.sh, each stdin line is a record (``--property parse.key=true`` with
``key.separator`` splits a key off); like kafka-console-consumer.sh, records print one per line with
optional key, offset and timestamp (``--property print.key=true`` ...). With ``--group`` the
consumer joins that consumer group and commits exactly the records it printed, so ``rafka groups``
shows the group and a later ``rafka consume --group`` resumes after them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator

from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.clients.records import ConsumerRecord
from rafka.protocol.types import TopicPartition

JOIN_WAIT_S = 30.0
"""How long ``--timeout-ms`` waits for partitions before it starts counting (a group join)."""


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
    parser.add_argument(
        "--group",
        default=None,
        help="consume as a member of this consumer group and commit what was printed",
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


def records(
    consumer: Consumer,
    max_messages: int | None,
    timeout_ms: int | None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[ConsumerRecord]:
    """Records as they arrive, at most ``max_messages``, until ``timeout_ms`` pass without one.

    Each poll asks for no more records than are still wanted, so the consumer's position (what a
    group commits) never runs ahead of what was handed out. The idle time counts from when the
    consumer has partitions: joining a group (its initial rebalance delay included) is not idleness,
    up to ``JOIN_WAIT_S``.
    """
    timeout_s = float("inf") if timeout_ms is None else timeout_ms / 1000
    count = 0
    started = idle_since = clock()
    while max_messages is None or count < max_messages:
        wanted = None if max_messages is None else max_messages - count
        batch = consumer.poll(timeout_ms=100, max_records=wanted)
        now = clock()
        if batch:
            idle_since = now
        elif not consumer.assignment() and now - started < JOIN_WAIT_S:
            idle_since = now
        elif now - idle_since >= timeout_s:
            return
        for found in batch.values():
            count += len(found)
            yield from found


def _format(record: ConsumerRecord, flags: dict[str, bool], separator: str) -> str:
    fields = []
    if flags["timestamp"]:
        fields.append(f"CreateTime:{record.timestamp}")
    if flags["partition"]:
        fields.append(f"Partition:{record.partition}")
    if flags["offset"]:
        fields.append(f"Offset:{record.offset}")
    if flags["key"]:
        fields.append(record.key.decode(errors="replace") if record.key is not None else "null")
    fields.append(record.value.decode(errors="replace") if record.value is not None else "null")
    return separator.join(fields)


def consume(args: argparse.Namespace, namespace: str) -> int:
    """Print records as they arrive; with ``--group``, as a member of that group, committing them.

    ``--from-beginning`` starts at the earliest offset where the group has no committed one yet, as
    with kafka-console-consumer.sh.
    """
    props = _properties(args.property)
    flags = {
        name: props.get(f"print.{name}", "false") == "true"
        for name in ("key", "offset", "timestamp", "partition")
    }
    separator = props.get("key.separator", "\t")
    if args.group is not None and args.partition is not None:
        raise ValueError("--group and --partition cannot be used together")
    if args.offset is not None and args.partition is None:
        raise ValueError("--offset needs --partition")
    consumer = Consumer(
        namespace=namespace,
        group_id=args.group,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
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
        consumer.subscribe([args.topic])
    count = 0
    try:
        for record in records(consumer, args.max_messages, args.timeout_ms):
            print(_format(record, flags, separator), flush=True)
            count += 1
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()  # in a group: commits the positions, which stop at the last record printed
    print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0
