"""Broker, controller and replica failures on a real cluster: no acknowledged record is lost."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

from rafka.actors import names
from rafka.actors.state_change import format_time, read_state_changes
from rafka.actors.zk.client import ControllerMovedError, ZkClient
from rafka.actors.zk.data import LeaderIsrAndEpoch
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.errors import Errors, NotEnoughReplicasError
from rafka.protocol.messages.control import LeaderAndIsrRequest
from rafka.protocol.types import TopicPartition
from rafka.testing import serving_replica, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]
NS = "rafka-failover"
SESSION_TIMEOUT_MS = 4000


@pytest.fixture(scope="module")
def fcluster(
    session_dir: Path, zookeeper: ZooKeeperServer, ray_nodes: list[str]
) -> Iterator[LocalCluster]:
    """A cluster of its own, with short failure-detection settings, for tests that break things."""
    local = LocalCluster(
        brokers=3,
        data_dir=session_dir / "failover",
        zookeeper=zookeeper.connect_string,
        cluster_name="failover",
        namespace=NS,
        node_ids=ray_nodes,
        broker_config={
            "zookeeper_session_timeout_ms": SESSION_TIMEOUT_MS,
            "replica_lag_time_max_ms": 2000,
            "replica_fetch_backoff_ms": 100,
            "replica_fetch_wait_max_ms": 200,
        },
    )
    with local:
        yield local


@pytest.fixture
def fadmin(fcluster: LocalCluster) -> Admin:
    return fcluster.admin()


def other_controller(admin: Admin, old: int) -> int | None:
    """The controller's broker id if one other than ``old`` is elected, else None."""
    current = admin.describe_cluster().controller_id
    return current if current not in (-1, old) else None


def consume_values(topic: str, partitions: int, expected: int) -> list[bytes | None]:
    consumer = Consumer(namespace=NS, auto_offset_reset="earliest", max_poll_records=100_000)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    values: list[bytes | None] = []
    deadline = time.monotonic() + 60
    while len(values) < expected and time.monotonic() < deadline:
        values += [r.value for part in consumer.poll(timeout_ms=2000).values() for r in part]
    consumer.close()
    return values


def ensure_all_brokers(cluster: LocalCluster, admin: Admin) -> None:
    for broker_id in range(3):
        if broker_id not in cluster.brokers:
            cluster.start_broker(broker_id)
    admin.wait_for_cluster(3, 60_000)


def test_leader_broker_killed_moves_leadership_and_keeps_acknowledged_records(
    fcluster: LocalCluster, fadmin: Admin
) -> None:
    fadmin.create_topic("kill-leader", 1, 3, config={"min.insync.replicas": "2"})
    with Producer(namespace=NS, acks="all") as producer:
        acked = [producer.send("kill-leader", f"a{i}".encode()).get(timeout=30) for i in range(50)]
        old_leader = fadmin.describe_topic("kill-leader").partitions[0].leader
        fcluster.kill_broker(old_leader)
        moved = wait_until(
            lambda: (
                (p := fadmin.describe_topic("kill-leader").partitions[0]).leader
                not in (-1, old_leader)
                and p
            ),
            90,
            "a new leader",
        )
        assert old_leader not in moved.isr
        acked += [producer.send("kill-leader", f"b{i}".encode()).get(timeout=60) for i in range(50)]
    assert [m.offset for m in acked] == list(range(100))
    values = consume_values("kill-leader", 1, 100)
    assert values == [f"a{i}".encode() for i in range(50)] + [f"b{i}".encode() for i in range(50)]
    fcluster.start_broker(old_leader)
    rejoined = wait_until(
        lambda: (
            (p := fadmin.describe_topic("kill-leader").partitions[0]).isr
            and old_leader in p.isr
            and p
        ),
        60,
        "the restarted broker to re-enter the ISR",
    )
    assert rejoined.leader == moved.leader, (
        "the preferred replica must not take leadership back by itself"
    )
    replica = ray.get_actor(names.replica_actor_name("kill-leader", 0, old_leader), namespace=NS)
    assert wait_until(
        lambda: ray.get(replica.describe.remote())["log_end_offset"] == 100,
        30,
        "the restarted replica to catch up",
    )


def test_controller_failover_elects_another_broker_with_a_higher_epoch(
    fcluster: LocalCluster, fadmin: Admin
) -> None:
    ensure_all_brokers(fcluster, fadmin)
    before = fadmin.describe_cluster().controller_id
    old = ray.get(
        ray.get_actor(names.controller_actor_name(before), namespace=NS).describe.remote()
    )
    fcluster.kill_broker(before)
    after = wait_until(lambda: other_controller(fadmin, before), 90, "a new controller")
    state = ray.get(
        ray.get_actor(names.controller_actor_name(after), namespace=NS).describe.remote()
    )
    assert state["active"] and state["epoch"] > old["epoch"]
    fadmin.create_topic("after-controller-failover", 2, 2)
    fcluster.start_broker(before)
    ensure_all_brokers(fcluster, fadmin)


def test_a_standby_frees_a_dead_controllers_znode_instead_of_waiting_for_its_session(
    fcluster: LocalCluster, fadmin: Admin
) -> None:
    ensure_all_brokers(fcluster, fadmin)
    before = fadmin.describe_cluster().controller_id
    killed_at = time.time()
    fcluster.kill_broker(before)
    wait_until(lambda: other_controller(fadmin, before), 90, "a new controller")
    changes = read_state_changes(
        (b, Path(fcluster.broker_config(b).log_dirs)) for b in range(3) if b != before
    )
    freed = [
        c
        for c in changes
        if c.time >= killed_at - 1
        and f"Ray reports controller {before}'s process gone; freed /controller" in c.message
    ]
    assert freed, "no standby freed /controller when Ray reported the controller's death"
    fcluster.start_broker(before)
    ensure_all_brokers(fcluster, fadmin)


def test_stale_controller_epoch_is_rejected_by_brokers_and_by_zookeeper(
    fcluster: LocalCluster, fadmin: Admin, zookeeper: ZooKeeperServer
) -> None:
    ensure_all_brokers(fcluster, fadmin)
    broker = fcluster.brokers[0]
    response = ray.get(
        broker.leader_and_isr.remote(
            LeaderAndIsrRequest(controller_id=9, controller_epoch=0, partitions=())
        )
    )
    assert response.error is Errors.STALE_CONTROLLER_EPOCH
    zk = ZkClient(zookeeper.connect_string, "failover")
    try:
        fadmin.create_topic("fenced", 1, 1)
        _, stale_version = zk.increment_controller_epoch()
        zk.increment_controller_epoch()
        current = zk.partition_state("fenced", 0)
        assert current is not None
        with pytest.raises(ControllerMovedError):
            zk.update_partition_state(
                "fenced",
                0,
                LeaderIsrAndEpoch(0, current.leader_epoch + 1, (0,), 1, current.zk_version),
                stale_version,
            )
        assert zk.partition_state("fenced", 0) == current
    finally:
        zk.close()


def test_paused_broker_is_fenced_and_rejoins_as_a_new_incarnation(
    fcluster: LocalCluster, fadmin: Admin, zookeeper: ZooKeeperServer
) -> None:
    ensure_all_brokers(fcluster, fadmin)
    fadmin.create_topic("zombie", 1, 3, config={"min.insync.replicas": "2"})
    controller = fadmin.describe_cluster().controller_id
    pids = fcluster.broker_pids(controller)
    epoch_before = ray.get(
        ray.get_actor(names.controller_actor_name(controller), namespace=NS).describe.remote()
    )["epoch"]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        new_controller = wait_until(
            lambda: other_controller(fadmin, controller),
            15 * SESSION_TIMEOUT_MS / 1000,
            "another controller while the old one is paused",
        )
        with Producer(namespace=NS, acks="all") as producer:
            meta = producer.send("zombie", b"during-pause").get(timeout=60)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    zombie = ray.get_actor(names.controller_actor_name(controller), namespace=NS)
    wait_until(
        lambda: not ray.get(zombie.describe.remote())["active"],
        30,
        "the resumed controller to resign",
    )
    new_state = ray.get(
        ray.get_actor(names.controller_actor_name(new_controller), namespace=NS).describe.remote()
    )
    assert new_state["epoch"] > epoch_before
    wait_until(
        lambda: controller in [b.broker_id for b in fadmin.describe_cluster().brokers],
        30,
        "the paused broker to re-register",
    )
    wait_until(
        lambda: controller in fadmin.describe_topic("zombie").partitions[0].isr,
        60,
        "the paused broker back in the ISR",
    )
    assert consume_values("zombie", 1, meta.offset + 1)[meta.offset] == b"during-pause"


def test_dead_replica_actor_is_restarted_by_its_broker_from_disk(
    fcluster: LocalCluster, fadmin: Admin
) -> None:
    ensure_all_brokers(fcluster, fadmin)
    fadmin.create_topic("replica-death", 1, 2)
    with Producer(namespace=NS, acks="all") as producer:
        for i in range(20):
            producer.send("replica-death", str(i).encode())
    leader = fadmin.describe_topic("replica-death").partitions[0].leader
    name = names.replica_actor_name("replica-death", 0, leader)
    old = ray.get_actor(name, namespace=NS)
    old_pid = ray.get(old.describe.remote())["pid"]
    ray.kill(old, no_restart=True)

    def restarted() -> dict | None:
        state = ray.get(ray.get_actor(name, namespace=NS).describe.remote(), timeout=5)
        return state if state["pid"] != old_pid and state["role"] == "leader" else None

    state = wait_until(restarted, 30, "the broker to restart the replica")
    assert state["log_end_offset"] == 20
    assert consume_values("replica-death", 1, 20) == [str(i).encode() for i in range(20)]


def test_controlled_shutdown_moves_leadership_without_failing_any_send(
    fcluster: LocalCluster, fadmin: Admin
) -> None:
    ensure_all_brokers(fcluster, fadmin)
    fadmin.create_topic("controlled", 3, 3, config={"min.insync.replicas": "2"})
    stopping = fadmin.describe_topic("controlled").partitions[0].leader
    with Producer(namespace=NS, acks="all") as producer:
        futures = [producer.send("controlled", f"x{i}".encode()) for i in range(200)]
        fcluster.stop_broker(stopping)
        led_by_stopped = [
            p.partition
            for p in fadmin.describe_topic("controlled").partitions
            if p.leader == stopping
        ]
        futures += [producer.send("controlled", f"y{i}".encode()) for i in range(200)]
        producer.flush()
        failures = [f.exception for f in futures if f.failed()]
    assert led_by_stopped == []
    assert failures == []
    assert len(set(consume_values("controlled", 3, 400))) == 400
    fcluster.start_broker(stopping)


def test_acks_all_is_refused_below_min_insync_replicas(
    fcluster: LocalCluster, fadmin: Admin
) -> None:
    ensure_all_brokers(fcluster, fadmin)
    fadmin.create_topic("min-isr", 1, 2, config={"min.insync.replicas": "2"})
    partition = fadmin.describe_topic("min-isr").partitions[0]
    follower = next(r for r in partition.replicas if r != partition.leader)
    # Wait until the leader replica leads with both replicas in sync, so the shrink awaited below is
    # the one the follower's death causes.
    leader = serving_replica("min-isr", 0, partition.leader, NS)
    wait_until(
        lambda: (
            (state := ray.get(leader.describe.remote(), timeout=5))["role"] == "leader"
            and len(state["isr"]) == 2
        ),
        30,
        "the leader replica to lead with both replicas in sync",
    )
    fcluster.kill_broker(follower)
    # The leader replica decides the produce, and other brokers' metadata may show the smaller ISR a
    # moment before the leader has applied it: wait on the leader itself.
    wait_until(
        lambda: follower not in ray.get(leader.describe.remote(), timeout=5)["isr"],
        90,
        "the leader's ISR to shrink",
    )
    with Producer(namespace=NS, acks="all", retries=0) as producer:
        with pytest.raises(NotEnoughReplicasError):
            producer.send("min-isr", b"refused").get(timeout=30)
    with Producer(namespace=NS, acks=1) as producer:
        assert producer.send("min-isr", b"accepted").get(timeout=30).offset == 0
    fcluster.start_broker(follower)
    ensure_all_brokers(fcluster, fadmin)


@pytest.mark.parametrize("unclean", [False, True])
def test_all_in_sync_replicas_dead_unclean_election_decides(
    fcluster: LocalCluster, fadmin: Admin, zookeeper: ZooKeeperServer, unclean: bool
) -> None:
    """The only in-sync replica dies while the other is out of sync: with Kafka's
    ``unclean.leader.election.enable`` off (the default since KIP-106) the partition stays offline;
    on, the stale replica leads and the tail is lost."""
    ensure_all_brokers(fcluster, fadmin)
    topic = f"unclean-{str(unclean).lower()}"
    fadmin.create_topic(
        topic, 1, 2, config={"unclean.leader.election.enable": str(unclean).lower()}
    )
    # Read the leader rather than assume replicas[0]: a broker restarted
    # by ensure_all_brokers may not have been live to the controller
    # when the topic was created, and then the other replica leads.
    # The ISR is read from ZooKeeper, which the controller elects from: a
    # broker's metadata cache may still show an ISR the leader has changed since.
    zk = ZkClient(zookeeper.connect_string, "failover")
    try:
        _unclean_election_scenario(fcluster, fadmin, zk, topic, unclean)
    finally:
        zk.close()


def _unclean_election_scenario(
    fcluster: LocalCluster, fadmin: Admin, zk: ZkClient, topic: str, unclean: bool
) -> None:
    def isr_state(check: Callable[[LeaderIsrAndEpoch], bool]) -> LeaderIsrAndEpoch | None:
        state = zk.partition_state(topic, 0)
        return state if state is not None and check(state) else None

    settled = wait_until(
        lambda: isr_state(lambda s: s.leader >= 0 and len(s.isr) == 2),
        60,
        "both replicas in the ISR",
    )
    leader = settled.leader
    follower = next(r for r in settled.isr if r != leader)
    follower_state = wait_until(
        lambda: ray.get(
            ray.get_actor(
                names.replica_actor_name(topic, 0, follower), namespace=NS
            ).describe.remote(),
            timeout=5,
        ),
        30,
        "the follower replica to start",
    )
    follower_pids = [follower_state["pid"]]
    with Producer(namespace=NS, acks="all") as producer:
        producer.send(topic, b"replicated").get(timeout=30)
        os.kill(follower_pids[0], signal.SIGSTOP)
        try:
            wait_until(
                lambda: isr_state(lambda s: s.isr == (leader,)),
                90,
                "the stalled follower to leave the ISR",
            )
            producer.send(topic, b"only-on-leader").get(timeout=30)
            fcluster.kill_broker(leader)
        finally:
            os.kill(follower_pids[0], signal.SIGCONT)
    if unclean:
        new = wait_until(
            lambda: (p := fadmin.describe_topic(topic).partitions[0]).leader == follower and p,
            90,
            "unclean election",
        )
        assert new.isr == (follower,)
        assert consume_values(topic, 1, 1) == [b"replicated"]
    else:
        seen: list[Any] = []

        def offline() -> bool:
            partition = fadmin.describe_topic(topic).partitions[0]
            seen.append(partition)
            return partition.leader == -1

        try:
            wait_until(
                offline,
                90,
                f"the partition to go offline after broker {leader} died (follower {follower} was "
                "paused)",
            )
        except AssertionError as exc:
            # What every broker decided about the topic, so a failure here explains itself.
            history = "\n".join(
                f"{format_time(c.time)} broker {c.broker_id}: {c.message}"
                for c in read_state_changes(
                    (b, Path(fcluster.broker_config(b).log_dirs)) for b in range(3)
                )
                if c.mentions(f"{topic}-0") or topic in c.message
            )
            raise AssertionError(
                f"{exc}; last seen {seen[-1:]}; state changes:\n{history}"
            ) from None
    fcluster.start_broker(leader)
    back = wait_until(
        lambda: (
            (p := fadmin.describe_topic(topic).partitions[0]).leader >= 0 and len(p.isr) == 2 and p
        ),
        60,
        "both replicas in sync again",
    )
    if not unclean:
        assert back.leader == leader
        assert consume_values(topic, 1, 2) == [b"replicated", b"only-on-leader"]


def test_state_change_log_merger_tells_a_failover_in_time_order(
    fcluster: LocalCluster, fadmin: Admin
) -> None:
    ensure_all_brokers(fcluster, fadmin)
    topic = "merge-history"
    fadmin.create_topic(topic, 3, 3)
    controller = fadmin.describe_cluster().controller_id
    partitions = wait_until(
        lambda: (
            (ps := fadmin.describe_topic(topic).partitions)
            and all(p.leader >= 0 for p in ps)
            and ps
        ),
        60,
        "leaders for every partition",
    )
    victim = next(p for p in partitions if p.leader != controller)
    name = f"{topic}-{victim.partition}"
    started = format_time(time.time() - 0.001)
    fcluster.kill_broker(victim.leader)
    moved = wait_until(
        lambda: (
            (p := fadmin.describe_topic(topic).partitions[victim.partition]).leader
            not in (-1, victim.leader)
            and p
        ),
        90,
        "a new leader",
    )
    # The new leader's replica logs "became leader" after answering; wait for its line to land.
    regex = f"{fcluster.data_dir}/broker-.*/state-change.log.*"
    command = [sys.executable, "-m", "rafka", "state-change-log-merger", "--logs-regex", regex]

    def history() -> list[str] | None:
        merged = subprocess.run(
            [*command, "--start-time", started],
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert merged.returncode == 0, merged.stderr
        lines = merged.stdout.splitlines()
        done = f"[Replica {name}@{moved.leader}] became leader"
        return lines if any(done in line for line in lines) else None

    lines = wait_until(history, 30, f"broker {moved.leader}'s replica to log becoming leader")
    stamps = [line[1:24] for line in lines]
    assert stamps == sorted(stamps) and stamps[0] >= started

    # Sends are logged when queued, so an older request to the new leader (the topic's creation)
    # may be received after the failover's send; the story follows one correlation id.
    def first(fields: str, event: str, after: int = -1) -> int:
        found = (
            i for i, line in enumerate(lines) if i > after and fields in line and event in line
        )
        index = next(found, None)
        assert index is not None, f"no {fields!r}{event!r} line after line {after}:\n" + "\n".join(
            lines
        )
        return index

    part = f"partition={name} "
    failed = first(f"broker={controller} ", f"brokers [{victim.leader}] failed")
    elected = first(part, f"{name} OfflinePartition -> OnlinePartition, leader {moved.leader}")
    sent = first(part, f"sending LeaderAndIsr to broker {moved.leader}: {name} leader")
    correlation = re.search(r"correlation=(\d+) ", lines[sent])
    assert correlation, lines[sent]
    received = first(
        f"{correlation.group(0)}{part}", f"[Broker id={moved.leader}] received LeaderAndIsr", sent
    )
    became = first(part, f"[Replica {name}@{moved.leader}] became leader", received)
    assert failed < elected < sent < received < became, "\n".join(lines)
    only = subprocess.run(
        [*command, "--topic", topic, "--partitions", str(victim.partition)],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert only.returncode == 0, only.stderr
    assert only.stdout and all(f" partition={name} " in line for line in only.stdout.splitlines())
