"""How clients find their way in a rafka cluster: metadata, partition leaders, group coordinators,
the controller, over whichever transport reaches the actors.

Metadata is gathered from every live broker's cache (each topic from the freshest view) and
refreshed when a request says it is stale. With no transport given, a client uses the one installed
for its namespace (``rafka.clients.transport.install``), else Ray (``rafka.clients.ray_transport``).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

from rafka.actors import names
from rafka.clients.config import CONNECT_TIMEOUT_MS
from rafka.clients.transport import (
    Endpoint,
    Transport,
    TransportError,
    UnreachableError,
    installed,
)
from rafka.protocol.errors import (
    Errors,
    KafkaTimeoutError,
    RafkaError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.groups import FindCoordinatorResponse
from rafka.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from rafka.protocol.messages.transactions import COORDINATOR_TYPE_GROUP

# A broker briefed on a new topic may answer a loaded machine's metadata request well after the
# others; a shorter grace made a topic created a moment ago read as unknown.
METADATA_RETRY_BACKOFF_S = 0.05
METADATA_GRACE_S = 2.0
COORDINATOR_MOVING = frozenset(
    {Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS}
)
"""Answers meaning "ask again, maybe another broker": a group's coordinator is moving or loading."""


def connect(
    namespace: str, ray_address: str | None, connect_timeout_ms: int = CONNECT_TIMEOUT_MS
) -> Transport:
    """The transport installed for ``namespace``, else a new Ray transport (connecting to Ray
    within ``connect_timeout_ms``)."""
    found = installed(namespace)
    if found is not None:
        return found
    from rafka.clients.ray_transport import RayTransport  # Ray is loaded only when it is used

    return RayTransport(namespace, ray_address, connect_timeout_ms)


class ClusterConnection:
    """Actor handles and a metadata cache for one cluster, shared by a client's threads."""

    def __init__(
        self,
        namespace: str = names.DEFAULT_NAMESPACE,
        ray_address: str | None = None,
        request_timeout_ms: int = 30_000,
        transport: Transport | None = None,
        connect_timeout_ms: int = CONNECT_TIMEOUT_MS,
    ) -> None:
        self.transport = (
            transport
            if transport is not None
            else connect(namespace, ray_address, connect_timeout_ms)
        )
        self.namespace = namespace
        self.request_timeout_s = request_timeout_ms / 1000
        self._lock = threading.Lock()
        self._topics: dict[str, TopicMetadata] = {}
        # Brokers whose metadata request went unanswered, with that request: until it is answered
        # the broker is taken to be frozen (a paused process), asked again but not waited for.
        self._unanswered: dict[int, Any] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None

    # ------------------------------------------------------------------ actors

    def actor(self, name: str) -> Endpoint:
        """A named actor's endpoint (cached); UnreachableError if it does not exist."""
        return self.transport.endpoint(name)

    def forget(self, name: str) -> None:
        """Drop a cached endpoint (its actor died or moved)."""
        self.transport.forget(name)

    def broker_ids(self) -> list[int]:
        """Ids of the brokers that exist now."""
        return self.transport.broker_ids()

    def replica(self, topic: str, partition: int, broker_id: int) -> Endpoint:
        """Endpoint of a partition's replica on a broker."""
        return self.transport.replica(topic, partition, broker_id)

    def broker(self, broker_id: int) -> Endpoint:
        """Endpoint of a broker."""
        return self.transport.broker(broker_id)

    def controller(self) -> Endpoint:
        """Endpoint of the active controller, found through a broker's metadata."""
        self.refresh_metadata(None)
        if self.controller_id < 0:
            raise KafkaTimeoutError(
                f"no controller is elected in the rafka cluster in namespace {self.namespace!r}"
            )
        return self.transport.controller(self.controller_id)

    def request(
        self, endpoint: Endpoint, method: str, *args: Any, timeout_s: float | None = None
    ) -> Any:
        """One blocking request, waited for up to ``timeout_s`` (default: the request timeout)."""
        wait_s = self.request_timeout_s if timeout_s is None else timeout_s
        return self.transport.request(endpoint, method, *args, timeout_s=wait_s)

    # ------------------------------------------------------------------ metadata

    def refresh_metadata(
        self, topics: list[str] | None, allow_auto_topic_creation: bool = True
    ) -> MetadataResponse:
        """Ask every broker for metadata at once and cache the freshest view of each topic (a
        broker with ``auto.create.topics.enable`` creates a named unknown topic, unless the caller
        forbids it, as admin lookups do).

        Brokers learn of changes from the controller one by one, so any single broker may lag: a
        topic one broker knows, another may not know yet. Answers are gathered until all brokers
        answered or ``METADATA_GRACE_S`` after the first answer (a paused broker, whose call hangs,
        costs no more), and each partition is taken from the answer with its highest leader epoch
        (a broker may be briefed on one partition's new leader and not yet on another's). Topics
        are never deleted and leader epochs only grow, so this view never goes back in time.
        """
        failures: list[str] = []
        answers = self.metadata_answers(
            MetadataRequest(
                tuple(topics) if topics is not None else None, allow_auto_topic_creation
            ),
            failures,
        )
        briefed = [answers[b] for b in sorted(answers) if answers[b].briefed]
        if not briefed:
            if answers:
                # Only (re)started brokers the controller has not briefed yet answered: they know
                # nothing.
                return answers[min(answers)]
            raise KafkaTimeoutError(
                f"no rafka broker answered a metadata request ({'; '.join(failures)})"
            )
        freshest: dict[str, TopicMetadata] = {}
        for answer in briefed:
            for topic in answer.topics:
                freshest[topic.name] = _fresher(freshest.get(topic.name), topic)
        response = dataclasses.replace(
            briefed[0], topics=tuple(freshest[name] for name in sorted(freshest))
        )
        with self._lock:
            self.controller_id = response.controller_id
            self.cluster_id = response.cluster_id
            for topic in response.topics:
                if topic.error is Errors.NONE:
                    self._topics[topic.name] = topic
                else:
                    self._topics.pop(topic.name, None)
        return response

    def metadata_answers(
        self, request: MetadataRequest, failures: list[str] | None = None
    ) -> dict[int, MetadataResponse]:
        """Every broker's own answer to ``request``, by broker id: all are asked at once; the first
        answer is waited for up to the request timeout, the others up to METADATA_GRACE_S more,
        except a broker that has not answered an earlier request yet (its answer is taken only if
        it is already in). Brokers that fail or stay silent are left out (and described in
        ``failures``)."""
        failures = [] if failures is None else failures
        ids = self.broker_ids()
        if not ids:
            raise KafkaTimeoutError(f"no rafka brokers found in Ray namespace {self.namespace!r}")
        pending: dict[Any, int] = {}
        for broker_id in ids:
            try:
                pending[self.transport.send(self.broker(broker_id), "metadata", request)] = (
                    broker_id
                )
            except UnreachableError as exc:
                self.forget(names.broker_actor_name(broker_id))
                failures.append(f"broker {broker_id}: {exc}")
        with self._lock:
            self._unanswered = {
                b: call
                for b, call in self._unanswered.items()
                if not self.transport.ready([call], 1, 0)
            }
            frozen = set(self._unanswered)
        awaited = [call for call, b in pending.items() if b not in frozen] or list(pending)
        deadline = time.monotonic() + self.request_timeout_s
        ready = self.transport.ready(awaited, 1, self.request_timeout_s)
        if ready and len(ready) < len(awaited):
            grace = min(METADATA_GRACE_S, max(0.0, deadline - time.monotonic()))
            self.transport.ready(awaited, len(awaited), grace)
        ready = self.transport.ready(list(pending), len(pending), 0)
        answers: dict[int, MetadataResponse] = {}
        for call, broker_id in pending.items():
            if call not in ready:
                failures.append(f"broker {broker_id}: no answer")
                with self._lock:
                    self._unanswered.setdefault(broker_id, call)
                continue
            try:
                answers[broker_id] = self.transport.result(call, 0)
            except TransportError as exc:
                self.forget(names.broker_actor_name(broker_id))
                failures.append(f"broker {broker_id}: {type(exc).__name__}")
        return answers

    def find_coordinator(
        self,
        key: str,
        timeout_s: float | None = None,
        key_type: int = COORDINATOR_TYPE_GROUP,
    ) -> FindCoordinatorResponse:
        """Which broker coordinates ``key`` (a group id, or a transactional id with
        ``key_type`` COORDINATOR_TYPE_TRANSACTION), as the first broker that answers says (brokers
        answer from the same metadata); COORDINATOR_NOT_AVAILABLE if none answers within
        ``timeout_s`` (default: the request timeout). Callers retry the retriable answers
        (COORDINATOR_MOVING) with their own deadlines."""
        deadline = time.monotonic() + (self.request_timeout_s if timeout_s is None else timeout_s)
        # A group lookup passes the key alone, as brokers have always been asked.
        args = (key,) if key_type == COORDINATOR_TYPE_GROUP else (key, key_type)
        for broker_id in self.broker_ids():
            try:
                found: FindCoordinatorResponse = self.request(
                    self.broker(broker_id),
                    "find_coordinator",
                    *args,
                    timeout_s=max(0.0, deadline - time.monotonic()),
                )
                return found
            except TransportError:
                self.forget(names.broker_actor_name(broker_id))
            if time.monotonic() >= deadline:
                break
        return FindCoordinatorResponse(
            Errors.COORDINATOR_NOT_AVAILABLE, error_message="no broker answered FindCoordinator"
        )

    def topic(
        self, topic: str, refresh: bool = False, allow_auto_topic_creation: bool = True
    ) -> TopicMetadata:
        """Cached metadata of a topic; UNKNOWN_TOPIC_OR_PARTITION if the cluster does not know
        it."""
        with self._lock:
            cached = self._topics.get(topic)
        if cached is None or refresh:
            response = self.refresh_metadata([topic], allow_auto_topic_creation)
            found = next(t for t in response.topics if t.name == topic)
            if found.error is not Errors.NONE:
                raise found.error.exception(f"topic {topic!r}: {found.error.message}")
            return found
        return cached

    def topic_once_created(self, topic: str, timeout_s: float) -> TopicMetadata:
        """Fresh metadata of a topic, waiting up to ``timeout_s`` while the answer is retriable (a
        topic being auto-created answers LEADER_NOT_AVAILABLE until it has leaders). An unknown
        topic fails at once, which is clearer than Kafka's timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return self.topic(topic, refresh=True)
            except RafkaError as exc:
                if (
                    isinstance(exc, UnknownTopicOrPartitionError)
                    or not exc.retriable
                    or time.monotonic() > deadline
                ):
                    raise
                time.sleep(METADATA_RETRY_BACKOFF_S)

    def partition(self, topic: str, partition: int, refresh: bool = False) -> PartitionMetadata:
        """Metadata of one partition."""
        metadata = self.topic(topic, refresh)
        for candidate in metadata.partitions:
            if candidate.partition == partition:
                return candidate
        raise UnknownTopicOrPartitionError(
            f"topic {topic!r} has no partition {partition} (it has {len(metadata.partitions)})"
        )

    def leader_replica(
        self, topic: str, partition: int, refresh: bool = False
    ) -> tuple[Any, PartitionMetadata]:
        """The partition leader's replica actor and the metadata naming it; LEADER_NOT_AVAILABLE if
        none."""
        metadata = self.partition(topic, partition, refresh)
        if metadata.leader < 0 or metadata.error is not Errors.NONE:
            raise Errors.LEADER_NOT_AVAILABLE.exception(
                f"{topic}-{partition} has no live leader (leader {metadata.leader})"
            )
        return self.replica(topic, partition, metadata.leader), metadata

    def wait_for(self, predicate: Any, timeout_s: float, what: str) -> Any:
        """Poll ``predicate()`` until it returns a truthy value or ``timeout_s`` passes
        (KafkaTimeoutError)."""
        deadline = time.monotonic() + timeout_s
        delay = 0.01
        last_error: Exception | None = None
        while True:
            try:
                value = predicate()
                if value:
                    return value
            except Exception as exc:  # the condition may throw while the cluster is settling
                last_error = exc
            if time.monotonic() > deadline:
                detail = f" (last error: {last_error})" if last_error else ""
                raise KafkaTimeoutError(
                    f"timed out after {timeout_s:.1f}s waiting for {what}{detail}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def _fresher(known: TopicMetadata | None, answer: TopicMetadata) -> TopicMetadata:
    """Two brokers' views of a topic merged partition by partition: a topic one of them knows
    beats one it does not, and each partition comes from the view with its higher leader epoch."""
    if known is None or known.error is not Errors.NONE:
        return answer
    if answer.error is not Errors.NONE:
        return known
    partitions = {p.partition: p for p in known.partitions}
    for partition in answer.partitions:
        held = partitions.get(partition.partition)
        if held is None or _freshness(partition) > _freshness(held):
            partitions[partition.partition] = partition
    return dataclasses.replace(known, partitions=tuple(partitions[p] for p in sorted(partitions)))


def _freshness(partition: PartitionMetadata) -> tuple[int, bool]:
    """How up to date one broker's view of a partition is: its leader epoch; at equal epochs, a
    live leader wins (a client tries it and learns fast if it died)."""
    return partition.leader_epoch, partition.leader >= 0
