"""The consumer's side of the group protocol: find the coordinator, join and sync, heartbeat, commit.

``Consumer.poll`` calls ``ensure_active_group`` first; the join and sync run on the caller's thread so
rebalance listeners run where the application expects them. A background thread heartbeats every
``heartbeat_interval_ms`` and, like the Java client, leaves the group when the application has not
called ``poll`` within ``max_poll_interval_ms``, so a stuck consumer's partitions move to a live one.
Errors from the coordinator decide what happens next: REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION mean
rejoin, UNKNOWN_MEMBER_ID means rejoin as a new member, NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE /
COORDINATOR_LOAD_IN_PROGRESS mean look the coordinator up again.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

import ray

from rafka.actors import names
from rafka.clients.cluster import (
    COORDINATOR_MOVING,
    RAY_ACTOR_ERRORS,
    ClusterConnection,
)
from rafka.groups.assignors import Assignor, Subscription, get_assignor
from rafka.groups.subscription_codec import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from rafka.protocol.errors import Errors, KafkaTimeoutError, RafkaError
from rafka.protocol.messages.groups import (
    NO_GENERATION,
    NO_MEMBER,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitEntry,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from rafka.protocol.types import OffsetAndMetadata, TopicPartition

logger = logging.getLogger(__name__)

REJOIN_ERRORS = frozenset(
    {Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID}
)
RETRY_BACKOFF_S = 0.1


class CommitFailedError(RafkaError):
    """A commit was refused because the group rebalanced since this consumer's last join: its partitions
    may belong to another member now (kafka-python's ``CommitFailedError``)."""

    error = Errors.ILLEGAL_GENERATION


class RebalanceListener(Protocol):
    """Called on the polling thread around rebalances (kafka-python's ``ConsumerRebalanceListener``)."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None: ...

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None: ...


class ConsumerCoordinator:
    """Group membership, assignment and committed offsets of one grouped consumer."""

    def __init__(self, cluster: ClusterConnection, config: dict[str, Any]) -> None:
        self.cluster = cluster
        self.group_id: str = config["group_id"]
        self.client_id: str = config["client_id"]
        self.session_timeout_ms = int(config["session_timeout_ms"])
        self.heartbeat_interval_s = int(config["heartbeat_interval_ms"]) / 1000
        self.max_poll_interval_ms = int(config["max_poll_interval_ms"])
        self.request_timeout_s = int(config["request_timeout_ms"]) / 1000
        self.metadata_max_age_s = int(config["metadata_max_age_ms"]) / 1000
        self.exclude_internal_topics = bool(config["exclude_internal_topics"])
        self.assignors: list[Assignor] = [
            get_assignor(s) if isinstance(s, str) else s
            for s in config["partition_assignment_strategy"]
        ]
        if not self.assignors:
            raise ValueError("partition_assignment_strategy must name at least one assignor")
        self.member_id = NO_MEMBER
        self.generation = NO_GENERATION
        self.topics: tuple[str, ...] = ()
        self.pattern: re.Pattern[str] | None = None
        self.listener: RebalanceListener | None = None
        self.assignment: set[TopicPartition] = set()
        self._coordinator: Any = None
        self._coordinator_id = -1
        self._rejoin_needed = True
        self._joined_metadata: dict[str, int] = {}
        self._metadata_checked = 0.0
        self._last_poll = time.monotonic()
        self._closed = threading.Event()
        self._lock = threading.RLock()
        self._rebalancing = False
        self._heartbeat_thread: threading.Thread | None = None
        self._committer = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"rafka-commit-{self.group_id}"
        )

    # ------------------------------------------------------------------ subscription

    def subscribe(
        self, topics: tuple[str, ...], pattern: str | None, listener: RebalanceListener | None
    ) -> None:
        """Change what the group member asks for; the next poll rejoins."""
        self.topics = tuple(sorted(set(topics)))
        self.pattern = re.compile(pattern) if pattern is not None else None
        self.listener = listener
        self._rejoin_needed = True

    def subscribed_topics(self) -> list[str]:
        """The topics the subscription covers now (a pattern is matched against current metadata)."""
        if self.pattern is None:
            return list(self.topics)
        response = self.cluster.refresh_metadata(None)
        return sorted(
            t.name
            for t in response.topics
            if t.error is Errors.NONE
            and self.pattern.fullmatch(t.name)
            and not (self.exclude_internal_topics and t.is_internal)
        )

    def _partition_counts(self, topics: list[str]) -> dict[str, int]:
        """Partition count of each existing topic among ``topics``, from one metadata request; topics
        not created yet are left out (the assignors skip them; a later metadata check rejoins)."""
        if not topics:
            return {}
        response = self.cluster.refresh_metadata(list(topics))
        return {t.name: len(t.partitions) for t in response.topics if t.error is Errors.NONE}

    # ------------------------------------------------------------------ coordinator discovery

    def _ensure_coordinator(self, deadline: float) -> Any:
        while self._coordinator is None:
            response = self.cluster.find_coordinator(self.group_id)
            if response.error is Errors.NONE:
                self._coordinator_id = response.coordinator_id
                self._coordinator = self.cluster.actor(
                    names.coordinator_actor_name(response.coordinator_id)
                )
                break
            if response.error not in COORDINATOR_MOVING:
                raise response.error.exception(
                    f"group {self.group_id!r}: {response.error_message or response.error.message}"
                )
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(
                    f"no coordinator for group {self.group_id!r} within the deadline: {response.error_message}"
                )
            time.sleep(RETRY_BACKOFF_S)
        return self._coordinator

    def _coordinator_dead(self) -> None:
        with self._lock:
            if self._coordinator_id >= 0:
                self.cluster.forget(names.coordinator_actor_name(self._coordinator_id))
            self._coordinator, self._coordinator_id = None, -1

    def _call(self, method: str, request: Any, timeout_s: float, deadline: float) -> Any:
        """One request to the coordinator, rediscovering it on coordinator errors until ``deadline``."""
        while True:
            coordinator = self._ensure_coordinator(deadline)
            try:
                response = ray.get(getattr(coordinator, method).remote(request), timeout=timeout_s)
            except RAY_ACTOR_ERRORS as exc:
                logger.info(
                    "group %s: coordinator %d unreachable (%s); looking it up again",
                    self.group_id,
                    self._coordinator_id,
                    exc,
                )
                self._coordinator_dead()
            else:
                if response.error not in COORDINATOR_MOVING:
                    return response
                self._coordinator_dead()
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(
                    f"group {self.group_id!r}: {method} found no coordinator before its deadline"
                )
            time.sleep(RETRY_BACKOFF_S)

    # ------------------------------------------------------------------ joining

    def need_rejoin(self) -> bool:
        """Whether the next poll must (re)join: a rebalance began, or the subscribed metadata changed."""
        if self._rejoin_needed:
            return True
        now = time.monotonic()
        if now - self._metadata_checked >= self.metadata_max_age_s:
            self._metadata_checked = now
            if self._partition_counts(self.subscribed_topics()) != self._joined_metadata:
                logger.info(
                    "group %s: subscribed topics or partition counts changed; rejoining",
                    self.group_id,
                )
                self._rejoin_needed = True
        return self._rejoin_needed

    def ensure_active_group(
        self, apply_assignment: Callable[[set[TopicPartition], set[TopicPartition]], None]
    ) -> bool:
        """Join and sync if needed; ``apply_assignment(revoked, added)`` updates the consumer. True if it rebalanced."""
        self._last_poll = time.monotonic()
        if not self.need_rejoin():
            return False
        deadline = time.monotonic() + self.max_poll_interval_ms / 1000 + self.request_timeout_s
        with self._lock:
            self._rebalancing = True
        try:
            cooperative = self._protocol_is_cooperative()
            if not cooperative and self.assignment:
                self._revoke(set(self.assignment), apply_assignment)
            while True:
                assigned = self._join_and_sync(deadline)
                if assigned is not None:
                    break
            revoked = self.assignment - assigned
            if revoked:
                self._revoke(revoked, apply_assignment)
            added = assigned - self.assignment
            self.assignment = set(assigned)
            apply_assignment(set(), added)
            self._rejoin_needed = cooperative and bool(
                revoked
            )  # cooperative: a second round hands revoked partitions on
            if self.listener is not None:
                self.listener.on_partitions_assigned(added if cooperative else set(assigned))
        finally:
            with self._lock:
                self._rebalancing = False
        # The poll timer restarts once the join completes (Java's HeartbeatThread.enable() resets it):
        # a join that waited long for the other members is not the application failing to poll.
        self._last_poll = time.monotonic()
        self._start_heartbeats()
        return True

    def _protocol_is_cooperative(self) -> bool:
        return all(a.name == "cooperative-sticky" for a in self.assignors[:1])

    def _revoke(
        self,
        revoked: set[TopicPartition],
        apply_assignment: Callable[[set[TopicPartition], set[TopicPartition]], None],
    ) -> None:
        if self.listener is not None:
            self.listener.on_partitions_revoked(set(revoked))
        self.assignment -= revoked
        apply_assignment(revoked, set())

    def _join_and_sync(self, deadline: float) -> set[TopicPartition] | None:
        """One JoinGroup + SyncGroup round: the assignment, or None to try again."""
        topics = self.subscribed_topics()
        owned = tuple(sorted(self.assignment))
        protocols = tuple(
            (a.name, encode_subscription(Subscription(tuple(topics), owned)))
            for a in self.assignors
        )
        request = JoinGroupRequest(
            self.group_id,
            self.session_timeout_ms,
            self.max_poll_interval_ms,
            self.member_id,
            "consumer",
            protocols,
            self.client_id,
            socket.gethostname(),
        )
        join_timeout = self.max_poll_interval_ms / 1000 + self.request_timeout_s
        joined = self._call("join_group", request, join_timeout, deadline)
        if joined.error is Errors.UNKNOWN_MEMBER_ID:
            self.member_id = NO_MEMBER
            return self._retry(deadline, joined)
        if joined.error is Errors.REBALANCE_IN_PROGRESS:
            return self._retry(deadline, joined)
        if joined.error is not Errors.NONE:
            raise joined.error.exception(
                f"joining group {self.group_id!r}: {joined.error_message or joined.error.message}"
            )
        self.member_id, self.generation = joined.member_id, joined.generation_id
        counts = self._partition_counts(topics)
        assignments: tuple[tuple[str, bytes], ...] = ()
        if joined.leader_id == joined.member_id:
            assignments = self._assign(joined.protocol_name, joined.members, counts)
        synced = self._call(
            "sync_group",
            SyncGroupRequest(self.group_id, self.generation, self.member_id, assignments),
            join_timeout,
            deadline,
        )
        if synced.error is Errors.UNKNOWN_MEMBER_ID:
            self.member_id = NO_MEMBER
        if synced.error in REJOIN_ERRORS:
            return self._retry(deadline, synced)
        if synced.error is not Errors.NONE:
            raise synced.error.exception(
                f"syncing group {self.group_id!r}: {synced.error_message or synced.error.message}"
            )
        self._joined_metadata = counts
        self._metadata_checked = time.monotonic()
        logger.info(
            "group %s: member %s joined generation %d",
            self.group_id,
            self.member_id,
            self.generation,
        )
        return {TopicPartition(*tp) for tp in decode_assignment(synced.assignment)}

    def _retry(self, deadline: float, response: Any) -> None:
        if time.monotonic() > deadline:
            raise KafkaTimeoutError(
                f"group {self.group_id!r}: could not join before the deadline ({response.error.name})"
            )
        time.sleep(RETRY_BACKOFF_S)
        return None

    def _assign(
        self, protocol: str, members: tuple[tuple[str, bytes], ...], own_counts: dict[str, int]
    ) -> tuple[tuple[str, bytes], ...]:
        """As the group's leader, run the chosen assignor over every member's subscription."""
        assignor = next(a for a in self.assignors if a.name == protocol)
        subscriptions = {member: decode_subscription(data) for member, data in members}
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        others = [t for t in topics if t not in own_counts]
        counts = {**own_counts, **self._partition_counts(others)} if others else own_counts
        result = assignor.assign(counts, subscriptions)
        logger.info(
            "group %s: leader %s assigned with %s: %s",
            self.group_id,
            self.member_id,
            protocol,
            {m: len(tps) for m, tps in result.items()},
        )
        return tuple((member, encode_assignment(tps)) for member, tps in result.items())

    # ------------------------------------------------------------------ heartbeats

    def _start_heartbeats(self) -> None:
        if self._heartbeat_thread is None:
            self._heartbeat_thread = threading.Thread(
                target=self._heartbeat_loop, name=f"rafka-heartbeat-{self.group_id}", daemon=True
            )
            self._heartbeat_thread.start()

    def _heartbeat_loop(self) -> None:
        while not self._closed.wait(self.heartbeat_interval_s):
            with self._lock:
                # Heartbeats go on after REBALANCE_IN_PROGRESS until poll() rejoins, or the coordinator would
                # expire a member that is still busy with its last records.
                if self._rebalancing or self.member_id == NO_MEMBER:
                    continue
                member_id, generation = self.member_id, self.generation
            if (time.monotonic() - self._last_poll) * 1000 > self.max_poll_interval_ms:
                logger.warning(
                    "group %s: poll() not called for over max_poll_interval_ms=%d; leaving the group so its "
                    "partitions move to a live member",
                    self.group_id,
                    self.max_poll_interval_ms,
                )
                self.leave_group()
                continue
            try:
                coordinator = self._coordinator or self._ensure_coordinator(
                    time.monotonic() + self.heartbeat_interval_s
                )
                response = ray.get(
                    coordinator.heartbeat.remote(
                        HeartbeatRequest(self.group_id, generation, member_id)
                    ),
                    timeout=self.request_timeout_s,
                )
            except (RafkaError, *RAY_ACTOR_ERRORS) as exc:
                logger.info(
                    "group %s: heartbeat failed (%s); looking up the coordinator again",
                    self.group_id,
                    exc,
                )
                self._coordinator_dead()
                continue
            if response.error in COORDINATOR_MOVING:
                self._coordinator_dead()
            elif response.error is Errors.UNKNOWN_MEMBER_ID:
                with self._lock:
                    self.member_id, self._rejoin_needed = NO_MEMBER, True
            elif response.error in REJOIN_ERRORS:
                self._rejoin_needed = True

    def leave_group(self) -> None:
        """LeaveGroup now (on close, or when polling stalled) so the rest rebalance without waiting."""
        with self._lock:
            member_id, self.member_id, self.generation = self.member_id, NO_MEMBER, NO_GENERATION
            self._rejoin_needed = True
        if member_id == NO_MEMBER or self._coordinator is None:
            return
        try:
            ray.get(
                self._coordinator.leave_group.remote(LeaveGroupRequest(self.group_id, member_id)),
                timeout=self.request_timeout_s,
            )
        except RAY_ACTOR_ERRORS as exc:
            logger.info(
                "group %s: LeaveGroup not delivered (%s); the session timeout will remove the member",
                self.group_id,
                exc,
            )

    # ------------------------------------------------------------------ offsets

    def commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        """Commit synchronously; CommitFailedError if the group moved on, the Kafka error otherwise."""
        for tp, value in offsets.items():
            if value.offset < 0:
                raise ValueError(f"cannot commit negative offset {value.offset} for {tp}")
        entries = tuple(
            OffsetCommitEntry(tp.topic, tp.partition, v.offset, v.metadata or "")
            for tp, v in offsets.items()
        )
        with self._lock:
            generation, member_id = self.generation, self.member_id
        deadline = time.monotonic() + self.request_timeout_s
        response = self._call(
            "offset_commit",
            OffsetCommitRequest(self.group_id, generation, member_id, entries),
            self.request_timeout_s,
            deadline,
        )
        if response.error in REJOIN_ERRORS:
            self._rejoin_needed = True
            raise CommitFailedError(
                f"commit of group {self.group_id!r} refused ({response.error.name}): the group rebalanced and these "
                f"partitions may belong to another member now; {response.error_message}"
            )
        if response.error is not Errors.NONE:
            raise response.error.exception(
                f"commit of group {self.group_id!r}: {response.error_message}"
            )
        for result in response.partitions:
            if result.error is not Errors.NONE:
                raise result.error.exception(
                    f"commit of {result.topic}-{result.partition} for group {self.group_id!r}: "
                    f"{result.error_message or result.error.message}"
                )

    def commit_async(
        self,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: Callable[[dict[TopicPartition, OffsetAndMetadata], Exception | None], None]
        | None,
    ) -> Future:
        """Commit on a background thread, in order with other async commits; ``callback(offsets, error)``."""

        def run() -> None:
            try:
                self.commit(offsets)
            except (RafkaError, ValueError) as exc:
                if callback is None:
                    logger.warning("group %s: async commit failed: %s", self.group_id, exc)
                    return
                callback(offsets, exc)
                return
            if callback is not None:
                callback(offsets, None)

        return self._committer.submit(run)

    def fetch_committed(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets of ``partitions`` (None where the group has none)."""
        deadline = time.monotonic() + self.request_timeout_s
        request = OffsetFetchRequest(
            self.group_id, tuple((tp.topic, tp.partition) for tp in partitions)
        )
        response = self._call("offset_fetch", request, self.request_timeout_s, deadline)
        if response.error is not Errors.NONE:
            raise response.error.exception(
                f"fetching offsets of group {self.group_id!r}: {response.error_message}"
            )
        return {
            TopicPartition(o.topic, o.partition): (
                OffsetAndMetadata(o.offset, o.metadata) if o.offset >= 0 else None
            )
            for o in response.offsets
        }

    def close(self) -> None:
        """Finish pending commits, stop heartbeating and leave the group."""
        self._committer.shutdown(wait=True)
        self._closed.set()
        if self._heartbeat_thread is not None:
            self._heartbeat_thread.join(timeout=self.request_timeout_s)
        self.leave_group()
