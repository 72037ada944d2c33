"""The partition options of ``rafka topics``: ``--partitions``, ``--replica-assignment`` and
``--disable-rack-aware`` for ``--create``, and ``--alter --partitions N`` to add partitions, as
kafka-topics.sh takes them.

``--replica-assignment 0:1,1:2`` lists, partition by partition, the broker ids of its replicas
separated by ':' (preferred leader first); on ``--create`` it fixes the partition count and the
replication factor, on ``--alter`` it places the added partitions only.
"""

from __future__ import annotations

import argparse
from typing import Any

from rafka.clients.admin import Admin
from rafka.protocol.types import NewPartitions, ReplicaPlacement


def add_partition_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--partitions``, ``--replica-assignment`` and ``--disable-rack-aware``."""
    parser.add_argument(
        "--partitions",
        type=int,
        default=None,
        help="partitions of a new topic (default 1), or the new total with --alter",
    )
    parser.add_argument(
        "--replica-assignment",
        type=parse_replica_assignment,
        default=None,
        metavar="B:B,B:B",
        help="brokers of each partition's replicas, e.g. 0:1,1:2 (partitions separated by ',')",
    )
    parser.add_argument(
        "--disable-rack-aware",
        action="store_true",
        help="place replicas without regard to the brokers' racks",
    )


def parse_replica_assignment(text: str) -> list[list[int]]:
    """``0:1,1:2`` -> ``[[0, 1], [1, 2]]``; a malformed list is an argparse error."""
    try:
        return [[int(b) for b in part.split(":")] for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"replica assignment {text!r} is not broker ids joined by ':' and ','"
        ) from None


def _placement(args: argparse.Namespace) -> ReplicaPlacement:
    return ReplicaPlacement(rack_aware=not args.disable_rack_aware)


def create_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of ``Admin.create_topic`` for ``--create``."""
    assignment = args.replica_assignment
    return {
        "num_partitions": 1 if args.partitions is None else args.partitions,
        "replication_factor": args.replication_factor,
        "replica_assignments": dict(enumerate(assignment)) if assignment else None,
        "placement": _placement(args),
    }


def alter(args: argparse.Namespace, admin: Admin) -> None:
    """``--alter --topic T --partitions N [--replica-assignment ...]``: add partitions."""
    request = NewPartitions(args.partitions, args.replica_assignment)
    admin.create_partitions({args.topic: request}, placement=_placement(args))
    print(f"Topic {args.topic} now has {args.partitions} partitions.")
