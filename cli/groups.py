"""``rafka groups``: list, describe, reset the offsets of and delete consumer
groups, with the options of kafka-consumer-groups.sh and the tables it prints.

    rafka groups --list
    rafka groups --describe --group G
    rafka groups --reset-offsets --group G --topic T[:P,P...] --to-earliest [--execute]
    rafka groups --delete --group G
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from rafka.clients.admin import Admin
from rafka.groups.subscription_codec import decode_assignment
from rafka.protocol.errors import GroupIdNotFoundError, UnknownTopicOrPartitionError
from rafka.protocol.messages.groups import GroupDescription, MemberDescription
from rafka.protocol.messages.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from rafka.protocol.types import OffsetAndMetadata, TopicPartition

DESCRIBE_HEADER = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
)
RESET_HEADER = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
INACTIVE_STATES = ("Empty", "Dead")
"""States in which offsets may be reset (Kafka's rule): nobody consumes, or no group yet."""
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka groups`` (kafka-consumer-groups.sh's names)."""
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list every consumer group")
    action.add_argument(
        "--describe",
        action="store_true",
        help="committed offsets, lag and owners of a group's partitions",
    )
    action.add_argument(
        "--reset-offsets",
        action="store_true",
        help="reset a group's offsets (the group must be inactive)",
    )
    action.add_argument(
        "--delete", action="store_true", help="delete an empty group and its offsets"
    )
    parser.add_argument("--group", help="the consumer group")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,P...]",
        help="reset this topic's partitions (all, or those listed); repeatable",
    )
    scope.add_argument(
        "--all-topics", action="store_true", help="reset every partition the group has committed"
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--to-earliest", action="store_true", help="reset to the log start offset")
    target.add_argument(
        "--to-latest", action="store_true", help="reset to the log end offset (high watermark)"
    )
    target.add_argument(
        "--to-datetime",
        metavar="YYYY-MM-DDTHH:MM:SS.sss",
        help=(
            "reset to the first offset at or after this time "
            "(local time unless a zone such as Z is given)"
        ),
    )
    target.add_argument(
        "--to-offset",
        type=int,
        metavar="N",
        help="reset to offset N (kept within the log's bounds)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--dry-run", action="store_true", help="only print the new offsets (the default)"
    )
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns as wide as their widest cell, one space apart, as Kafka's tools."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    return "\n".join(
        " ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    )


def describe_rows(
    description: GroupDescription,
    committed: dict[TopicPartition, OffsetAndMetadata],
    log_end: dict[TopicPartition, int],
) -> list[tuple[str, ...]]:
    """One DESCRIBE_HEADER row per partition the group's members own
    or it has committed, by topic and partition; "-" marks what is
    unknown (no commit, no owner, a topic that no longer exists)."""
    owners = _owners(description)
    rows: list[tuple[str, ...]] = []
    for tp in sorted(set(owners) | set(committed)):
        current = committed[tp].offset if tp in committed else None
        end = log_end.get(tp)
        lag = str(end - current) if current is not None and end is not None else "-"
        member = owners.get(tp)
        rows.append(
            (
                description.group_id,
                tp.topic,
                str(tp.partition),
                _or_dash(current),
                _or_dash(end),
                lag,
                member.member_id if member else "-",
                (member.client_host or "-") if member else "-",
                (member.client_id or "-") if member else "-",
            )
        )
    return rows


def parse_datetime(text: str) -> int:
    """Milliseconds since the epoch of a --to-datetime value,
    YYYY-MM-DDTHH:MM:SS.sss with an optional zone (Z or +hh:mm); without
    one the time is local, as kafka-consumer-groups.sh reads it."""
    try:
        # fromisoformat accepts a trailing Z only from Python 3.11.
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise ValueError(
            f"--to-datetime {text!r} is not of the form YYYY-MM-DDTHH:MM:SS.sss[Z|+hh:mm]"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def check(args: argparse.Namespace) -> None:
    """Refuse options that cannot run, before the command connects to a cluster."""
    if args.list:
        return
    if not args.group:
        raise SystemExit("--describe, --reset-offsets and --delete need --group")
    if args.describe or args.delete:
        return
    if not (args.to_earliest or args.to_latest or args.to_datetime or args.to_offset is not None):
        raise SystemExit(
            "--reset-offsets needs one of --to-earliest, --to-latest, --to-datetime, --to-offset"
        )
    if not (args.topic or args.all_topics):
        raise SystemExit("--reset-offsets needs --topic or --all-topics")


def run(args: argparse.Namespace, admin: Admin) -> int:
    """Execute ``rafka groups``; 1 with a message on stderr when the group is in the wrong state."""
    check(args)
    if args.list:
        for listing in admin.list_groups():
            print(listing.group_id)
        return 0
    if args.describe:
        return describe(admin, args.group)
    if args.delete:
        admin.delete_group(args.group)
        print(f"Deletion of requested consumer groups ('{args.group}') was successful.")
        return 0
    return reset_offsets(admin, args)


def describe(admin: Admin, group_id: str) -> int:
    """Print the group's state line and its partitions' offsets, lag and owners."""
    description = admin.describe_group(group_id)
    if description.state == "Dead":
        raise GroupIdNotFoundError(f"consumer group '{group_id}' does not exist")
    print(
        f"Consumer group '{group_id}' state: {description.state}, members: "
        f"{len(description.members)}, "
        f"assignor: {description.protocol or '-'}, generation: {description.generation_id}"
    )
    if description.state == "Empty":
        print(f"Consumer group '{group_id}' has no active members.")
    elif description.state in REBALANCING_STATES:
        print(f"Warning: Consumer group '{group_id}' is rebalancing.", file=sys.stderr)
    committed = admin.list_group_offsets(group_id)
    partitions = set(committed) | set(_owners(description))
    # A deleted topic's partitions have no leader to ask;
    # they show "-" instead of waiting out the timeout.
    existing = set(admin.list_topics())
    known = sorted(tp for tp in partitions if tp.topic in existing)
    log_end = {
        tp: found.offset for tp, found in admin.list_offsets(known, LATEST_TIMESTAMP).items()
    }
    rows = describe_rows(description, committed, log_end)
    if rows:
        print()
        print(format_table(DESCRIBE_HEADER, rows))
    return 0


def reset_offsets(admin: Admin, args: argparse.Namespace) -> int:
    """Print the new offsets of the chosen partitions, and commit them with --execute."""
    group_id = args.group
    state = admin.describe_group(group_id).state
    if state not in INACTIVE_STATES:
        return _fail(
            f"Assignments can only be reset if the group '{group_id}' is inactive, but the current "
            f"state is {state}."
        )
    partitions = (
        sorted(admin.list_group_offsets(group_id))
        if args.all_topics
        else _topic_partitions(admin, args.topic)
    )
    new_offsets = _new_offsets(admin, partitions, args)
    if args.execute:
        # A member may join between the state check and this commit;
        # the coordinator refuses a commit from outside the group once
        # it has members, so that case fails here instead of racing.
        admin.alter_group_offsets(group_id, new_offsets)
    print(
        format_table(
            RESET_HEADER,
            [
                (group_id, tp.topic, str(tp.partition), str(offset))
                for tp, offset in new_offsets.items()
            ],
        )
    )
    return 0


def _topic_partitions(admin: Admin, specs: list[str]) -> list[TopicPartition]:
    """The partitions named by --topic values: TOPIC for all of them, TOPIC:P,P... for some."""
    chosen: set[TopicPartition] = set()
    for spec in specs:
        topic, _, listed = spec.partition(":")
        existing = {p.partition for p in admin.describe_topic(topic).partitions}
        try:
            wanted = {int(p) for p in listed.split(",")} if listed else existing
        except ValueError:
            raise ValueError(
                f"--topic {spec!r}: partitions must be numbers, as in {topic}:0,1,2"
            ) from None
        missing = sorted(wanted - existing)
        if missing:
            raise UnknownTopicOrPartitionError(
                f"topic {topic!r} has no partition {missing[0]} (it has {len(existing)})"
            )
        chosen.update(TopicPartition(topic, p) for p in wanted)
    return sorted(chosen)


def _new_offsets(
    admin: Admin, partitions: list[TopicPartition], args: argparse.Namespace
) -> dict[TopicPartition, int]:
    """Each partition's new offset under the chosen --to-* scenario."""
    if args.to_earliest:
        return _offsets(admin, partitions, EARLIEST_TIMESTAMP)
    latest = _offsets(admin, partitions, LATEST_TIMESTAMP)
    if args.to_latest:
        return latest
    if args.to_datetime:
        found = _offsets(admin, partitions, parse_datetime(args.to_datetime))
        # No record is that new: Kafka's tool moves to the log end, past every older record.
        return {tp: offset if offset >= 0 else latest[tp] for tp, offset in found.items()}
    earliest = _offsets(admin, partitions, EARLIEST_TIMESTAMP)
    result = {}
    for tp in partitions:
        # Like Kafka's tool, an offset outside the log is clamped to it, with its warning.
        requested = args.to_offset
        if requested < earliest[tp]:
            print(
                f"New offset ({requested}) is lower than earliest offset for topic partition "
                f"{tp.topic}-{tp.partition}. "
                f"Value will be set to {earliest[tp]}",
                file=sys.stderr,
            )
        elif requested > latest[tp]:
            print(
                f"New offset ({requested}) is higher than latest offset for topic partition "
                f"{tp.topic}-{tp.partition}. "
                f"Value will be set to {latest[tp]}",
                file=sys.stderr,
            )
        result[tp] = min(max(requested, earliest[tp]), latest[tp])
    return result


def _owners(description: GroupDescription) -> dict[TopicPartition, MemberDescription]:
    """The member each assigned partition belongs to."""
    return {
        TopicPartition(*tp): member
        for member in description.members
        for tp in decode_assignment(member.assignment)
    }


def _offsets(
    admin: Admin, partitions: list[TopicPartition], timestamp: int
) -> dict[TopicPartition, int]:
    return {tp: found.offset for tp, found in admin.list_offsets(partitions, timestamp).items()}


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 1
