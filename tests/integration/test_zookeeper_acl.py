"""ZooKeeper ACLs on a real cluster (Kafka's ``zookeeper.set.acl``): with ``zookeeper_set_acl`` the
cluster's znodes belong to the identity kept in its data directory, a ZooKeeper client without it
(or with a wrong one) can rewrite, delete or queue nothing, and the cluster goes on serving."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, make_acl, make_digest_acl

from rafka.actors.zk import data as zd
from rafka.actors.zk.acl import ZkSecurity
from rafka.actors.zk.client import ZkClient
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_identity import IDENTITY_FILE, read_identity
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NS = "rafka-zk-acl"
CLUSTER = "zk-acl"
RECORDS = 10
WORLD_READ = make_acl("world", "anyone", read=True)


@pytest.fixture(scope="module")
def acl_cluster(own_cluster: Callable[..., LocalCluster]) -> Iterator[LocalCluster]:
    """Three brokers whose znodes carry ACLs for a generated identity (world-readable)."""
    with own_cluster(CLUSTER, NS, zookeeper_set_acl=True, auto_create_topics_enable=False) as local:
        yield local


@pytest.fixture(scope="module")
def identity(acl_cluster: LocalCluster) -> str:
    """The ``user:password`` the cluster generated and kept in its data directory."""
    found = read_identity(acl_cluster.data_dir)
    assert found is not None
    return found


@pytest.fixture(scope="module")
def topic(acl_cluster: LocalCluster) -> str:
    """A replicated topic the attacks aim at."""
    acl_cluster.admin().create_topic("guarded", 1, 3)
    return "guarded"


def session(
    zookeeper: ZooKeeperServer, auth: list[tuple[str, str]], chroot: str = ""
) -> KazooClient:
    """A started kazoo session presenting ``auth``, in ``chroot`` if given."""
    client = KazooClient(hosts=zookeeper.connect_string + chroot, auth_data=auth)
    client.start(timeout=30)
    return client


@pytest.fixture(params=["no identity", "wrong password"])
def stranger(
    request: pytest.FixtureRequest, zookeeper: ZooKeeperServer, identity: str
) -> Iterator[KazooClient]:
    """A ZooKeeper client that is not the cluster: no credentials, or the right user with a
    wrong password (ZooKeeper then sees another digest identity)."""
    user = identity.partition(":")[0]
    auth = [] if request.param == "no identity" else [("digest", f"{user}:wrong")]
    client = session(zookeeper, auth, f"/rafka/{CLUSTER}")
    yield client
    client.stop()
    client.close()


def owner_acl(identity: str) -> ACL:
    """The ACL entry that gives the identity every permission."""
    user, _, password = identity.partition(":")
    return make_digest_acl(user, password, all=True)


def produce_and_read(cluster: LocalCluster, topic: str, tag: str) -> list[bytes]:
    """Produce RECORDS values with acks=all and read the partition back from its start."""
    with cluster.producer(acks="all") as producer:
        for i in range(RECORDS):
            producer.send(topic, f"{tag}-{i}".encode()).get(timeout=30)
    partition = TopicPartition(topic, 0)
    values: list[bytes] = []
    with cluster.consumer(group_id=None, auto_offset_reset="earliest") as consumer:
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)

        def all_read() -> bool:
            for records in consumer.poll(timeout_ms=500).values():
                values.extend(r.value for r in records if r.value.startswith(tag.encode()))
            return len(values) >= RECORDS

        wait_until(all_read, 60, f"the {tag} records to be read back")
    return values


def test_the_identity_is_kept_owner_only_and_out_of_the_broker_logs(
    acl_cluster: LocalCluster, identity: str
) -> None:
    path = acl_cluster.data_dir / IDENTITY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    password = identity.partition(":")[2]
    assert len(password) >= 32
    logs = list(acl_cluster.data_dir.glob("broker-*/server.log"))
    assert logs
    for log in logs:
        assert password not in log.read_text(errors="replace")


def test_the_cluster_znodes_belong_to_the_identity_and_are_world_readable(
    acl_cluster: LocalCluster, zookeeper: ZooKeeperServer, identity: str, topic: str
) -> None:
    expected = [owner_acl(identity), WORLD_READ]
    client = session(zookeeper, [("digest", identity)], f"/rafka/{CLUSTER}")
    try:
        for path in (
            "/",
            zd.TOPICS,
            zd.topic_path(topic),
            zd.partition_state_path(topic, 0),
            zd.broker_path(0),
            zd.CONTROLLER,
            zd.CONTROLLER_EPOCH,
            zd.DELETE_TOPICS,
            zd.CLUSTER_ID,
        ):
            assert client.get_acls(path)[0] == expected, path
        assert client.get_acls(zd.CONFIG_BROKERS)[0] == [owner_acl(identity)]
    finally:
        client.stop()
        client.close()


def test_a_stranger_can_change_nothing_and_the_cluster_goes_on_serving(
    acl_cluster: LocalCluster, stranger: KazooClient, topic: str
) -> None:
    assignment = stranger.get(zd.topic_path(topic))[0]
    attacks: dict[str, Callable[[], object]] = {
        "rewrite the topic's assignment": lambda: stranger.set(
            zd.topic_path(topic), json.dumps({"version": 1, "partitions": {"0": [9]}}).encode()
        ),
        "create a topic": lambda: stranger.create(zd.topic_path("evil"), assignment),
        "claim /controller": lambda: stranger.set(zd.CONTROLLER, zd.encode_controller(9)),
        "delete /controller": lambda: stranger.delete(zd.CONTROLLER),
        "bump the controller epoch": lambda: stranger.set(zd.CONTROLLER_EPOCH, b"999"),
        "queue the topic's deletion": lambda: stranger.create(zd.delete_topic_path(topic)),
        "open the chroot's ACL": lambda: stranger.set_acls("/", [WORLD_READ]),
        "write a broker config": lambda: stranger.create(f"{zd.CONFIG_BROKERS}/0", b"{}"),
    }
    refused = []
    for attack, run in attacks.items():
        try:
            run()
        except NoAuthError:
            refused.append(attack)
    assert refused == list(attacks)
    assert stranger.get(zd.topic_path(topic))[0] == assignment
    assert stranger.exists(zd.CONTROLLER) is not None
    tag = f"attacked-{len(stranger.auth_data)}"
    assert len(produce_and_read(acl_cluster, topic, tag)) == RECORDS
    admin = acl_cluster.admin()
    admin.create_topic("made-after-attacks", 1, 1)
    admin.delete_topics(["made-after-attacks"])
    assert "made-after-attacks" not in admin.list_topics()


def test_world_readable_znodes_can_be_read_but_broker_configs_cannot(
    acl_cluster: LocalCluster, stranger: KazooClient
) -> None:
    assert sorted(stranger.get_children(zd.BROKER_IDS)) == ["0", "1", "2"]
    with pytest.raises(NoAuthError):
        stranger.get_children(zd.CONFIG_BROKERS)


def test_a_restarted_broker_authenticates_and_registers_again(
    acl_cluster: LocalCluster, topic: str
) -> None:
    acl_cluster.stop_broker(2)
    acl_cluster.start_broker(2)
    wait_until(
        lambda: len(acl_cluster.admin().describe_cluster().brokers) == 3,
        60,
        "broker 2 to register again",
    )
    assert len(produce_and_read(acl_cluster, topic, "after-restart")) == RECORDS


def test_without_world_readable_a_stranger_reads_nothing(
    zookeeper: ZooKeeperServer, identity: str
) -> None:
    """The brokers' own ZooKeeper client, in a chroot of its own: what it creates with
    ``zookeeper_acl_world_readable`` off is closed to anyone without the identity."""
    hidden = f"{CLUSTER}-hidden"
    security = ZkSecurity(identity, set_acl=True, world_readable=False)
    owner = ZkClient(zookeeper.connect_string, hidden, 10_000, security=security)
    # Outside the chroot: kazoo cannot even start a session inside one it may not read.
    stranger = session(zookeeper, [])
    try:
        owner.cluster_id()
        assert owner.live_brokers() == {}
        for path in (zd.BROKER_IDS, zd.TOPICS, ""):
            with pytest.raises(NoAuthError):
                stranger.get_children(f"/rafka/{hidden}{path}")
        with pytest.raises(NoAuthError):
            stranger.get(f"/rafka/{hidden}{zd.CLUSTER_ID}")
    finally:
        stranger.stop()
        stranger.close()
        owner.close()
