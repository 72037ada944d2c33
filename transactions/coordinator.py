"""The transaction coordinator: a Ray actor per broker, answering for the transactional ids of the
``__transaction_state`` partitions its broker leads.

A thin shell over the Ray-free core: ``TransactionStateManager`` (ownership, loading, the log),
``TransactionHandler`` (the requests, timeouts, expiry) and ``MarkerSender`` (markers, retried). It
reaches the cluster through ``ReplicaTransactionLog`` (this broker's ``__transaction_state``
replica actors), ``BrokerTopicMetadata`` (this broker's metadata cache), ``RayMarkerChannel``
(leader replicas and group coordinators) and the broker actor's ``allocate_producer_id``. The
broker tells it when it gains or loses leadership of a ``__transaction_state`` partition.

Requests run on the actor's single event loop, one handler at a time up to its first ``await``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import ray

from rafka.actors import names
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.process import configure_actor_logging
from rafka.groups.group_metadata_manager import TopicMetadata
from rafka.groups.replica_log import BrokerTopicMetadata
from rafka.protocol.errors import CoordinatorNotAvailableError, RafkaError
from rafka.protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from rafka.protocol.types import now_ms
from rafka.transactions.marker_channel import RayMarkerChannel
from rafka.transactions.marker_sender import MarkerChannel, MarkerSender
from rafka.transactions.replica_log import ReplicaTransactionLog
from rafka.transactions.transaction_handler import TransactionHandler, TransactionLimits
from rafka.transactions.transaction_state_manager import TransactionLog, TransactionStateManager

logger = logging.getLogger(__name__)

LOAD_RETRY_BACKOFF_S = 0.1
MAX_LOAD_RETRY_BACKOFF_S = 2.0


class TransactionCoordinator:
    """Ray actor: the coordinator of the transactional ids whose ``__transaction_state``
    partitions this broker leads.

    ``log``, ``metadata``, ``channel`` and ``allocate_producer_id`` default to this broker's actors
    through Ray; unit tests pass in-memory ones.
    """

    def __init__(
        self,
        config: BrokerConfig,
        namespace: str,
        log: TransactionLog | None = None,
        metadata: TopicMetadata | None = None,
        channel: MarkerChannel | None = None,
    ) -> None:
        configure_actor_logging(config.log_dirs)
        self.config = config
        self.broker_id = config.broker_id
        self.namespace = namespace
        self.manager = TransactionStateManager(
            config.broker_id,
            config.transaction_state_log_num_partitions,
            log or ReplicaTransactionLog(config.broker_id, namespace),
            now_ms,
        )
        self.handler = TransactionHandler(
            self.manager,
            self._allocate_producer_id,
            metadata or BrokerTopicMetadata(config.broker_id, namespace),
            MarkerSender(channel or RayMarkerChannel(config.broker_id, namespace)),
            TransactionLimits(
                config.transaction_max_timeout_ms,
                config.transactional_id_expiration_ms,
                config.offsets_topic_num_partitions,
            ),
            now_ms,
        )
        self._loads: set[asyncio.Task[None]] = set()
        self._led: dict[int, int] = {}
        """Partition -> the leader epoch this broker leads it in, as LeaderAndIsr last said."""
        loop = asyncio.get_event_loop()
        self._tickers = (
            loop.create_task(
                self._every(
                    config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                    self.handler.abort_timed_out_transactions,
                )
            ),
            loop.create_task(
                self._every(
                    config.transaction_remove_expired_transaction_cleanup_interval_ms,
                    self.handler.expire_transactional_ids,
                )
            ),
        )

    async def _allocate_producer_id(self) -> int:
        """A new producer id from this broker (``allocate_producer_id``)."""
        try:
            broker = ray.get_actor(
                names.broker_actor_name(self.broker_id), namespace=self.namespace
            )
            producer_id: int = await broker.allocate_producer_id.remote()
        except RafkaError:
            raise
        except (ValueError, ray.exceptions.RayError) as exc:
            raise CoordinatorNotAvailableError(f"no producer id from broker: {exc}") from exc
        return producer_id

    async def _every(self, interval_ms: int, task: Any) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await task()
            except Exception:  # one failed pass must not stop the next ones
                logger.exception("transaction coordinator %d: %s failed", self.broker_id, task)

    # ------------------------------------------------------------------ ownership

    async def partition_leadership(
        self, partition: int, is_leader: bool, leader_epoch: int, num_partitions: int | None = None
    ) -> None:
        """The broker became leader (load) or stopped leading (unload) a ``__transaction_state``
        partition; ``leader_epoch`` is the coordinator epoch of its ids."""
        if num_partitions:
            self.manager.num_partitions = num_partitions
        if is_leader:
            self._led[partition] = leader_epoch
        else:
            self._led.pop(partition, None)
        if is_leader and self.manager.is_current(partition, leader_epoch):
            return
        self.manager.unload(partition)
        if not is_leader:
            return
        self.manager.start_loading(partition, leader_epoch)
        task = asyncio.get_running_loop().create_task(self._load(partition, leader_epoch))
        self._loads.add(task)
        task.add_done_callback(self._loads.discard)

    async def _load(self, partition: int, leader_epoch: int) -> None:
        backoff_s = LOAD_RETRY_BACKOFF_S
        while True:
            loaded = await self.manager.load(partition, leader_epoch)
            if loaded is not None:
                self.handler.on_loaded(loaded, leader_epoch)
                return
            # A failed read (the replica still starting after a restart) is tried again while this
            # epoch's leadership lasts: once leadership is stable no further LeaderAndIsr comes.
            if not self._load_failed(partition, leader_epoch):
                return
            await asyncio.sleep(backoff_s)
            backoff_s = min(2 * backoff_s, MAX_LOAD_RETRY_BACKOFF_S)
            if not self._load_failed(partition, leader_epoch):
                return
            self.manager.start_loading(partition, leader_epoch)

    def _load_failed(self, partition: int, leader_epoch: int) -> bool:
        """Whether ``partition`` is still led in ``leader_epoch`` but neither owned nor loading
        (its load failed), rather than given up or overtaken by another load."""
        return self._led.get(partition) == leader_epoch and not self.manager.is_current(
            partition, leader_epoch
        )

    # ------------------------------------------------------------------ requests

    async def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        """InitProducerId for a transactional id."""
        return await self.handler.init_producer_id(request)

    async def add_partitions_to_txn(
        self, request: AddPartitionsToTxnRequest
    ) -> AddPartitionsToTxnResponse:
        """AddPartitionsToTxn."""
        return await self.handler.add_partitions_to_txn(request)

    async def add_offsets_to_txn(self, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
        """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins the transaction."""
        return await self.handler.add_offsets_to_txn(request)

    async def end_txn(self, request: EndTxnRequest) -> EndTxnResponse:
        """EndTxn: answered once the decision is durable; markers follow."""
        return await self.handler.end_txn(request)

    async def describe_transactions(self, transactional_ids: list[str]) -> list[dict[str, Any]]:
        """DescribeTransactions: each id's state, producer and partitions (an error name for ids
        this coordinator does not own or does not know)."""
        result: list[dict[str, Any]] = []
        for transactional_id in transactional_ids:
            error = self.manager.ownership_error(transactional_id)
            metadata = None if error else self.manager.get(transactional_id)
            if metadata is None:
                name = error[0].name if error else "TRANSACTIONAL_ID_NOT_FOUND"
                result.append({"transactional_id": transactional_id, "error": name})
                continue
            result.append(
                {
                    "transactional_id": transactional_id,
                    "error": "NONE",
                    "state": metadata.state.value,
                    "pending_state": metadata.pending_state.value
                    if metadata.pending_state
                    else None,
                    "producer_id": metadata.producer_id,
                    "producer_epoch": metadata.producer_epoch,
                    "timeout_ms": metadata.timeout_ms,
                    "start_timestamp": metadata.start_timestamp,
                    "partitions": sorted(metadata.partitions),
                }
            )
        return result

    async def describe(self) -> dict[str, Any]:
        """What this coordinator owns, for tools and tests."""
        return {
            "broker_id": self.broker_id,
            "pid": os.getpid(),
            "owned": dict(sorted(self.manager.owned.items())),
            "loading": sorted(self.manager.loading),
            "transactional_ids": sorted(
                m.transactional_id for m in self.manager.all_transactions()
            ),
        }

    async def ping(self) -> int:
        """Liveness check."""
        return self.broker_id
