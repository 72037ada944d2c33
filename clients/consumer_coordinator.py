"""The consumer's side of the group protocol: join and sync, heartbeat, commit (the coordinator
itself is found by ``rafka.clients.coordinator_lookup``).

``Consumer.poll`` calls ``poll(deadline, apply)``, which moves the member's state machine
(``rafka.clients.member_state``) as far as the deadline allows. FindCoordinator, JoinGroup and
SyncGroup are transport calls that outlive one poll, so a poll with a short timeout returns on time
and the next one goes on with the join where it stood (KIP-266); rebalance listeners run on the
polling thread. A background thread heartbeats every ``heartbeat_interval_ms`` while the member is
stable and, like the Java client, leaves the group when the application has not called ``poll``
within ``max_poll_interval_ms``, so a stuck consumer's partitions move to a live one. When a
heartbeat, commit or join answers UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION the coordinator has
removed this member: its partitions are lost at once (no commit, ``on_partitions_lost``) and it
rejoins.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Protocol

from rafka.clients.cluster import ClusterConnection
from rafka.clients.coordinator_lookup import RETRY_BACKOFF_S, CoordinatorLookup, pause
from rafka.clients.member_state import (
    MemberState,
    MemberStateMachine,
    Reaction,
    forgets_member_id,
    reaction_to,
)
from rafka.clients.transport import Call, TransportError, UnreachableError
from rafka.groups.assignors import Assignor, Subscription, get_assignor
from rafka.groups.subscription_codec import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.groups import (
    NO_GENERATION,
    NO_MEMBER,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitEntry,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from rafka.protocol.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

logger = logging.getLogger(__name__)

ApplyAssignment = Callable[[set[TopicPartition], set[TopicPartition], bool], None]
"""The consumer's side of a change, ``apply(revoked, added, lost)``: stop on ``revoked`` (committing
their positions first unless ``lost``) and start on ``added``."""


class CommitFailedError(RafkaError):
    """A commit was refused because the group rebalanced since this consumer's last join: its
    partitions may belong to another member now (kafka-python's ``CommitFailedError``)."""

    error = Errors.ILLEGAL_GENERATION


class RebalanceListener(Protocol):
    """Called on the polling thread around rebalances (kafka-python's
    ``ConsumerRebalanceListener``).

    A listener may also define ``on_partitions_lost(lost)``, called instead of
    ``on_partitions_revoked`` when the coordinator removed this member, whose partitions may already
    belong to another member (as in Kafka's Java client)."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None: ...

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None: ...


class ConsumerCoordinator:
    """Group membership, assignment and committed offsets of one grouped consumer."""

    def __init__(self, cluster: ClusterConnection, config: dict[str, Any]) -> None:
        self.cluster = cluster
        self.transport = cluster.transport
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
        self._machine = MemberStateMachine()
        self._subscribed = False
        self._lost = False
        self._inflight: Call | None = None
        self._join_topics: list[str] = []
        self._join_counts: dict[str, int] = {}
        self._retry_at = 0.0
        self._coordinator = CoordinatorLookup(cluster, self.group_id)
        self._rejoin_needed = True
        self._joined_metadata: dict[str, int] = {}
        self._metadata_checked = 0.0
        self._last_poll = time.monotonic()
        self._closed = threading.Event()
        self._lock = threading.RLock()
        self._heartbeat_thread: threading.Thread | None = None
        self._committer = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"rafka-commit-{self.group_id}"
        )
        self._last_async_commit: Future[None] | None = None

    @property
    def state(self) -> MemberState:
        """Where the member stands in joining its group."""
        return self._machine.state

    @property
    def partitions_lost(self) -> bool:
        """Whether the coordinator removed this member and the next poll must drop its
        partitions."""
        return self._lost

    # ------------------------------------------------------------------ subscription

    def subscribe(
        self, topics: tuple[str, ...], pattern: str | None, listener: RebalanceListener | None
    ) -> None:
        """Change what the group member asks for; the next poll rejoins."""
        self.topics = tuple(sorted(set(topics)))
        self.pattern = re.compile(pattern) if pattern is not None else None
        self.listener = listener
        self._subscribed = True
        self._rejoin_needed = True

    def subscribed_topics(self) -> list[str]:
        """The topics the subscription covers now (a pattern is matched against current
        metadata)."""
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
        """Partition count of each existing topic among ``topics``, from one metadata request;
        topics not created yet are left out (the assignors skip them; a later metadata check
        rejoins)."""
        if not topics:
            return {}
        response = self.cluster.refresh_metadata(list(topics))
        return {t.name: len(t.partitions) for t in response.topics if t.error is Errors.NONE}

    def unsubscribe(self) -> None:
        """Leave the group and hold no partitions (the consumer committed them first)."""
        self.leave_group(time.monotonic() + self.request_timeout_s)
        with self._lock:
            self.assignment = set()
            self._lost = False
            self._subscribed = False

    # ------------------------------------------------------------------ joining

    def need_rejoin(self) -> bool:
        """Whether the next poll must (re)join: a rebalance began, or the subscribed metadata
        changed."""
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

    def poll(self, deadline: float, apply: ApplyAssignment) -> bool:
        """Move the membership on until the member is stable or ``deadline`` passes; True if stable.

        Lost partitions are dropped first; a needed rebalance revokes the partitions (eager
        protocol) and sends JoinGroup; answers that have not come by the deadline are waited for by
        the next poll.
        """
        self._last_poll = time.monotonic()
        self.drop_lost_partitions(apply)
        while True:
            state = self._machine.state
            if state is MemberState.CLOSED:
                return False
            if state is MemberState.STABLE:
                if not self.need_rejoin():
                    return True
                self._begin_rejoin(apply)
            elif state is MemberState.UNJOINED:
                if not self._send_join(deadline):
                    return False
            else:
                call = self._inflight
                if not self.transport.ready([call], 1, max(0.0, deadline - time.monotonic())):
                    return False
                if state is MemberState.JOINING:
                    self._joined(call)
                else:
                    self._synced(call, apply)
                self.drop_lost_partitions(apply)

    def _protocol_is_cooperative(self) -> bool:
        return all(a.name == "cooperative-sticky" for a in self.assignors[:1])

    def _begin_rejoin(self, apply: ApplyAssignment) -> None:
        """Give the partitions up in order (eager protocol) and go back to UNJOINED."""
        if not self._protocol_is_cooperative() and self.assignment:
            self._revoke(set(self.assignment), apply)
        with self._lock:
            # A heartbeat may have found the member removed meanwhile, and moved it already.
            if self._machine.state is MemberState.STABLE:
                self._machine.transition_to(MemberState.UNJOINED)

    def _revoke(self, revoked: set[TopicPartition], apply: ApplyAssignment) -> None:
        if self.listener is not None:
            self.listener.on_partitions_revoked(set(revoked))
        self.assignment -= revoked
        apply(revoked, set(), False)

    def _send_join(self, deadline: float) -> bool:
        """Send JoinGroup (after the backoff of a failed round); False if the deadline passed
        first."""
        wait_s = self._retry_at - time.monotonic()
        if wait_s > 0:
            time.sleep(max(0.0, min(wait_s, deadline - time.monotonic())))
            if time.monotonic() < self._retry_at:
                return False
        coordinator = self._coordinator.find(deadline)
        if coordinator is None:
            return False
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
        try:
            call = self.transport.send(coordinator, "join_group", request)
        except UnreachableError:
            self._coordinator.mark_dead()
            return pause(deadline)
        with self._lock:
            self._inflight = call
            self._join_topics = topics
            self._rejoin_needed = False
            self._machine.transition_to(MemberState.JOINING)
        return True

    def _answer(self, call: Call) -> Any:
        """The in-flight call's answer; a lost coordinator reads as COORDINATOR_NOT_AVAILABLE."""
        with self._lock:
            self._inflight = None
        try:
            return self.transport.result(call, 0)
        except TransportError as exc:
            return JoinGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE, error_message=str(exc))

    def _joined(self, call: Call) -> None:
        """JoinGroup answered: as the leader assign, then send SyncGroup; else retry."""
        joined = self._answer(call)
        reaction = reaction_to(joined.error)
        if reaction is not Reaction.PROCEED:
            self._join_failed("joining", joined.error, joined.error_message, reaction)
            return
        counts = self._partition_counts(self._join_topics)
        assignments: tuple[tuple[str, bytes], ...] = ()
        if joined.leader_id == joined.member_id:
            assignments = self._assign(joined.protocol_name, joined.members, counts)
        request = SyncGroupRequest(
            self.group_id, joined.generation_id, joined.member_id, assignments
        )
        with self._lock:
            self.member_id, self.generation = joined.member_id, joined.generation_id
            coordinator, call = self._coordinator.endpoint, None
            if coordinator is not None:
                try:
                    call = self.transport.send(coordinator, "sync_group", request)
                except UnreachableError:
                    call = None
            if call is None:
                self._join_failed(
                    "syncing", Errors.COORDINATOR_NOT_AVAILABLE, None, Reaction.FIND_COORDINATOR
                )
                return
            self._inflight = call
            self._join_counts = counts
            self._machine.transition_to(MemberState.SYNCING)

    def _synced(self, call: Call, apply: ApplyAssignment) -> None:
        """SyncGroup answered: take the assignment and become stable; else rejoin."""
        synced: SyncGroupResponse = self._answer(call)
        reaction = reaction_to(synced.error)
        if reaction is not Reaction.PROCEED:
            self._join_failed("syncing", synced.error, synced.error_message, reaction)
            return
        assigned = {TopicPartition(*tp) for tp in decode_assignment(synced.assignment)}
        cooperative = self._protocol_is_cooperative()
        revoked = self.assignment - assigned
        if revoked:
            self._revoke(revoked, apply)
        added = assigned - self.assignment
        with self._lock:
            self.assignment = set(assigned)
            self._machine.transition_to(MemberState.STABLE)
            # Cooperative: a second round hands the revoked partitions on.
            self._rejoin_needed = self._rejoin_needed or (cooperative and bool(revoked))
        self._joined_metadata = self._join_counts
        self._metadata_checked = time.monotonic()
        logger.info(
            "group %s: member %s joined generation %d",
            self.group_id,
            self.member_id,
            self.generation,
        )
        apply(set(), added, False)
        if self.listener is not None:
            self.listener.on_partitions_assigned(added if cooperative else set(assigned))
        # The poll timer restarts once the join completes (Java's HeartbeatThread.enable() resets
        # it): a join that waited long for the other members is not the application failing to poll.
        self._last_poll = time.monotonic()
        self._start_heartbeats()

    def _join_failed(
        self, step: str, error: Errors, message: str | None, reaction: Reaction
    ) -> None:
        """A JoinGroup or SyncGroup failed: back to UNJOINED to retry after a backoff, or raise."""
        with self._lock:
            self._machine.transition_to(MemberState.UNJOINED)
            self._retry_at = time.monotonic() + RETRY_BACKOFF_S
        if reaction is Reaction.FIND_COORDINATOR:
            self._coordinator.mark_dead()
        elif reaction is Reaction.LOST:
            self._mark_lost(error, self.generation)
        elif reaction is Reaction.FAIL:
            raise error.exception(f"{step} group {self.group_id!r}: {message or error.message}")

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

    # ------------------------------------------------------------------ removal from the group

    def _mark_lost(self, error: Errors, generation: int) -> None:
        """The coordinator removed this member from ``generation`` (or fenced it): its partitions
        are lost, to be dropped by the polling thread at once, and it must rejoin."""
        with self._lock:
            if generation != self.generation:
                return  # a newer generation was joined since: that answer is old news
            logger.warning(
                "group %s: member %s was removed from generation %d (%s); dropping its partitions",
                self.group_id,
                self.member_id,
                generation,
                error.name,
            )
            if forgets_member_id(error):
                self.member_id = NO_MEMBER
            self.generation = NO_GENERATION
            self._lost = bool(self.assignment)
            self._rejoin_needed = True
            if self._machine.state is MemberState.STABLE:
                self._machine.transition_to(MemberState.UNJOINED)

    def drop_lost_partitions(self, apply: ApplyAssignment) -> None:
        """If the member was removed, give its partitions up now without committing them, telling
        the listener's ``on_partitions_lost`` (else ``on_partitions_revoked``)."""
        with self._lock:
            if not self._lost:
                return
            self._lost = False
            lost, self.assignment = self.assignment, set()
        if not lost:
            return
        if self.listener is not None:
            callback = getattr(self.listener, "on_partitions_lost", None)
            (callback or self.listener.on_partitions_revoked)(set(lost))
        apply(set(lost), set(), True)

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
                # Heartbeats go on after REBALANCE_IN_PROGRESS until poll() rejoins, or the
                # coordinator would expire a member that is still busy with its last records.
                if self._machine.state is not MemberState.STABLE:
                    continue
                member_id, generation = self.member_id, self.generation
            if (time.monotonic() - self._last_poll) * 1000 > self.max_poll_interval_ms:
                logger.warning(
                    "group %s: poll() not called for over max_poll_interval_ms=%d; leaving the "
                    "group so its partitions move to a live member",
                    self.group_id,
                    self.max_poll_interval_ms,
                )
                self._mark_lost(Errors.UNKNOWN_MEMBER_ID, generation)
                self._send_leave(member_id, time.monotonic() + self.request_timeout_s)
                continue
            try:
                response = self._coordinator.request(
                    "heartbeat",
                    HeartbeatRequest(self.group_id, generation, member_id),
                    time.monotonic() + self.request_timeout_s,
                )
            except RafkaError as exc:
                logger.info("group %s: heartbeat failed (%s)", self.group_id, exc)
                continue
            reaction = reaction_to(response.error)
            if reaction is Reaction.REJOIN:
                self._rejoin_needed = True
            elif reaction is Reaction.LOST:
                self._mark_lost(response.error, generation)

    def leave_group(self, deadline: float) -> None:
        """LeaveGroup now (on close or unsubscribe) so the rest rebalance without waiting."""
        with self._lock:
            member_id, self.member_id, self.generation = self.member_id, NO_MEMBER, NO_GENERATION
            self._rejoin_needed = True
            self._inflight = None
            if self._machine.state in (
                MemberState.JOINING,
                MemberState.SYNCING,
                MemberState.STABLE,
            ):
                self._machine.transition_to(MemberState.UNJOINED)
        self._send_leave(member_id, deadline)

    def _send_leave(self, member_id: str, deadline: float) -> None:
        coordinator = self._coordinator.endpoint
        if member_id == NO_MEMBER or coordinator is None:
            return
        try:
            self.transport.request(
                coordinator,
                "leave_group",
                LeaveGroupRequest(self.group_id, member_id),
                timeout_s=max(0.0, deadline - time.monotonic()),
            )
        except TransportError as exc:
            logger.info(
                "group %s: LeaveGroup not delivered (%s); the session timeout will remove the "
                "member",
                self.group_id,
                exc,
            )

    # ------------------------------------------------------------------ offsets

    def _deadline(self, timeout_s: float | None) -> float:
        return time.monotonic() + (self.request_timeout_s if timeout_s is None else timeout_s)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group id, generation and member id as one consistent snapshot (KIP-447)."""
        with self._lock:
            return ConsumerGroupMetadata(self.group_id, self.generation, self.member_id)

    def commit(
        self, offsets: dict[TopicPartition, OffsetAndMetadata], timeout_s: float | None = None
    ) -> None:
        """Commit synchronously within ``timeout_s`` (default: the request timeout);
        CommitFailedError if the group moved on or removed this member, the Kafka error
        otherwise."""
        for tp, value in offsets.items():
            if value.offset < 0:
                raise ValueError(f"cannot commit negative offset {value.offset} for {tp}")
        entries = tuple(
            OffsetCommitEntry(tp.topic, tp.partition, v.offset, v.metadata or "")
            for tp, v in offsets.items()
        )
        with self._lock:
            generation, member_id = self.generation, self.member_id
            stale = self._subscribed and (generation == NO_GENERATION or self._lost)
        if stale:
            # A subscribed member out of every generation (removed, or not joined yet) must not
            # commit: with no generation the coordinator would take it for an admin's commit.
            raise CommitFailedError(
                f"commit of group {self.group_id!r} refused: this member is not in a generation of "
                "the group (it was removed, or has not joined yet), so these partitions may belong "
                "to another member"
            )
        response = self._coordinator.request(
            "offset_commit",
            OffsetCommitRequest(self.group_id, generation, member_id, entries),
            self._deadline(timeout_s),
        )
        reaction = reaction_to(response.error)
        if reaction in (Reaction.LOST, Reaction.REJOIN):
            if reaction is Reaction.LOST:
                self._mark_lost(response.error, generation)
            self._rejoin_needed = True
            raise CommitFailedError(
                f"commit of group {self.group_id!r} refused ({response.error.name}): the group "
                "rebalanced and these partitions may belong to another member now; "
                f"{response.error_message}"
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
    ) -> Future[None]:
        """Commit on a background thread, in order with other async commits; ``callback(offsets,
        error)``."""

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

        self._last_async_commit = self._committer.submit(run)
        return self._last_async_commit

    def fetch_committed(
        self, partitions: list[TopicPartition], timeout_s: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets of ``partitions`` (None where the group has none), within
        ``timeout_s``. Offsets an open transaction is committing are waited for (KIP-447's
        require_stable, as Kafka's consumer always asks)."""
        request = OffsetFetchRequest(
            self.group_id, tuple((tp.topic, tp.partition) for tp in partitions), True
        )
        deadline = self._deadline(timeout_s)
        while True:
            response = self._coordinator.request("offset_fetch", request, deadline)
            if response.error is not Errors.UNSTABLE_OFFSET_COMMIT or not pause(deadline):
                break
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

    def close(self, deadline: float) -> None:
        """Finish pending commits, stop heartbeating and leave the group, all by ``deadline``."""
        self._committer.shutdown(wait=False)
        if self._last_async_commit is not None:
            wait([self._last_async_commit], timeout=max(0.0, deadline - time.monotonic()))
        self._closed.set()
        if self._heartbeat_thread is not None:
            self._heartbeat_thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self.leave_group(deadline)
        with self._lock:
            self._machine.transition_to(MemberState.CLOSED)
