"""Kafka ACLs in a real ZooKeeper (no Ray): KafkaAclStore's compare-and-set writes and change
notifications, and AclManager's CreateAcls, DescribeAcls and DeleteAcls as two brokers see them."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator

import pytest

from rafka.actors.broker.acl_manager import AclManager
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.zk.client import ZkClient
from rafka.actors.zk.kafka_acl_store import (
    LITERAL_CHANGES,
    PREFIXED_CHANGES,
    KafkaAclStore,
    pattern_path,
)
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.errors import Errors
from rafka.protocol.messages.acls import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
)
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
from rafka.security.principal import KafkaPrincipal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
HOST = "10.0.0.1"
WATCH_TIMEOUT_S = 30.0
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders")
PAYMENTS = ResourcePattern(ResourceType.TOPIC, "payments")
ORDERS_PREFIX = ResourcePattern(ResourceType.TOPIC, "orders-", ACLResourcePatternType.PREFIXED)
READ = ACLOperation.READ
WRITE = ACLOperation.WRITE
TOPIC = ResourceType.TOPIC
CONFIG = BrokerConfig.from_dict(
    {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}
)
EVERY_PATTERN = ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)
_clusters = itertools.count()

Connect = Callable[[], ZkClient]


def allow(principal: str, pattern: ResourcePattern, operation: ACLOperation = READ) -> ACL:
    return ACL(principal, "*", operation, ACLPermissionType.ALLOW, pattern)


def acl_filter(
    principal: str | None = None, pattern: ResourcePatternFilter = EVERY_PATTERN
) -> ACLFilter:
    return ACLFilter(principal, None, ACLOperation.ANY, ACLPermissionType.ANY, pattern)


EVERY_ACL = acl_filter()


@pytest.fixture
def connect(zookeeper: ZooKeeperServer) -> Iterator[Connect]:
    """``connect()``: a new ZooKeeper session (another broker) in a chroot of this test's own;
    every session is closed when the test ends."""
    name = f"acl-store-{next(_clusters)}"
    clients: list[ZkClient] = []

    def make() -> ZkClient:
        client = ZkClient(zookeeper.connect_string, name, session_timeout_ms=10_000)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def described(manager: AclManager, chosen: ACLFilter = EVERY_ACL) -> set[ACL]:
    result = manager.describe(DescribeAclsRequest(chosen))
    assert result.error is Errors.NONE
    return set(result.acls)


def create(manager: AclManager, *acls: ACL) -> None:
    results = manager.create(CreateAclsRequest(acls))
    assert [r.error for r in results] == [Errors.NONE] * len(acls), results


def next_change(manager: AclManager) -> Callable[[], list[ResourcePattern]]:
    """Leave a watch on the manager's notifications; the function returned waits (with a
    deadline) for it to fire and then takes the changes."""
    fired = threading.Event()
    assert manager.take_changes(lambda _event: fired.set()) == []

    def take() -> list[ResourcePattern]:
        assert fired.wait(WATCH_TIMEOUT_S), "no ACL change notification arrived"
        return manager.take_changes()

    return take


def test_created_acls_are_described_and_stored_as_kafka_stores_them(connect: Connect) -> None:
    client = connect()
    manager = AclManager(client, CONFIG)
    literal = allow("User:alice", ORDERS)
    prefixed = ACL("User:bob", HOST, WRITE, ACLPermissionType.DENY, ORDERS_PREFIX)
    create(manager, literal, prefixed)

    assert described(manager) == {literal, prefixed}
    literal_data = json.loads(client.zk.get(pattern_path(ORDERS))[0])
    assert literal_data == {
        "version": 1,
        "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
        ],
    }
    assert client.zk.exists("/kafka-acl-extended/prefixed/Topic/orders-") is not None
    literal_changes = client.zk.get_children(LITERAL_CHANGES)
    assert [client.zk.get(f"{LITERAL_CHANGES}/{c}")[0] for c in literal_changes] == [
        b"Topic:LITERAL:orders"
    ]
    assert len(client.zk.get_children(PREFIXED_CHANGES)) == 1


def test_describe_applies_the_filter(connect: Connect) -> None:
    manager = AclManager(connect(), CONFIG)
    alices = allow("User:alice", ORDERS), allow("User:alice", ORDERS_PREFIX)
    create(manager, *alices, allow("User:bob", PAYMENTS))
    assert described(manager, acl_filter("User:alice")) == set(alices)
    match = ResourcePatternFilter(TOPIC, "orders-eu", ACLResourcePatternType.MATCH)
    assert described(manager, acl_filter(pattern=match)) == {alices[1]}


def test_creating_an_acl_twice_stores_it_once_and_announces_it_once(connect: Connect) -> None:
    client = connect()
    manager = AclManager(client, CONFIG)
    acl = allow("User:alice", ORDERS)
    create(manager, acl)
    create(manager, acl)
    create(manager, acl, acl)
    assert described(manager) == {acl}
    assert len(json.loads(client.zk.get(pattern_path(ORDERS))[0])["acls"]) == 1
    assert len(client.zk.get_children(LITERAL_CHANGES)) == 1


def test_an_invalid_acl_is_refused_and_not_stored_while_the_valid_ones_are(
    connect: Connect,
) -> None:
    client = connect()
    manager = AclManager(client, CONFIG)
    first = allow("User:alice", ORDERS)
    group_write = allow("User:alice", ResourcePattern(ResourceType.GROUP, "g"), WRITE)
    bad_principal = allow("alice", PAYMENTS)
    last = allow("User:bob", PAYMENTS)
    results = manager.create(CreateAclsRequest((first, group_write, bad_principal, last)))

    assert [r.acl for r in results] == [first, group_write, bad_principal, last]
    assert [r.error for r in results] == [
        Errors.NONE,
        Errors.INVALID_REQUEST,
        Errors.INVALID_REQUEST,
        Errors.NONE,
    ]
    assert results[1].message is not None and "WRITE" in results[1].message
    assert "GROUP" in results[1].message
    assert results[2].message is not None and "Type:name" in results[2].message
    assert described(manager) == {first, last}
    assert client.zk.exists("/kafka-acl/Group/g") is None


def test_a_resource_name_with_a_slash_is_refused_not_lost(connect: Connect) -> None:
    client = connect()
    manager = AclManager(client, CONFIG)
    slashed = allow("User:alice", ResourcePattern(ResourceType.GROUP, "team/a"))
    (result,) = manager.create(CreateAclsRequest((slashed,)))
    assert result.error is Errors.INVALID_REQUEST, "ZooKeeper would nest it under /Group/team"
    assert result.message is not None and "/" in result.message
    assert client.zk.exists("/kafka-acl/Group/team") is None


def test_delete_returns_exactly_the_acls_it_removed(connect: Connect) -> None:
    manager = AclManager(connect(), CONFIG)
    alice_orders = allow("User:alice", ORDERS)
    bob_orders = allow("User:bob", ORDERS, WRITE)
    alice_payments = allow("User:alice", PAYMENTS)
    alice_prefix = allow("User:alice", ORDERS_PREFIX)
    create(manager, alice_orders, bob_orders, alice_payments, alice_prefix)

    literal_topics = ResourcePatternFilter(TOPIC, None, ACLResourcePatternType.LITERAL)
    nobody = acl_filter("User:carol")
    results = manager.delete(DeleteAclsRequest((acl_filter("User:alice", literal_topics), nobody)))

    assert [r.error for r in results] == [Errors.NONE, Errors.NONE]
    assert set(results[0].deleted) == {alice_orders, alice_payments}
    assert len(results[0].deleted) == 2
    assert results[1].deleted == ()
    assert described(manager) == {bob_orders, alice_prefix}


def test_a_pattern_whose_last_acl_is_deleted_loses_its_znode(connect: Connect) -> None:
    client = connect()
    manager = AclManager(client, CONFIG)
    create(
        manager, allow("User:alice", ORDERS), allow("User:bob", ORDERS), allow("User:a", PAYMENTS)
    )
    create(manager, allow("User:alice", ORDERS_PREFIX))

    manager.delete(DeleteAclsRequest((acl_filter("User:alice"),)))
    assert client.zk.exists(pattern_path(ORDERS)) is not None, "bob's ACL is still there"
    assert client.zk.exists(pattern_path(ORDERS_PREFIX)) is None

    manager.delete(DeleteAclsRequest((acl_filter(),)))
    assert client.zk.exists(pattern_path(ORDERS)) is None
    assert client.zk.exists(pattern_path(PAYMENTS)) is None
    assert described(manager) == set()


def test_a_second_broker_sees_changes_through_notifications(connect: Connect) -> None:
    writer = AclManager(connect(), CONFIG)
    reader = AclManager(connect(), CONFIG)
    assert not reader.authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")

    take = next_change(reader)
    create(writer, allow("User:alice", ORDERS))
    assert take() == [ORDERS]
    assert reader.authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")
    assert not reader.authorizer.allowed(BOB, HOST, READ, TOPIC, "orders")

    take = next_change(reader)
    writer.delete(DeleteAclsRequest((acl_filter("User:alice"),)))
    assert take() == [ORDERS]
    assert not reader.authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")


def test_a_prefixed_change_reaches_another_broker_through_the_extended_folder(
    connect: Connect,
) -> None:
    writer = AclManager(connect(), CONFIG)
    reader = AclManager(connect(), CONFIG)
    take = next_change(reader)
    create(writer, ACL("User:*", "*", WRITE, ACLPermissionType.ALLOW, ORDERS_PREFIX))
    assert take() == [ORDERS_PREFIX]
    assert reader.authorizer.allowed(BOB, HOST, WRITE, TOPIC, "orders-eu")
    assert not reader.authorizer.allowed(BOB, HOST, WRITE, TOPIC, "payments")


def test_take_changes_names_every_notification_in_order_and_only_once(connect: Connect) -> None:
    writer = AclManager(connect(), CONFIG)
    reader = AclManager(connect(), CONFIG)
    create(writer, allow("User:alice", ORDERS))
    create(writer, allow("User:alice", PAYMENTS))
    create(writer, allow("User:bob", ORDERS))
    assert reader.take_changes() == [ORDERS, PAYMENTS, ORDERS]
    assert reader.take_changes() == []
    assert reader.authorizer.allowed(BOB, HOST, READ, TOPIC, "orders")


def test_a_broker_starting_later_does_not_replay_old_notifications(connect: Connect) -> None:
    writer = AclManager(connect(), CONFIG)
    create(writer, allow("User:alice", ORDERS), allow("User:alice", ORDERS_PREFIX))
    late = AclManager(connect(), CONFIG)
    assert late.take_changes() == []
    assert late.authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders-eu")


def test_the_acls_are_read_back_after_a_restart(connect: Connect) -> None:
    first = connect()
    acls = {
        allow("User:alice", ORDERS),
        ACL("User:bob", HOST, WRITE, ACLPermissionType.DENY, ORDERS_PREFIX),
        allow("User:ops", ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"), ACLOperation.ALL),
        allow("User:tx", ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-1"), WRITE),
    }
    create(AclManager(first, CONFIG), *acls)
    first.close()

    restarted = AclManager(connect(), CONFIG)
    assert restarted.store.read_all() == acls
    assert described(restarted) == acls
    assert restarted.authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")
    assert set(restarted.authorizer.acls(EVERY_ACL)) == acls


def test_a_disabled_authorizer_still_manages_acls_but_allows_everything(connect: Connect) -> None:
    manager = AclManager(connect(), BrokerConfig())
    create(manager, ACL("User:*", "*", ACLOperation.ALL, ACLPermissionType.DENY, ORDERS))
    assert described(manager) != set()
    assert manager.authorizer.allowed(ALICE, HOST, READ, TOPIC, "orders")


def test_super_users_come_from_the_broker_config(connect: Connect) -> None:
    config = BrokerConfig.from_dict(
        {"authorizer.class.name": "AclAuthorizer", "super.users": "User:admin;User:ops"}
    )
    manager = AclManager(connect(), config)
    create(manager, ACL("User:*", "*", ACLOperation.ALL, ACLPermissionType.DENY, ORDERS))
    assert manager.authorizer.allowed(KafkaPrincipal.user("ops"), HOST, WRITE, TOPIC, "orders")
    assert not manager.authorizer.allowed(ALICE, HOST, READ, TOPIC, "payments")


@pytest.mark.parametrize("existing", [False, True], ids=["new znode", "existing znode"])
def test_a_write_that_lost_a_race_is_retried_on_the_winners_acls(
    connect: Connect, existing: bool
) -> None:
    store, rival = KafkaAclStore(connect()), KafkaAclStore(connect())
    base, mine, theirs = (allow(f"User:{n}", ORDERS) for n in ("base", "mine", "theirs"))
    if existing:
        store.change(ORDERS, lambda current: current | {base})
    seen: list[set[ACL]] = []

    def update(current: set[ACL]) -> set[ACL]:
        seen.append(set(current))
        if len(seen) == 1:  # another broker writes between this read and this write
            rival.change(ORDERS, lambda theirs_now: theirs_now | {theirs})
        return current | {mine}

    written = store.change(ORDERS, update)
    before = {base} if existing else set()
    assert seen == [before, before | {theirs}]
    assert written == before | {theirs, mine}
    assert store.read(ORDERS) == written


def test_every_written_change_is_announced_once(connect: Connect) -> None:
    store = KafkaAclStore(connect())
    seen = store.latest_changes()
    store.change(ORDERS, lambda current: current | {allow("User:a", ORDERS)})
    store.change(ORDERS, lambda current: current)  # no change: nothing written or announced
    store.change(ORDERS_PREFIX, lambda current: current | {allow("User:a", ORDERS_PREFIX)})
    store.change(ORDERS, lambda current: set())
    assert store.changes_after(seen) == [ORDERS, ORDERS, ORDERS_PREFIX]
    assert store.changes_after(seen) == []
    assert seen == store.latest_changes()
