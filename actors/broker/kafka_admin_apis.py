"""KafkaAdminApis: Kafka's admin requests answered with the requests rafka's own Admin sends.

CreateTopics, CreatePartitions and DeleteTopics go to the active controller actor (asked again,
within the request's timeout, while it answers NOT_CONTROLLER) and are answered once every live
broker's metadata shows the change, as rafka's Admin waits; DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs are this broker's config requests (``KafkaConfigApis``, served with these),
and so are the SCRAM user requests (``KafkaUserApis``, likewise) and the ACL requests
(``KafkaAclApis``, likewise);
DeleteRecords and OffsetForLeaderEpoch go to the partition's replica on this broker;
DescribeCluster reads the metadata cache. rafka's
controller has no validate-only mode, so a validate-only request is refused (INVALID_REQUEST)
rather than carried out or falsely approved. ``KafkaApis`` serves these handlers beside its own.

With an authorizer each request is checked as Kafka's KafkaApis checks it, and what is refused is
not carried out: CreateTopics needs CREATE on the cluster or on the topic, DeleteTopics and
DeleteRecords DELETE on the topic, CreatePartitions ALTER on it (TOPIC_AUTHORIZATION_FAILED);
OffsetForLeaderEpoch CLUSTER_ACTION on the cluster or DESCRIBE on the topic; a created topic's
configs are shown only with DESCRIBE_CONFIGS on it. DescribeCluster is answered to anyone, as in
Kafka, with the cluster's authorized operations when asked for.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.kafka_acl_apis import AclSide, KafkaAclApis
from rafka.actors.broker.kafka_config_apis import ConfigSide, KafkaConfigApis
from rafka.actors.broker.kafka_group_apis import partitions_by_topic
from rafka.actors.broker.kafka_user_apis import KafkaUserApis, UserSide
from rafka.actors.broker.listener import connection_listener
from rafka.actors.broker.request_authorization import (
    answered,
    cluster_authorized,
    cluster_operations,
    refused,
)
from rafka.protocol.configs import (
    ConfigResource,
    ConfigResourceType,
)
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.admin import (
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
)
from rafka.protocol.messages.configs import (
    DescribeConfigsRequest,
)
from rafka.protocol.messages.metadata import MetadataRequest, MetadataResponse, TopicMetadata
from rafka.protocol.messages.offsets import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from rafka.protocol.types import NewPartitions, NewTopic
from rafka.protocol.wire.admin_apis import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    ENDPOINT_TYPE_BROKERS,
    OFFSET_FOR_LEADER_EPOCH,
)
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.schema import AUTHORIZED_OPERATIONS_OMITTED
from rafka.security.acl import ACLOperation

Body = Mapping[str, Any]
Handler = Callable[[RequestHeader, Body], Awaitable[Body]]
TopicResult = CreateTopicResult | CreatePartitionsResult | DeleteTopicResult

# How long to wait before asking the controller again, and between looks at the metadata.
_RETRY_BACKOFF_S = 0.1


class AdminSide(ConfigSide, UserSide, AclSide, Protocol):
    """What the admin APIs need of their broker (the broker actor, or a fake in unit tests)."""

    config: BrokerConfig

    async def controller_call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on the active controller; raises NOT_CONTROLLER when unreachable."""

    async def metadata(self, request: MetadataRequest) -> MetadataResponse:
        """This broker's view of the cluster."""

    async def cluster_metadata(self, request: MetadataRequest) -> list[MetadataResponse]:
        """``request`` answered by every live broker that answers, this one first."""

    async def replica_call(self, topic: str, partition: int, method: str, request: Any) -> Any:
        """``method(request)`` on this broker's replica of the partition."""


class KafkaAdminApis:
    """Handles the admin requests of the Kafka listener for one broker."""

    def __init__(self, broker: AdminSide) -> None:
        self._broker = broker

    def handlers(self) -> dict[int, Handler]:
        """The handler of each admin API, by api key."""
        return {
            CREATE_TOPICS.key: self._create_topics,
            DELETE_TOPICS.key: self._delete_topics,
            DELETE_RECORDS.key: self._delete_records,
            OFFSET_FOR_LEADER_EPOCH.key: self._offset_for_leader_epoch,
            CREATE_PARTITIONS.key: self._create_partitions,
            **KafkaConfigApis(self._broker).handlers(),
            **KafkaUserApis(self._broker).handlers(),
            **KafkaAclApis(self._broker).handlers(),
            DESCRIBE_CLUSTER.key: self._describe_cluster,
        }

    # ------------------------------------------------------------------ topics

    async def _create_topics(self, header: RequestHeader, body: Body) -> Body:
        requested = body["topics"]
        deadline = _deadline(body["timeout_ms"])
        validate_only = body["validate_only"]
        results = self._refused(
            [t["name"] for t in requested], CreateTopicResult, ACLOperation.CREATE
        )
        asked = [self._new_topic(t) for t in requested if t["name"] not in results]
        for result in await self._ask_controller(
            "create_topics", asked, deadline, CreateTopicResult, validate_only
        ):
            results[result.name] = result
        created = [
            t.name for t in asked if results[t.name].error is Errors.NONE and not validate_only
        ]
        shown = await self._await_metadata(created, body["timeout_ms"], deadline, lambda t: t.led)
        for name in created:
            if name not in shown and body["timeout_ms"] > 0:
                results[name] = _timed_out(name, "get leaders", CreateTopicResult)
        # As Kafka: a created topic's configs are shown only with DESCRIBE_CONFIGS on it.
        hidden = refused(self._broker, ACLOperation.DESCRIBE_CONFIGS, created)
        described = [n for n in created if n not in hidden]
        configs = await self._created_configs(described) if header.api_version >= 5 else {}
        answers = []
        for t in requested:
            result = results[t["name"]]
            answer = {
                "name": t["name"],
                "error_code": int(result.error),
                "error_message": result.message,
            }
            topic = shown.get(t["name"])
            if t["name"] in hidden and result.error is Errors.NONE:
                answer["topic_config_error_code"] = int(Errors.TOPIC_AUTHORIZATION_FAILED)
            elif topic is not None and result.error is Errors.NONE:
                answer["num_partitions"] = len(topic.partitions)
                answer["replication_factor"] = len(topic.partitions[0].replicas)
                answer["configs"] = configs.get(t["name"])
            answers.append(answer)
        return {"topics": answers}

    def _new_topic(self, topic: Body) -> NewTopic:
        """The NewTopic rafka's Admin would send: -1 partitions or replication factor takes the
        broker's ``num.partitions`` / ``default.replication.factor`` (KIP-464) unless replicas
        are placed explicitly; a config with a null value is left at its default."""
        assignments = {a["partition_index"]: tuple(a["broker_ids"]) for a in topic["assignments"]}
        partitions, factor = topic["num_partitions"], topic["replication_factor"]
        if not assignments:
            if partitions == -1:
                partitions = self._broker.config.num_partitions
            if factor == -1:
                factor = self._broker.config.default_replication_factor
        configs = tuple((c["name"], c["value"]) for c in topic["configs"] if c["value"] is not None)
        return NewTopic(topic["name"], partitions, factor, configs, assignments)

    async def _created_configs(self, names: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """The configs of just-created topics, as CreateTopics v5+ reports them."""
        if not names:
            return {}
        described = await self._broker.describe_configs(
            DescribeConfigsRequest(
                tuple(ConfigResource(ConfigResourceType.TOPIC, n) for n in names)
            )
        )
        return {
            d.resource.name: [
                {
                    "name": e.name,
                    "value": e.value,
                    "read_only": e.read_only,
                    "config_source": int(e.source),
                    "is_sensitive": e.is_sensitive,
                }
                for e in d.entries
            ]
            for d in described
            if d.error is Errors.NONE
        }

    async def _create_partitions(self, _header: RequestHeader, body: Body) -> Body:
        requested = body["topics"]
        deadline = _deadline(body["timeout_ms"])
        validate_only = body["validate_only"]
        results = self._refused(
            [t["name"] for t in requested], CreatePartitionsResult, ACLOperation.ALTER
        )
        asked = {
            t["name"]: NewPartitions(
                t["count"],
                None
                if t["assignments"] is None
                else [tuple(a["broker_ids"]) for a in t["assignments"]],
            )
            for t in requested
            if t["name"] not in results
        }
        for result in await self._ask_controller(
            "create_partitions", asked, deadline, CreatePartitionsResult, validate_only
        ):
            results[result.name] = result
        grown = {
            n: asked[n].total_count
            for n in asked
            if results[n].error is Errors.NONE and not validate_only
        }
        shown = await self._await_metadata(
            list(grown),
            body["timeout_ms"],
            deadline,
            lambda t: t.led and len(t.partitions) >= grown[t.name],
        )
        for name in grown:
            if name not in shown and body["timeout_ms"] > 0:
                results[name] = _timed_out(name, "lead its new partitions", CreatePartitionsResult)
        return {
            "results": [
                {
                    "name": t["name"],
                    "error_code": int(results[t["name"]].error),
                    "error_message": results[t["name"]].message,
                }
                for t in requested
            ]
        }

    async def _delete_topics(self, header: RequestHeader, body: Body) -> Body:
        deadline = _deadline(body["timeout_ms"])
        if header.api_version < 6:
            names: list[str | None] = list(body["topic_names"])
        else:
            names = [t["name"] for t in body["topics"]]
        named = [n for n in names if n is not None]
        results = self._refused(named, DeleteTopicResult, ACLOperation.DELETE)
        asked = [n for n in named if n not in results]
        for result in await self._ask_controller(
            "delete_topics", asked, deadline, DeleteTopicResult
        ):
            results[result.name] = result
        deleted = [n for n in asked if results[n].error is Errors.NONE]
        forgotten = await self._await_metadata(
            deleted,
            body["timeout_ms"],
            deadline,
            lambda t: t.error is Errors.UNKNOWN_TOPIC_OR_PARTITION,
        )
        for name in deleted:
            if name not in forgotten and body["timeout_ms"] > 0:
                results[name] = _timed_out(name, "be forgotten", DeleteTopicResult)
        # KIP-516: rafka keeps no topic ids, so a topic named only by its id is unknown.
        unnamed = DeleteTopicResult("", Errors.UNKNOWN_TOPIC_ID, "rafka knows topics by name only")
        outcomes = [(n, unnamed if n is None else results[n]) for n in names]
        return {
            "responses": [
                {"name": n, "error_code": int(r.error), "error_message": r.message}
                for n, r in outcomes
            ]
        }

    def _refused(
        self, names: Sequence[str], result: Callable[..., TopicResult], operation: ACLOperation
    ) -> dict[str, TopicResult]:
        """Results for the topics not sent on: those named more than once (INVALID_REQUEST, as
        Kafka answers both copies), and those the request may not do ``operation`` on
        (TOPIC_AUTHORIZATION_FAILED), CREATE being allowed on the cluster or on the topic."""
        results = _duplicated(names, result)
        if operation is ACLOperation.CREATE and cluster_authorized(self._broker, operation):
            return results
        unauthorized = refused(self._broker, operation, (n for n in names if n not in results))
        results.update(
            (n, result(n, Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
            for n in unauthorized
        )
        return results

    async def _ask_controller(
        self,
        method: str,
        items: Sequence[Any] | Mapping[str, Any],
        deadline: float,
        result: Callable[..., TopicResult],
        validate_only: bool = False,
    ) -> list[TopicResult]:
        """The controller's result for each topic of ``items`` (a list, or a dict by topic name),
        asking again for the topics it answered NOT_CONTROLLER until ``deadline``; ``result``
        makes a topic's result when the controller could not be asked. With ``validate_only``
        the controller checks the request and writes nothing."""
        pending = items
        results: dict[str, TopicResult] = {}
        while pending:
            try:
                # The creating methods take (topics, placement, validate_only).
                arguments = (pending, None, True) if validate_only else (pending,)
                answers: list[TopicResult] = await self._broker.controller_call(method, *arguments)
            except RafkaError as exc:
                answers = [result(name, exc.error, exc.message) for name in _names(pending)]
            results.update((a.name, a) for a in answers)
            moved = {a.name for a in answers if a.error is Errors.NOT_CONTROLLER}
            if not moved or time.monotonic() >= deadline:
                break
            await asyncio.sleep(_RETRY_BACKOFF_S)
            pending = _only(pending, moved)
        return [results[name] for name in _names(items)]

    async def _await_metadata(
        self,
        names: Sequence[str],
        timeout_ms: int,
        deadline: float,
        shows: Callable[[TopicMetadata], bool],
    ) -> dict[str, TopicMetadata]:
        """The topics of ``names`` whose metadata ``shows`` the change on every live broker the
        controller has briefed (this broker's view of each is returned), waiting for all of them
        until ``deadline``; a request whose timeout is not positive waits for nothing, as in
        Kafka, and is answered as soon as the controller accepted it."""
        shown: dict[str, TopicMetadata] = {}
        while True:
            waiting = [n for n in names if n not in shown]
            if not waiting or timeout_ms <= 0:
                return shown
            answers = await self._broker.cluster_metadata(
                MetadataRequest(tuple(waiting), allow_auto_topic_creation=False)
            )
            briefed = [a for a in answers if a.briefed]
            here = {t.name: t for t in answers[0].topics}
            for name in waiting:
                seen = [t for a in briefed for t in a.topics if t.name == name]
                if seen and all(shows(t) for t in seen) and name in here:
                    shown[name] = here[name]
            if time.monotonic() >= deadline or len(shown) == len(names):
                return shown
            await asyncio.sleep(_RETRY_BACKOFF_S)

    # ------------------------------------------------------------------ records and epochs

    async def _delete_records(self, _header: RequestHeader, body: Body) -> Body:
        targets = [(t["name"], p) for t in body["topics"] for p in t["partitions"]]
        undeletable = refused(self._broker, ACLOperation.DELETE, (t for t, _ in targets))
        answers = await asyncio.gather(
            *(
                answered(DeleteRecordsResponse(Errors.TOPIC_AUTHORIZATION_FAILED))
                if topic in undeletable
                else self._ask_replica(
                    topic,
                    p["partition_index"],
                    "delete_records",
                    DeleteRecordsRequest(p["offset"]),
                    DeleteRecordsResponse,
                )
                for topic, p in targets
            )
        )
        rows = [
            (
                topic,
                {
                    "partition_index": p["partition_index"],
                    "low_watermark": answer.low_watermark,
                    "error_code": int(answer.error),
                },
            )
            for (topic, p), answer in zip(targets, answers, strict=True)
        ]
        return {"topics": _grouped("name", rows)}

    async def _offset_for_leader_epoch(self, _header: RequestHeader, body: Body) -> Body:
        replica_id = body["replica_id"]
        targets = [(t["topic"], p) for t in body["topics"] for p in t["partitions"]]
        # As Kafka since KIP-320: a follower's CLUSTER_ACTION, or a consumer's DESCRIBE on a topic.
        undescribable: frozenset[str] = frozenset()
        if not cluster_authorized(self._broker, ACLOperation.CLUSTER_ACTION):
            undescribable = refused(self._broker, ACLOperation.DESCRIBE, (t for t, _ in targets))
        answers = await asyncio.gather(
            *(
                answered(OffsetsForLeaderEpochResponse(Errors.TOPIC_AUTHORIZATION_FAILED))
                if topic in undescribable
                else self._ask_replica(
                    topic,
                    p["partition"],
                    "offsets_for_leader_epoch",
                    OffsetsForLeaderEpochRequest(
                        p["leader_epoch"], replica_id, p["current_leader_epoch"]
                    ),
                    OffsetsForLeaderEpochResponse,
                )
                for topic, p in targets
            )
        )
        rows = [
            (
                topic,
                {
                    "error_code": int(answer.error),
                    "partition": p["partition"],
                    "leader_epoch": answer.leader_epoch,
                    "end_offset": answer.end_offset,
                },
            )
            for (topic, p), answer in zip(targets, answers, strict=True)
        ]
        return {"topics": _grouped("topic", rows)}

    async def _ask_replica(
        self, topic: str, partition: int, method: str, request: Any, failed: Callable[..., Any]
    ) -> Any:
        """The partition replica's answer, or ``failed(error, error_message=...)`` when this
        broker has no replica of it to ask."""
        try:
            return await self._broker.replica_call(topic, partition, method, request)
        except RafkaError as exc:
            return failed(exc.error, error_message=exc.message)

    # ------------------------------------------------------------------ cluster

    async def _describe_cluster(self, _header: RequestHeader, body: Body) -> Body:
        if body["endpoint_type"] != ENDPOINT_TYPE_BROKERS:
            return {
                "error_code": int(Errors.UNSUPPORTED_ENDPOINT_TYPE),
                "error_message": "rafka's controllers have no endpoints of their own",
                "endpoint_type": body["endpoint_type"],
            }
        answer = await self._broker.metadata(MetadataRequest(()))
        listener = connection_listener()
        return {
            "error_code": 0,
            "cluster_id": answer.cluster_id or "",
            "controller_id": answer.controller_id,
            "brokers": [
                {"broker_id": b.broker_id, "host": address[0], "port": address[1], "rack": b.rack}
                for b in answer.brokers
                if (address := b.listener(listener)) is not None
            ],
            "cluster_authorized_operations": (
                cluster_operations(self._broker)
                if body["include_cluster_authorized_operations"]
                else AUTHORIZED_OPERATIONS_OMITTED
            ),
        }


def _deadline(timeout_ms: int) -> float:
    """The monotonic time a request with ``timeout_ms`` must be answered by (now if <= 0)."""
    return time.monotonic() + max(0, timeout_ms) / 1000


def _duplicated(names: Sequence[str], result: Callable[..., TopicResult]) -> dict[str, TopicResult]:
    """Results for the topics named more than once (INVALID_REQUEST, as Kafka answers both
    copies)."""
    return {
        n: result(n, Errors.INVALID_REQUEST, f"topic {n!r} appears more than once in the request")
        for n, count in Counter(names).items()
        if count > 1
    }


def _timed_out(name: str, what: str, result: Callable[..., TopicResult]) -> TopicResult:
    return result(
        name,
        Errors.REQUEST_TIMED_OUT,
        f"topic {name!r} did not {what} on every broker within the request's timeout",
    )


def _names(items: Sequence[Any] | Mapping[str, Any]) -> list[str]:
    """The topic names of a controller request: a list of names or NewTopics, or a dict."""
    if isinstance(items, Mapping):
        return list(items)
    return [i if isinstance(i, str) else i.name for i in items]


def _only(items: Sequence[Any] | Mapping[str, Any], names: set[str]) -> Any:
    """The part of a controller request about ``names``, of the same shape."""
    if isinstance(items, Mapping):
        return {k: v for k, v in items.items() if k in names}
    return [i for i in items if (i if isinstance(i, str) else i.name) in names]


def _grouped(name_field: str, rows: Iterable[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Partition entries grouped under their topic: ``{name_field: topic, "partitions": [...]}``."""
    return [{name_field: t, "partitions": ps} for t, ps in partitions_by_topic(rows).items()]
