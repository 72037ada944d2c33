"""``rafka reassign-partitions``: move partition replicas between brokers, with the options, files
and output of kafka-reassign-partitions.sh.

``--generate`` proposes a reassignment of the topics in a topics-to-move file onto the brokers of
``--broker-list``, placed by the same rack-aware algorithm as topic creation; ``--execute`` prints
the current assignment (the rollback file), starts the reassignment of a reassignment file and, with
``--throttle``, limits its replication traffic; ``--verify`` reports each partition as complete, in
progress or failed, shows how many bytes the new replicas have copied, waits for the end with
``--wait``, and removes the throttle once nothing listed is still moving.

Every input is checked before anything is changed: the files (``reassignment_json``), then the
topics, partitions and brokers they name against the cluster.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from rafka.actors.controller.replica_assignment import assign_replicas, broker_racks
from rafka.cli.reassignment_json import (
    format_reassignment,
    parse_broker_list,
    parse_reassignment,
    parse_topics_to_move,
    read_input,
)
from rafka.cli.reassignment_progress import (
    CopyProgress,
    PartitionStatus,
    ProgressLine,
    ReassignmentState,
    copy_progress,
    partition_status,
    progress_bar,
    status_report,
)
from rafka.cli.reassignment_throttle import (
    PartitionMove,
    Throttle,
    partition_moves,
    plan_throttle,
    removal_lines,
    throttle_removals,
)
from rafka.clients.admin import ClusterDescription, TopicDescription
from rafka.protocol.configs import ConfigResource, ConfigResourceType
from rafka.protocol.errors import Errors, RafkaError, UnknownTopicOrPartitionError
from rafka.protocol.messages.admin import LogDirDescription, PartitionReassignment
from rafka.protocol.messages.configs import AlterConfigsResult, DescribeConfigsResult
from rafka.protocol.messages.metadata import PartitionMetadata
from rafka.protocol.types import TopicPartition, partition_name

DEFAULT_POLL_INTERVAL_MS = 1_000
"""How often ``--verify --wait`` looks again."""

SETTLE_S = 1.0
"""How long a partition that looks failed is given before it is reported so: the controller may have
just finished it while the brokers' metadata still shows the replicas it had."""

ROLLBACK_NOTE = "Save this to use as the --reassignment-json-file option during rollback"
THROTTLE_WARNING = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
    "throttle is removed."
)
RUNNING_ELSEWHERE = (
    "Cannot execute because there is an existing partition assignment. Use --additional to "
    "override this and create a new partition assignment in addition to the existing one."
)

ONLY_WITH = {
    "topics_to_move_json_file": ("generate",),
    "broker_list": ("generate",),
    "disable_rack_aware": ("generate",),
    "reassignment_json_file": ("execute", "verify"),
    "throttle": ("execute",),
    "additional": ("execute",),
    "wait": ("verify",),
    "wait_timeout_ms": ("verify",),
    "poll_interval_ms": ("verify",),
    "preserve_throttles": ("verify",),
}
"""Each option and the actions it applies to."""


class ReassignmentAdmin(Protocol):
    """The admin client calls the tool makes (``Admin``'s, or a fake's in tests)."""

    def describe_cluster(self, /) -> ClusterDescription:
        """Live brokers and the controller."""

    def describe_topic(self, name: str, /) -> TopicDescription:
        """A topic's partitions; UNKNOWN_TOPIC_OR_PARTITION if there is none."""

    def describe_configs(
        self, config_resources: Sequence[ConfigResource], /
    ) -> list[DescribeConfigsResult]:
        """Every config of each resource with its source."""

    def incremental_alter_configs(
        self, config_resources: Sequence[ConfigResource], /
    ) -> list[AlterConfigsResult]:
        """Apply each resource's ``AlterConfigOp``s."""

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int]], /
    ) -> None:
        """Start reassigning each partition to its replica list."""

    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None, /
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress (of ``partitions``, or all)."""

    def describe_log_dirs(
        self, brokers: Collection[int] | None = None, /
    ) -> dict[int, tuple[LogDirDescription, ...]]:
        """Each broker's log directories and the size of each replica's log in them."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka reassign-partitions`` (kafka-reassign-partitions.sh's names)."""
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--generate", action="store_true", help="propose a reassignment of topics onto brokers"
    )
    action.add_argument(
        "--execute", action="store_true", help="start the reassignment of a reassignment file"
    )
    action.add_argument(
        "--verify", action="store_true", help="report how the reassignment of a file stands"
    )
    parser.add_argument(
        "--topics-to-move-json-file",
        type=Path,
        metavar="FILE",
        help='with --generate: {"version":1,"topics":[{"topic":"foo"}]}',
    )
    parser.add_argument(
        "--broker-list", metavar="4,5,6", help="with --generate: the brokers to move onto"
    )
    parser.add_argument(
        "--disable-rack-aware",
        action="store_true",
        help="with --generate: place replicas without regard to the brokers' racks",
    )
    parser.add_argument(
        "--reassignment-json-file",
        type=Path,
        metavar="FILE",
        help='{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[4,5,6]}]}',
    )
    parser.add_argument(
        "--throttle",
        type=int,
        metavar="BYTES_PER_S",
        help="with --execute: limit the replication the move causes to this rate on each broker",
    )
    parser.add_argument(
        "--additional",
        action="store_true",
        help="with --execute: start even though other reassignments are in progress",
    )
    parser.add_argument(
        "--wait", action="store_true", help="with --verify: wait until the reassignment is done"
    )
    parser.add_argument(
        "--wait-timeout-ms",
        type=int,
        metavar="MS",
        help="with --verify --wait: give up (exit 1) after this long (default: wait on)",
    )
    parser.add_argument(
        "--poll-interval-ms",
        type=int,
        metavar="MS",
        help=f"with --verify --wait: time between two looks (default {DEFAULT_POLL_INTERVAL_MS})",
    )
    parser.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="with --verify: keep the throttle when the reassignment is done",
    )


def _option(dest: str) -> str:
    return "--" + dest.replace("_", "-")


@dataclass(frozen=True)
class Inputs:
    """What the command line and its files ask for, checked: the topics to move and the brokers
    to move them onto (``--generate``), or the reassignment's target replica lists."""

    topics: tuple[str, ...] = ()
    brokers: tuple[int, ...] = ()
    target: Mapping[TopicPartition, tuple[int, ...]] = field(default_factory=dict)


def check(args: argparse.Namespace) -> Inputs:
    """Refuse options that cannot run and files that cannot be used, before the command connects
    to a cluster; return what they ask for."""
    chosen = next(a for a in ("generate", "execute", "verify") if getattr(args, a))
    for dest, actions in ONLY_WITH.items():
        value = getattr(args, dest)
        if value not in (None, False) and chosen not in actions:
            allowed = " and ".join(_option(a) for a in actions)
            raise SystemExit(f"{_option(dest)} applies to {allowed} only")
    if args.generate and (args.topics_to_move_json_file is None or args.broker_list is None):
        raise SystemExit("--generate needs --topics-to-move-json-file and --broker-list")
    if not args.generate and args.reassignment_json_file is None:
        raise SystemExit(f"--{chosen} needs --reassignment-json-file")
    if args.throttle is not None and args.throttle <= 0:
        raise SystemExit(f"--throttle must be a positive rate in bytes/s, not {args.throttle}")
    if args.wait_timeout_ms is not None and not args.wait:
        raise SystemExit("--wait-timeout-ms needs --wait")
    for dest in ("wait_timeout_ms", "poll_interval_ms"):
        value = getattr(args, dest)
        if value is not None and value <= 0:
            raise SystemExit(f"{_option(dest)} must be positive, not {value}")
    if args.generate:
        path: Path = args.topics_to_move_json_file
        topics = parse_topics_to_move(read_input(path), str(path))
        return Inputs(tuple(topics), tuple(parse_broker_list(args.broker_list)))
    path = args.reassignment_json_file
    return Inputs(target=parse_reassignment(read_input(path), str(path)))


def run(
    args: argparse.Namespace,
    admin: ReassignmentAdmin,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> int:
    """Execute ``rafka reassign-partitions``: 0 on success, 1 if a verified partition failed."""
    inputs = check(args)
    if args.generate:
        generate(args, inputs, admin, rng)
        return 0
    if args.execute:
        execute(args, inputs.target, admin)
        return 0
    return verify(args, inputs.target, admin, clock, sleep)


def _live_brokers(admin: ReassignmentAdmin) -> dict[int, str | None]:
    """Live broker id -> its rack."""
    return {b.broker_id: b.rack for b in admin.describe_cluster().brokers}


def _check_brokers(brokers: Iterable[int], live: Collection[int], where: str) -> None:
    unknown = sorted(set(brokers) - set(live))
    if unknown:
        raise LookupError(
            f"{where} names unknown broker{'s' if len(unknown) > 1 else ''} "
            f"{','.join(map(str, unknown))} (live brokers: {','.join(map(str, sorted(live)))})"
        )


def _partitions(
    admin: ReassignmentAdmin, topics: Iterable[str]
) -> dict[str, dict[int, PartitionMetadata]]:
    """Each existing topic's partitions by id; topics that do not exist are left out."""
    found = {}
    for topic in sorted(set(topics)):
        try:
            description = admin.describe_topic(topic)
        except UnknownTopicOrPartitionError:
            continue
        found[topic] = {p.partition: p for p in description.partitions}
    return found


def _nonexistent(kind: str, names: Sequence[str]) -> str:
    """``a topic that does not exist: x`` or ``topics that do not exist: x, y``."""
    if len(names) == 1:
        return f"a {kind} that does not exist: {names[0]}"
    return f"{kind}s that do not exist: {', '.join(names)}"


def _existing_partitions(
    admin: ReassignmentAdmin, topics: Iterable[str], source: str
) -> dict[str, dict[int, PartitionMetadata]]:
    """Like ``_partitions``, but a topic that does not exist is an error naming ``source``."""
    wanted = sorted(set(topics))
    found = _partitions(admin, wanted)
    missing = [t for t in wanted if t not in found]
    if missing:
        raise LookupError(f"{source} names {_nonexistent('topic', missing)}")
    return found


def propose_assignment(
    current: Mapping[TopicPartition, Sequence[int]],
    racks: Mapping[int, str | None],
    rack_aware: bool = True,
    rng: random.Random | None = None,
) -> dict[TopicPartition, tuple[int, ...]]:
    """Each topic of ``current`` placed anew on the brokers ``racks`` (id -> rack) with its
    partition count and replication factor, as topic creation places a topic."""
    placement_racks = broker_racks(racks, rack_aware)
    by_topic: dict[str, dict[int, Sequence[int]]] = {}
    for tp, replicas in current.items():
        by_topic.setdefault(tp.topic, {})[tp.partition] = replicas
    proposed: dict[TopicPartition, tuple[int, ...]] = {}
    for topic, partitions in sorted(by_topic.items()):
        factor = len(partitions[min(partitions)])
        if factor > len(racks):
            raise ValueError(
                f"topic {topic} has replication factor {factor}, more than the {len(racks)} "
                "brokers of --broker-list"
            )
        placed = assign_replicas(placement_racks, len(partitions), factor, rng=rng)
        proposed.update({TopicPartition(topic, p): r for p, r in placed.items()})
    return proposed


def generate(
    args: argparse.Namespace,
    inputs: Inputs,
    admin: ReassignmentAdmin,
    rng: random.Random | None = None,
) -> dict[TopicPartition, tuple[int, ...]]:
    """``--generate``: print the topics' current assignment and a proposed one; return the
    proposal."""
    live = _live_brokers(admin)
    _check_brokers(inputs.brokers, live, "--broker-list")
    source = str(args.topics_to_move_json_file)
    described = _existing_partitions(admin, inputs.topics, source)
    current = {
        TopicPartition(topic, p): described[topic][p].replicas
        for topic in inputs.topics
        for p in described[topic]
    }
    proposed = propose_assignment(
        current, {b: live[b] for b in inputs.brokers}, not args.disable_rack_aware, rng
    )
    print(f"Current partition replica assignment\n{format_reassignment(current)}\n")
    print(f"Proposed partition reassignment configuration\n{format_reassignment(proposed)}")
    return proposed


def _current_replicas(
    admin: ReassignmentAdmin, partitions: Collection[TopicPartition], source: str
) -> dict[TopicPartition, tuple[int, ...]]:
    """The replicas each partition has now; a topic or partition that does not exist is an
    error naming ``source``."""
    described = _existing_partitions(admin, {tp.topic for tp in partitions}, source)
    missing = [tp for tp in sorted(partitions) if tp.partition not in described[tp.topic]]
    if missing:
        names = [partition_name(tp) for tp in missing]
        raise LookupError(f"{source} names {_nonexistent('partition', names)}")
    return {tp: described[tp.topic][tp.partition].replicas for tp in partitions}


def execute(
    args: argparse.Namespace,
    target: Mapping[TopicPartition, tuple[int, ...]],
    admin: ReassignmentAdmin,
) -> None:
    """``--execute``: check ``target`` against the cluster, print the rollback file, set the
    throttle if one is given (before any replica starts copying, as Kafka's tool does), then start
    the reassignment; a refused start takes the throttle away again."""
    source = str(args.reassignment_json_file)
    _check_brokers({b for r in target.values() for b in r}, _live_brokers(admin), source)
    current = _current_replicas(admin, target, source)
    running = admin.list_partition_reassignments()
    busy = sorted(tp for tp in running if tp in target)
    if busy:
        raise Errors.REASSIGNMENT_IN_PROGRESS.exception(
            f"partition{'s' if len(busy) > 1 else ''} {', '.join(map(partition_name, busy))} "
            "already being reassigned; wait until --verify reports it done"
        )
    if running and not args.additional:
        raise RuntimeError(RUNNING_ELSEWHERE)
    print(f"Current partition replica assignment\n\n{format_reassignment(current)}\n")
    print(ROLLBACK_NOTE)
    throttle = None
    if args.throttle is not None:
        print(THROTTLE_WARNING)
        throttle = _set_throttle(admin, partition_moves(current, target), args.throttle)
    try:
        admin.alter_partition_reassignments(target)
    except RafkaError:
        if throttle is not None:
            admin.incremental_alter_configs(throttle.removals())
        raise
    plural = "s" if len(target) > 1 else ""
    print(
        f"Successfully started partition reassignment{plural} for "
        f"{','.join(map(partition_name, target))}",
        flush=True,
    )


def _set_throttle(
    admin: ReassignmentAdmin, moves: Mapping[TopicPartition, PartitionMove], rate: int
) -> Throttle | None:
    """Set the throttle of ``moves``; the one set, or None when no partition gains a replica."""
    throttle = plan_throttle(moves, rate)
    if not throttle.brokers:
        print("No partition gains a replica: no throttle was set.")
        return None
    admin.incremental_alter_configs(throttle.resources())
    print(f"The inter-broker throttle limit was set to {rate} B/s")
    return throttle


@dataclass(frozen=True)
class VerifyReading:
    """One look at the partitions of a reassignment file: each one's status, the reassignments
    the controller is running among them, and their leaders."""

    statuses: tuple[PartitionStatus, ...]
    reassignments: Mapping[TopicPartition, PartitionReassignment]
    leaders: Mapping[TopicPartition, int]

    def count(self, state: ReassignmentState) -> int:
        """How many partitions are in ``state``."""
        return sum(1 for s in self.statuses if s.state is state)


def read_statuses(
    admin: ReassignmentAdmin, target: Mapping[TopicPartition, Sequence[int]]
) -> VerifyReading:
    """Where the reassignment of each partition of ``target`` stands."""
    running = admin.list_partition_reassignments(list(target))
    described = _partitions(admin, {tp.topic for tp in target})
    found = {
        TopicPartition(topic, p): metadata
        for topic, partitions in described.items()
        for p, metadata in partitions.items()
    }
    statuses = tuple(
        partition_status(tp, replicas, found[tp].replicas if tp in found else None, tp in running)
        for tp, replicas in sorted(target.items())
    )
    reassignments = {tp: r for tp, r in running.items() if tp in target}
    leaders = {tp: found[tp].leader for tp in reassignments if tp in found}
    return VerifyReading(statuses, reassignments, leaders)


def measure_progress(admin: ReassignmentAdmin, reading: VerifyReading) -> CopyProgress:
    """How much the replicas being added have copied, from the log sizes on their live brokers
    (a dead broker's replica counts as holding nothing)."""
    wanted = {b for r in reading.reassignments.values() for b in r.replicas}
    brokers = sorted(wanted & set(_live_brokers(admin)))
    log_dirs = admin.describe_log_dirs(brokers) if brokers else {}
    return copy_progress(reading.reassignments, reading.leaders, log_dirs)


def verify(
    args: argparse.Namespace,
    target: Mapping[TopicPartition, tuple[int, ...]],
    admin: ReassignmentAdmin,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """``--verify``: report each partition of ``target``, the copy progress while any is in
    progress (redrawn until the end with ``--wait``), and remove the throttle once none is. 1 if
    any failed."""
    deadline = None if args.wait_timeout_ms is None else clock() + args.wait_timeout_ms / 1000
    interval_s = (args.poll_interval_ms or DEFAULT_POLL_INTERVAL_MS) / 1000
    line = ProgressLine(sys.stdout)
    reading = read_statuses(admin, target)
    while args.wait and reading.count(ReassignmentState.IN_PROGRESS):
        line.draw(progress_bar(measure_progress(admin, reading)))
        if deadline is not None and clock() >= deadline:
            break
        sleep(interval_s)
        reading = read_statuses(admin, target)
    line.end()
    if reading.count(ReassignmentState.FAILED):
        sleep(SETTLE_S)
        reading = read_statuses(admin, target)
    print(status_report(reading.statuses))
    pending = reading.count(ReassignmentState.IN_PROGRESS)
    if pending and args.wait:
        raise TimeoutError(
            f"{pending} partition{'s' if pending > 1 else ''} still being reassigned after "
            f"--wait-timeout-ms {args.wait_timeout_ms}"
        )
    if pending:
        print(progress_bar(measure_progress(admin, reading)))
    elif not args.preserve_throttles:
        _clear_throttle(admin, reading)
    return 1 if reading.count(ReassignmentState.FAILED) else 0


def _clear_throttle(admin: ReassignmentAdmin, reading: VerifyReading) -> None:
    """Remove the throttle overrides from every live broker and the file's existing topics."""
    brokers = sorted(_live_brokers(admin))
    topics = sorted({s.partition.topic for s in reading.statuses if s.current is not None})
    resources = [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in brokers]
    resources.extend(ConfigResource(ConfigResourceType.TOPIC, t) for t in topics)
    removals = throttle_removals(admin.describe_configs(resources))
    if removals:
        admin.incremental_alter_configs(removals)
    for text in removal_lines(removals):
        print(text)
