"""The console's operations (rafka.console.operations) against the fake admin: bad
input gets Kafka's error text at its field and changes nothing; good input is planned, then run
with its steps reported."""

from __future__ import annotations

import json

import pytest

from rafka.console.jobs import Progress
from rafka.console.operations import FORM, OPERATIONS, FormErrors, generate_reassignment
from rafka.protocol.configs import AlterConfigOpType
from rafka.protocol.errors import Errors
from rafka.protocol.types import NewTopic, TopicPartition

from .conftest import FakeAdmin


def errors_of(kind: str, values: dict[str, str], admin: FakeAdmin) -> dict[str, str]:
    """The field errors of a form that must fail its check; nothing may have changed."""
    with pytest.raises(FormErrors) as raised:
        OPERATIONS[kind].check(values, admin)
    assert admin.changes == []
    return raised.value.errors


def progress() -> Progress:
    return Progress("1", "test", lambda: 0.0)


GOOD_TOPIC = {"name": "orders", "partitions": "3", "replication_factor": "2", "configs": ""}


def test_a_bad_topic_name_gets_kafkas_invalid_topic_error_at_the_name() -> None:
    admin = FakeAdmin()
    errors = errors_of("create-topic", {**GOOD_TOPIC, "name": "bad name!"}, admin)
    assert list(errors) == ["name"]
    assert errors["name"].startswith(
        "INVALID_TOPIC_EXCEPTION (17): topic name 'bad name!' is illegal"
    )


def test_a_negative_partition_count_gets_kafkas_invalid_partitions_error() -> None:
    errors = errors_of("create-topic", {**GOOD_TOPIC, "partitions": "-3"}, FakeAdmin())
    assert errors == {
        "partitions": "INVALID_PARTITIONS (37): number of partitions must be at least 1, got -3"
    }


def test_an_invalid_config_gets_kafkas_invalid_config_error_at_the_configs() -> None:
    errors = errors_of(
        "create-topic", {**GOOD_TOPIC, "configs": "retention.ms=soon\n"}, FakeAdmin()
    )
    assert list(errors) == ["configs"]
    assert errors["configs"].startswith("INVALID_CONFIG (40): ")
    assert "retention.ms" in errors["configs"]
    unknown = errors_of("create-topic", {**GOOD_TOPIC, "configs": "no.such=1"}, FakeAdmin())
    assert unknown["configs"].startswith("INVALID_CONFIG (40): unknown topic config no.such='1'")
    malformed = errors_of("create-topic", {**GOOD_TOPIC, "configs": "retention.ms"}, FakeAdmin())
    assert malformed["configs"] == "INVALID_CONFIG (40): 'retention.ms' is not KEY=VALUE"


def test_every_bad_field_is_reported_at_once() -> None:
    errors = errors_of(
        "create-topic",
        {"name": "", "partitions": "many", "replication_factor": "9", "configs": "x=1"},
        FakeAdmin(),
    )
    assert set(errors) == {"name", "partitions", "configs"}
    assert errors["partitions"] == (
        "INVALID_PARTITIONS (37): partitions must be a whole number, not 'many'"
    )


def test_a_replication_factor_above_the_live_brokers_is_refused_by_the_controllers_rule() -> None:
    errors = errors_of("create-topic", {**GOOD_TOPIC, "replication_factor": "4"}, FakeAdmin())
    assert errors["replication_factor"].startswith("INVALID_REPLICATION_FACTOR (38): ")


def test_the_controllers_dry_run_reports_an_existing_topic_at_the_name() -> None:
    admin = FakeAdmin()
    admin.add_topic("orders", [[0]])
    errors = errors_of("create-topic", GOOD_TOPIC, admin)
    assert errors == {"name": "TOPIC_ALREADY_EXISTS (36): topic 'orders' already exists"}


def test_a_good_topic_is_planned_then_created() -> None:
    admin = FakeAdmin()
    operation = OPERATIONS["create-topic"]
    plan = operation.check({**GOOD_TOPIC, "configs": "retention.ms=60000\n\n"}, admin)
    assert plan.request == NewTopic("orders", 3, 2, (("retention.ms", "60000"),))
    assert plan.lines[0] == "Create topic orders with 3 partitions of replication factor 2."
    assert admin.changes == []
    operation.run(plan.request, admin, progress())
    assert admin.changes == [("create_topics", plan.request)]


def test_delete_names_an_existing_topic() -> None:
    admin = FakeAdmin()
    errors = errors_of("delete-topic", {"topic": "ghost"}, admin)
    assert errors["topic"].startswith("UNKNOWN_TOPIC_OR_PARTITION (3): ")
    admin.add_topic("orders", [[0], [1]])
    plan = OPERATIONS["delete-topic"].check({"topic": "orders"}, admin)
    assert plan.lines[0] == "Delete topic orders and the data of its 2 partitions."
    OPERATIONS["delete-topic"].run(plan.request, admin, progress())
    assert admin.list_topics() == []


def test_adding_partitions_must_grow_the_topic() -> None:
    admin = FakeAdmin()
    admin.add_topic("orders", [[0], [1]])
    errors = errors_of("add-partitions", {"topic": "orders", "partitions": "2"}, admin)
    assert errors == {
        "partitions": "INVALID_PARTITIONS (37): topic 'orders' already has 2 partitions"
    }
    plan = OPERATIONS["add-partitions"].check({"topic": "orders", "partitions": "4"}, admin)
    assert plan.lines[0] == "Grow topic orders from 2 to 4 partitions."


def test_config_changes_are_checked_by_kafkas_rules_and_applied_incrementally() -> None:
    admin = FakeAdmin()
    admin.add_topic("orders", [[0]])
    bad = errors_of("alter-configs", {"topic": "orders", "set": "min.insync.replicas=0"}, admin)
    assert bad["set"].startswith("INVALID_CONFIG (40): ")
    nothing = errors_of("alter-configs", {"topic": "orders", "set": "", "remove": ""}, admin)
    assert nothing["set"].startswith("INVALID_CONFIG (40): nothing to change")
    operation = OPERATIONS["alter-configs"]
    plan = operation.check(
        {"topic": "orders", "set": "retention.ms=1000", "remove": "cleanup.policy"}, admin
    )
    operation.run(plan.request, admin, progress())
    ((_, [resource]),) = admin.changes
    assert resource.name == "orders"
    assert {k: op.op_type for k, op in resource.configs.items()} == {
        "retention.ms": AlterConfigOpType.SET,
        "cleanup.policy": AlterConfigOpType.DELETE,
    }


def test_preferred_election_of_one_topic_or_of_everything() -> None:
    admin = FakeAdmin()
    admin.add_topic("orders", [[0, 1], [1, 0]], leaders=[1, 1])
    operation = OPERATIONS["elect-leaders"]
    plan = operation.check({"topic": "orders"}, admin)
    assert plan.request == [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    assert plan.lines[1] == "1 of them are led by another replica now."
    report = progress()
    operation.run(plan.request, admin, report)
    assert report.view().steps == (
        "Preferred replica already elected for partitions orders-0, orders-1",
    )
    assert operation.check({"topic": ""}, admin).request is None


def test_a_reassignment_is_generated_checked_and_followed_to_its_end() -> None:
    admin = FakeAdmin()
    admin.add_topic("orders", [[0, 1], [1, 2]])
    with pytest.raises(FormErrors) as unknown:
        generate_reassignment({"topics": "orders", "brokers": "1,7"}, admin)
    assert unknown.value.errors["brokers"].startswith("BROKER_NOT_AVAILABLE (8): brokers [7]")
    generated = json.loads(generate_reassignment({"topics": "orders", "brokers": "1,2"}, admin))
    assert [sorted(p["replicas"]) for p in generated["partitions"]] == [[1, 2], [1, 2]]
    operation = OPERATIONS["reassign-partitions"]
    assert errors_of("reassign-partitions", {"plan": "{"}, admin)["plan"].startswith(
        "the reassignment JSON is not valid JSON"
    )
    missing = {"partitions": [{"topic": "orders", "partition": 5, "replicas": [1]}]}
    assert (
        "has no partition 5"
        in errors_of("reassign-partitions", {"plan": json.dumps(missing)}, admin)["plan"]
    )
    plan = operation.check({"plan": json.dumps(generated)}, admin)
    assert plan.lines[0].startswith("Move orders-0 from replicas [0, 1] to ")
    report = progress()
    operation.run(plan.request, admin, report)
    assert report.view().steps[-2:] == (
        "Reassignment of partition orders-0 is complete.",
        "Reassignment of partition orders-1 is complete.",
    )


def test_a_controller_error_no_field_is_about_goes_above_the_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    admin = FakeAdmin()

    def refuse(*args: object, **kwargs: object) -> None:
        raise Errors.POLICY_VIOLATION.exception("topics are frozen today")

    monkeypatch.setattr(admin, "create_topics", refuse)
    errors = errors_of("create-topic", GOOD_TOPIC, admin)
    assert errors == {FORM: "POLICY_VIOLATION (44): topics are frozen today"}
