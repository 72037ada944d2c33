"""The transaction state manager's log through Ray: this broker's ``__transaction_state`` replicas.

``ReplicaTransactionLog`` implements ``TransactionLog``: it finds the local replica actor of a
partition by name on each call, reads its bounds and batches to load the partition, and appends as
the partition's leader with acks=all and the coordinator's origin (the partition's
``min.insync.replicas`` is ``transaction_state_log_min_isr``). No logic here.
"""

from __future__ import annotations

from typing import Any

import ray

from rafka.actors import names
from rafka.protocol.errors import Errors
from rafka.protocol.messages.produce import ACKS_ALL, AppendOrigin, ProduceRequest
from rafka.transactions.transaction_log import TRANSACTION_STATE_TOPIC
from rafka.transactions.transaction_state_manager import TransactionLogUnavailableError

APPEND_TIMEOUT_MS = 30_000
"""How long a ``__transaction_state`` write waits for every in-sync replica (Kafka's
``request.timeout.ms`` default)."""

_UNREACHABLE = (ValueError, ray.exceptions.RayActorError)
"""Ray's answers for a name no live actor holds, and for an actor that died mid-call."""


class ReplicaTransactionLog:
    """This broker's ``__transaction_state`` replica actors."""

    def __init__(self, broker_id: int, namespace: str) -> None:
        self.broker_id = broker_id
        self.namespace = namespace

    async def _call(self, partition: int, method: str, *args: Any) -> Any:
        name = names.replica_actor_name(TRANSACTION_STATE_TOPIC, partition, self.broker_id)
        try:
            replica = ray.get_actor(name, namespace=self.namespace)
            return await getattr(replica, method).remote(*args)
        except _UNREACHABLE as exc:
            raise TransactionLogUnavailableError(f"replica {name}: {exc}") from exc

    async def bounds(self, partition: int) -> tuple[int, int]:
        """The replica's log start offset and log end offset."""
        info = await self._call(partition, "describe")
        return int(info["log_start_offset"]), int(info["log_end_offset"])

    async def read(self, partition: int, offset: int, max_bytes: int) -> bytes:
        """Whole batches of the replica's log from ``offset``."""
        data: bytes = await self._call(partition, "read_log", offset, max_bytes)
        return data

    async def append(self, partition: int, batch: bytes) -> Errors:
        """Produce ``batch`` to the replica as leader with acks=all; its error code."""
        request = ProduceRequest(
            batch, ACKS_ALL, APPEND_TIMEOUT_MS, origin=AppendOrigin.COORDINATOR
        )
        response = await self._call(partition, "produce", request)
        error: Errors = response.error
        return error
