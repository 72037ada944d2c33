"""Tests for ``rafka acls`` (rafka.cli.acls): kafka-acls' options, the ACLs they stand for, the
combinations refused before connecting, and kafka-acls' output against a fake cluster."""

from __future__ import annotations

import io
import re

import pytest

from rafka.cli.acls import format_entry
from rafka.cli.main import main
from rafka.security.acl import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourceType,
)

ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
ORDERS_TEXT = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
ALICE_READ = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
READ, WRITE, DESCRIBE = ACLOperation.READ, ACLOperation.WRITE, ACLOperation.DESCRIBE
ALLOW, DENY = ACLPermissionType.ALLOW, ACLPermissionType.DENY


def stored(fake_cluster) -> set[tuple[str, str, str, str, str]]:
    """Every stored ACL as (resource type, name, principal, host, operation), permission kept in
    the principal's place for denials (``!User:x``)."""
    return {
        (
            a.resource_pattern.resource_type.name,
            a.resource_pattern.resource_name,
            ("" if a.permission_type is ALLOW else "!") + a.principal,
            a.host,
            a.operation.name,
        )
        for a in fake_cluster.acls.read_all()
    }


@pytest.fixture
def cluster(fake_cluster):
    """A fake cluster of one broker."""
    fake_cluster.add_brokers(1)
    return fake_cluster


def test_an_entry_prints_as_kafkas_access_control_entry() -> None:
    assert format_entry(("User:bob", "10.0.0.1", WRITE, DENY)) == (
        "(principal=User:bob, host=10.0.0.1, operation=WRITE, permissionType=DENY)"
    )


def test_adding_prints_kafka_acls_blocks_then_the_resources_acls(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "acls",
                "--add",
                "--allow-principal",
                "User:alice",
                "--operation",
                "Read",
                "--topic",
                "orders",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == (
        f"Adding ACLs for resource `{ORDERS_TEXT}`: \n \t{ALICE_READ} \n\n"
        f"Current ACLs for resource `{ORDERS_TEXT}`: \n \t{ALICE_READ} \n\n"
    )
    assert stored(cluster) == {("TOPIC", "orders", "User:alice", "*", "READ")}


def test_each_principal_gets_each_operation_from_each_host_on_each_resource(cluster) -> None:
    args = [
        *("acls", "--add", "--resource-pattern-type", "PREFIXED"),
        *("--allow-principal", "User:alice", "--allow-principal", "User:bob"),
        *("--allow-host", "10.0.0.1", "--allow-host", "10.0.0.2"),
        *("--deny-principal", "User:mallory"),
        *("--operation", "read", "--operation", "Describe"),
        *("--topic", "orders-", "--group", "shipping-"),
    ]
    assert main(args) == 0
    found = stored(cluster)
    assert len(found) == 2 * (2 * 2 * 2 + 2)  # resources * (allowed * hosts * ops + denied ops)
    assert ("GROUP", "shipping-", "User:bob", "10.0.0.2", "DESCRIBE") in found
    assert ("TOPIC", "orders-", "!User:mallory", "*", "READ") in found
    patterns = {a.resource_pattern.pattern_type for a in cluster.acls.read_all()}
    assert patterns == {ACLResourcePatternType.PREFIXED}


def test_without_an_operation_the_acl_is_for_all_and_names_take_any_case(cluster) -> None:
    main(["acls", "--add", "--allow-principal", "User:ops", "--cluster"])
    main(
        [
            "acls",
            "--add",
            "--allow-principal",
            "User:p",
            "--operation",
            "idempotent_write",
            "--cluster",
        ]
    )
    main(
        [
            "acls",
            "--add",
            "--allow-principal",
            "User:q",
            "--operation",
            "IdempotentWrite",
            "--cluster",
        ]
    )
    assert stored(cluster) == {
        ("CLUSTER", "kafka-cluster", "User:ops", "*", "ALL"),
        ("CLUSTER", "kafka-cluster", "User:p", "*", "IDEMPOTENT_WRITE"),
        ("CLUSTER", "kafka-cluster", "User:q", "*", "IDEMPOTENT_WRITE"),
    }


def test_producer_stands_for_kafka_acls_producer_acls(cluster) -> None:
    args = ["acls", "--add", "--allow-principal", "User:p", "--producer", "--topic", "t"]
    assert main([*args, "--transactional-id", "tx", "--idempotent"]) == 0
    assert stored(cluster) == {
        ("TOPIC", "t", "User:p", "*", "WRITE"),
        ("TOPIC", "t", "User:p", "*", "DESCRIBE"),
        ("TOPIC", "t", "User:p", "*", "CREATE"),
        ("TRANSACTIONAL_ID", "tx", "User:p", "*", "WRITE"),
        ("TRANSACTIONAL_ID", "tx", "User:p", "*", "DESCRIBE"),
        ("CLUSTER", "kafka-cluster", "User:p", "*", "IDEMPOTENT_WRITE"),
    }


def test_consumer_stands_for_kafka_acls_consumer_acls_and_adds_to_producer(cluster) -> None:
    args = ["acls", "--add", "--allow-principal", "User:c", "--consumer", "--topic", "t"]
    assert main([*args, "--group", "g"]) == 0
    assert stored(cluster) == {
        ("TOPIC", "t", "User:c", "*", "READ"),
        ("TOPIC", "t", "User:c", "*", "DESCRIBE"),
        ("GROUP", "g", "User:c", "*", "READ"),
    }
    assert main([*args, "--group", "g", "--producer"]) == 0
    assert {op for kind, _, _, _, op in stored(cluster) if kind == "TOPIC"} == {
        "READ",
        "WRITE",
        "DESCRIBE",
        "CREATE",
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--list", "--allow-principal", "User:a"], "--list cannot be used with --allow-principal"),
        (["--list", "--producer", "--topic", "t"], "--list cannot be used with --producer"),
        (
            ["--add", "--producer", "--topic", "t", "--operation", "Read"],
            "--producer cannot be used with --operation",
        ),
        (
            ["--add", "--consumer", "--topic", "t", "--group", "g", "--deny-principal", "User:x"],
            "--consumer cannot be used with --deny-principal",
        ),
        (["--add", "--principal", "User:a", "--topic", "t"], "only available if --list is set"),
        (["--add", "--producer", "--allow-principal", "User:a"], "With --producer you must"),
        (["--add", "--idempotent", "--topic", "t"], "only available if --producer is set"),
        (["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"], "--consumer"),
        (
            ["--add", "--consumer", "--topic", "t", "--group", "g", "--cluster"],
            "no --cluster or --transactional-id",
        ),
        (
            ["--add", "--resource-pattern-type", "match", "--topic", "t"],
            "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.",
        ),
        (["--add", "--topic", "t"], "You must specify one of: --allow-principal, --deny-principal"),
        (["--add", "--allow-principal", "User:a"], "You must provide at least one resource"),
        (["--remove", "--force"], "You must provide at least one resource"),
        (["--add", "--allow-principal", "alice", "--topic", "t"], "'alice' is not a principal"),
        (["--list", "--principal", "alice"], "'alice' is not a principal"),
        (
            ["--add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g"],
            "ResourceType GROUP only supports operations ALL, DELETE, DESCRIBE, READ",
        ),
        (
            ["--list", "--cluster", "--resource-pattern-type", "prefixed"],
            "The cluster resource is LITERAL",
        ),
    ],
)
def test_options_that_cannot_run_are_refused_before_connecting(
    args: list[str], message: str
) -> None:
    # No fake cluster: connecting would fail, so the refusal must come first.
    with pytest.raises(SystemExit, match=re.escape(message)) as exited:
        main(["acls", *args])
    # One line, and a message rather than a number: exit status 1.
    assert isinstance(exited.value.code, str) and exited.value.code.startswith("Error: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--add", "--list"], "not allowed with argument"),
        (["--topic", "t"], "one of the arguments --add --remove --list is required"),
        (["--list", "--operation", "Publish"], "argument --operation: 'Publish' is not an"),
        (["--list", "--resource-pattern-type", "unknown"], "'unknown' is not literal, prefixed"),
    ],
)
def test_bad_option_values_are_usage_errors_with_status_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["acls", *args])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def add(*args: str) -> None:
    assert main(["acls", "--add", *args]) == 0


def test_list_prints_every_resource_or_those_named_or_only_a_principals(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    add("--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
    add("--allow-principal", "User:bob", "--operation", "Read", "--group", "g")
    add("--allow-principal", "User:bob", "--operation", "Write", "--topic", "*")
    capsys.readouterr()
    assert main(["acls", "--list"]) == 0
    headings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Current")]
    assert [h.split("name=")[1].split(",")[0] for h in headings] == ["*", "orders", "g"]
    assert headings[2] == (
        "Current ACLs for resource "
        "`ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)`: "
    )
    assert main(["acls", "--list", "--topic", "orders", "--resource-pattern-type", "match"]) == 0
    assert "name=*" in capsys.readouterr().out
    assert main(["acls", "--list", "--principal", "User:alice"]) == 0
    assert capsys.readouterr().out == (
        "ACLs for principal `User:alice`\n"
        f"Current ACLs for resource `{ORDERS_TEXT}`: \n \t{ALICE_READ} \n\n"
    )


def test_remove_asks_first_and_a_no_keeps_the_acls(
    cluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    add("--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    args = ["acls", "--remove", "--allow-principal", "User:alice", "--operation", "Read"]
    assert main([*args, "--topic", "orders"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"Are you sure you want to remove ACLs: \n \t{ALICE_READ} \n"
        f" from resource filter `{ORDERS_TEXT}`? (y/n)\n"
    )
    assert stored(cluster) == {("TOPIC", "orders", "User:alice", "*", "READ")}
    monkeypatch.setattr("sys.stdin", io.StringIO("Y\n"))
    assert main([*args, "--topic", "orders"]) == 0
    assert stored(cluster) == set()


def test_remove_without_a_principal_removes_every_acl_of_the_resource(
    cluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    add("--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
    add("--deny-principal", "User:bob", "--operation", "Write", "--topic", "orders")
    add("--allow-principal", "User:alice", "--operation", "Read", "--topic", "payments")
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main(["acls", "--remove", "--topic", "orders"]) == 0
    assert capsys.readouterr().out == (
        f"Are you sure you want to delete all ACLs for resource filter `{ORDERS_TEXT}`? (y/n)\n"
    )
    assert stored(cluster) == {("TOPIC", "payments", "User:alice", "*", "READ")}


def test_remove_with_force_removes_only_the_entries_named_and_lists_the_rest(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    add(
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--operation",
        "Write",
        "--topic",
        "orders",
    )
    capsys.readouterr()
    args = ["--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders"]
    assert main(["acls", "--remove", "--force", *args]) == 0
    assert (
        capsys.readouterr().out
        == f"Current ACLs for resource `{ORDERS_TEXT}`: \n \t{ALICE_READ} \n\n"
    )
    assert cluster.acls.read_all() == {ACL("User:alice", "*", READ, ALLOW, ORDERS)}


def test_a_refused_acl_fails_the_command_naming_the_resource_and_why(
    cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    # The broker refuses a name holding '/', which ZooKeeper would read as a path.
    assert main(["acls", "--add", "--allow-principal", "User:a", "--topic", "a/b"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "Error: INVALID_REQUEST (42): `ResourcePattern(resourceType=TOPIC, name=a/b"
    )
    assert "must not contain '/'" in err
    assert stored(cluster) == set()
