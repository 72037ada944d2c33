"""``rafka preferred-replica-election``: move leadership back to the preferred replicas, with
kafka-preferred-replica-election.sh's options and output.

Without ``--path-to-json-file`` every partition of the cluster is elected; with it, the partitions
the file names, in Kafka's JSON (``{"partitions": [{"topic": "t", "partition": 0}, ...]}``). A file
that is not that JSON, names a partition twice, or names a topic or partition the cluster does not
have is refused before anything is asked of the controller. A partition whose preferred replica is
down or out of the ISR keeps its leader and is reported with the reason; then, as Kafka's tool
does, the command exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from rafka.actors.zk.data import decode_preferred_replica_election
from rafka.clients.admin import Admin
from rafka.protocol.errors import Errors, UnknownTopicOrPartitionError
from rafka.protocol.messages.admin import ElectLeadersResult
from rafka.protocol.types import ElectionType, TopicPartition, partition_name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka preferred-replica-election`` (Kafka's tool's names)."""
    parser.add_argument(
        "--path-to-json-file",
        type=Path,
        default=None,
        metavar="FILE",
        help='the partitions to elect, as {"partitions": [{"topic": "t", "partition": 0}]} '
        "(default: every partition)",
    )


def read_partitions(path: Path | None) -> list[TopicPartition] | None:
    """The partitions the JSON file names (None without a file); SystemExit names what is wrong
    with the file."""
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SystemExit(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        partitions = decode_preferred_replica_election(data)
    except ValueError as exc:
        raise SystemExit(f"{path}: preferred replica election data is invalid: {exc}") from None
    if not partitions:
        raise SystemExit(f"{path}: preferred replica election data names no partition")
    return partitions


def check(args: argparse.Namespace) -> None:
    """Refuse a bad JSON file before the command connects to a cluster."""
    read_partitions(args.path_to_json_file)


def check_known(admin: Admin, partitions: list[TopicPartition]) -> None:
    """SystemExit naming the first partition the cluster does not have."""
    counts: dict[str, int] = {}
    for tp in partitions:
        if tp.topic not in counts:
            try:
                counts[tp.topic] = len(admin.describe_topic(tp.topic).partitions)
            except UnknownTopicOrPartitionError:
                raise SystemExit(f"topic {tp.topic!r} does not exist") from None
        if tp.partition >= counts[tp.topic]:
            raise SystemExit(
                f"partition {tp.topic}-{tp.partition} does not exist "
                f"(topic {tp.topic!r} has {counts[tp.topic]} partitions)"
            )


def format_results(results: Mapping[TopicPartition, ElectLeadersResult]) -> list[str]:
    """The tool's report: the partitions whose leader moved, those already led by their preferred
    replica, and one line per partition that did not move with the reason."""
    moved = [tp for tp, r in sorted(results.items()) if r.error is Errors.NONE]
    already = [tp for tp, r in sorted(results.items()) if r.error is Errors.ELECTION_NOT_NEEDED]
    lines = []
    if moved:
        lines.append(
            "Successfully started preferred replica election for partitions "
            + ", ".join(map(partition_name, moved))
        )
    if already:
        lines.append(
            "Preferred replica already elected for partitions "
            + ", ".join(map(partition_name, already))
        )
    for tp, result in sorted(results.items()):
        if result.error not in (Errors.NONE, Errors.ELECTION_NOT_NEEDED):
            reason = result.message or result.error.message
            lines.append(
                f"Preferred replica election for partition {tp.topic}-{tp.partition} not done: "
                f"{result.error.name}: {reason}"
            )
    return lines


def run(args: argparse.Namespace, admin: Admin) -> int:
    """Elect the preferred replicas and print the outcome; 1 if some could not lead."""
    partitions = read_partitions(args.path_to_json_file)
    if partitions is not None:
        check_known(admin, partitions)
    results = admin.elect_leaders(ElectionType.PREFERRED, partitions)
    for line in format_results(results):
        print(line)
    failed = sum(r.error not in (Errors.NONE, Errors.ELECTION_NOT_NEEDED) for r in results.values())
    if failed:
        print(f"Error: {failed} preferred replica(s) could not be elected", file=sys.stderr)
        return 1
    return 0
