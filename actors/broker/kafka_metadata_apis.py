"""KafkaMetadataApis: Kafka's Metadata and FindCoordinator requests, answered from the broker's
metadata cache as the listener's connection may see it.

With an authorizer, Metadata shows only what the connection may DESCRIBE, as Kafka's
handleTopicMetadataRequest does: a listing of every topic leaves the others out, a topic asked
for by name is TOPIC_AUTHORIZATION_FAILED (whether or not it exists, so its existence is not
disclosed), and a missing topic is created only with CREATE on the cluster or on the topic, else
it too is TOPIC_AUTHORIZATION_FAILED. FindCoordinator needs DESCRIBE on the group or the
transactional id. Both answer with the brokers as reached through the listener the request came
in on. ``KafkaApis`` serves these handlers beside its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.listener import connection_listener
from rafka.actors.broker.request_authorization import (
    AuthorizingSide,
    authorized,
    authorized_operations,
    cluster_authorized,
    cluster_operations,
    refused,
)
from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import FindCoordinatorResponse
from rafka.protocol.messages.metadata import MetadataRequest, MetadataResponse, TopicMetadata
from rafka.protocol.messages.transactions import (
    COORDINATOR_TYPE_GROUP,
    COORDINATOR_TYPE_TRANSACTION,
)
from rafka.protocol.wire.apis import FIND_COORDINATOR, METADATA
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.schema import AUTHORIZED_OPERATIONS_OMITTED
from rafka.security.acl import ACLOperation, ResourceType

Body = Mapping[str, Any]
Handler = Callable[[RequestHeader, Body], Awaitable[Body]]

# What DESCRIBE on each coordinator key type guards, and the error refusing it.
_COORDINATOR_KEYS = {
    COORDINATOR_TYPE_GROUP: (ResourceType.GROUP, Errors.GROUP_AUTHORIZATION_FAILED),
    COORDINATOR_TYPE_TRANSACTION: (
        ResourceType.TRANSACTIONAL_ID,
        Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ),
}


class MetadataSide(AuthorizingSide, Protocol):
    """What the metadata APIs need of their broker (the broker actor, or a fake in unit tests)."""

    config: BrokerConfig

    async def metadata(self, request: MetadataRequest) -> MetadataResponse:
        """Metadata from the broker's cache (creating missing topics when the request allows)."""

    async def find_coordinator(self, key: str, key_type: int) -> FindCoordinatorResponse:
        """The coordinator of a group or transactional id."""


class KafkaMetadataApis:
    """Handles the Metadata and FindCoordinator requests of the Kafka listener for one broker."""

    def __init__(self, broker: MetadataSide) -> None:
        self._broker = broker

    def handlers(self) -> dict[int, Handler]:
        """The handler of each metadata API, by api key."""
        return {METADATA.key: self._metadata, FIND_COORDINATOR.key: self._find_coordinator}

    # ------------------------------------------------------------------ metadata

    async def _metadata(self, header: RequestHeader, body: Body) -> Body:
        topics = body["topics"]
        names: tuple[str, ...] | None
        if topics is None or (header.api_version == 0 and not topics):
            names = None  # v0's empty list and v1+'s null both ask for every topic
        else:
            names = tuple(t["name"] for t in topics if t["name"] is not None)
        answer, shown = await self._visible_topics(names, bool(body["allow_auto_topic_creation"]))
        cluster = AUTHORIZED_OPERATIONS_OMITTED
        if body["include_cluster_authorized_operations"]:
            cluster = cluster_operations(self._broker)
        with_operations = body["include_topic_authorized_operations"]
        # As Kafka: the brokers as reached through the listener this request came in on.
        listener = connection_listener()
        return {
            "brokers": [
                {"node_id": b.broker_id, "host": address[0], "port": address[1], "rack": b.rack}
                for b in answer.brokers
                if (address := b.listener(listener)) is not None
            ],
            "cluster_id": answer.cluster_id,
            "controller_id": answer.controller_id,
            "cluster_authorized_operations": cluster,
            "topics": [
                {
                    "error_code": int(t.error),
                    "name": t.name,
                    "is_internal": t.is_internal,
                    "partitions": [
                        {
                            "error_code": int(p.error),
                            "partition_index": p.partition,
                            "leader_id": p.leader,
                            "leader_epoch": p.leader_epoch,
                            "replica_nodes": list(p.replicas),
                            "isr_nodes": list(p.isr),
                            "offline_replicas": list(p.offline_replicas),
                        }
                        for p in t.partitions
                    ],
                    "topic_authorized_operations": (
                        authorized_operations(self._broker, ResourceType.TOPIC, t.name)
                        if with_operations and t.error is not Errors.TOPIC_AUTHORIZATION_FAILED
                        else AUTHORIZED_OPERATIONS_OMITTED
                    ),
                }
                for t in shown
            ],
        }

    async def _visible_topics(
        self, names: tuple[str, ...] | None, auto_create: bool
    ) -> tuple[MetadataResponse, Sequence[TopicMetadata]]:
        """The cache's answer and the topics of it this connection may see: every topic it may
        DESCRIBE when ``names`` is None, else each name asked for, refused where Kafka refuses."""
        broker = self._broker
        if names is None:
            answer = await broker.metadata(MetadataRequest(None, auto_create))
            hidden = refused(broker, ACLOperation.DESCRIBE, (t.name for t in answer.topics))
            return answer, [t for t in answer.topics if t.name not in hidden]
        undescribable = refused(broker, ACLOperation.DESCRIBE, names)
        described = [n for n in names if n not in undescribable]
        uncreatable: frozenset[str] = frozenset()
        if auto_create and broker.config.auto_create_topics_enable:
            if not cluster_authorized(broker, ACLOperation.CREATE):
                uncreatable = refused(broker, ACLOperation.CREATE, described)
        answer = await broker.metadata(
            MetadataRequest(tuple(n for n in described if n not in uncreatable), auto_create)
        )
        shown = list(answer.topics)
        if uncreatable:
            # Asked again without creating: those that exist are shown, the missing ones would
            # need CREATE.
            looked = await broker.metadata(MetadataRequest(tuple(uncreatable), False))
            shown += [
                t
                if t.error is not Errors.UNKNOWN_TOPIC_OR_PARTITION
                else TopicMetadata(t.name, error=Errors.TOPIC_AUTHORIZATION_FAILED)
                for t in looked.topics
            ]
        shown += [
            TopicMetadata(n, error=Errors.TOPIC_AUTHORIZATION_FAILED)
            for n in names
            if n in undescribable
        ]
        return answer, shown

    # ------------------------------------------------------------------ coordinators

    async def _find_coordinator(self, header: RequestHeader, body: Body) -> Body:
        key_type = body["key_type"]
        keys = body["coordinator_keys"] if header.api_version >= 4 else [body["key"]]
        found = await asyncio.gather(*(self._coordinator(key, key_type) for key in keys))
        if header.api_version >= 4:
            return {"coordinators": found}
        return {k: v for k, v in found[0].items() if k != "key"}

    async def _coordinator(self, key: str, key_type: int) -> dict[str, Any]:
        guarded = _COORDINATOR_KEYS.get(key_type)
        if guarded is not None and not authorized(
            self._broker, ACLOperation.DESCRIBE, guarded[0], key
        ):
            answer = FindCoordinatorResponse(guarded[1])
        else:
            answer = await self._broker.find_coordinator(key, key_type)
        if answer.error is Errors.NONE:
            brokers = (await self._broker.metadata(MetadataRequest(()))).brokers
            listener = connection_listener()
            for broker in brokers:
                address = broker.listener(listener)
                if broker.broker_id == answer.coordinator_id and address is not None:
                    return {
                        "key": key,
                        "node_id": broker.broker_id,
                        "host": address[0],
                        "port": address[1],
                        "error_code": 0,
                        "error_message": None,
                    }
            answer = FindCoordinatorResponse(
                Errors.COORDINATOR_NOT_AVAILABLE,
                error_message=f"coordinator broker {answer.coordinator_id} has no {listener} "
                "listener",
            )
        return {
            "key": key,
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": int(answer.error),
            "error_message": answer.error_message,
        }
