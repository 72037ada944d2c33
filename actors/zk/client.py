"""ZooKeeper operations of brokers and the controller, over kazoo, under the cluster's chroot.

Every write the controller makes is a ZooKeeper transaction that first checks the version of
``/controller_epoch`` it saw when it was elected: a controller that lost its session (a zombie
resumed after a pause) fails that check and can change nothing. Partition state writes are also
compare-and-set on the state znode's own version, so a concurrent ISR change is never overwritten.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.retry import KazooRetry
from kazoo.security import ACL, make_acl, make_digest_acl

from rafka.actors.zk import data as zd
from rafka.actors.zk.acl import Grant, ZkSecurity, ancestors_first, chroot_parents
from rafka.actors.zk.pipeline import get_many, pipelined
from rafka.protocol.errors import KafkaTimeoutError, TopicAlreadyExistsError
from rafka.protocol.types import TopicPartition

logger = logging.getLogger(__name__)

DEFAULT_CHROOT_PREFIX = "/rafka"


class ControllerMovedError(Exception):
    """The controller epoch changed under a controller write: another controller took over."""


def split_connect(connect: str, cluster_name: str) -> tuple[str, str]:
    """Split ``host:port[,host:port][/chroot]`` into hosts and chroot (default
    ``/rafka/<cluster>``)."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, ("/" + chroot.rstrip("/")) if slash and chroot.strip(
        "/"
    ) else f"{DEFAULT_CHROOT_PREFIX}/{cluster_name}"


class ZkClient:
    """A kazoo session bound to one cluster's chroot, with Kafka's znode operations."""

    def __init__(
        self,
        connect: str,
        cluster_name: str,
        session_timeout_ms: int = 6000,
        connect_timeout_s: float = 15.0,
        security: ZkSecurity | None = None,
    ) -> None:
        self.hosts, self.chroot = split_connect(connect, cluster_name)
        self.security = security or ZkSecurity()
        retry = {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 2}
        bootstrap = KazooClient(
            hosts=self.hosts,
            timeout=session_timeout_ms / 1000,
            auth_data=self.security.auth_data(),
        )
        try:
            bootstrap.start(timeout=connect_timeout_s)
            for parent in chroot_parents(self.chroot):
                bootstrap.ensure_path(
                    parent, acl=self._kazoo_acl(self.security.chroot_parent_acl())
                )
            bootstrap.ensure_path(self.chroot, acl=self.acl("/"))
        except Exception as exc:
            raise KafkaTimeoutError(
                f"cannot reach ZooKeeper at {self.hosts} within {connect_timeout_s}s: {exc}"
            ) from exc
        finally:
            bootstrap.stop()
            bootstrap.close()
        self.zk = KazooClient(
            hosts=self.hosts + self.chroot,
            timeout=session_timeout_ms / 1000,
            connection_retry=KazooRetry(**retry),
            command_retry=KazooRetry(**retry),
            auth_data=self.security.auth_data(),
            # Every create, ensure_path and transaction create without an ACL of its own gets it.
            default_acl=self.acl("/"),
        )
        self.zk.start(timeout=connect_timeout_s)
        for path in ancestors_first(zd.PERSISTENT_PATHS):
            self.zk.ensure_path(path, acl=self.acl(path))

    def acl(self, path: str) -> list[ACL] | None:
        """The kazoo ACL a znode created at the chroot-relative ``path`` gets (None: kazoo's
        default, ZooKeeper's open ACL when ``zookeeper_set_acl`` is off)."""
        return self._kazoo_acl(self.security.acl(path))

    def _kazoo_acl(self, grants: tuple[Grant, ...] | None) -> list[ACL] | None:
        if grants is None:
            return None
        acl = []
        for grant in grants:
            flags = {permission: True for permission in grant.permissions}
            if grant.grantee == "identity":
                user, password = self.security.username, self.security.password
                acl.append(make_digest_acl(user, password, **flags))
            else:
                acl.append(make_acl("world", "anyone", **flags))
        return acl

    def close(self) -> None:
        """End the session; its ephemeral znodes disappear at once."""
        self.zk.stop()
        self.zk.close()

    @property
    def session_id(self) -> int:
        """This client's ZooKeeper session id."""
        return self.zk.client_id[0]

    # ------------------------------------------------------------------ cluster and brokers

    def cluster_id(self) -> str:
        """The cluster's id, created on first use."""
        try:
            self.zk.create(zd.CLUSTER_ID, zd.encode_cluster_id(uuid.uuid4().hex[:22]))
        except NodeExistsError:
            pass
        return zd.decode_cluster_id(self.zk.get(zd.CLUSTER_ID)[0])

    def register_broker(self, registration: zd.BrokerRegistration, timeout_s: float) -> int:
        """Create the broker's ephemeral znode, waiting out one left by its previous (dead)
        session; returns the broker epoch (the zxid that created the znode)."""
        path = zd.broker_path(registration.broker_id)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                _, created = self.zk.create(
                    path, registration.encode(), ephemeral=True, include_data=True
                )
                return int(created.czxid)
            except NodeExistsError:
                stat = self.zk.exists(path)
                if stat is not None and stat.ephemeralOwner == self.session_id:
                    return int(stat.czxid)
                if time.monotonic() > deadline:
                    raise KafkaTimeoutError(
                        f"broker id {registration.broker_id} is still registered by another "
                        f"live session at {path}"
                    ) from None
                time.sleep(0.1)

    def live_brokers(self, watch: Callable | None = None) -> dict[int, zd.BrokerRegistration]:
        """Registered brokers by id (their znodes read in one pipeline)."""
        ids = sorted(int(child) for child in self.zk.get_children(zd.BROKER_IDS, watch=watch))
        reads = get_many(self.zk, [zd.broker_path(broker) for broker in ids])
        return {
            broker: zd.BrokerRegistration.decode(broker, read[0], read[1].czxid)
            for broker, read in zip(ids, reads.values(), strict=True)
            if read is not None
        }

    # ------------------------------------------------------------------ topics

    def create_topic(
        self,
        topic: str,
        assignment: dict[int, tuple[int, ...]],
        config: dict[str, str],
        epoch_version: int,
    ) -> None:
        """Write a topic's config and assignment, fenced by the controller epoch (the controller
        picks the topic up from its watch). Raises TopicAlreadyExistsError if either exists."""
        transaction = self.zk.transaction()
        transaction.check(zd.CONTROLLER_EPOCH, epoch_version)
        transaction.create(zd.topic_config_path(topic), zd.encode_topic_config(config))
        transaction.create(zd.topic_path(topic), zd.encode_assignment(assignment))
        try:
            self._commit(transaction, zd.topic_path(topic))
        except NodeExistsError:
            raise TopicAlreadyExistsError(f"topic {topic!r} already exists") from None

    def add_partitions(
        self, topic: str, assignment: dict[int, tuple[int, ...]], epoch_version: int
    ) -> None:
        """Rewrite an existing topic's assignment with partitions added, fenced by the controller
        epoch. Raises NoNodeError if the topic does not exist."""
        self.set_topic_assignment(topic, assignment, epoch_version)

    def set_topic_assignment(
        self, topic: str, assignment: dict[int, tuple[int, ...]], epoch_version: int
    ) -> None:
        """Rewrite an existing topic's assignment (a partition reassignment's AR), fenced by the
        controller epoch. Raises NoNodeError if the topic does not exist."""
        transaction = self.zk.transaction()
        transaction.check(zd.CONTROLLER_EPOCH, epoch_version)
        transaction.set_data(zd.topic_path(topic), zd.encode_assignment(assignment))
        self._commit(transaction, zd.topic_path(topic))

    def reassignments(
        self, watch: Callable | None = None
    ) -> tuple[dict[TopicPartition, tuple[int, ...]], int]:
        """The partitions named under ``/admin/reassign_partitions`` and the znode's version (-1:
        no such znode); ``watch`` fires when it is created, changed or deleted. Content that is not
        Kafka's JSON reads as no partition (the controller then rewrites the znode)."""
        try:
            data, stat = self.zk.get(zd.REASSIGN_PARTITIONS, watch=watch)
        except NoNodeError:
            if self.zk.exists(zd.REASSIGN_PARTITIONS, watch=watch) is None:
                return {}, -1
            return self.reassignments(watch)
        try:
            return zd.decode_reassignments(data), stat.version
        except ValueError as exc:
            logger.warning("ignoring malformed %s: %s", zd.REASSIGN_PARTITIONS, exc)
            return {}, stat.version

    def write_reassignments(
        self,
        reassignments: dict[TopicPartition, tuple[int, ...]],
        zk_version: int,
        epoch_version: int,
    ) -> int:
        """Compare-and-set ``/admin/reassign_partitions`` at ``zk_version`` (-1: create it), or
        delete it when nothing is left, fenced by the controller epoch; the new version (-1 when
        deleted). Raises BadVersionError, NodeExistsError or NoNodeError if it changed meanwhile."""
        path = zd.REASSIGN_PARTITIONS
        transaction = self.zk.transaction()
        transaction.check(zd.CONTROLLER_EPOCH, epoch_version)
        if zk_version < 0:
            if not reassignments:
                return -1
            transaction.create(path, zd.encode_reassignments(reassignments))
        elif not reassignments:
            transaction.delete(path, version=zk_version)
        else:
            transaction.set_data(path, zd.encode_reassignments(reassignments), version=zk_version)
        results = self._commit(transaction, path)
        if zk_version < 0:
            return 0
        return -1 if not reassignments else int(results[-1].version)

    def topics(self, watch: Callable | None = None) -> list[str]:
        """Every topic with an assignment."""
        return self.zk.get_children(zd.TOPICS, watch=watch)

    def assignment(self, topic: str, watch: Callable | None = None) -> dict[int, tuple[int, ...]]:
        """A topic's partition -> replicas, or {} if the topic does not exist."""
        try:
            return zd.decode_assignment(self.zk.get(zd.topic_path(topic), watch=watch)[0])
        except NoNodeError:
            return {}

    def topic_config(self, topic: str) -> dict[str, str]:
        """A topic's config overrides."""
        try:
            return zd.decode_topic_config(self.zk.get(zd.topic_config_path(topic))[0])
        except NoNodeError:
            return {}

    def topic_znodes(
        self, topics: Sequence[str]
    ) -> dict[str, tuple[dict[int, tuple[int, ...]], dict[str, str]]]:
        """Each topic's assignment and config overrides, read in one pipeline ({} where a znode
        does not exist)."""
        reads = get_many(
            self.zk,
            [zd.topic_path(t) for t in topics] + [zd.topic_config_path(t) for t in topics],
        )
        return {
            topic: (
                {} if assigned is None else zd.decode_assignment(assigned[0]),
                {} if config is None else zd.decode_topic_config(config[0]),
            )
            for topic in topics
            for assigned, config in [
                (reads[zd.topic_path(topic)], reads[zd.topic_config_path(topic)])
            ]
        }

    def delete_topic_znodes(self, topic: str, epoch_version: int) -> None:
        """Remove a deleted topic's assignment, states, config and admin request in one transaction
        fenced by the controller epoch (controller only)."""
        transaction = self.zk.transaction()
        transaction.check(zd.CONTROLLER_EPOCH, epoch_version)
        for path in (
            zd.topic_path(topic),
            zd.topic_config_path(topic),
            zd.delete_topic_path(topic),
        ):
            for node in self._subtree(path):
                transaction.delete(node)
        self._commit(transaction, zd.topic_path(topic))

    def queue_topic_deletion(self, topic: str) -> None:
        """Write ``/admin/delete_topics/<topic>`` (kafka-topics --delete); NodeExistsError if the
        deletion is already queued."""
        self.zk.create(zd.delete_topic_path(topic), b"")

    def topic_deletions(self, watch: Callable | None = None) -> list[str]:
        """Topics queued for deletion under ``/admin/delete_topics``."""
        return sorted(self.zk.get_children(zd.DELETE_TOPICS, watch=watch))

    def preferred_replica_election(self, watch: Callable) -> list[TopicPartition] | None:
        """The partitions ``/admin/preferred_replica_election`` names, or None if there is no such
        node; ``watch`` fires when it is created, changed or deleted. A node that cannot be parsed
        names no partition (it is logged, then deleted like any other)."""
        try:
            data, _ = self.zk.get(zd.PREFERRED_REPLICA_ELECTION, watch=watch)
        except NoNodeError:
            if self.zk.exists(zd.PREFERRED_REPLICA_ELECTION, watch=watch) is None:
                return None
            return self.preferred_replica_election(watch)
        try:
            return zd.decode_preferred_replica_election(data)
        except ValueError as exc:
            logger.warning("ignoring %s: %s", zd.PREFERRED_REPLICA_ELECTION, exc)
            return []

    def delete_preferred_replica_election(self, epoch_version: int) -> None:
        """Remove ``/admin/preferred_replica_election`` once its elections ran, fenced by the
        controller epoch (controller only); NoNodeError if it is already gone."""
        transaction = self.zk.transaction()
        transaction.check(zd.CONTROLLER_EPOCH, epoch_version)
        transaction.delete(zd.PREFERRED_REPLICA_ELECTION)
        self._commit(transaction, zd.PREFERRED_REPLICA_ELECTION)

    def _subtree(self, path: str) -> list[str]:
        """``path`` and its descendants, children before parents (the order deletes must take)."""
        try:
            children = self.zk.get_children(path)
        except NoNodeError:
            return []
        nodes: list[str] = []
        for child in sorted(children):
            nodes += self._subtree(f"{path}/{child}")
        return [*nodes, path]

    # ------------------------------------------------------------------ partition state

    def partition_state(self, topic: str, partition: int) -> zd.LeaderIsrAndEpoch | None:
        """The partition's leader, epoch and ISR with the znode version, or None if not created
        yet."""
        read = self.partition_states_written([TopicPartition(topic, partition)])
        written = read[TopicPartition(topic, partition)]
        return None if written is None else written[0]

    def partition_states_written(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, tuple[zd.LeaderIsrAndEpoch, int] | None]:
        """Each partition's state and the ZooKeeper transaction that last wrote it (None if not
        created yet), read in one pipeline."""
        paths = [zd.partition_state_path(tp.topic, tp.partition) for tp in partitions]
        reads = get_many(self.zk, paths)
        return {
            tp: None
            if read is None
            else (zd.LeaderIsrAndEpoch.decode(read[0], read[1].version), read[1].mzxid)
            for tp, read in zip(partitions, (reads[path] for path in paths), strict=True)
        }

    def create_partition_states(
        self, creates: Sequence[tuple[TopicPartition, zd.LeaderIsrAndEpoch, int]]
    ) -> list[zd.LeaderIsrAndEpoch | Exception]:
        """Create new partitions' state znodes, each fenced by the controller epoch version given
        with it, in one pipeline (their parents first); per partition, in order, the state with its
        znode version or the error (NodeExistsError, ControllerMovedError, ...)."""
        parents = [f"{zd.partitions_path(tp.topic)}/{tp.partition}" for tp, _, _ in creates]
        for made in pipelined([_ensurer(self.zk, path) for path in parents]):
            if isinstance(made, Exception):
                raise made
        transactions = []
        for tp, state, epoch_version in creates:
            transaction = self.zk.transaction()
            transaction.check(zd.CONTROLLER_EPOCH, epoch_version)
            transaction.create(zd.partition_state_path(tp.topic, tp.partition), state.encode())
            transactions.append(transaction)
        return [
            _written(state, 0, outcome, zd.partition_state_path(tp.topic, tp.partition), True)
            for (tp, state, _), outcome in zip(
                creates, pipelined([t.commit_async for t in transactions]), strict=True
            )
        ]

    def update_partition_state(
        self, topic: str, partition: int, state: zd.LeaderIsrAndEpoch, epoch_version: int | None
    ) -> zd.LeaderIsrAndEpoch:
        """Compare-and-set the state znode at ``state.zk_version``; return it with the new version.

        Raises BadVersionError if the znode changed since it was read (re-read and retry), and
        ControllerMovedError if ``epoch_version`` (the controller's fence) is stale. Leaders
        updating their ISR pass ``epoch_version=None``: they are fenced by the state version alone.
        """
        written = self.update_partition_states(
            [(TopicPartition(topic, partition), state, epoch_version)]
        )[0]
        if isinstance(written, Exception):
            raise written
        return written

    def update_partition_states(
        self, updates: Sequence[tuple[TopicPartition, zd.LeaderIsrAndEpoch, int | None]]
    ) -> list[zd.LeaderIsrAndEpoch | Exception]:
        """Compare-and-set several state znodes, as ``update_partition_state`` does one, in one
        pipeline; per partition, in order, the state with its new version or the error."""
        transactions = []
        for tp, state, epoch_version in updates:
            transaction = self.zk.transaction()
            if epoch_version is not None:
                transaction.check(zd.CONTROLLER_EPOCH, epoch_version)
            path = zd.partition_state_path(tp.topic, tp.partition)
            transaction.set_data(path, state.encode(), version=state.zk_version)
            transactions.append(transaction)
        return [
            _written(
                state,
                None,
                outcome,
                zd.partition_state_path(tp.topic, tp.partition),
                epoch_version is not None,
            )
            for (tp, state, epoch_version), outcome in zip(
                updates, pipelined([t.commit_async for t in transactions]), strict=True
            )
        ]

    # ------------------------------------------------------------------ controller

    def try_elect_controller(self, broker_id: int) -> bool:
        """Try to create the ephemeral ``/controller`` znode; True if this session now holds it."""
        try:
            self.zk.create(zd.CONTROLLER, zd.encode_controller(broker_id), ephemeral=True)
            return True
        except NodeExistsError:
            stat = self.zk.exists(zd.CONTROLLER)
            return stat is not None and stat.ephemeralOwner == self.session_id

    def release_controller(self) -> None:
        """Delete ``/controller`` if this session holds it, so a fresh election runs (a controller
        whose epoch was overtaken must not keep the znode that stops everyone else from taking
        over)."""
        stat = self.zk.exists(zd.CONTROLLER)
        if stat is not None and stat.ephemeralOwner == self.session_id:
            try:
                self.zk.delete(zd.CONTROLLER, version=stat.version)
            except (NoNodeError, BadVersionError):
                pass

    def controller_session(self) -> tuple[int, int]:
        """(broker id, ZooKeeper session id) of the ``/controller`` holder, or (-1, 0)."""
        try:
            data, stat = self.zk.get(zd.CONTROLLER)
        except NoNodeError:
            return -1, 0
        return zd.decode_controller(data), stat.ephemeralOwner

    def release_dead_controller(self, session_id: int) -> bool:
        """Delete ``/controller`` if the session ``session_id`` (whose process is known to be dead)
        still holds it; True if deleted. A znode of any other session is left alone."""
        stat = self.zk.exists(zd.CONTROLLER)
        if stat is None or stat.ephemeralOwner != session_id:
            return False
        try:
            self.zk.delete(zd.CONTROLLER, version=stat.version)
        except (NoNodeError, BadVersionError):
            return False
        return True

    def controller_id(self, watch: Callable | None = None) -> int:
        """The current controller's broker id, or -1."""
        try:
            return zd.decode_controller(self.zk.get(zd.CONTROLLER, watch=watch)[0])
        except NoNodeError:
            if watch is not None:
                self.zk.exists(zd.CONTROLLER, watch=watch)
            return -1

    def increment_controller_epoch(self) -> tuple[int, int]:
        """Bump ``/controller_epoch`` with compare-and-set; return (new epoch, its znode
        version)."""
        while True:
            try:
                data, stat = self.zk.get(zd.CONTROLLER_EPOCH)
            except NoNodeError:
                try:
                    self.zk.create(zd.CONTROLLER_EPOCH, b"1")
                    return 1, 0
                except NodeExistsError:
                    continue
            epoch = int(data.decode()) + 1
            try:
                new = self.zk.set(zd.CONTROLLER_EPOCH, str(epoch).encode(), version=stat.version)
                return epoch, new.version
            except BadVersionError:
                continue

    def controller_epoch(self) -> int:
        """The latest controller epoch (0 before any controller)."""
        try:
            return int(self.zk.get(zd.CONTROLLER_EPOCH)[0].decode())
        except NoNodeError:
            return 0

    # ------------------------------------------------------------------ ISR change notifications

    def notify_isr_change(self, partitions: list[tuple[str, int]]) -> None:
        """Tell the controller that these partitions' ISRs changed (it re-reads and propagates
        them)."""
        self.zk.create(
            f"{zd.ISR_CHANGE_NOTIFICATION}/{zd.ISR_CHANGE_PREFIX}",
            zd.encode_isr_change(partitions),
            sequence=True,
        )

    def take_isr_changes(self, watch: Callable | None = None) -> list[tuple[str, int]]:
        """Read and delete pending ISR change notifications (each step in one pipeline)."""
        children = sorted(self.zk.get_children(zd.ISR_CHANGE_NOTIFICATION, watch=watch))
        paths = [f"{zd.ISR_CHANGE_NOTIFICATION}/{child}" for child in children]
        reads = get_many(self.zk, paths)
        changed: list[tuple[str, int]] = []
        for read in reads.values():
            if read is not None:
                changed.extend(zd.decode_isr_change(read[0]))
        deleted = pipelined([_deleter(self.zk, path) for path, r in reads.items() if r])
        for outcome in deleted:
            if isinstance(outcome, Exception) and not isinstance(outcome, NoNodeError):
                raise outcome
        return changed

    # ------------------------------------------------------------------ helpers

    def _commit(self, transaction: TransactionRequest, path: str, fenced: bool = True) -> list:
        """Commit; map a failed epoch check to ControllerMovedError and re-raise any other failure
        (``transaction_error``)."""
        results = transaction.commit()
        error = transaction_error(results, path, fenced)
        if error is not None:
            raise error
        return results


def transaction_error(results: list, path: str, fenced: bool) -> Exception | None:
    """The error of a failed multi-op, or None if every op applied: ControllerMovedError when a
    fenced transaction's first op (the controller epoch check) failed, else the op's own error.

    ZooKeeper answers a failed multi-op with an error per op: the one that failed carries its own
    error, the others RolledBackError or RuntimeInconsistency.
    """
    if not any(isinstance(r, Exception) for r in results):
        return None
    if fenced and isinstance(results[0], BadVersionError):
        return ControllerMovedError(f"controller epoch changed while writing {path}")
    return next(
        r
        for r in results
        if isinstance(r, Exception) and not isinstance(r, (RolledBackError, RuntimeInconsistency))
    )


def _written(
    state: zd.LeaderIsrAndEpoch, version: int | None, outcome: object, path: str, fenced: bool
) -> zd.LeaderIsrAndEpoch | Exception:
    """A pipelined state write's outcome: the state at its new znode version (``version``, or the
    one the transaction's last op answered), or the error."""
    if isinstance(outcome, Exception):
        return outcome
    assert isinstance(outcome, list)
    error = transaction_error(outcome, path, fenced)
    if error is not None:
        return error
    new_version = outcome[-1].version if version is None else version
    return zd.LeaderIsrAndEpoch(
        state.leader, state.leader_epoch, state.isr, state.controller_epoch, new_version
    )


def _ensurer(zk: KazooClient, path: str) -> Callable[[], Any]:
    return lambda: zk.ensure_path_async(path)


def _deleter(zk: KazooClient, path: str) -> Callable[[], Any]:
    return lambda: zk.delete_async(path)
