"""How the transaction coordinator's markers reach partitions through Ray: ``RayMarkerChannel``.

Leaders come from this broker's metadata cache (the broker actor's Metadata answer, never creating
topics). A data partition's marker goes to its leader replica actor (``write_txn_markers``); a
group's ``__consumer_offsets`` partition's marker goes to the group coordinator actor of the broker
leading it (``write_txn_markers(offsets_partition, request)``), which also applies the pending
offsets. Unreachable actors answer NOT_LEADER_OR_FOLLOWER, so the sender retries after a new
lookup. No logic here: ``marker_sender`` decides.
"""

from __future__ import annotations

import logging

import ray

from rafka.actors import names
from rafka.groups.offsets_codec import OFFSETS_TOPIC
from rafka.protocol.errors import Errors
from rafka.protocol.messages.metadata import MetadataRequest
from rafka.protocol.messages.transactions import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from rafka.protocol.types import TopicPartition
from rafka.transactions.marker_sender import existing_leaders

logger = logging.getLogger(__name__)


class RayMarkerChannel:
    """``MarkerChannel`` over this broker's metadata and the cluster's replica and group
    coordinator actors."""

    def __init__(self, broker_id: int, namespace: str) -> None:
        self.broker_id = broker_id
        self.namespace = namespace

    async def leaders(
        self, partitions: frozenset[TopicPartition]
    ) -> dict[TopicPartition, int] | None:
        """Each existing partition's leader (-1 while none); None if the broker did not answer or
        has not been briefed yet."""
        topics = tuple(sorted({tp.topic for tp in partitions}))
        try:
            broker = ray.get_actor(
                names.broker_actor_name(self.broker_id), namespace=self.namespace
            )
            response = await broker.metadata.remote(
                MetadataRequest(topics, allow_auto_topic_creation=False)
            )
        except (ValueError, ray.exceptions.RayActorError) as exc:
            logger.warning("transaction markers: broker %d unreachable: %s", self.broker_id, exc)
            return None
        return existing_leaders(response, partitions)

    async def write(
        self, leader: int, partition: TopicPartition, request: WriteTxnMarkersRequest
    ) -> Errors:
        """One WriteTxnMarkers to the actor that appends ``partition``'s marker on ``leader``."""
        try:
            if partition.topic == OFFSETS_TOPIC:
                actor = ray.get_actor(
                    names.coordinator_actor_name(leader), namespace=self.namespace
                )
                ref = actor.write_txn_markers.remote(partition.partition, request)
            else:
                actor = ray.get_actor(
                    names.replica_actor_name(partition.topic, partition.partition, leader),
                    namespace=self.namespace,
                )
                ref = actor.write_txn_markers.remote(request)
            response: WriteTxnMarkersResponse = await ref
        except (ValueError, ray.exceptions.RayActorError) as exc:
            logger.info("marker for %s-%d: leader %d unreachable: %s", *partition, leader, exc)
            return Errors.NOT_LEADER_OR_FOLLOWER
        except ray.exceptions.RayTaskError as exc:
            logger.warning("marker for %s-%d failed at broker %d: %s", *partition, leader, exc)
            return Errors.UNKNOWN_SERVER_ERROR
        return response.error
