"""Fixtures for the tests of the broker's Kafka API handlers: ``acl_broker``, a broker whose ACL
authorizer is on, for the tests of the checks each handler makes (the ``test_acl_checks_*``
modules).

A request goes through the whole handler map (``KafkaApis``), round-tripped through the wire codec
at the version asked for, from a connection whose principal the test names; the broker records
every call a handler makes of it, so a test can tell that a refused request read or wrote nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.kafka_apis import KafkaApis
from rafka.actors.broker.listener import _CONNECTION_PRINCIPAL, Deferred
from rafka.protocol.errors import Errors
from rafka.protocol.messages.acls import DescribeAclsResult
from rafka.protocol.messages.admin import (
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
)
from rafka.protocol.messages.configs import (
    AlterConfigsRequest,
    AlterConfigsResult,
    DescribeConfigsRequest,
    DescribeConfigsResult,
)
from rafka.protocol.messages.fetch import FetchResponse
from rafka.protocol.messages.groups import (
    CommittedOffset,
    FindCoordinatorResponse,
    GroupDescription,
    GroupListing,
    GroupResponse,
    JoinGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from rafka.protocol.messages.metadata import (
    BrokerMetadata,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from rafka.protocol.messages.offsets import (
    DeleteRecordsResponse,
    ListOffsetsResponse,
    OffsetsForLeaderEpochResponse,
)
from rafka.protocol.messages.produce import ProduceAppended, ProduceResponse
from rafka.protocol.messages.transactions import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
)
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY
from rafka.security.acl import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourceType,
)
from rafka.security.principal import KafkaPrincipal

ADMIN = "User:admin"
"""The super user of ``acl_broker``."""
TOPICS = ("orders", "payments", "__consumer_offsets", "__transaction_state")
BROKER = BrokerMetadata(0, "10.0.0.1", "n0", endpoints=("PLAINTEXT://10.0.0.1:9092",))


class AclBroker:
    """A broker with its ACL authorizer on (``User:admin`` a super user, no ACL until a test adds
    some) and the one-partition topics of ``TOPICS``; it answers every call with success and
    records it in ``calls`` (the method and its arguments)."""

    def __init__(self) -> None:
        self.config = BrokerConfig(broker_id=0)
        self.authorizer = BrokerAuthorizer(True, frozenset({ADMIN}), False)
        self.topics = list(TOPICS)
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._acls: list[ACL] = []

    # ------------------------------------------------------------------ the test's side

    def allow(
        self,
        principal: str,
        operation: ACLOperation,
        resource_type: ResourceType,
        name: str,
        pattern_type: ACLResourcePatternType = ACLResourcePatternType.LITERAL,
    ) -> None:
        """Add an ALLOW ACL for ``principal`` from any host."""
        self._add(principal, operation, resource_type, name, pattern_type, ACLPermissionType.ALLOW)

    def deny(
        self, principal: str, operation: ACLOperation, resource_type: ResourceType, name: str
    ) -> None:
        """Add a DENY ACL for ``principal`` from any host."""
        self._add(
            principal,
            operation,
            resource_type,
            name,
            ACLResourcePatternType.LITERAL,
            ACLPermissionType.DENY,
        )

    def _add(
        self,
        principal: str,
        operation: ACLOperation,
        resource_type: ResourceType,
        name: str,
        pattern_type: ACLResourcePatternType,
        permission: ACLPermissionType,
    ) -> None:
        pattern = ResourcePattern(resource_type, name, pattern_type)
        self._acls.append(ACL(principal, "*", operation, permission, pattern))
        self.authorizer.load(self._acls)

    def asked(self, method: str) -> list[tuple[Any, ...]]:
        """The arguments of every call of ``method`` a handler made."""
        return [args for called, args in self.calls if called == method]

    def handle(self, api_key: int, version: int, body: dict[str, Any], user: str = "alice") -> Any:
        """``body`` sent through the codec and ``KafkaApis`` by a connection logged in as
        ``user``; the response as a client decodes it (None when Kafka sends none)."""
        header = RequestHeader(api_key, version, 1, "acl-test")
        request = DEFAULT_REGISTRY.decode_request(DEFAULT_REGISTRY.encode_request(header, body)[4:])
        apis = KafkaApis(self, DEFAULT_REGISTRY)

        async def answer() -> Any:
            # The request's task runs in a copy of the context: the principal stays with it.
            _CONNECTION_PRINCIPAL.set(KafkaPrincipal.user(user))
            body_or_later = await apis.handle(request.header, request.body)
            if isinstance(body_or_later, Deferred):
                return await body_or_later.body
            return body_or_later

        answered = asyncio.run(answer())
        if answered is None:
            return None
        response = DEFAULT_REGISTRY.encode_response(header, answered)
        return DEFAULT_REGISTRY.decode_response(response[4:], header)[1]

    # ------------------------------------------------------------------ the broker's side

    async def metadata(self, request: MetadataRequest) -> MetadataResponse:
        self.calls.append(("metadata", (request,)))
        names = self.topics if request.topics is None else request.topics
        return MetadataResponse((BROKER,), 0, tuple(self._topic(n, request) for n in names), "c")

    def _topic(self, name: str, request: MetadataRequest) -> TopicMetadata:
        if name in self.topics:
            partition = PartitionMetadata(0, 0, 0, (0,), (0,))
            return TopicMetadata(name, (partition,), is_internal=name.startswith("__"))
        if request.allow_auto_topic_creation and self.config.auto_create_topics_enable:
            self.calls.append(("auto_create", (name,)))
            return TopicMetadata(name, error=Errors.LEADER_NOT_AVAILABLE)
        return TopicMetadata(name, error=Errors.UNKNOWN_TOPIC_OR_PARTITION)

    async def cluster_metadata(self, request: MetadataRequest) -> list[MetadataResponse]:
        return [await self.metadata(request)]

    async def find_coordinator(self, key: str, key_type: int) -> FindCoordinatorResponse:
        self.calls.append(("find_coordinator", (key, key_type)))
        return FindCoordinatorResponse(Errors.NONE, 0)

    async def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        self.calls.append(("init_producer_id", (request,)))
        return InitProducerIdResponse(Errors.NONE, 7, 0)

    async def replica_call(self, topic: str, partition: int, method: str, request: Any) -> Any:
        self.calls.append((method, (topic, partition, request)))
        answers: dict[str, Any] = {
            "append": ProduceAppended(ProduceResponse(Errors.NONE, 0, -1, 0)),
            "fetch": FetchResponse(Errors.NONE, 10, 0, 10),
            "list_offsets": ListOffsetsResponse(Errors.NONE, 5, 1),
            "delete_records": DeleteRecordsResponse(Errors.NONE, 3),
            "offsets_for_leader_epoch": OffsetsForLeaderEpochResponse(Errors.NONE, 1, 100),
        }
        return answers[method]

    async def coordinator_call(self, method: str, *args: Any) -> Any:
        self.calls.append((method, args))
        if method == "offset_fetch":
            (request,) = args
            every = [(t, 0) for t in ("orders", "payments")]
            asked = every if request.partitions is None else request.partitions
            offsets = tuple(CommittedOffset(t, p, 5) for t, p in asked)
            return OffsetFetchResponse(Errors.NONE, offsets)
        if method == "describe_group":
            return GroupDescription(Errors.NONE, args[0], "Stable", "consumer")
        answers: dict[str, Any] = {
            "join_group": JoinGroupResponse(Errors.NONE, 1, "range", "m-1", "m-1"),
            "sync_group": SyncGroupResponse(Errors.NONE, b"assigned"),
            "offset_commit": OffsetCommitResponse(Errors.NONE),
            "txn_offset_commit": TxnOffsetCommitResponse(Errors.NONE),
            "list_groups": (
                GroupListing("g1", "consumer", "Stable"),
                GroupListing("g2", "consumer", "Empty"),
            ),
        }
        return answers.get(method, GroupResponse(Errors.NONE))

    async def transaction_coordinator_call(self, method: str, *args: Any) -> Any:
        self.calls.append((method, args))
        answers: dict[str, Any] = {
            "init_producer_id": InitProducerIdResponse(Errors.NONE, 8, 0),
            "add_partitions_to_txn": AddPartitionsToTxnResponse(Errors.NONE),
            "add_offsets_to_txn": AddOffsetsToTxnResponse(Errors.NONE),
            "end_txn": EndTxnResponse(Errors.NONE),
        }
        return answers[method]

    async def controller_call(self, method: str, *args: Any) -> Any:
        self.calls.append((method, args))
        if method == "create_topics":
            self.topics += [t.name for t in args[0]]
            return [CreateTopicResult(t.name, Errors.NONE) for t in args[0]]
        if method == "delete_topics":
            return [DeleteTopicResult(n, Errors.NONE) for n in args[0]]
        return [CreatePartitionsResult(n, Errors.NONE) for n in args[0]]

    async def describe_configs(
        self, request: DescribeConfigsRequest
    ) -> list[DescribeConfigsResult]:
        self.calls.append(("describe_configs", (request,)))
        return [DescribeConfigsResult(r, Errors.NONE, None, ()) for r in request.resources]

    async def alter_configs(self, request: AlterConfigsRequest) -> list[AlterConfigsResult]:
        self.calls.append(("alter_configs", (request,)))
        return [AlterConfigsResult(r, Errors.NONE) for r in request.resources]

    async def describe_user_scram_credentials(self, request: Any) -> Any:
        self.calls.append(("describe_user_scram_credentials", (request,)))
        return []

    async def alter_user_scram_credentials(self, request: Any) -> Any:
        self.calls.append(("alter_user_scram_credentials", (request,)))
        return []

    async def create_acls(self, request: Any) -> Any:
        self.calls.append(("create_acls", (request,)))
        return []

    async def describe_acls(self, request: Any) -> Any:
        self.calls.append(("describe_acls", (request,)))
        return DescribeAclsResult(Errors.NONE)

    async def delete_acls(self, request: Any) -> Any:
        self.calls.append(("delete_acls", (request,)))
        return []


@pytest.fixture
def acl_broker() -> AclBroker:
    """A broker with its ACL authorizer on (see ``AclBroker``)."""
    return AclBroker()
