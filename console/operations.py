"""The operations the console offers, each a form checked against Kafka's rules and the cluster,
confirmed, then run as a job: create and delete a topic, add partitions, change a topic's configs,
elect preferred leaders, and generate and run a partition reassignment.

An operation is checked twice before it runs: when its form is posted (then the confirmation page
shows what it will do) and again when that page is confirmed, since the cluster may have changed in
between. A check raises ``FormErrors`` with one error text per field, Kafka's own
``NAME (code): message`` (a bad topic name is INVALID_TOPIC_EXCEPTION, a partition count below one
INVALID_PARTITIONS, an unknown config INVALID_CONFIG). Checks use Kafka's own rules where they need
no cluster (a topic name, a config value, the placement of a new topic's replicas on the live
brokers) and otherwise ask the controller to validate the request without carrying it out
(CreateTopics and CreatePartitions with ``validate_only``), so a rejected form changes nothing.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from rafka.actors.broker.dynamic_config import validate_topic_config
from rafka.actors.controller.assignment_plan import new_topic_assignment
from rafka.actors.controller.replica_assignment import validate_topic_name
from rafka.cli.preferred_replica_election import format_results
from rafka.cli.reassign_partitions import measure_progress, propose_assignment, read_statuses
from rafka.cli.reassignment_json import (
    ReassignmentInputError,
    format_reassignment,
    parse_broker_list,
    parse_reassignment,
)
from rafka.cli.reassignment_progress import ReassignmentState, progress_bar
from rafka.clients.admin import TopicDescription
from rafka.console.jobs import Progress
from rafka.console.source import ConsoleAdmin
from rafka.protocol.configs import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
)
from rafka.protocol.errors import (
    Errors,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    RafkaError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.types import (
    ElectionType,
    NewPartitions,
    NewTopic,
    ReplicaPlacement,
    TopicPartition,
    partition_name,
)

R = TypeVar("R")

FORM = ""
"""The "field" of an error about the whole form, shown above its fields."""

Values = Mapping[str, str]
"""A posted form's values by field name."""


class FormErrors(Exception):
    """A form that cannot be carried out: an error text per field (``FORM`` for the whole)."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        super().__init__("; ".join(f"{k or 'form'}: {v}" for k, v in errors.items()))
        self.errors = dict(errors)


@dataclass(frozen=True)
class Field:
    """One input of a form; ``kind`` is an HTML input type, or ``textarea``."""

    name: str
    label: str
    kind: str = "text"
    help: str = ""
    default: str = ""


@dataclass(frozen=True)
class Plan(Generic[R]):
    """A checked form: the request to carry out and, for the confirmation page, what it will do."""

    request: R
    lines: tuple[str, ...]


class Findings:
    """The errors found while checking a form, by field; a Kafka error goes to the field its code
    is about (``fields``), else to the field being checked."""

    def __init__(self, fields: Mapping[Errors, str]) -> None:
        self.fields = fields
        self.errors: dict[str, str] = {}

    def add(self, field: str, exc: RafkaError | ValueError) -> None:
        """Record ``exc`` against its field (the first error of a field is the one shown)."""
        if isinstance(exc, RafkaError):
            field = self.fields.get(exc.error, field)
        self.errors.setdefault(field, str(exc))

    @contextmanager
    def check(self, field: str) -> Iterator[None]:
        """Record a Kafka error raised inside the block against ``field``."""
        try:
            yield
        except RafkaError as exc:
            self.add(field, exc)

    def integer(self, values: Values, field: str, error: type[RafkaError]) -> int | None:
        """The field as an integer; None, with ``error`` recorded, if it is not one."""
        text = values.get(field, "").strip()
        try:
            return int(text)
        except ValueError:
            self.add(
                field, error(f"{field.replace('_', ' ')} must be a whole number, not {text!r}")
            )
            return None

    def raise_any(self) -> None:
        """Raise ``FormErrors`` if anything was found."""
        if self.errors:
            raise FormErrors(self.errors)


def parse_config_lines(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (blank lines skipped) as a mapping; INVALID_CONFIG names a line that is
    not one."""
    configs: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, equals, value = line.partition("=")
        if not equals or not key.strip():
            raise InvalidConfigError(f"{line.strip()!r} is not KEY=VALUE")
        configs[key.strip()] = value.strip()
    return configs


class Operation(ABC, Generic[R]):
    """An operation that changes the cluster: its form, its check and how it runs."""

    kind: ClassVar[str]
    """The operation's name in URLs."""
    title: ClassVar[str]
    fields: ClassVar[tuple[Field, ...]]
    error_fields: ClassVar[Mapping[Errors, str]] = {}
    """The field each Kafka error code is about."""

    def findings(self) -> Findings:
        """An empty set of findings for this operation's fields."""
        return Findings(self.error_fields)

    @abstractmethod
    def check(self, values: Values, admin: ConsoleAdmin) -> Plan[R]:
        """The form's request and what it will do; ``FormErrors`` if it cannot run. Changes
        nothing."""

    @abstractmethod
    def run(self, request: R, admin: ConsoleAdmin, progress: Progress) -> None:
        """Carry the request out, reporting steps; raises what failed."""

    def job_title(self, values: Values) -> str:
        """The title of the job running it."""
        named = values.get("topic") or values.get("name")
        return f"{self.title}: {named}" if named else self.title


RUN_TIMEOUT_MS = 120_000
"""How long a create, grow or delete waits for every broker to take the change up."""

REASSIGNMENT_POLL_S = 1.0
"""How often a running reassignment's progress is read."""

REASSIGNMENT_TIMEOUT_S = 3600.0
"""How long a reassignment job follows the move before it leaves it running in the background."""

TOPIC_FIELD = Field("topic", "Topic")


def _existing(admin: ConsoleAdmin, topic: str, field: str = "topic") -> TopicDescription:
    """The topic's description; FormErrors on ``field`` if there is no such topic."""
    try:
        return admin.describe_topic(topic)
    except UnknownTopicOrPartitionError as exc:
        raise FormErrors({field: str(exc)}) from None


class CreateTopic(Operation[NewTopic]):
    """Create a topic with the controller's placement of its replicas."""

    kind = "create-topic"
    title = "Create topic"
    fields = (
        Field("name", "Topic name", help="ASCII letters, digits, '.', '_' and '-'"),
        Field("partitions", "Partitions", "number", default="1"),
        Field("replication_factor", "Replication factor", "number", default="1"),
        Field("configs", "Config overrides", "textarea", "one KEY=VALUE a line"),
    )
    error_fields: ClassVar[Mapping[Errors, str]] = {
        Errors.INVALID_TOPIC_EXCEPTION: "name",
        Errors.TOPIC_ALREADY_EXISTS: "name",
        Errors.INVALID_PARTITIONS: "partitions",
        Errors.INVALID_REPLICATION_FACTOR: "replication_factor",
        Errors.INVALID_REPLICA_ASSIGNMENT: "replication_factor",
        Errors.INVALID_CONFIG: "configs",
    }

    def check(self, values: Values, admin: ConsoleAdmin) -> Plan[NewTopic]:
        """Kafka's rules for the name, counts and configs, then the controller's dry run."""
        found = self.findings()
        name = values.get("name", "").strip()
        with found.check("name"):
            validate_topic_name(name)
        partitions = found.integer(values, "partitions", InvalidPartitionsError)
        factor = found.integer(values, "replication_factor", InvalidReplicationFactorError)
        configs: dict[str, str] = {}
        with found.check("configs"):
            configs = validate_topic_config(parse_config_lines(values.get("configs", "")))
        topic = None
        if partitions is not None and factor is not None:
            topic = NewTopic(name, partitions, factor, tuple(sorted(configs.items())))
            with found.check("partitions"):
                # The controller's own placement on the live brokers: partition count, replication
                # factor and racks are refused with the errors the controller would give.
                racks = {b.broker_id: b.rack for b in admin.describe_cluster().brokers}
                new_topic_assignment(topic, racks, ReplicaPlacement())
        found.raise_any()
        assert topic is not None  # an unparsed count is a finding, raised just above
        with found.check(FORM):
            admin.create_topics([topic], validate_only=True)
        found.raise_any()
        overrides = ", ".join(f"{k}={v}" for k, v in topic.config) or "none (broker defaults)"
        return Plan(
            topic,
            (
                f"Create topic {name} with {topic.num_partitions} "
                f"partition{_s(topic.num_partitions)} of replication factor "
                f"{topic.replication_factor}.",
                f"Config overrides: {overrides}.",
            ),
        )

    def run(self, request: NewTopic, admin: ConsoleAdmin, progress: Progress) -> None:
        """Create the topic and wait until every partition has a leader."""
        progress.step(f"Asked the controller to create topic {request.name}.")
        admin.create_topics([request], timeout_ms=RUN_TIMEOUT_MS)
        progress.step(f"Created topic {request.name}: every partition has a leader.")


class DeleteTopic(Operation[str]):
    """Delete a topic and its data."""

    kind = "delete-topic"
    title = "Delete topic"
    fields = (TOPIC_FIELD,)

    def check(self, values: Values, admin: ConsoleAdmin) -> Plan[str]:
        """The topic must exist."""
        topic = values.get("topic", "").strip()
        description = _existing(admin, topic)
        count = len(description.partitions)
        return Plan(
            topic,
            (
                f"Delete topic {topic} and the data of its {count} partition{_s(count)}.",
                "This cannot be undone.",
            ),
        )

    def run(self, request: str, admin: ConsoleAdmin, progress: Progress) -> None:
        """Delete the topic and wait until no broker knows it."""
        progress.step(f"Asked the controller to delete topic {request}.")
        admin.delete_topics([request], timeout_ms=RUN_TIMEOUT_MS)
        progress.step(
            f"Topic {request} is deleted: no broker knows it; its data is removed in the "
            "background."
        )


@dataclass(frozen=True)
class Growth:
    """A topic and the partition count to grow it to."""

    topic: str
    total: int


class AddPartitions(Operation[Growth]):
    """Grow a topic to more partitions."""

    kind = "add-partitions"
    title = "Add partitions"
    fields = (TOPIC_FIELD, Field("partitions", "New partition count", "number"))
    error_fields: ClassVar[Mapping[Errors, str]] = {
        Errors.INVALID_PARTITIONS: "partitions",
        Errors.UNKNOWN_TOPIC_OR_PARTITION: "topic",
        Errors.INVALID_REPLICA_ASSIGNMENT: "partitions",
    }

    def check(self, values: Values, admin: ConsoleAdmin) -> Plan[Growth]:
        """The topic must exist and grow; the controller checks it without adding any."""
        found = self.findings()
        topic = values.get("topic", "").strip()
        total = found.integer(values, "partitions", InvalidPartitionsError)
        found.raise_any()
        assert total is not None  # an unparsed count is a finding, raised just above
        current = len(_existing(admin, topic).partitions)
        with found.check(FORM):
            admin.create_partitions({topic: NewPartitions(total)}, validate_only=True)
        found.raise_any()
        return Plan(
            Growth(topic, total),
            (
                f"Grow topic {topic} from {current} to {total} partitions.",
                "Records with keys may then go to other partitions than before.",
            ),
        )

    def run(self, request: Growth, admin: ConsoleAdmin, progress: Progress) -> None:
        """Add the partitions and wait until each has a leader."""
        progress.step(f"Asked the controller to grow {request.topic} to {request.total}.")
        admin.create_partitions({request.topic: NewPartitions(request.total)}, RUN_TIMEOUT_MS)
        progress.step(f"Topic {request.topic} has {request.total} partitions, each led.")


@dataclass(frozen=True)
class ConfigChange:
    """Overrides to set and to remove on a topic."""

    topic: str
    set: Mapping[str, str]
    removed: tuple[str, ...]


class AlterConfigs(Operation[ConfigChange]):
    """Set and remove a topic's config overrides."""

    kind = "alter-configs"
    title = "Change topic configs"
    fields = (
        TOPIC_FIELD,
        Field("set", "Overrides to set", "textarea", "one KEY=VALUE a line"),
        Field("remove", "Overrides to remove", help="names separated by commas"),
    )
    error_fields: ClassVar[Mapping[Errors, str]] = {
        Errors.INVALID_CONFIG: "set",
        Errors.UNKNOWN_TOPIC_OR_PARTITION: "topic",
    }

    def check(self, values: Values, admin: ConsoleAdmin) -> Plan[ConfigChange]:
        """Kafka's rules for each value set; something must change."""
        found = self.findings()
        topic = values.get("topic", "").strip()
        checked: dict[str, str] = {}
        with found.check("set"):
            checked = validate_topic_config(parse_config_lines(values.get("set", "")))
        removed = tuple(k.strip() for k in values.get("remove", "").split(",") if k.strip())
        if not checked and not removed and not found.errors:
            found.add(
                "set", InvalidConfigError("nothing to change: give overrides to set or remove")
            )
        found.raise_any()
        _existing(admin, topic)
        lines = [f"Set {k}={v} on topic {topic}." for k, v in checked.items()]
        lines += [f"Remove the override of {k} on topic {topic}." for k in removed]
        return Plan(ConfigChange(topic, checked, removed), tuple(lines))

    def run(self, request: ConfigChange, admin: ConsoleAdmin, progress: Progress) -> None:
        """Apply the changes; the brokers take them up from the change notification."""
        ops = {k: AlterConfigOp(AlterConfigOpType.SET, v) for k, v in request.set.items()}
        ops.update({k: AlterConfigOp(AlterConfigOpType.DELETE) for k in request.removed})
        admin.incremental_alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, request.topic, ops)]
        )
        progress.step(f"Completed updating config for topic {request.topic}.")


class ElectLeaders(Operation[list[TopicPartition] | None]):
    """Move leadership back to each partition's preferred replica."""

    kind = "elect-leaders"
    title = "Preferred replica election"
    fields = (Field("topic", "Topic", help="leave empty for every partition of the cluster"),)

    def check(self, values: Values, admin: ConsoleAdmin) -> Plan[list[TopicPartition] | None]:
        """The topic, if one is named, must exist."""
        topic = values.get("topic", "").strip()
        if not topic:
            return Plan(None, ("Elect the preferred leader of every partition of the cluster.",))
        partitions = _existing(admin, topic).partitions
        elsewhere = sum(1 for p in partitions if p.replicas and p.leader != p.replicas[0])
        return Plan(
            [TopicPartition(topic, p.partition) for p in partitions],
            (
                f"Elect the preferred leader of the {len(partitions)} partitions of {topic}.",
                f"{elsewhere} of them are led by another replica now.",
            ),
        )

    def run(
        self, request: list[TopicPartition] | None, admin: ConsoleAdmin, progress: Progress
    ) -> None:
        """Elect, and report each partition as Kafka's tool does; fails if some could not move."""
        results = admin.elect_leaders(ElectionType.PREFERRED, request)
        for line in format_results(results):
            progress.step(line)
        failed = sum(
            r.error not in (Errors.NONE, Errors.ELECTION_NOT_NEEDED) for r in results.values()
        )
        if failed:
            raise RuntimeError(f"{failed} preferred replica(s) could not be elected")


Target = Mapping[TopicPartition, tuple[int, ...]]


class ReassignPartitions(Operation[Target]):
    """Run a partition reassignment (Kafka's reassignment JSON), following it until it ends."""

    kind = "reassign-partitions"
    title = "Reassign partitions"
    fields = (
        Field(
            "plan",
            "Reassignment JSON",
            "textarea",
            '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}',
        ),
    )

    def check(self, values: Values, admin: ConsoleAdmin) -> Plan[Target]:
        """The JSON must parse and name existing partitions; the controller checks the brokers."""
        try:
            target = parse_reassignment(values.get("plan", ""), "the reassignment JSON")
        except ReassignmentInputError as exc:
            raise FormErrors({"plan": str(exc)}) from None
        lines = []
        for topic in sorted({tp.topic for tp in target}):
            current = {p.partition: p.replicas for p in _existing(admin, topic, "plan").partitions}
            for tp in sorted(t for t in target if t.topic == topic):
                if tp.partition not in current:
                    error = UnknownTopicOrPartitionError(
                        f"topic {topic!r} has no partition {tp.partition} (it has {len(current)})"
                    )
                    raise FormErrors({"plan": str(error)})
                lines.append(
                    f"Move {partition_name(tp)} from replicas {list(current[tp.partition])} to "
                    f"{list(target[tp])}."
                )
        return Plan(target, tuple(lines))

    def run(self, request: Target, admin: ConsoleAdmin, progress: Progress) -> None:
        """Start the reassignment, then report the bytes copied until no partition moves."""
        admin.alter_partition_reassignments(request)
        progress.step(f"Started the reassignment of {len(request)} partition{_s(len(request))}.")
        deadline = time.monotonic() + REASSIGNMENT_TIMEOUT_S
        reading = read_statuses(admin, request)
        while reading.count(ReassignmentState.IN_PROGRESS):
            copied = measure_progress(admin, reading)
            progress.fraction(copied.fraction)
            progress.status(progress_bar(copied))
            if time.monotonic() > deadline:
                raise TimeoutError(
                    "the reassignment is still running; follow it with rafka reassign-partitions "
                    "--verify"
                )
            time.sleep(REASSIGNMENT_POLL_S)
            reading = read_statuses(admin, request)
        for status in reading.statuses:
            progress.step(status.describe())
        failed = reading.count(ReassignmentState.FAILED)
        if failed:
            raise RuntimeError(f"the reassignment of {failed} partition{_s(failed)} failed")


def generate_reassignment(values: Values, admin: ConsoleAdmin) -> str:
    """Kafka's reassignment JSON placing the topics of ``values["topics"]`` (comma-separated) on
    the brokers of ``values["brokers"]``, as topic creation would place them (rack-aware when the
    brokers have racks); ``FormErrors`` on the field that is wrong. Changes nothing."""
    topics = sorted({t.strip() for t in values.get("topics", "").split(",") if t.strip()})
    if not topics:
        raise FormErrors({"topics": "give the topics to move, separated by commas"})
    try:
        brokers = parse_broker_list(values.get("brokers", ""))
    except ReassignmentInputError as exc:
        raise FormErrors({"brokers": str(exc)}) from None
    live = {b.broker_id: b.rack for b in admin.describe_cluster().brokers}
    unknown = sorted(set(brokers) - set(live))
    if unknown:
        error = Errors.BROKER_NOT_AVAILABLE.exception(
            f"brokers {unknown} are not live; live brokers are {sorted(live)}"
        )
        raise FormErrors({"brokers": str(error)})
    current = {
        TopicPartition(topic, p.partition): p.replicas
        for topic in topics
        for p in _existing(admin, topic, "topics").partitions
    }
    try:
        proposed = propose_assignment(current, {b: live[b] for b in brokers})
    except (ValueError, RafkaError) as exc:
        raise FormErrors({"brokers": str(exc)}) from None
    return format_reassignment(proposed)


def _s(count: int) -> str:
    return "" if count == 1 else "s"


OPERATIONS: dict[str, Operation[Any]] = {
    op.kind: op
    for op in (
        CreateTopic(),
        DeleteTopic(),
        AddPartitions(),
        AlterConfigs(),
        ElectLeaders(),
        ReassignPartitions(),
    )
}
"""Every operation by its name in URLs."""
