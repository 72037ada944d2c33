"""``rafka topics``: create, grow, delete, list and describe topics, printing what kafka-topics.sh
prints."""

from __future__ import annotations

import argparse
import re

from rafka.cli.topic_partitions import add_partition_arguments, alter, create_arguments
from rafka.clients.admin import Admin, TopicDescription


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka topics`` (kafka-topics.sh's names)."""
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true", help="create a topic")
    action.add_argument(
        "--delete", action="store_true", help="delete the topics --topic matches (a regex)"
    )
    action.add_argument("--list", action="store_true", help="list topic names")
    action.add_argument("--describe", action="store_true", help="describe one topic, or all")
    action.add_argument(
        "--alter", action="store_true", help="add partitions to a topic (with --partitions)"
    )
    parser.add_argument("--topic", help="the topic")
    add_partition_arguments(parser)
    parser.add_argument(
        "--replication-factor", type=int, default=1, help="replicas of each partition"
    )
    parser.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="a topic config override"
    )


def format_description(description: TopicDescription) -> str:
    """kafka-topics.sh --describe output for one topic."""
    configs = ",".join(f"{k}={v}" for k, v in sorted(description.config.items()))
    rf = len(description.partitions[0].replicas) if description.partitions else 0
    lines = [
        f"Topic: {description.name}\tPartitionCount: {len(description.partitions)}\t"
        f"ReplicationFactor: {rf}\tConfigs: {configs}"
    ]
    for p in description.partitions:
        offline = (
            f"\tOffline: {','.join(map(str, p.offline_replicas))}" if p.offline_replicas else ""
        )
        lines.append(
            f"\tTopic: {description.name}\tPartition: {p.partition}\tLeader: "
            f"{p.leader if p.leader >= 0 else 'none'}\t"
            f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}{offline}"
        )
    return "\n".join(lines)


def matching_topics(pattern: str, topics: list[str]) -> list[str]:
    """The topics whose whole name matches ``pattern`` (kafka-topics' --topic is a regex)."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        return [pattern] if pattern in topics else []
    return [t for t in topics if compiled.fullmatch(t)]


def check(args: argparse.Namespace) -> None:
    """Refuse options that cannot run, before the command connects to a cluster."""
    if args.create and not args.topic:
        raise SystemExit("--create needs --topic")
    if args.alter and (not args.topic or args.partitions is None):
        raise SystemExit("--alter needs --topic and --partitions")
    if args.delete and not args.topic:
        raise SystemExit("--delete needs --topic")


def run(args: argparse.Namespace, admin: Admin) -> int:
    """Execute ``rafka topics``."""
    check(args)
    if args.create:
        config = dict(item.split("=", 1) for item in args.config)
        admin.create_topic(args.topic, config=config, **create_arguments(args))
        print(f"Created topic {args.topic}.")
    elif args.alter:
        alter(args, admin)
    elif args.delete:
        matched = matching_topics(args.topic, admin.list_topics())
        if not matched:
            raise SystemExit(f"Topic '{args.topic}' does not exist as expected")
        admin.delete_topics(matched)
        for name in matched:
            print(f"Topic {name} is marked for deletion.")
    elif args.list:
        for name in admin.list_topics():
            print(name)
    else:
        topics = [args.topic] if args.topic else admin.list_topics()
        print("\n".join(format_description(admin.describe_topic(t)) for t in topics))
    return 0
