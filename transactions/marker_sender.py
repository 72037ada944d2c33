"""Writing a transaction's markers to every partition it touched, until all are written (Kafka's
``TransactionMarkerChannelManager``, without the network).

The sender looks up each pending partition's current leader, sends its WriteTxnMarkers, and tries
again after a pause for every partition that did not answer NONE (a leader moved, an ISR too small,
a replica restarting). A partition whose topic is gone from the metadata was deleted: its marker
counts as written. Two answers end the attempt for good: a newer producer epoch or a newer
coordinator epoch at the partition means another coordinator owns this transaction now. So does
this coordinator losing the transaction's ``__transaction_state`` partition. The Ray calls are
behind ``MarkerChannel`` (``marker_channel``), so this logic is unit-tested without Ray.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from rafka.protocol.errors import Errors
from rafka.protocol.messages.metadata import MetadataResponse
from rafka.protocol.messages.transactions import WriteTxnMarkersRequest
from rafka.protocol.types import TopicPartition

logger = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.05
MAX_RETRY_BACKOFF_S = 1.0

FENCED_ERRORS = frozenset({Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED})
"""Answers meaning a newer producer epoch or coordinator owns the transaction: stop sending."""


def existing_leaders(
    response: MetadataResponse, partitions: frozenset[TopicPartition]
) -> dict[TopicPartition, int] | None:
    """The leader of each of ``partitions`` in a broker's Metadata answer (-1 while it has none),
    leaving out the partitions of topics the broker does not know (deleted). None while the
    broker's cache has not been briefed by a controller yet: skipping a marker for a topic it does
    not know yet would leave the transaction open on that partition forever."""
    if not response.briefed:
        return None
    leaders = {}
    for topic in response.topics:
        if topic.error is Errors.UNKNOWN_TOPIC_OR_PARTITION:
            continue
        for p in topic.partitions:
            leaders[TopicPartition(topic.name, p.partition)] = (
                p.leader if p.error is Errors.NONE else -1
            )
    return {tp: leader for tp, leader in leaders.items() if tp in partitions}


class MarkerChannel(Protocol):
    """How markers reach partitions: the cluster's current leaders, and one write to one leader."""

    async def leaders(
        self, partitions: frozenset[TopicPartition]
    ) -> dict[TopicPartition, int] | None:
        """The leader of each partition that still exists (-1 while it has none); partitions of
        deleted topics are absent. None if the metadata could not be read."""
        ...

    async def write(
        self, leader: int, partition: TopicPartition, request: WriteTxnMarkersRequest
    ) -> Errors:
        """Send the marker to ``partition``'s leader ``leader``; its answer, or
        NOT_LEADER_OR_FOLLOWER if the leader could not be reached."""
        ...


class MarkerSender:
    """Sends one transaction's markers through a ``MarkerChannel``, retrying until done."""

    def __init__(
        self,
        channel: MarkerChannel,
        backoff_s: float = RETRY_BACKOFF_S,
        max_backoff_s: float = MAX_RETRY_BACKOFF_S,
    ) -> None:
        self.channel = channel
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s

    async def send(
        self,
        partitions: Iterable[TopicPartition],
        request: WriteTxnMarkersRequest,
        still_current: Callable[[], bool],
    ) -> bool:
        """Write ``request``'s marker to every partition; True once all are written, False if the
        attempt was given up (fenced, or ``still_current()`` turned False). Retries back off
        exponentially up to ``max_backoff_s``."""
        pending = frozenset(partitions)
        backoff_s = self.backoff_s
        while pending:
            if not still_current():
                return False
            leaders = await self.channel.leaders(pending)
            if leaders is not None:
                ordered = sorted(pending)
                answers = dict(
                    zip(
                        ordered,
                        await asyncio.gather(
                            *(self._write(tp, leaders, request) for tp in ordered)
                        ),
                        strict=True,
                    )
                )
                fenced = [(tp, e) for tp, e in answers.items() if e in FENCED_ERRORS]
                if fenced:
                    logger.warning(
                        "markers of producer %d epoch %d abandoned: %s",
                        request.producer_id,
                        request.producer_epoch,
                        [f"{tp.topic}-{tp.partition}: {e.name}" for tp, e in fenced],
                    )
                    return False
                pending = frozenset(
                    tp
                    for tp, error in answers.items()
                    if error is not Errors.NONE and tp in leaders
                )
            if pending:
                await asyncio.sleep(backoff_s)
                backoff_s = min(2 * backoff_s, self.max_backoff_s)
        return True

    async def _write(
        self,
        partition: TopicPartition,
        leaders: dict[TopicPartition, int],
        request: WriteTxnMarkersRequest,
    ) -> Errors:
        leader = leaders.get(partition)
        if leader is None:
            logger.info(
                "marker for %s-%d skipped: the topic was deleted",
                partition.topic,
                partition.partition,
            )
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if leader < 0:
            return Errors.LEADER_NOT_AVAILABLE
        try:
            return await self.channel.write(leader, partition, request)
        except Exception:  # a bug at one partition must not stop this transaction's other markers
            logger.exception("marker for %s-%d failed; retrying", *partition)
            return Errors.UNKNOWN_SERVER_ERROR
