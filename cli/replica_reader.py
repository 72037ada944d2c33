"""The replica verification tool's cluster: topics from the admin client, replicas as Ray actors.

``RayReplicaSource`` implements ``replica_verification.ReplicaSource`` and holds no rule: it asks
each replica actor (``replica-<topic>-<partition>@<broker>``) for its state (``describe``) and for
the raw batches of its own log (``read_log``, read-only and up to the replica's log end offset, as
a follower fetch reads), so the leader's view of its followers is never touched.
"""

from __future__ import annotations

from typing import Any

import ray

from rafka.actors import names
from rafka.cli.errors import error_line
from rafka.cli.replica_verification import ReplicaState
from rafka.clients.admin import Admin
from rafka.protocol.types import TopicPartition

REPLICA_ERRORS = (ValueError, ray.exceptions.RayError)
"""What a call to a replica actor raises when it is missing, dead, silent or failed."""


class ReplicaUnavailableError(RuntimeError):
    """A replica the tool must read cannot be reached or read."""


class RayReplicaSource:
    """Topics through ``admin``; each replica through its actor in ``namespace``."""

    def __init__(self, admin: Admin, namespace: str, timeout_s: float = 30.0) -> None:
        self.admin = admin
        self.namespace = namespace
        self.timeout_s = timeout_s
        self._actors: dict[str, Any] = {}

    def topics(self) -> list[str]:
        """Every topic's name."""
        return self.admin.list_topics()

    def replicas(self, topic: str) -> dict[int, tuple[int, ...]]:
        """Partition -> the broker ids of its replicas."""
        return {p.partition: p.replicas for p in self.admin.describe_topic(topic).partitions}

    def state(self, tp: TopicPartition, broker_id: int) -> ReplicaState:
        """The replica's log start offset and high watermark."""
        info = self._call(tp, broker_id, "describe")
        return ReplicaState(int(info["log_start_offset"]), int(info["high_watermark"]))

    def read(self, tp: TopicPartition, broker_id: int, offset: int, max_bytes: int) -> bytes:
        """Whole batches of the replica's own log from ``offset``."""
        data: bytes = self._call(tp, broker_id, "read_log", offset, max_bytes)
        return data

    def _call(self, tp: TopicPartition, broker_id: int, method: str, *args: Any) -> Any:
        name = names.replica_actor_name(tp.topic, tp.partition, broker_id)
        try:
            actor = self._actors.get(name) or ray.get_actor(name, namespace=self.namespace)
            self._actors[name] = actor
            return ray.get(getattr(actor, method).remote(*args), timeout=self.timeout_s)
        except REPLICA_ERRORS as exc:
            self._actors.pop(name, None)
            raise ReplicaUnavailableError(
                f"cannot read replica {name} (is broker {broker_id} up?): "
                f"{error_line(exc).removeprefix('Error: ')}"
            ) from exc
