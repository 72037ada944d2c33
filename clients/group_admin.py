"""The admin client's consumer-group operations: list and describe groups, read and alter their
committed offsets, delete them.

A group belongs to one broker's coordinator actor: the one on the leader of the group's
``__consumer_offsets`` partition. A request about a group first asks any broker's
``find_coordinator`` which broker that is, then goes to that broker's coordinator. While the offsets
topic is being created, its partition changes leader, or a new coordinator is still loading the
group, the answer is a retriable error (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS), and the lookup and the request are repeated until the admin's request
timeout. Each coordinator knows only its own groups, so ``list_groups`` asks all of them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from rafka.actors import names
from rafka.clients.cluster import COORDINATOR_MOVING, ClusterConnection
from rafka.clients.transport import TransportError
from rafka.protocol.errors import (
    Errors,
    IllegalGenerationError,
    RafkaError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from rafka.protocol.messages.groups import (
    NO_GENERATION,
    NO_MEMBER,
    GroupDescription,
    GroupListing,
    GroupResponse,
    OffsetCommitEntry,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from rafka.protocol.types import OffsetAndMetadata, TopicPartition

_MAX_BACKOFF_S = 0.2


def _group_error(group_id: str, error: Errors, message: str | None = None) -> RafkaError:
    """The exception for ``error`` with a message naming the group."""
    return error.exception(f"group {group_id!r}: {message or error.message}")


def _first_error(response: Any) -> tuple[Errors, str]:
    """A coordinator answer's error and message: the request's own, else the first failed
    partition's of an OffsetCommit (the coordinator reports a move detected while writing the
    offsets there)."""
    if response.error is Errors.NONE and isinstance(response, OffsetCommitResponse):
        for result in response.partitions:
            if result.error is not Errors.NONE:
                return (
                    result.error,
                    f"{result.topic}-{result.partition}: "
                    f"{result.error_message or result.error.message}",
                )
    return response.error, response.error_message or response.error.message


class GroupAdminMixin:
    """Consumer-group operations of ``Admin`` (kafka-python's KafkaAdminClient group methods)."""

    _cluster: ClusterConnection
    _timeout_s: float

    def list_groups(self) -> list[GroupListing]:
        """Every group the live brokers' coordinators own, sorted by group id."""
        listings: dict[str, GroupListing] = {}
        for broker_id in self._cluster.broker_ids():
            name = names.coordinator_actor_name(broker_id)
            try:
                found: tuple[GroupListing, ...] = self._call(
                    self._cluster.actor(name), "list_groups"
                )
            except TransportError:
                # A starting or dying broker has no coordinator to ask; the groups it owned are
                # loaded by the new leaders of their offsets partitions, whose coordinators are
                # asked too.
                self._cluster.forget(name)
                continue
            for listing in found:
                # While a group moves, its old and new coordinator may both report it: one is
                # enough.
                listings.setdefault(listing.group_id, listing)
        return [listings[group_id] for group_id in sorted(listings)]

    def describe_group(self, group_id: str) -> GroupDescription:
        """The group's state, protocol type, assignor, generation and members (assignments
        encoded)."""
        found: GroupDescription = self._ask_coordinator(group_id, "describe_group", group_id)
        return found

    def list_group_offsets(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets, by partition in (topic, partition) order."""
        response: OffsetFetchResponse = self._ask_coordinator(
            group_id, "offset_fetch", OffsetFetchRequest(group_id)
        )
        found = {
            TopicPartition(o.topic, o.partition): OffsetAndMetadata(o.offset, o.metadata)
            for o in response.offsets
        }
        return dict(sorted(found.items()))

    def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` (the next offset to consume, per partition) for the group from outside
        it.

        The coordinator accepts such a commit only while the group has no members; otherwise this
        raises the error it answers (UNKNOWN_MEMBER_ID, ...) with a message saying so. A partition
        it refuses (e.g. UNKNOWN_TOPIC_OR_PARTITION) raises that partition's error; the others are
        committed.
        """
        entries = tuple(
            OffsetCommitEntry(tp.topic, tp.partition, offset)
            for tp, offset in sorted(offsets.items())
        )
        request = OffsetCommitRequest(group_id, NO_GENERATION, NO_MEMBER, entries)
        try:
            self._ask_coordinator(group_id, "offset_commit", request)
        except (UnknownMemberIdError, IllegalGenerationError, RebalanceInProgressError) as exc:
            # These name a member-protocol failure; for a commit made by no member they mean the
            # group is active.
            raise type(exc)(
                f"group {group_id!r} has active members, and offsets can only be altered while it "
                f"is empty ({exc.message})"
            ) from None

    def delete_group(self, group_id: str) -> None:
        """Delete an empty group and its committed offsets (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND
        otherwise)."""
        self._ask_coordinator(group_id, "delete_group", group_id)

    # ------------------------------------------------------------------ coordinator calls

    def _call(self, handle: Any, method: str, *args: Any) -> Any:
        """One actor call, waited for up to the request timeout."""
        return self._cluster.request(handle, method, *args, timeout_s=self._timeout_s)

    def _ask_coordinator(self, group_id: str, method: str, request: Any) -> Any:
        """``method(request)`` at the group's coordinator: the answer, once it carries no error;
        raises the class of a non-retriable error at once, and of a retriable one when the timeout
        passes."""
        deadline = time.monotonic() + self._timeout_s
        delay = 0.01
        while True:
            response = self._attempt(group_id, method, request)
            error, message = _first_error(response)
            if error is Errors.NONE:
                return response
            if error not in COORDINATOR_MOVING:
                raise _group_error(group_id, error, message)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _group_error(
                    group_id, error, f"{message} (still failing after {self._timeout_s:.1f}s)"
                )
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, _MAX_BACKOFF_S)

    def _attempt(self, group_id: str, method: str, request: Any) -> Any:
        """Find the coordinator and call it once; an unreachable one answers
        COORDINATOR_NOT_AVAILABLE."""
        found = self._cluster.find_coordinator(group_id)
        if found.error is not Errors.NONE:
            return found
        name = names.coordinator_actor_name(found.coordinator_id)
        try:
            return self._call(self._cluster.actor(name), method, request)
        except TransportError as exc:
            # Its broker died or the actor is not up yet: Kafka's clients treat a lost connection to
            # the coordinator the same way, as "coordinator not available, look it up again".
            self._cluster.forget(name)
            return GroupResponse(
                Errors.COORDINATOR_NOT_AVAILABLE,
                f"the coordinator on broker {found.coordinator_id} is unreachable "
                f"({type(exc).__name__})",
            )
