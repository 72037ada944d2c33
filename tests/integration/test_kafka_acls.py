"""Kafka ACLs on the shared cluster: created, described and deleted through rafka's Admin, the
``rafka acls`` command (run as a user runs it) and kafka-python's KafkaAdminClient over the
PLAINTEXT listener; each lands in ZooKeeper as Kafka's AclAuthorizer keeps it. The shared cluster
runs no authorizer, so the ACLs are stored and listed, not enforced."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import kafka.admin as kafka_admin_types
import kafka.errors
import pytest
import ray
from kafka import KafkaAdminClient
from kazoo.client import KazooClient

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.errors import Errors
from rafka.security.acl import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from rafka.testing import user_env

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.usefixtures("cluster"),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]
CLUSTER = "it"
"""The shared cluster's name: the ``zk`` fixture looks at its chroot."""
NS = "rafka-test"
ALLOW = ACLPermissionType.ALLOW
PREFIXED = ACLResourcePatternType.PREFIXED


def znode(zk: KazooClient, path: str) -> Any:
    """A znode's JSON, parsed."""
    return json.loads(zk.get(path)[0])


def latest_change(zk: KazooClient, folder: str) -> bytes:
    """The newest change notification's data under ``folder``."""
    newest = max(zk.get_children(folder))
    data: bytes = zk.get(f"{folder}/{newest}")[0]
    return data


def selecting(
    resource_type: ResourceType = ResourceType.ANY,
    name: str | None = None,
    pattern_type: ACLResourcePatternType = ACLResourcePatternType.ANY,
    principal: str | None = None,
) -> ACLFilter:
    """The ACLs of a principal (any if None) on the resources a pattern filter selects."""
    return ACLFilter(
        principal,
        None,
        ACLOperation.ANY,
        ACLPermissionType.ANY,
        ResourcePatternFilter(resource_type, name, pattern_type),
    )


def test_admin_creates_describes_and_deletes_acls_kept_as_kafka_keeps_them(
    admin: Admin, zk: KazooClient
) -> None:
    orders = ResourcePattern(ResourceType.TOPIC, "native-orders")
    pay = ResourcePattern(ResourceType.TOPIC, "native-pay-", PREFIXED)
    alice_reads = ACL("User:alice", "*", ACLOperation.READ, ALLOW, orders)
    bob_denied = ACL("User:bob", "10.0.0.9", ACLOperation.WRITE, ACLPermissionType.DENY, orders)
    alice_writes = ACL("User:alice", "*", ACLOperation.WRITE, ALLOW, pay)
    cluster_read = ACL(
        "User:alice",
        "*",
        ACLOperation.READ,
        ALLOW,
        ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
    )
    results = admin.create_acls([alice_reads, bob_denied, alice_writes, cluster_read])
    assert [r.error for r in results] == [Errors.NONE] * 3 + [Errors.INVALID_REQUEST]
    assert "READ is not an operation on a CLUSTER" in (results[3].message or "")

    stored = znode(zk, "/kafka-acl/Topic/native-orders")
    assert stored["version"] == 1
    assert sorted(stored["acls"], key=lambda entry: entry["principal"]) == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"},
        {
            "principal": "User:bob",
            "permissionType": "Deny",
            "operation": "Write",
            "host": "10.0.0.9",
        },
    ]
    assert znode(zk, "/kafka-acl-extended/prefixed/Topic/native-pay-")["acls"] == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Write", "host": "*"}
    ]
    assert json.loads(latest_change(zk, "/kafka-acl-extended-changes")) == {
        "version": 1,
        "resourceType": "Topic",
        "name": "native-pay-",
        "patternType": "PREFIXED",
    }
    assert cluster_read not in admin.describe_acls(selecting(ResourceType.CLUSTER))

    assert admin.describe_acls(selecting(ResourceType.TOPIC, "native-orders")) == [
        alice_reads,
        bob_denied,
    ]
    applying = selecting(ResourceType.TOPIC, "native-pay-eu", ACLResourcePatternType.MATCH)
    assert admin.describe_acls(applying) == [alice_writes]

    [by_alice] = admin.delete_acls([selecting(ResourceType.TOPIC, principal="User:alice")])
    assert (by_alice.error, set(by_alice.deleted)) == (Errors.NONE, {alice_reads, alice_writes})
    assert zk.exists("/kafka-acl-extended/prefixed/Topic/native-pay-") is None
    assert latest_change(zk, "/kafka-acl-changes") == b"Topic:LITERAL:native-orders"
    assert admin.describe_acls(selecting(ResourceType.TOPIC, "native-orders")) == [bob_denied]
    admin.delete_acls([selecting(ResourceType.TOPIC, "native-orders")])
    assert zk.exists("/kafka-acl/Topic/native-orders") is None


def rafka_acls(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``rafka acls`` in a process of its own, with a user's environment."""
    address = ray.get_runtime_context().gcs_address
    return subprocess.run(
        [sys.executable, "-m", "rafka", "--namespace", NS, "--address", address, "acls", *args],
        env=user_env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def succeeded(*args: str, stdin: str = "") -> str:
    """What ``rafka acls`` printed, once it exited 0."""
    run = rafka_acls(*args, stdin=stdin)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_acls_command_runs_the_readmes_examples_like_kafka_acls(
    admin: Admin, zk: KazooClient
) -> None:
    orders = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    added = succeeded(
        *("--add", "--allow-principal", "User:alice", "--operation", "Read"),
        *("--operation", "Describe", "--topic", "orders"),
    )
    alice = "(principal=User:alice, host=*, operation={}, permissionType=ALLOW)"
    block = f" \n \t{alice.format('READ')}\n\t{alice.format('DESCRIBE')} \n\n"
    assert added == (
        f"Adding ACLs for resource `{orders}`:{block}Current ACLs for resource `{orders}`:{block}"
    )
    succeeded(
        *("--add", "--allow-principal", "User:bob", "--producer", "--topic", "orders"),
        *("--transactional-id", "orders-tx"),
    )
    succeeded(
        *("--add", "--allow-principal", "User:carol", "--consumer", "--topic", "orders"),
        *("--group", "shipping"),
    )
    succeeded(
        *("--add", "--deny-principal", "User:mallory", "--topic", "orders-"),
        *("--resource-pattern-type", "prefixed"),
    )
    assert znode(zk, "/kafka-acl/TransactionalId/orders-tx")["acls"] != []
    assert znode(zk, "/kafka-acl-extended/prefixed/Topic/orders-")["acls"] == [
        {"principal": "User:mallory", "permissionType": "Deny", "operation": "All", "host": "*"}
    ]

    matching = succeeded("--list", "--topic", "orders", "--resource-pattern-type", "match")
    headings = [line for line in matching.splitlines() if line.startswith("Current ACLs")]
    assert headings == [f"Current ACLs for resource `{orders}`: "]
    assert matching.count("principal=User:bob") == 3  # WRITE, DESCRIBE, CREATE
    assert matching.count("principal=User:carol") == 2  # READ, DESCRIBE
    by_alice = succeeded("--list", "--principal", "User:alice")
    assert by_alice.splitlines()[0] == "ACLs for principal `User:alice`"
    assert "User:bob" not in by_alice and by_alice.count("principal=User:alice") == 2

    # Declining the question keeps the ACL; --force does not ask.
    remove = ("--remove", "--allow-principal", "User:alice", "--operation", "Describe")
    kept = succeeded(*remove, "--topic", "orders", stdin="n\n")
    assert kept.startswith("Are you sure you want to remove ACLs: \n \t")
    assert alice.format("DESCRIBE") in succeeded("--list", "--topic", "orders")
    succeeded(*remove, "--topic", "orders", "--force")
    assert admin.describe_acls(selecting(principal="User:alice")) == [
        ACL(
            "User:alice",
            "*",
            ACLOperation.READ,
            ALLOW,
            ResourcePattern(ResourceType.TOPIC, "orders"),
        )
    ]

    refused = rafka_acls(
        "--add", "--allow-principal", "User:x", "--operation", "Write", "--group", "g"
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: ResourceType GROUP only supports operations ALL,")

    for resource in (
        ("--topic", "orders"),
        ("--group", "shipping"),
        ("--transactional-id", "orders-tx"),
        ("--topic", "orders-", "--resource-pattern-type", "prefixed"),
    ):
        succeeded("--remove", "--force", *resource)
    assert succeeded("--list", "--topic", "orders", "--resource-pattern-type", "any") == ""


@pytest.fixture(scope="module")
def kafka_admin(cluster: LocalCluster) -> Iterator[KafkaAdminClient]:
    """A kafka-python admin client of the shared cluster's PLAINTEXT listener."""
    client = KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers(), request_timeout_ms=60_000
    )
    yield client
    client.close()


def test_kafka_python_creates_describes_and_deletes_acls_over_the_wire(
    kafka_admin: KafkaAdminClient, admin: Admin, zk: KazooClient
) -> None:
    k = kafka_admin_types
    wire_orders = k.ResourcePattern(k.ResourceType.TOPIC, "wire-orders")
    wire_prefix = k.ResourcePattern(
        k.ResourceType.GROUP, "wire-", k.ACLResourcePatternType.PREFIXED
    )
    reads = k.ACL("User:alice", "*", k.ACLOperation.READ, k.ACLPermissionType.ALLOW, wire_orders)
    denied = k.ACL("User:bob", "*", k.ACLOperation.ALL, k.ACLPermissionType.DENY, wire_prefix)
    bad = k.ACL(
        "User:alice",
        "*",
        k.ACLOperation.IDEMPOTENT_WRITE,
        k.ACLPermissionType.ALLOW,
        wire_orders,
    )
    created = kafka_admin.create_acls([reads, denied, bad])
    assert created["succeeded"] == [reads, denied]
    assert created["failed"] == [kafka.errors.InvalidRequestError]
    assert znode(zk, "/kafka-acl/Topic/wire-orders")["acls"] == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
    ]
    # rafka's Admin sees what kafka-python wrote.
    assert admin.describe_acls(selecting(ResourceType.GROUP, "wire-", PREFIXED)) == [
        ACL(
            "User:bob",
            "*",
            ACLOperation.ALL,
            ACLPermissionType.DENY,
            ResourcePattern(ResourceType.GROUP, "wire-", PREFIXED),
        )
    ]

    any_filter = k.ACLFilter(
        None,
        None,
        k.ACLOperation.ANY,
        k.ACLPermissionType.ANY,
        k.ResourcePatternFilter(k.ResourceType.ANY, None, k.ACLResourcePatternType.ANY),
    )
    described, error = kafka_admin.describe_acls(any_filter)
    assert error is kafka.errors.NoError
    assert {reads, denied} <= set(described)
    match_filter = k.ACLFilter(
        None,
        None,
        k.ACLOperation.ANY,
        k.ACLPermissionType.ANY,
        k.ResourcePatternFilter(
            k.ResourceType.GROUP, "wire-shipping", k.ACLResourcePatternType.MATCH
        ),
    )
    assert kafka_admin.describe_acls(match_filter)[0] == [denied]

    by_alice = k.ACLFilter(
        "User:alice",
        None,
        k.ACLOperation.ANY,
        k.ACLPermissionType.ANY,
        k.ResourcePatternFilter(
            k.ResourceType.TOPIC, "wire-orders", k.ACLResourcePatternType.LITERAL
        ),
    )
    [(asked, removed, removal_error)] = kafka_admin.delete_acls([by_alice])
    assert (asked, removed, removal_error) == (by_alice, [reads], kafka.errors.NoError)
    assert zk.exists("/kafka-acl/Topic/wire-orders") is None
    kafka_admin.delete_acls([match_filter])
    assert admin.describe_acls(selecting(ResourceType.GROUP, "wire-", PREFIXED)) == []
