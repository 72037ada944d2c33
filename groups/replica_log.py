"""The group metadata manager's cluster through Ray: local offsets replicas, broker metadata.

``ReplicaOffsetsLog`` reads and appends to this broker's replica actors of ``__consumer_offsets``;
``BrokerTopicMetadata`` asks this broker's metadata cache for partition counts. They implement the
``OffsetsLog`` and ``TopicMetadata`` interfaces of ``group_metadata_manager`` and hold no logic, so
the manager is unit-tested without Ray.
"""

from __future__ import annotations

from typing import Any

import ray

from rafka.actors import names
from rafka.groups.group_metadata_manager import Appended, OffsetsLogUnavailableError
from rafka.groups.offsets_codec import OFFSETS_TOPIC
from rafka.protocol.errors import Errors
from rafka.protocol.messages.metadata import MetadataRequest
from rafka.protocol.messages.produce import ACKS_ALL, AppendOrigin, ProduceRequest


class ReplicaOffsetsLog:
    """This broker's ``__consumer_offsets`` replica actors, found by name on each call."""

    def __init__(self, broker_id: int, namespace: str, commit_timeout_ms: int) -> None:
        self.broker_id = broker_id
        self.namespace = namespace
        self.commit_timeout_ms = commit_timeout_ms

    def _replica(self, partition: int) -> Any:
        name = names.replica_actor_name(OFFSETS_TOPIC, partition, self.broker_id)
        try:
            return ray.get_actor(name, namespace=self.namespace)
        except ValueError as exc:  # Ray's answer for a name no live actor holds
            raise OffsetsLogUnavailableError(f"no replica actor {name}: {exc}") from exc

    async def bounds(self, partition: int) -> tuple[int, int]:
        """The replica's log start offset and log end offset."""
        try:
            info = await self._replica(partition).describe.remote()
        except ray.exceptions.RayActorError as exc:
            raise OffsetsLogUnavailableError(str(exc)) from exc
        return int(info["log_start_offset"]), int(info["log_end_offset"])

    async def read(self, partition: int, offset: int, max_bytes: int) -> bytes:
        """Whole batches of the replica's log from ``offset``."""
        try:
            data: bytes = await self._replica(partition).read_log.remote(offset, max_bytes)
        except ray.exceptions.RayActorError as exc:
            raise OffsetsLogUnavailableError(str(exc)) from exc
        return data

    async def append(self, partition: int, batch: bytes) -> Appended:
        """Produce ``batch`` to the replica as leader with acks=all, as a coordinator; its error
        code and base offset."""
        request = ProduceRequest(
            batch, ACKS_ALL, self.commit_timeout_ms, origin=AppendOrigin.COORDINATOR
        )
        try:
            response = await self._replica(partition).produce.remote(request)
        except (ValueError, ray.exceptions.RayActorError) as exc:
            raise OffsetsLogUnavailableError(str(exc)) from exc
        return Appended(response.error, response.base_offset)


class BrokerTopicMetadata:
    """This broker's metadata cache, without creating the topics it is asked about."""

    def __init__(self, broker_id: int, namespace: str) -> None:
        self.broker_id = broker_id
        self.namespace = namespace

    async def partition_counts(self, topics: tuple[str, ...]) -> dict[str, int]:
        """Topic -> partition count for the existing topics among ``topics``."""
        broker = ray.get_actor(names.broker_actor_name(self.broker_id), namespace=self.namespace)
        response = await broker.metadata.remote(
            MetadataRequest(topics, allow_auto_topic_creation=False)
        )
        return {t.name: len(t.partitions) for t in response.topics if t.error is Errors.NONE}
