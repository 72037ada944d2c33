"""The files and lists ``rafka reassign-partitions`` reads and prints, in Kafka's shapes.

A topics-to-move file is ``{"version":1,"topics":[{"topic":"foo"},...]}``; a reassignment file is
``{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[4,5,6],"log_dirs":[...]}]}``
(``log_dirs`` optional, ``"any"`` for each replica: rafka has one log directory per broker). A
missing ``version`` is 1, as in Kafka. Parsing checks everything before the tool talks to the
cluster, and the first problem found raises ``ReassignmentInputError`` naming the file, the entry
and what is wrong.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rafka.protocol.types import TopicPartition, partition_name

VERSION = 1
"""The only version of both files Kafka's tool reads and writes."""

ANY_LOG_DIR = "any"
"""A replica's ``log_dirs`` entry meaning "wherever the broker puts it"."""


class ReassignmentInputError(ValueError):
    """A reassignment tool input (a file, ``--broker-list``) that cannot be used; nothing was sent
    to the cluster."""


def read_input(path: Path) -> str:
    """The text of an input file; a missing or unreadable one is a ``ReassignmentInputError``."""
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ReassignmentInputError(f"cannot read {path}: {exc}") from None


def _document(text: str, source: str, list_key: str) -> list[Any]:
    """The non-empty list under ``list_key`` of a version-1 JSON object."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReassignmentInputError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ReassignmentInputError(
            f"{source} must hold a JSON object with a {list_key!r} list, not {_kind(document)}"
        )
    version = document.get("version", VERSION)
    if version != VERSION or isinstance(version, bool):
        raise ReassignmentInputError(
            f"{source} has version {json.dumps(version)}; the only supported version is {VERSION}"
        )
    if list_key not in document:
        raise ReassignmentInputError(f"{source} has no {list_key!r} list")
    entries = document[list_key]
    if not isinstance(entries, list):
        raise ReassignmentInputError(f"{source}: {list_key!r} must be a list, not {_kind(entries)}")
    if not entries:
        raise ReassignmentInputError(f"{source}: the {list_key!r} list is empty")
    return entries


def _kind(value: object) -> str:
    """The JSON name of a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _is_id(value: object) -> bool:
    """Whether ``value`` is a JSON integer that can be a partition or broker id."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _topic(entry: object, where: str) -> str:
    """The non-empty ``topic`` string of an entry object."""
    if not isinstance(entry, dict):
        raise ReassignmentInputError(f"{where} must be an object, not {_kind(entry)}")
    topic = entry.get("topic")
    if not isinstance(topic, str) or not topic:
        found = "missing" if topic is None else json.dumps(topic)
        raise ReassignmentInputError(f'{where} needs a non-empty "topic" string (got {found})')
    return topic


def _repeated(items: Iterable[Any]) -> list[Any]:
    """The items that occur more than once, in order of first occurrence."""
    return [item for item, count in Counter(items).items() if count > 1]


def parse_topics_to_move(text: str, source: str) -> list[str]:
    """The topics of a ``--topics-to-move-json-file``, in file order; none may repeat."""
    entries = _document(text, source, "topics")
    topics = [_topic(entry, f"{source}: topics[{i}]") for i, entry in enumerate(entries)]
    repeated = _repeated(topics)
    if repeated:
        raise ReassignmentInputError(
            f"{source}: the list of topics to move names {', '.join(repeated)} more than once"
        )
    return topics


def _replicas(entry: Mapping[str, Any], where: str) -> tuple[int, ...]:
    """An entry's non-empty list of distinct broker ids, its ``log_dirs`` checked against it."""
    replicas = entry.get("replicas")
    if not isinstance(replicas, list):
        found = "missing" if replicas is None else _kind(replicas)
        raise ReassignmentInputError(f'{where} needs a "replicas" list of broker ids ({found})')
    if not replicas:
        raise ReassignmentInputError(f"{where} has an empty replica list")
    bad = [r for r in replicas if not _is_id(r)]
    if bad:
        raise ReassignmentInputError(
            f"{where}: replicas must be broker ids (integers >= 0), not {json.dumps(bad[0])}"
        )
    repeated = _repeated(replicas)
    if repeated:
        raise ReassignmentInputError(
            f"{where}: the replica list {replicas} names broker "
            f"{', '.join(map(str, repeated))} more than once"
        )
    log_dirs = entry.get("log_dirs")
    if log_dirs is not None:
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
            raise ReassignmentInputError(
                f'{where}: "log_dirs" must be a list with one entry per replica '
                f"({len(replicas)}), got {json.dumps(log_dirs)}"
            )
        placed = [d for d in log_dirs if d != ANY_LOG_DIR]
        if placed:
            raise ReassignmentInputError(
                f"{where}: log directory {json.dumps(placed[0])} cannot be chosen: rafka brokers "
                f'have one log directory each, give "{ANY_LOG_DIR}"'
            )
    return tuple(replicas)


def parse_reassignment(text: str, source: str) -> dict[TopicPartition, tuple[int, ...]]:
    """The partitions and target replica lists of a ``--reassignment-json-file``, sorted by topic
    and partition; a partition may appear once."""
    entries = _document(text, source, "partitions")
    found: list[tuple[TopicPartition, tuple[int, ...]]] = []
    for index, entry in enumerate(entries):
        where = f"{source}: partitions[{index}]"
        topic = _topic(entry, where)
        partition = entry.get("partition")
        if not _is_id(partition):
            got = "missing" if partition is None else json.dumps(partition)
            raise ReassignmentInputError(
                f'{where} needs a "partition" number (an integer >= 0, got {got})'
            )
        tp = TopicPartition(topic, partition)
        found.append((tp, _replicas(entry, f"{where} ({partition_name(tp)})")))
    repeated = _repeated(tp for tp, _ in found)
    if repeated:
        raise ReassignmentInputError(
            f"{source}: partition {', '.join(map(partition_name, repeated))} is listed more than "
            "once"
        )
    return dict(sorted(found))


def parse_broker_list(text: str) -> list[int]:
    """``--broker-list 4,5,6`` as broker ids; each must be an integer, none repeated."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ReassignmentInputError("--broker-list is empty: give broker ids like 4,5,6")
    try:
        brokers = [int(item) for item in items]
    except ValueError:
        raise ReassignmentInputError(
            f"--broker-list {text!r} is not broker ids separated by commas"
        ) from None
    if any(b < 0 for b in brokers):
        raise ReassignmentInputError(f"--broker-list {text!r} has a negative broker id")
    repeated = _repeated(brokers)
    if repeated:
        raise ReassignmentInputError(
            f"--broker-list names broker {', '.join(map(str, repeated))} more than once"
        )
    return brokers


def format_reassignment(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's reassignment JSON for ``assignment``, one line, partitions sorted."""
    partitions = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "replicas": list(replicas),
            "log_dirs": [ANY_LOG_DIR] * len(replicas),
        }
        for tp, replicas in sorted(assignment.items())
    ]
    return json.dumps({"version": VERSION, "partitions": partitions}, separators=(",", ":"))
