"""The broker actor: one per broker id, on its own Ray node.

It owns the broker's ZooKeeper session and ephemeral registration, starts its controller actor (which
competes for ``/controller``), hosts and supervises the partition replica actors the controller assigns
to it, and answers Metadata requests from its cache. Control requests (LeaderAndIsr, UpdateMetadata,
StopReplica) are applied one at a time under one lock: the broker's mailbox.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import ray
from kazoo.exceptions import BadVersionError, NoNodeError

from rafka.actors import names, spawn
from rafka.actors.broker_config import BrokerConfig
from rafka.actors.metadata_cache import MetadataCache
from rafka.actors.zk_client import ZkClient
from rafka.actors.zk_data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.log.config import LogConfig
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.control import (
    ControlResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    PartitionError,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from rafka.protocol.messages.metadata import MetadataRequest, MetadataResponse

logger = logging.getLogger(__name__)


class Broker:
    """Ray actor for one broker: registration, replica supervision, control requests, metadata."""

    def __init__(self, config: BrokerConfig, namespace: str) -> None:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        self.config = config
        self.broker_id = config.broker_id
        self.namespace = namespace
        self.node_id = ray.get_runtime_context().get_node_id()
        self.host = ray.util.get_node_ip_address()
        os.makedirs(config.log_dirs, exist_ok=True)
        self.zk = ZkClient(config.zookeeper_connect, config.cluster_name, config.zookeeper_session_timeout_ms)
        self.cluster_id = self.zk.cluster_id()
        self.metadata_cache = MetadataCache()
        self.controller_epoch = 0
        self.replicas: dict[tuple[str, int], Any] = {}
        self._mailbox = asyncio.Lock()
        # Wait up to two session timeouts for a previous incarnation's ephemeral znode to expire.
        self.zk.register_broker(
            BrokerRegistration(self.broker_id, self.host, self.node_id),
            timeout_s=2 * config.zookeeper_session_timeout_ms / 1000 + 5,
        )
        self.controller = spawn.spawn_controller(config, namespace, self.node_id)
        logger.info("broker %d registered on node %s (%s)", self.broker_id, self.node_id, self.host)

    # ------------------------------------------------------------------ control requests

    async def leader_and_isr(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        """Become leader or follower for the listed partitions, creating replica actors as needed."""
        async with self._mailbox:
            if request.controller_epoch < self.controller_epoch:
                return LeaderAndIsrResponse(Errors.STALE_CONTROLLER_EPOCH)
            self.controller_epoch = request.controller_epoch
            pending = []
            for state in request.partitions:
                if self.broker_id not in state.replicas:
                    continue
                replica = self._replica(state.topic, state.partition)
                call = replica.become_leader if state.leader == self.broker_id else replica.become_follower
                pending.append((state, call.remote(state)))
            errors = []
            for state, ref in pending:
                try:
                    error = await ref
                except ray.exceptions.RayActorError as exc:
                    logger.error("replica %s-%d died applying LeaderAndIsr: %s", state.topic, state.partition, exc)
                    self.replicas.pop((state.topic, state.partition), None)
                    error = Errors.KAFKA_STORAGE_ERROR
                errors.append(PartitionError(state.topic, state.partition, error))
            return LeaderAndIsrResponse(Errors.NONE, tuple(errors))

    async def update_metadata(self, request: UpdateMetadataRequest) -> ControlResponse:
        """Refresh the metadata cache from the controller."""
        async with self._mailbox:
            if request.controller_epoch < self.controller_epoch:
                return ControlResponse(Errors.STALE_CONTROLLER_EPOCH)
            self.controller_epoch = request.controller_epoch
            self.metadata_cache.update(request)
            return ControlResponse(Errors.NONE)

    async def stop_replica(self, request: StopReplicaRequest) -> ControlResponse:
        """Stop serving partitions (and delete their logs when asked)."""
        async with self._mailbox:
            if request.controller_epoch < self.controller_epoch:
                return ControlResponse(Errors.STALE_CONTROLLER_EPOCH)
            self.controller_epoch = request.controller_epoch
            errors = []
            for topic, partition in request.partitions:
                replica = self.replicas.pop((topic, partition), None)
                if replica is None:
                    continue
                try:
                    await replica.stop.remote(request.delete)
                    ray.kill(replica, no_restart=True)
                    error = Errors.NONE
                except ray.exceptions.RayActorError:
                    error = Errors.KAFKA_STORAGE_ERROR
                errors.append(PartitionError(topic, partition, error))
            return ControlResponse(Errors.NONE, tuple(errors))

    def _replica(self, topic: str, partition: int) -> Any:
        """The replica actor of a partition on this broker, started (and its log opened) on first use."""
        key = (topic, partition)
        if key not in self.replicas:
            log_config = LogConfig.from_dict(self.zk.topic_config(topic), base=self.config.log_config())
            self.replicas[key] = spawn.spawn_replica(topic, partition, self.config, log_config, self.namespace, self.node_id)
        return self.replicas[key]

    # ------------------------------------------------------------------ requests from leaders and clients

    async def alter_isr(self, topic: str, partition: int, state: LeaderIsrAndEpoch) -> tuple[Errors, int]:
        """A leader replica's ISR change: compare-and-set the state znode, then notify the controller."""
        try:
            written = await asyncio.get_running_loop().run_in_executor(
                None, self.zk.update_partition_state, topic, partition, state, None
            )
        except (BadVersionError, NoNodeError):
            return Errors.INVALID_UPDATE_VERSION, -1
        await asyncio.get_running_loop().run_in_executor(None, self.zk.notify_isr_change, [(topic, partition)])
        return Errors.NONE, written.zk_version

    async def metadata(self, request: MetadataRequest) -> MetadataResponse:
        """Answer from the metadata cache."""
        cache = self.metadata_cache
        return MetadataResponse(
            brokers=tuple(cache.brokers[b] for b in sorted(cache.brokers)),
            controller_id=cache.controller_id,
            topics=cache.topic_metadata(request.topics),
            cluster_id=self.cluster_id,
        )

    async def topic_config(self, topic: str) -> dict[str, str]:
        """A topic's config overrides, as the controller last sent them."""
        return dict(self.metadata_cache.configs.get(topic, {}))

    async def describe(self) -> dict[str, Any]:
        """This broker's identity and what it hosts."""
        return {
            "broker_id": self.broker_id, "node_id": self.node_id, "host": self.host, "log_dirs": self.config.log_dirs,
            "controller_epoch": self.controller_epoch, "pid": os.getpid(),
            "replicas": sorted(f"{t}-{p}" for t, p in self.replicas),
        }

    async def replica_handles(self) -> dict[tuple[str, int], Any]:
        """Handles of the replica actors this broker hosts (tools and tests)."""
        return dict(self.replicas)

    async def shutdown(self) -> None:
        """Close every replica's log cleanly, stop the controller and end the ZooKeeper session."""
        async with self._mailbox:
            for replica in list(self.replicas.values()):
                try:
                    await replica.stop.remote(False)
                except RafkaError as exc:
                    logger.warning("replica stop failed: %s", exc)
                except ray.exceptions.RayActorError:
                    continue
            self.replicas.clear()
            try:
                await self.controller.resign.remote()
            except ray.exceptions.RayActorError:
                pass
            self.zk.close()

    async def ping(self) -> int:
        """Liveness check: the broker id."""
        return self.broker_id
