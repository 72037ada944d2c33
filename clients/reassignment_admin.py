"""The admin client's partition reassignment operations (Kafka's and kafka-python's names):
``alter_partition_reassignments`` starts moving partitions to new replicas and
``list_partition_reassignments`` reports the ones in progress.

Both go to the active controller actor, again if it moved. The controller validates a request all
or nothing: a partition that does not exist (or whose topic is being deleted), an empty replica
list, a broker named twice, a dead or unknown broker, or a partition already being reassigned
refuses the whole request with Kafka's error and writes nothing. Otherwise it lists the partitions
in ``/admin/reassign_partitions`` and moves them in the background (seed 000's ten steps); a
partition leaves the list once its old replicas are deleted and AR := RAR is written.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from rafka.clients.cluster import ClusterConnection
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import PartitionReassignment
from rafka.protocol.types import TopicPartition


class ReassignmentAdminMixin:
    """Partition reassignment operations of ``Admin``."""

    _cluster: ClusterConnection
    _timeout_s: float

    def _ask_controller(self, method: str, timeout_s: float, *request: object) -> None:
        """Send a request to the active controller, again if it moved; raise the first error."""
        raise NotImplementedError

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        """Start reassigning each partition to its target replicas (the first is the preferred
        leader) and return once the controller accepted them; the move goes on in the
        background. Raises the error of the first invalid partition (INVALID_REPLICA_ASSIGNMENT,
        UNKNOWN_TOPIC_OR_PARTITION, REASSIGNMENT_IN_PROGRESS, ...), with a message naming the
        partition and what is wrong; then nothing was started."""
        request = {
            TopicPartition(*tp): tuple(int(r) for r in replicas)
            for tp, replicas in reassignments.items()
        }
        if request:
            self._ask_controller("alter_partition_reassignments", self._timeout_s, request)

    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress (of ``partitions``, or all): each partition's whole
        replica list while it moves (OAR + RAR), the replicas being added (RAR - OAR) and those
        being removed (OAR - RAR). A finished reassignment is no longer listed."""
        wanted = None if partitions is None else [TopicPartition(*tp) for tp in partitions]

        def attempt() -> tuple[dict[TopicPartition, PartitionReassignment]] | None:
            error, found = self._cluster.request(
                self._cluster.controller(),
                "list_partition_reassignments",
                wanted,
                timeout_s=self._timeout_s,
            )
            return None if error is Errors.NOT_CONTROLLER else (found,)

        answer: tuple[dict[TopicPartition, PartitionReassignment]] = self._cluster.wait_for(
            attempt, self._timeout_s, "the controller to answer list_partition_reassignments"
        )
        return answer[0]
