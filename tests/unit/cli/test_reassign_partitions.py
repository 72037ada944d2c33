"""``rafka reassign-partitions`` against an admin client faked at its boundary: what each action
prints, asks the cluster and changes, and that bad input changes nothing."""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rafka.actors.controller.replica_assignment import assign_replicas
from rafka.cli.main import build_parser, main
from rafka.cli.reassign_partitions import SETTLE_S, propose_assignment, run
from rafka.cli.reassignment_json import parse_reassignment
from rafka.cli.reassignment_throttle import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
)
from rafka.clients.admin import ClusterDescription, TopicDescription
from rafka.protocol.configs import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
)
from rafka.protocol.errors import (
    Errors,
    InvalidConfigError,
    RafkaError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.admin import (
    LogDirDescription,
    PartitionReassignment,
    ReplicaLogDirInfo,
)
from rafka.protocol.messages.configs import AlterConfigsResult, DescribeConfigsResult
from rafka.protocol.messages.metadata import BrokerMetadata, PartitionMetadata
from rafka.protocol.types import TopicPartition

FOO0, FOO1, FOO2 = (TopicPartition("foo", p) for p in range(3))
SEED_TARGET = {FOO0: (4, 5, 6)}
"""Seed 000's example: the partition on brokers 1, 2, 3 moves to 4, 5, 6."""
INVALID_ASSIGNMENT = Errors.INVALID_REPLICA_ASSIGNMENT.exception_class


def kind(resource: ConfigResource) -> ConfigResourceType:
    """A resource's type as the enum (``ConfigResource`` turns a given name into it)."""
    is_topic = resource.resource_type is ConfigResourceType.TOPIC
    return ConfigResourceType.TOPIC if is_topic else ConfigResourceType.BROKER


@dataclass
class FakeAdmin:
    """A cluster as the admin client sees it: live brokers, topics, running reassignments, log
    sizes and config overrides; records every call that would change something."""

    topics: dict[str, dict[int, tuple[int, ...]]]
    brokers: dict[int, str | None] = field(default_factory=lambda: dict.fromkeys(range(1, 7)))
    reassignments: dict[TopicPartition, PartitionReassignment] = field(default_factory=dict)
    sizes: dict[tuple[TopicPartition, int], int] = field(default_factory=dict)
    overrides: dict[tuple[ConfigResourceType, str], dict[str, str]] = field(default_factory=dict)
    changes: list[tuple[str, object]] = field(default_factory=list)
    refuse_configs: bool = False
    refuse_reassignment: RafkaError | None = None

    def describe_cluster(self) -> ClusterDescription:
        found = tuple(
            BrokerMetadata(b, "127.0.0.1", f"node-{b}", rack) for b, rack in self.brokers.items()
        )
        return ClusterDescription("fake", min(self.brokers), found)

    def describe_topic(self, name: str) -> TopicDescription:
        if name not in self.topics:
            raise UnknownTopicOrPartitionError(f"topic {name!r}: no such topic")
        partitions = tuple(
            PartitionMetadata(p, replicas[0], 0, replicas, replicas)
            for p, replicas in sorted(self.topics[name].items())
        )
        return TopicDescription(name, partitions)

    def describe_configs(self, resources: Sequence[ConfigResource]) -> list[DescribeConfigsResult]:
        results = []
        for resource in resources:
            assert resource.resource_type is not ConfigResourceType.TOPIC or (
                resource.name in self.topics
            ), "a topic that does not exist cannot be described"
            source = (
                ConfigSource.TOPIC_CONFIG
                if resource.resource_type is ConfigResourceType.TOPIC
                else ConfigSource.DYNAMIC_BROKER_CONFIG
            )
            values = self.overrides.get((kind(resource), resource.name), {})
            entries = tuple(
                ConfigEntry(k, v, source, synonyms=(ConfigSynonym(k, v, source),))
                for k, v in sorted(values.items())
            )
            results.append(DescribeConfigsResult(resource, Errors.NONE, None, entries))
        return results

    def incremental_alter_configs(
        self, resources: Sequence[ConfigResource]
    ) -> list[AlterConfigsResult]:
        if self.refuse_configs:
            raise InvalidConfigError("unknown broker config leader.replication.throttled.rate")
        self.changes.append(("configs", list(resources)))
        for resource in resources:
            key = (kind(resource), resource.name)
            values = self.overrides.setdefault(key, {})
            for name, op in (resource.configs or {}).items():
                assert isinstance(op, AlterConfigOp)
                if op.op_type is AlterConfigOpType.SET:
                    values[name] = str(op.value)
                else:
                    values.pop(name, None)
        return [AlterConfigsResult(r, Errors.NONE) for r in resources]

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        if self.refuse_reassignment is not None:
            raise self.refuse_reassignment
        self.changes.append(("reassign", dict(reassignments)))
        for tp, target in reassignments.items():
            current = self.topics[tp.topic][tp.partition]
            adding = tuple(b for b in target if b not in current)
            removing = tuple(b for b in current if b not in target)
            self.reassignments[tp] = PartitionReassignment((*current, *adding), adding, removing)
            self.topics[tp.topic][tp.partition] = (*current, *adding)

    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        return {
            tp: r for tp, r in self.reassignments.items() if partitions is None or tp in partitions
        }

    def describe_log_dirs(
        self, brokers: Collection[int] | None = None
    ) -> dict[int, tuple[LogDirDescription, ...]]:
        wanted = self.brokers if brokers is None else brokers
        dead = sorted(set(wanted) - set(self.brokers))
        if dead:
            raise Errors.BROKER_NOT_AVAILABLE.exception(f"brokers {dead} are not alive")
        return {
            b: (
                LogDirDescription(
                    f"/data/broker-{b}",
                    Errors.NONE,
                    {
                        tp: ReplicaLogDirInfo(size, 0)
                        for (tp, at), size in self.sizes.items()
                        if at == b
                    },
                ),
            )
            for b in wanted
        }

    def finish(self, tp: TopicPartition, replicas: Sequence[int]) -> None:
        """The controller ends the reassignment of ``tp`` with these replicas."""
        del self.reassignments[tp]
        self.topics[tp.topic][tp.partition] = tuple(replicas)


def seed_cluster() -> FakeAdmin:
    """Six brokers; topic foo's partition 0 on brokers 1, 2, 3, partition 1 on 2, 3, 1."""
    return FakeAdmin(topics={"foo": {0: (1, 2, 3), 1: (2, 3, 1)}})


def write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document))
    return path


def reassignment_file(tmp_path: Path, target: Mapping[TopicPartition, Sequence[int]]) -> Path:
    partitions = [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(r)}
        for tp, r in target.items()
    ]
    return write(tmp_path / "reassign.json", {"version": 1, "partitions": partitions})


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["reassign-partitions", *argv])


@dataclass
class FakeTime:
    """A clock that moves only when the tool sleeps; each sleep may change the cluster."""

    now: float = 0.0
    slept: list[float] = field(default_factory=list)
    on_sleep: list[object] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        if self.on_sleep:
            step = self.on_sleep.pop(0)
            assert callable(step)
            step()


def execute(
    tmp_path: Path, admin: FakeAdmin, target: Mapping[TopicPartition, Sequence[int]], *extra: str
) -> int:
    path = reassignment_file(tmp_path, target)
    return run(parse("--execute", "--reassignment-json-file", str(path), *extra), admin)


def verify(
    tmp_path: Path,
    admin: FakeAdmin,
    target: Mapping[TopicPartition, Sequence[int]],
    *extra: str,
    time: FakeTime | None = None,
) -> int:
    path = reassignment_file(tmp_path, target)
    fake = time or FakeTime()
    args = parse("--verify", "--reassignment-json-file", str(path), *extra)
    return run(args, admin, clock=fake.clock, sleep=fake.sleep)


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--generate", "--broker-list", "1,2"],
            "--generate needs --topics-to-move-json-file and --broker-list",
        ),
        (["--execute"], "--execute needs --reassignment-json-file"),
        (["--verify"], "--verify needs --reassignment-json-file"),
        (
            ["--verify", "--reassignment-json-file", "r", "--throttle", "10"],
            "--throttle applies to --execute only",
        ),
        (
            ["--execute", "--reassignment-json-file", "r", "--wait"],
            "--wait applies to --verify only",
        ),
        (
            ["--execute", "--reassignment-json-file", "r", "--broker-list", "1"],
            "--broker-list applies to --generate only",
        ),
        (
            [
                "--generate",
                "--topics-to-move-json-file",
                "t",
                "--broker-list",
                "1",
                "--reassignment-json-file",
                "r",
            ],
            "--reassignment-json-file applies to --execute and --verify only",
        ),
        (
            ["--verify", "--reassignment-json-file", "r", "--disable-rack-aware"],
            "--disable-rack-aware applies to --generate only",
        ),
        (
            ["--verify", "--reassignment-json-file", "r", "--additional"],
            "--additional applies to --execute only",
        ),
        (
            ["--execute", "--reassignment-json-file", "r", "--throttle", "0"],
            "--throttle must be a positive rate in bytes/s, not 0",
        ),
        (
            ["--verify", "--reassignment-json-file", "r", "--wait-timeout-ms", "10"],
            "--wait-timeout-ms needs --wait",
        ),
        (
            ["--verify", "--reassignment-json-file", "r", "--wait", "--poll-interval-ms", "0"],
            "--poll-interval-ms must be positive, not 0",
        ),
    ],
)
def test_options_that_cannot_run_are_refused_before_connecting(
    argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit, match=re.escape(f"Error: {message}")):
        main(["reassign-partitions", *argv])


def test_a_bad_file_is_refused_before_connecting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path / "r.json",
        {"version": 1, "partitions": [{"topic": "foo", "partition": 0, "replicas": [4, 4]}]},
    )
    assert main(["reassign-partitions", "--execute", "--reassignment-json-file", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"Error: {path}: partitions[0] (foo-0): the replica list [4, 4] names broker 4 more than "
        "once\n"
    )


def test_one_action_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["reassign-partitions", "--reassignment-json-file", "r"])
    assert exited.value.code == 2
    assert (
        "one of the arguments --generate --execute --verify is required" in capsys.readouterr().err
    )


# --------------------------------------------------------------------------- --generate


def topics_file(tmp_path: Path, *topics: str) -> Path:
    return write(tmp_path / "topics.json", {"version": 1, "topics": [{"topic": t} for t in topics]})


def generate(tmp_path: Path, admin: FakeAdmin, brokers: str, *extra: str, seed: int = 7) -> int:
    path = topics_file(tmp_path, "foo", "bar")
    args = parse(
        "--generate", "--topics-to-move-json-file", str(path), "--broker-list", brokers, *extra
    )
    return run(args, admin, rng=random.Random(seed))


def test_generate_prints_the_current_and_a_proposed_assignment_in_kafkas_shapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = FakeAdmin(
        topics={"foo": {0: (1, 2), 1: (2, 3), 2: (3, 1)}, "bar": {0: (1,)}, "other": {0: (1,)}}
    )
    assert generate(tmp_path, admin, "4,5,6") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[1] == (
        '{"version":1,"partitions":[{"topic":"bar","partition":0,"replicas":[1],"log_dirs":["any"]},'
        '{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"foo","partition":1,"replicas":[2,3],"log_dirs":["any","any"]},'
        '{"topic":"foo","partition":2,"replicas":[3,1],"log_dirs":["any","any"]}]}'
    )
    assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
    assert len(lines) == 5
    proposed = json.loads(lines[4])
    assert proposed["version"] == 1
    rng = random.Random(7)
    expected_bar = assign_replicas([4, 5, 6], 1, 1, rng=rng)
    expected_foo = assign_replicas([4, 5, 6], 3, 2, rng=rng)
    assert proposed["partitions"] == [
        {"topic": "bar", "partition": 0, "replicas": list(expected_bar[0]), "log_dirs": ["any"]},
        *(
            {
                "topic": "foo",
                "partition": p,
                "replicas": list(expected_foo[p]),
                "log_dirs": ["any", "any"],
            }
            for p in range(3)
        ),
    ]
    assert admin.changes == []


def test_the_proposal_reads_back_as_a_reassignment_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = FakeAdmin(topics={"foo": {p: (1, 2, 3) for p in range(6)}, "bar": {0: (1, 2, 3)}})
    generate(tmp_path, admin, "2,4,5,6")
    proposed = parse_reassignment(capsys.readouterr().out.splitlines()[4], "out")
    assert set(proposed) == {TopicPartition("foo", p) for p in range(6)} | {
        TopicPartition("bar", 0)
    }
    for replicas in proposed.values():
        assert len(replicas) == 3 and set(replicas) <= {2, 4, 5, 6}


def test_generate_spreads_each_partition_over_the_racks_unless_told_not_to() -> None:
    racks: dict[int, str | None] = {4: "a", 5: "a", 6: "b", 7: "b"}
    current = {TopicPartition("foo", p): (1, 2) for p in range(8)}
    for seed in range(5):
        proposed = propose_assignment(current, racks, rng=random.Random(seed))
        assert all({racks[b] for b in replicas} == {"a", "b"} for replicas in proposed.values())
    # Rack-unaware, the same draw puts both replicas of some partition on one rack.
    rack_free = propose_assignment(current, racks, rack_aware=False, rng=random.Random(0))
    assert rack_free == {
        TopicPartition("foo", p): r
        for p, r in assign_replicas([4, 5, 6, 7], 8, 2, rng=random.Random(0)).items()
    }


def test_generate_refuses_brokers_some_with_and_some_without_a_rack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = FakeAdmin(
        topics={"foo": {0: (1, 2)}, "bar": {0: (1,)}}, brokers={1: None, 2: None, 4: "a", 5: None}
    )
    with pytest.raises(INVALID_ASSIGNMENT, match="--disable-rack-aware"):
        generate(tmp_path, admin, "4,5")
    assert generate(tmp_path, admin, "4,5", "--disable-rack-aware") == 0
    proposed = json.loads(capsys.readouterr().out.splitlines()[4])
    assert all(set(p["replicas"]) <= {4, 5} for p in proposed["partitions"])


def test_generate_refuses_unknown_brokers_and_topics(tmp_path: Path) -> None:
    admin = FakeAdmin(topics={"foo": {0: (1, 2)}})
    with pytest.raises(
        LookupError,
        match=re.escape("--broker-list names unknown brokers 7,9 (live brokers: 1,2,3,4,5,6)"),
    ):
        generate(tmp_path, admin, "4,7,9")
    with pytest.raises(
        LookupError, match=re.escape("topics.json names a topic that does not exist: bar")
    ):
        generate(tmp_path, admin, "4,5")


def test_generate_refuses_a_replication_factor_larger_than_the_broker_list(tmp_path: Path) -> None:
    admin = FakeAdmin(topics={"foo": {0: (1, 2, 3)}, "bar": {0: (1,)}})
    with pytest.raises(
        ValueError,
        match="topic foo has replication factor 3, more than the 2 brokers of --broker-list",
    ):
        generate(tmp_path, admin, "4,5")


# --------------------------------------------------------------------------- --execute


def test_execute_prints_the_rollback_file_and_starts_the_reassignment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    assert execute(tmp_path, admin, {FOO1: (2, 3, 4), FOO0: (4, 5, 6)}) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Current partition replica assignment",
        "",
        '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,3],"log_dirs":["any","any","any"]},'
        '{"topic":"foo","partition":1,"replicas":[2,3,1],"log_dirs":["any","any","any"]}]}',
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
        "Successfully started partition reassignments for foo-0,foo-1",
    ]
    assert admin.changes == [("reassign", {FOO0: (4, 5, 6), FOO1: (2, 3, 4)})]


def test_the_rollback_file_lists_only_the_partitions_being_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    execute(tmp_path, admin, {FOO1: (1, 2, 3)})
    lines = capsys.readouterr().out.splitlines()
    assert parse_reassignment(lines[2], "rollback") == {FOO1: (2, 3, 1)}
    assert lines[-1] == "Successfully started partition reassignment for foo-1"


def test_execute_with_a_throttle_sets_the_rate_and_throttled_replicas_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    assert (
        execute(tmp_path, admin, {FOO0: (4, 5, 6), FOO1: (2, 3, 1)}, "--throttle", "10000000") == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [
        "Warning: You must run --verify periodically, until the reassignment completes, to ensure "
        "the throttle is removed.",
        "The inter-broker throttle limit was set to 10000000 B/s",
        "Successfully started partition reassignments for foo-0,foo-1",
    ]
    assert [kind for kind, _ in admin.changes] == ["configs", "reassign"]
    rate = {LEADER_RATE: "10000000", FOLLOWER_RATE: "10000000"}
    # foo-1 keeps its replicas: only foo-0's old and new brokers are throttled.
    assert admin.overrides == {
        (ConfigResourceType.TOPIC, "foo"): {
            LEADER_REPLICAS: "0:1,0:2,0:3",
            FOLLOWER_REPLICAS: "0:4,0:5,0:6",
        },
        **{(ConfigResourceType.BROKER, str(b)): rate for b in range(1, 7)},
    }


def test_a_throttle_for_a_move_that_copies_nothing_sets_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    execute(tmp_path, admin, {FOO0: (3, 2, 1)}, "--throttle", "1000")
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "No partition gains a replica: no throttle was set.",
        "Successfully started partition reassignment for foo-0",
    ]
    assert [kind for kind, _ in admin.changes] == ["reassign"]


def test_a_throttle_that_cannot_be_set_starts_no_reassignment(tmp_path: Path) -> None:
    admin = seed_cluster()
    admin.refuse_configs = True
    with pytest.raises(InvalidConfigError, match="unknown broker config"):
        execute(tmp_path, admin, SEED_TARGET, "--throttle", "1000")
    assert admin.changes == []


def test_a_reassignment_the_controller_refuses_takes_its_throttle_away(tmp_path: Path) -> None:
    admin = seed_cluster()
    admin.refuse_reassignment = Errors.INVALID_REPLICA_ASSIGNMENT.exception("broker 6 is not alive")
    with pytest.raises(INVALID_ASSIGNMENT, match="broker 6 is not alive"):
        execute(tmp_path, admin, SEED_TARGET, "--throttle", "1000")
    assert [kind for kind, _ in admin.changes] == ["configs", "configs"]
    assert admin.overrides and not any(admin.overrides.values())


@pytest.mark.parametrize(
    ("target", "error", "message"),
    [
        (
            {FOO0: (4, 5, 7), FOO1: (8, 1)},
            LookupError,
            "reassign.json names unknown brokers 7,8 (live brokers: 1,2,3,4,5,6)",
        ),
        (
            {FOO0: (4, 5, 6), TopicPartition("bar", 0): (1,), TopicPartition("baz", 0): (1,)},
            LookupError,
            "reassign.json names topics that do not exist: bar, baz",
        ),
        (
            {FOO0: (4, 5, 6), FOO2: (1,)},
            LookupError,
            "reassign.json names a partition that does not exist: foo-2",
        ),
    ],
)
def test_execute_refuses_what_the_cluster_does_not_have_and_changes_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    target: dict[TopicPartition, tuple[int, ...]],
    error: type[Exception],
    message: str,
) -> None:
    admin = seed_cluster()
    with pytest.raises(error, match=re.escape(message)):
        execute(tmp_path, admin, target, "--throttle", "1000")
    assert admin.changes == [] and admin.overrides == {}
    assert capsys.readouterr().out == ""


def test_execute_refuses_a_partition_already_being_reassigned(tmp_path: Path) -> None:
    admin = seed_cluster()
    admin.alter_partition_reassignments({FOO1: (4, 5, 6)})
    admin.changes.clear()
    with pytest.raises(RafkaError) as raised:
        execute(tmp_path, admin, {FOO0: (4, 5, 6), FOO1: (1, 2, 3)}, "--additional")
    assert raised.value.error is Errors.REASSIGNMENT_IN_PROGRESS
    assert "partition foo-1 already being reassigned; wait until --verify" in str(raised.value)
    assert admin.changes == []


def test_execute_starts_beside_other_reassignments_only_with_additional(tmp_path: Path) -> None:
    admin = seed_cluster()
    admin.alter_partition_reassignments({FOO1: (4, 5, 6)})
    admin.changes.clear()
    with pytest.raises(
        RuntimeError, match="Cannot execute because there is an existing partition assignment"
    ):
        execute(tmp_path, admin, SEED_TARGET)
    assert admin.changes == []
    assert execute(tmp_path, admin, SEED_TARGET, "--additional") == 0
    assert admin.changes == [("reassign", SEED_TARGET)]


# --------------------------------------------------------------------------- --verify


def throttled(admin: FakeAdmin) -> None:
    """Give ``admin`` the throttle an execute of the seed's move with --throttle sets."""
    for b in range(1, 7):
        admin.overrides[ConfigResourceType.BROKER, str(b)] = {
            LEADER_RATE: "1000",
            FOLLOWER_RATE: "1000",
        }
    admin.overrides[ConfigResourceType.TOPIC, "foo"] = {
        LEADER_REPLICAS: "0:1,0:2,0:3",
        FOLLOWER_REPLICAS: "0:4,0:5,0:6",
        "retention.ms": "1000",
    }


def test_verify_of_a_finished_move_reports_it_complete_and_removes_the_throttle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    admin.alter_partition_reassignments(SEED_TARGET)
    admin.finish(FOO0, (4, 5, 6))
    throttled(admin)
    admin.overrides[ConfigResourceType.BROKER, "2"][FOLLOWER_RATE] = "5"
    admin.changes.clear()
    assert verify(tmp_path, admin, SEED_TARGET) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition foo-0 is complete.",
        "Clearing broker-level throttles on brokers 1,2,3,4,5,6",
        "Clearing topic-level throttles on topic foo",
        "Throttle was removed.",
    ]
    assert admin.overrides[ConfigResourceType.TOPIC, "foo"] == {"retention.ms": "1000"}
    assert all(admin.overrides[ConfigResourceType.BROKER, str(b)] == {} for b in range(1, 7))


def test_verify_without_a_throttle_set_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    assert verify(tmp_path, admin, {FOO0: (1, 2, 3)}) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition foo-0 is complete.",
    ]
    assert admin.changes == []


def test_preserve_throttles_keeps_the_throttle_of_a_finished_move(tmp_path: Path) -> None:
    admin = seed_cluster()
    throttled(admin)
    assert verify(tmp_path, admin, {FOO0: (1, 2, 3)}, "--preserve-throttles") == 0
    assert admin.changes == []


def test_verify_of_a_running_move_reports_it_in_progress_with_the_bytes_copied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    admin.alter_partition_reassignments({FOO0: (4, 5, 6), FOO1: (2, 3, 1)})
    admin.finish(FOO1, (2, 3, 1))
    throttled(admin)
    admin.sizes = {(FOO0, 1): 4096, (FOO0, 4): 4096, (FOO0, 5): 2048, (FOO0, 2): 4096}
    admin.changes.clear()
    assert verify(tmp_path, admin, {FOO0: (4, 5, 6), FOO1: (2, 3, 1)}) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition foo-0 is still in progress.",
        "Reassignment of partition foo-1 is complete.",
        "[###############---------------]  50% 6.0 KiB of 12.0 KiB copied to 3 new replicas",
    ]
    assert admin.changes == []


def test_a_dead_brokers_replica_counts_as_holding_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    admin.alter_partition_reassignments(SEED_TARGET)
    admin.sizes = {(FOO0, 1): 1024, (FOO0, 4): 1024, (FOO0, 5): 1024, (FOO0, 6): 1024}
    del admin.brokers[6]
    assert verify(tmp_path, admin, SEED_TARGET) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "[####################----------]  66% 2.0 KiB of 3.0 KiB copied to 3 new replicas"
    )


def test_verify_reports_a_partition_that_ended_elsewhere_as_failed_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    throttled(admin)
    time = FakeTime()
    assert verify(tmp_path, admin, {FOO0: (4, 5, 6), FOO1: (2, 3, 1)}, time=time) == 1
    assert capsys.readouterr().out.splitlines()[:3] == [
        "Status of partition reassignment:",
        "Reassignment of partition foo-0 failed: there is no active reassignment, but its replica "
        "set is 1,2,3 rather than 4,5,6.",
        "Reassignment of partition foo-1 is complete.",
    ]
    assert time.slept == [SETTLE_S]
    # Nothing is moving any more: the throttle serves no purpose.
    assert admin.overrides[ConfigResourceType.TOPIC, "foo"] == {"retention.ms": "1000"}


def test_a_partition_whose_metadata_catches_up_while_settling_is_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    time = FakeTime(on_sleep=[lambda: admin.topics["foo"].update({0: (4, 5, 6)})])
    assert verify(tmp_path, admin, SEED_TARGET, time=time) == 0
    assert "Reassignment of partition foo-0 is complete." in capsys.readouterr().out


def test_a_deleted_topic_fails_its_partitions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    assert verify(tmp_path, admin, {TopicPartition("gone", 0): (1,), FOO0: (1, 2, 3)}) == 1
    assert (
        "Reassignment of partition gone-0 failed: the partition no longer exists."
        in capsys.readouterr().out
    )


def test_wait_redraws_the_progress_until_the_move_is_done_then_removes_the_throttle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    admin.alter_partition_reassignments(SEED_TARGET)
    throttled(admin)
    admin.sizes = {(FOO0, 1): 1000}
    admin.changes.clear()

    def copy(size: int) -> None:
        admin.sizes.update({(FOO0, b): size for b in (4, 5, 6)})

    time = FakeTime(
        on_sleep=[lambda: copy(500), lambda: copy(1000), lambda: admin.finish(FOO0, (4, 5, 6))]
    )
    assert (
        verify(tmp_path, admin, SEED_TARGET, "--wait", "--poll-interval-ms", "250", time=time) == 0
    )
    assert capsys.readouterr().out.splitlines() == [
        "[------------------------------]   0% 0 B of 2.9 KiB copied to 3 new replicas",
        "[###############---------------]  50% 1.5 KiB of 2.9 KiB copied to 3 new replicas",
        "[##############################] 100% 2.9 KiB of 2.9 KiB copied to 3 new replicas",
        "Status of partition reassignment:",
        "Reassignment of partition foo-0 is complete.",
        "Clearing broker-level throttles on brokers 1,2,3,4,5,6",
        "Clearing topic-level throttles on topic foo",
        "Throttle was removed.",
    ]
    assert time.slept == [0.25, 0.25, 0.25]


def test_wait_gives_up_at_its_deadline_keeping_the_throttle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    admin.alter_partition_reassignments(SEED_TARGET)
    throttled(admin)
    admin.changes.clear()
    time = FakeTime()
    with pytest.raises(
        TimeoutError, match="1 partition still being reassigned after --wait-timeout-ms 3000"
    ):
        verify(tmp_path, admin, SEED_TARGET, "--wait", "--wait-timeout-ms", "3000", time=time)
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "Status of partition reassignment:",
        "Reassignment of partition foo-0 is still in progress.",
    ]
    assert time.now == 3.0 and admin.changes == []


def test_the_rollback_of_an_execute_is_a_valid_reassignment_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = seed_cluster()
    execute(tmp_path, admin, SEED_TARGET)
    rollback = capsys.readouterr().out.splitlines()[2]
    admin.finish(FOO0, (4, 5, 6))
    path = tmp_path / "rollback.json"
    path.write_text(rollback)
    args = parse("--execute", "--reassignment-json-file", str(path))
    assert run(args, admin) == 0
    assert admin.changes[-1] == ("reassign", {FOO0: (1, 2, 3)})
