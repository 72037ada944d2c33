"""Shared fixtures for unit tests of client code: ``fake_cluster``, an in-memory rafka cluster.

The real clients (ClusterConnection, Admin, the CLI) run unchanged over a ``LocalTransport`` whose
actors are plain Python objects answering with the protocol dataclasses; the transport is installed
for the default namespace, so clients made deep inside the code under test reach it. The brokers,
partition leaders and group coordinators model just what their contracts promise; the brokers
answer SCRAM user and client quota requests with the broker's own decisions
(``user_scram_credentials``, ``client_quota_configs``) over a ``FakeConfigStore``, also the
``config_store`` fixture, and ACL requests with theirs (``acl_manager``) over a ``FakeAclStore``,
also the ``acl_store`` fixture.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import pytest

from rafka.actors import names
from rafka.actors.broker.acl_manager import create_acls, delete_acls, describe_acls
from rafka.actors.broker.client_quota_configs import (
    alter_client_quotas,
    describe_client_quotas,
    quota_entity_paths,
)
from rafka.actors.broker.user_scram_credentials import (
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from rafka.actors.zk.config_store import entity_user
from rafka.clients.local_transport import LocalTransport
from rafka.clients.transport import install, uninstall
from rafka.groups.subscription_codec import encode_assignment
from rafka.protocol.errors import Errors
from rafka.protocol.messages.acls import (
    AclCreationResult,
    AclDeletionResult,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeAclsResult,
)
from rafka.protocol.messages.fetch import FetchRequest, FetchResponse
from rafka.protocol.messages.groups import (
    CommittedOffset,
    FindCoordinatorResponse,
    GroupDescription,
    GroupListing,
    GroupResponse,
    MemberDescription,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
)
from rafka.protocol.messages.metadata import (
    BrokerMetadata,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from rafka.protocol.messages.offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from rafka.protocol.messages.quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResult,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from rafka.protocol.messages.transactions import (
    COORDINATOR_TYPE_GROUP,
    COORDINATOR_TYPE_TRANSACTION,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from rafka.protocol.messages.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsRequest,
    UserScramCredentialsDescription,
)
from rafka.protocol.types import TopicPartition
from rafka.security.acl import ACL, ResourcePattern

NAMESPACE = names.DEFAULT_NAMESPACE


class FakeConfigStore:
    """Config entities (``users/<sanitized name>``, ...) in memory, as ``ConfigStore`` keeps them
    under ``/config``; ``writes`` lists the entities written, in order."""

    def __init__(self) -> None:
        self.entities: dict[str, dict[str, str]] = {}
        self.writes: list[str] = []

    def read(self, entity: str) -> dict[str, str]:
        return dict(self.entities.get(entity, {}))

    def write(self, entity: str, config: dict[str, str]) -> None:
        self.entities[entity] = dict(config)
        self.writes.append(entity)

    def children(self, entity: str) -> list[str]:
        """The names below an entity path, as ``ConfigStore.children`` lists them."""
        prefix = f"{entity}/"
        return sorted(
            {e[len(prefix) :].split("/")[0] for e in self.entities if e.startswith(prefix)}
        )

    def users(self) -> list[str]:
        """Every user with an entry, as ``ConfigManager.users`` lists them."""
        kinds = (entity.partition("/") for entity in self.entities)
        return sorted(entity_user(name) for kind, _, name in kinds if kind == "users")


class FakeAclStore:
    """ACLs by resource pattern in memory, as ``KafkaAclStore`` keeps them in ZooKeeper;
    ``changes`` lists the patterns written, in order (a write that changes nothing is none)."""

    def __init__(self) -> None:
        self.acls: dict[ResourcePattern, set[ACL]] = {}
        self.changes: list[ResourcePattern] = []

    def read_all(self) -> set[ACL]:
        return {acl for found in self.acls.values() for acl in found}

    def change(self, pattern: ResourcePattern, update: Callable[[set[ACL]], set[ACL]]) -> set[ACL]:
        current = self.acls.get(pattern, set())
        wanted = update(set(current))
        if wanted == current:
            return wanted
        if wanted:
            self.acls[pattern] = wanted
        else:
            del self.acls[pattern]
        self.changes.append(pattern)
        return wanted


@dataclass
class FakePartitionLog:
    """A partition as ListOffsets sees it: log start, high watermark and each record's timestamp."""

    log_start: int
    high_watermark: int
    timestamps: dict[int, int] = field(default_factory=dict)


@dataclass
class FakeGroup:
    """A group as its coordinator keeps it; ``offsets`` maps (topic, partition) to (offset,
    metadata)."""

    state: str = "Empty"
    members: list[MemberDescription] = field(default_factory=list)
    offsets: dict[tuple[str, int], tuple[int, str]] = field(default_factory=dict)
    protocol: str = ""
    generation_id: int = -1


class FakeReplica:
    """A partition leader answering ListOffsets from a FakePartitionLog, and fetches with no records
    once their ``max_wait_ms`` passed (a long poll that found nothing new)."""

    def __init__(self, log: FakePartitionLog) -> None:
        self.log = log

    def fetch(self, request: FetchRequest) -> Future[FetchResponse]:
        answer: Future[FetchResponse] = Future()
        empty = FetchResponse(Errors.NONE, self.log.high_watermark, self.log.log_start)
        timer = threading.Timer(request.max_wait_ms / 1000, answer.set_result, (empty,))
        timer.daemon = True
        timer.start()
        return answer

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        if request.timestamp == EARLIEST_TIMESTAMP:
            return ListOffsetsResponse(Errors.NONE, self.log.log_start)
        if request.timestamp == LATEST_TIMESTAMP:
            return ListOffsetsResponse(Errors.NONE, self.log.high_watermark)
        newer = sorted((o, ts) for o, ts in self.log.timestamps.items() if ts >= request.timestamp)
        return (
            ListOffsetsResponse(Errors.NONE, *newer[0])
            if newer
            else ListOffsetsResponse(Errors.NONE, -1, -1)
        )


class ProducerIdSource:
    """A broker's InitProducerId for idempotent producers: ids counted from 1000, epoch 0."""

    next_producer_id = 1000
    init_producer_id_requests: list[InitProducerIdRequest]

    def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        if not hasattr(self, "init_producer_id_requests"):
            self.init_producer_id_requests = []
        self.init_producer_id_requests.append(request)
        if request.transactional_id is not None:
            return InitProducerIdResponse(Errors.NOT_COORDINATOR)
        producer_id = self.next_producer_id
        self.next_producer_id += 1
        return InitProducerIdResponse(Errors.NONE, producer_id, 0)


class FakeBroker(ProducerIdSource):
    """A broker: metadata, topic configs, FindCoordinator and InitProducerId."""

    def __init__(self, fake: FakeCluster, broker_id: int) -> None:
        self.fake = fake
        self.broker_id = broker_id
        self.find_coordinator_calls: list[str] = []

    def metadata(self, request: MetadataRequest) -> MetadataResponse:
        wanted = sorted(self.fake.topics) if request.topics is None else request.topics
        topics = tuple(
            TopicMetadata(
                t,
                tuple(
                    PartitionMetadata(p, 0, 0, (0,), (0,)) for p in range(len(self.fake.topics[t]))
                ),
            )
            if t in self.fake.topics
            else TopicMetadata(t, error=Errors.UNKNOWN_TOPIC_OR_PARTITION)
            for t in wanted
        )
        brokers = tuple(BrokerMetadata(b, "127.0.0.1", f"node-{b}") for b in self.fake.broker_ids)
        return MetadataResponse(brokers, 0, topics, "fake-cluster")

    def topic_config(self, topic: str) -> dict[str, str]:
        return {}

    def alter_user_scram_credentials(
        self, request: AlterUserScramCredentialsRequest
    ) -> list[AlterUserScramCredentialsResult]:
        return alter_user_scram_credentials(self.fake.configs, request)

    def describe_user_scram_credentials(
        self, request: DescribeUserScramCredentialsRequest
    ) -> list[UserScramCredentialsDescription]:
        return describe_user_scram_credentials(self.fake.configs, self.fake.configs.users, request)

    def create_acls(self, request: CreateAclsRequest) -> list[AclCreationResult]:
        return create_acls(self.fake.acls, request)

    def describe_acls(self, request: DescribeAclsRequest) -> DescribeAclsResult:
        return describe_acls(self.fake.acls, request)

    def delete_acls(self, request: DeleteAclsRequest) -> list[AclDeletionResult]:
        return delete_acls(self.fake.acls, request)

    def alter_client_quotas(
        self, request: AlterClientQuotasRequest
    ) -> list[AlterClientQuotasResult]:
        return alter_client_quotas(self.fake.configs, request)

    def describe_client_quotas(
        self, request: DescribeClientQuotasRequest
    ) -> DescribeClientQuotasResponse:
        configs = self.fake.configs
        return describe_client_quotas(
            configs, lambda: quota_entity_paths(configs.children), request
        )

    def find_coordinator(
        self, group_id: str, key_type: int = COORDINATOR_TYPE_GROUP
    ) -> FindCoordinatorResponse:
        self.find_coordinator_calls.append(group_id)
        if key_type == COORDINATOR_TYPE_TRANSACTION:
            return FindCoordinatorResponse(Errors.NONE, self.fake.transaction_coordinator)
        if not group_id:
            return FindCoordinatorResponse(
                Errors.INVALID_GROUP_ID, error_message="the group id is empty"
            )
        if self.fake.find_coordinator_errors:
            return FindCoordinatorResponse(
                self.fake.find_coordinator_errors.pop(0), error_message="scripted"
            )
        if self.fake.stale_coordinator_answers:
            return FindCoordinatorResponse(Errors.NONE, self.fake.stale_coordinator_answers.pop(0))
        return FindCoordinatorResponse(Errors.NONE, self.fake.owner(group_id))


class FakeCoordinator:
    """A group coordinator keeping FakeGroups; groups another broker owns get NOT_COORDINATOR."""

    def __init__(self, fake: FakeCluster, broker_id: int) -> None:
        self.fake = fake
        self.broker_id = broker_id
        self.groups: dict[str, FakeGroup] = {}
        self.commits: list[OffsetCommitRequest] = []
        # Errors the next commits get for every partition, as when writing the offsets fails.
        self.append_errors: list[Errors] = []

    def _not_mine(self, group_id: str) -> bool:
        return self.fake.owner(group_id) != self.broker_id

    def list_groups(self) -> tuple[GroupListing, ...]:
        return tuple(GroupListing(g, "consumer", group.state) for g, group in self.groups.items())

    def describe_group(self, group_id: str) -> GroupDescription:
        if self._not_mine(group_id):
            return GroupDescription(Errors.NOT_COORDINATOR, group_id)
        group = self.groups.get(group_id)
        if group is None:
            return GroupDescription(Errors.NONE, group_id, "Dead")
        return GroupDescription(
            Errors.NONE,
            group_id,
            group.state,
            "consumer",
            group.protocol,
            group.generation_id,
            tuple(group.members),
        )

    def offset_fetch(self, request: OffsetFetchRequest) -> OffsetFetchResponse:
        if self._not_mine(request.group_id):
            return OffsetFetchResponse(Errors.NOT_COORDINATOR)
        offsets = self.groups[request.group_id].offsets if request.group_id in self.groups else {}
        wanted = sorted(offsets) if request.partitions is None else request.partitions
        return OffsetFetchResponse(
            Errors.NONE,
            tuple(CommittedOffset(t, p, *offsets.get((t, p), (-1, ""))) for t, p in wanted),
        )

    def offset_commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        if self._not_mine(request.group_id):
            return OffsetCommitResponse(Errors.NOT_COORDINATOR)
        group = self.groups.setdefault(request.group_id, FakeGroup())
        if group.members:
            return OffsetCommitResponse(
                Errors.UNKNOWN_MEMBER_ID, error_message="admin commit to a group with members"
            )
        if self.append_errors:
            error = self.append_errors.pop(0)
            return OffsetCommitResponse(
                Errors.NONE,
                tuple(PartitionResult(e.topic, e.partition, error) for e in request.offsets),
            )
        self.commits.append(request)
        results = []
        for entry in request.offsets:
            if entry.topic not in self.fake.topics:
                results.append(
                    PartitionResult(entry.topic, entry.partition, Errors.UNKNOWN_TOPIC_OR_PARTITION)
                )
                continue
            group.offsets[(entry.topic, entry.partition)] = (entry.offset, entry.metadata)
            results.append(PartitionResult(entry.topic, entry.partition, Errors.NONE))
        return OffsetCommitResponse(Errors.NONE, tuple(results))

    def delete_group(self, group_id: str) -> GroupResponse:
        if self._not_mine(group_id):
            return GroupResponse(Errors.NOT_COORDINATOR)
        group = self.groups.get(group_id)
        if group is None:
            return GroupResponse(Errors.GROUP_ID_NOT_FOUND)
        if group.members:
            return GroupResponse(Errors.NON_EMPTY_GROUP)
        del self.groups[group_id]
        return GroupResponse(Errors.NONE)


class FakeCluster:
    """Named actors of one rafka cluster, reached through a LocalTransport."""

    def __init__(self) -> None:
        self.transport = LocalTransport(NAMESPACE)
        self.actors: dict[str, Any] = self.transport.actors
        # What every broker reads and writes under /config (users' SCRAM credentials).
        self.configs = FakeConfigStore()
        # What every broker reads and writes under /kafka-acl.
        self.acls = FakeAclStore()
        self.dead: set[str] = self.transport.dead
        self.broker_ids: list[int] = []
        self.topics: dict[str, list[FakePartitionLog]] = {}
        self.group_owner: dict[str, int] = {}
        self.find_coordinator_errors: list[Errors] = []
        self.stale_coordinator_answers: list[int] = []
        # The broker whose transaction coordinator FindCoordinator names for every transactional id.
        self.transaction_coordinator = 0

    # ------------------------------------------------------------------ building the cluster

    def add_brokers(self, count: int) -> None:
        """Brokers 0..count-1, each with its group coordinator."""
        for broker_id in range(count):
            self.broker_ids.append(broker_id)
            self.actors[names.broker_actor_name(broker_id)] = FakeBroker(self, broker_id)
            self.actors[names.coordinator_actor_name(broker_id)] = FakeCoordinator(self, broker_id)

    def add_topic(
        self,
        name: str,
        bounds: list[tuple[int, int]],
        timestamps: dict[int, dict[int, int]] | None = None,
    ) -> None:
        """A topic with a (log start, high watermark) per partition, all led by broker 0;
        ``timestamps`` gives some partitions' record timestamps, {partition: {offset: ms}}."""
        logs = [
            FakePartitionLog(start, end, (timestamps or {}).get(p, {}))
            for p, (start, end) in enumerate(bounds)
        ]
        self.topics[name] = logs
        for partition, log in enumerate(logs):
            self.actors[names.replica_actor_name(name, partition, 0)] = FakeReplica(log)

    def add_group(
        self,
        group_id: str,
        state: str = "Empty",
        members: Iterable[MemberDescription] = (),
        offsets: dict[tuple[str, int], int] | None = None,
        broker_id: int = 0,
    ) -> FakeGroup:
        """A group owned by ``broker_id``'s coordinator, with committed ``offsets`` {(topic,
        partition): offset}."""
        members = list(members)
        group = FakeGroup(
            state,
            members,
            {tp: (offset, "") for tp, offset in (offsets or {}).items()},
            "range" if members else "",
            3 if members else -1,
        )
        self.group_owner[group_id] = broker_id
        self.coordinator(broker_id).groups[group_id] = group
        return group

    def broker(self, broker_id: int) -> FakeBroker:
        """The fake broker, to inspect."""
        return self.actors[names.broker_actor_name(broker_id)]

    def coordinator(self, broker_id: int) -> FakeCoordinator:
        """The fake coordinator, to inspect."""
        return self.actors[names.coordinator_actor_name(broker_id)]

    def owner(self, group_id: str) -> int:
        """The broker whose coordinator owns the group (broker 0 for groups nobody created)."""
        return self.group_owner.get(group_id, 0)

    @staticmethod
    def member(
        member_id: str,
        partitions: Iterable[tuple[str, int]],
        client_id: str = "rafka-consumer",
        host: str = "/127.0.0.1",
    ) -> MemberDescription:
        """A member as DescribeGroups reports it, with its assignment encoded as consumers encode
        it."""
        return MemberDescription(
            member_id,
            client_id,
            host,
            encode_assignment(TopicPartition(t, p) for t, p in partitions),
        )


@pytest.fixture
def config_store() -> FakeConfigStore:
    """An empty in-memory ``/config``."""
    return FakeConfigStore()


@pytest.fixture
def acl_store() -> FakeAclStore:
    """No ACLs yet, in memory."""
    return FakeAclStore()


@pytest.fixture
def fake_cluster() -> Iterator[FakeCluster]:
    """An in-memory cluster with no actors yet; clients created in the test reach only it."""
    fake = FakeCluster()
    install(fake.transport)
    yield fake
    uninstall(fake.transport)
