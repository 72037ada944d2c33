"""``rafka log-dirs --describe [--broker-list 1,2] [--topic-list t1,t2]``: each broker's log
directories and the size and offset lag of every replica in them, printed as kafka-log-dirs.sh
prints them: two progress lines, then one line of JSON
(``{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":…,"error":null,"partitions":[…]}]}]}``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection, Mapping

from rafka.clients.admin import Admin
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import LogDirDescription


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka log-dirs`` (kafka-log-dirs.sh's names)."""
    parser.add_argument(
        "--describe", action="store_true", required=True, help="describe the log directories"
    )
    parser.add_argument(
        "--broker-list",
        type=parse_id_list,
        default=None,
        metavar="1,2",
        help="brokers to query (default: every live broker)",
    )
    parser.add_argument(
        "--topic-list",
        default="",
        metavar="T1,T2",
        help="topics whose partitions to list (default: every topic)",
    )


def parse_id_list(text: str) -> list[int]:
    """``0,1,2`` as broker ids; anything else is a usage error naming the bad item."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    bad = [item for item in items if not item.isdigit()]
    if bad or not items:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of broker ids like 0,1,2")
    return [int(item) for item in items]


def format_json(
    descriptions: Mapping[int, tuple[LogDirDescription, ...]], topics: Collection[str] = ()
) -> str:
    """Kafka's JSON for the log directories of each broker (only ``topics``' partitions if any)."""
    brokers = []
    for broker_id, dirs in sorted(descriptions.items()):
        log_dirs = []
        for description in dirs:
            error = (
                None
                if description.error is Errors.NONE
                else description.error.exception_class.__name__
            )
            partitions = [
                {
                    "partition": f"{tp.topic}-{tp.partition}",
                    "size": info.size,
                    "offsetLag": info.offset_lag,
                    "isFuture": info.is_future,
                }
                for tp, info in sorted(description.replicas.items())
                if not topics or tp.topic in topics
            ]
            log_dirs.append({"logDir": description.path, "error": error, "partitions": partitions})
        brokers.append({"broker": broker_id, "logDirs": log_dirs})
    return json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":"))


def run(args: argparse.Namespace, admin: Admin) -> int:
    """Execute ``rafka log-dirs --describe``."""
    topics = {t.strip() for t in args.topic_list.split(",") if t.strip()}
    print("Querying brokers for log directories information")
    descriptions = admin.describe_log_dirs(args.broker_list)
    print(
        "Received log directory information from brokers "
        + ",".join(str(b) for b in sorted(descriptions))
    )
    print(format_json(descriptions, topics))
    return 0
