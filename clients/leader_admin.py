"""The admin client's leader elections: ``elect_leaders`` (Kafka's Admin.electLeaders, KIP-460).

The request goes to the active controller actor, again if the controller moves meanwhile. A
preferred election moves a partition's leadership to its first assigned replica only if that
broker is alive and in the ISR; an unclean one gives a partition with no live in-sync replica a
live replica outside the ISR. Each partition gets its own result: ``NONE`` when its leader moved,
``ELECTION_NOT_NEEDED`` when it already had the leader asked for, otherwise the reason it did not
move (``PREFERRED_LEADER_NOT_AVAILABLE``, ``ELIGIBLE_LEADERS_NOT_AVAILABLE``,
``UNKNOWN_TOPIC_OR_PARTITION``). The call returns once the brokers have taken up the new leaders.
"""

from __future__ import annotations

from collections.abc import Collection

from rafka.clients.cluster import ClusterConnection
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import ElectLeadersResult
from rafka.protocol.types import ElectionType, TopicPartition


class LeaderAdminMixin:
    """Leader elections of ``Admin``."""

    _cluster: ClusterConnection
    _timeout_s: float

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: Collection[TopicPartition] | None = None,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, ElectLeadersResult]:
        """Elect the preferred (or an unclean) leader of each partition, or of every partition if
        ``partitions`` is None; one result per partition, which never raises for a partition that
        could not move."""
        timeout_s = self._timeout_s if timeout_ms is None else timeout_ms / 1000
        wanted = None if partitions is None else [TopicPartition(*tp) for tp in partitions]

        def attempt() -> list[list[tuple[TopicPartition, ElectLeadersResult]]] | None:
            results: list[tuple[TopicPartition, ElectLeadersResult]] = self._cluster.request(
                self._cluster.controller(),
                "elect_leaders",
                ElectionType(election_type),
                wanted,
                timeout_s=timeout_s,
            )
            if any(result.error is Errors.NOT_CONTROLLER for _, result in results):
                return None
            return [results]

        answered = self._cluster.wait_for(
            attempt, timeout_s, "the controller to answer elect_leaders"
        )
        return {TopicPartition(*tp): result for tp, result in answered[0]}
