"""The broker actor: one per broker id, on its own Ray node.

It owns the broker's ZooKeeper session and ephemeral registration, starts its controller actor
(which competes for ``/controller``), hosts and supervises the partition replica actors the
controller assigns to it, answers Metadata and DescribeLogDirs requests, and keeps the replication
quotas its throttled replicas consult (``replication_quota``). Control requests
(LeaderAndIsr, UpdateMetadata, StopReplica) are applied one at a time under one lock: the broker's
mailbox.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from pathlib import Path
from typing import Any

import ray
from kazoo.exceptions import BadVersionError, NoNodeError
from kazoo.protocol.states import KazooState

from rafka.actors import names, spawn
from rafka.actors.broker.acl_manager import AclManager
from rafka.actors.broker.broker_admin import BrokerAdmin
from rafka.actors.broker.broker_metrics import BrokerMetrics
from rafka.actors.broker.client_quotas import ClientQuotaManager
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.config_manager import ConfigManager
from rafka.actors.broker.kafka_apis import KafkaApis
from rafka.actors.broker.listener import KafkaListener, advertised_endpoints
from rafka.actors.broker.listener_security import listener_security
from rafka.actors.broker.metadata_cache import MetadataCache
from rafka.actors.broker.producer_id_manager import ProducerIdManager, ZkProducerIdBlockStore
from rafka.actors.broker.replication_quota import QuotaType, ReplicationQuotas, Throttle
from rafka.actors.broker.security_protocols import advertised_security_protocols
from rafka.actors.process import configure_actor_logging
from rafka.actors.server_log import LogChunk, LogPosition, read_new, tail
from rafka.actors.state_change import (
    ChangeFields,
    describe_state,
    log_state_change,
    open_state_change_log,
    partition_name,
)
from rafka.actors.zk.client import ZkClient
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.groups.group_metadata import validate_group_id
from rafka.groups.offsets_codec import OFFSETS_TOPIC, partition_for
from rafka.log.deleted_dirs import (
    DelayedDirRemover,
    RenamedLog,
    pending_deletions,
    rename_for_deletion,
)
from rafka.log.files import partition_dir_name
from rafka.metrics.registry import MetricFamily
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.admin import (
    AlterIsrResponse,
    CreateTopicResult,
    LogDirDescription,
    ReplicaLogDirInfo,
)
from rafka.protocol.messages.control import (
    ControlResponse,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    PartitionError,
    StopReplicaRequest,
    UpdateMetadataRequest,
    addressed_to_earlier_incarnation,
)
from rafka.protocol.messages.groups import FindCoordinatorResponse
from rafka.protocol.messages.metadata import MetadataRequest, MetadataResponse, parse_listeners
from rafka.protocol.messages.transactions import (
    COORDINATOR_TYPE_GROUP,
    COORDINATOR_TYPE_TRANSACTION,
    MAX_TRANSACTIONAL_ID_LENGTH,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from rafka.protocol.types import NewTopic, ReplicaPlacement, TopicPartition
from rafka.protocol.wire.registry import DEFAULT_REGISTRY
from rafka.security.scram import CredentialCache
from rafka.transactions.transaction_log import TRANSACTION_STATE_TOPIC

logger = logging.getLogger(__name__)

# How long an admin request waits for another broker's metadata before leaving that broker out.
PEER_METADATA_TIMEOUT_S = 2.0

REPLICA_CHECK_INTERVAL_S = 0.5
REPLICA_PING_TIMEOUT_S = 10.0
CONTROLLED_SHUTDOWN_ATTEMPTS = 3
CONTROLLED_SHUTDOWN_BACKOFF_S = 0.5
# How long FindCoordinator waits for its partition's leader while the internal topic is created
# (every replica is a process, so that takes seconds) before answering COORDINATOR_NOT_AVAILABLE:
# librdkafka's transactional offset commit retries its lookup only twice, 100 ms apart, and was
# then seen blocking past its own timeout.
COORDINATOR_WAIT_S = 5.0


class Broker(BrokerAdmin):
    """Ray actor for one broker: registration, replica supervision, control requests, metadata."""

    def __init__(self, config: BrokerConfig, namespace: str) -> None:
        configure_actor_logging(config.log_dirs)
        open_state_change_log(config.log_dirs)
        self.config = config
        self.broker_id = config.broker_id
        self.namespace = namespace
        self.node_id = ray.get_runtime_context().get_node_id()
        self.host = ray.util.get_node_ip_address()
        os.makedirs(config.log_dirs, exist_ok=True)
        self.zk = ZkClient(
            config.zookeeper_connect,
            config.cluster_name,
            config.zookeeper_session_timeout_ms,
            security=config.zk_security(),
        )
        self.cluster_id = self.zk.cluster_id()
        self.producer_ids = ProducerIdManager(self.broker_id, ZkProducerIdBlockStore(self.zk.zk))
        self.configs = ConfigManager(self.zk, config)
        self.acls = AclManager(self.zk, config)
        self.replication_quotas = ReplicationQuotas(self.configs.broker_config())
        self.client_quotas = ClientQuotaManager(
            config.quota_window_num, config.quota_window_size_seconds
        )
        for entity, quotas in self.configs.all_client_quotas().items():
            self.client_quotas.update(entity, quotas)
        self._config_changes = asyncio.Lock()
        self.metadata_cache = MetadataCache()
        self.controller_epoch = 0
        self.replicas: dict[tuple[str, int], Any] = {}
        self.partition_states: dict[tuple[str, int], LeaderAndIsrPartitionState] = {}
        self.replica_restarts = 0
        self._mailbox = asyncio.Lock()
        # Notified after every UpdateMetadata, for FindCoordinator waiting on a new leader.
        self._metadata_updated = asyncio.Condition()
        self._stopped = asyncio.Event()
        self._supervisor = asyncio.get_event_loop().create_task(self._supervise())
        self.metrics = BrokerMetrics(
            self.broker_id,
            namespace,
            config.metrics_enabled,
            lambda: list(self.replicas.values()),
            lambda: list(self.metadata_cache.brokers),
        )
        # Bound before registering, so /brokers/ids/<id> names the ports really taken; the TLS
        # settings are loaded first, so a bad one fails the broker's start.
        apis = KafkaApis(self, DEFAULT_REGISTRY, self.client_quotas)
        self.credentials = CredentialCache()
        for user in self.configs.users():
            self.credentials.update(user, self.configs.scram_credentials(user))
        security = listener_security(config, self.credentials)
        self.listeners = [
            KafkaListener(
                address,
                self.host,
                DEFAULT_REGISTRY,
                apis.handle,
                config.socket_request_max_bytes,
                self.metrics.request_done if config.metrics_enabled else None,
                security[address.listener_name].ssl_context,
                security[address.listener_name].sasl,
            )
            for address in parse_listeners(config.listeners)
        ]
        self.endpoints = advertised_endpoints(
            [listener.address for listener in self.listeners], config.advertised_listeners
        )
        # Wait up to two session timeouts for a previous incarnation's ephemeral znode to expire.
        self.broker_epoch = self.zk.register_broker(
            self._registration(),
            timeout_s=2 * config.zookeeper_session_timeout_ms / 1000 + 5,
        )
        self._loop = asyncio.get_event_loop()
        self._dir_remover = DelayedDirRemover(self._loop)
        for leftover in pending_deletions(Path(config.log_dirs)):
            self._dir_remover.schedule(leftover, config.log_config().file_delete_delay_ms)
        self.zk.zk.add_listener(self._on_session_state)
        self.configs.take_changes(self._on_config_change)
        self.acls.take_changes(self._on_acl_change)
        self.controller = spawn.spawn_controller(config, namespace, self.node_id)
        self.coordinator = spawn.spawn_coordinator(config, namespace, self.node_id)
        self.transaction_coordinator = spawn.spawn_transaction_coordinator(
            config, namespace, self.node_id
        )
        self._internal_partitions: dict[str, int] = {}
        for listener in self.listeners:
            self._loop.create_task(listener.start())
        self._metrics_exporter = (
            self._loop.create_task(self._export_metrics()) if config.metrics_enabled else None
        )
        logger.info("broker %d registered on node %s (%s)", self.broker_id, self.node_id, self.host)
        self._state_change("registered in ZooKeeper (pid %d)", os.getpid())

    def _registration(self) -> BrokerRegistration:
        """What this broker writes to ``/brokers/ids/<id>``, its rack included (Kafka's
        ``broker.rack``)."""
        return BrokerRegistration(
            self.broker_id,
            self.host,
            self.node_id,
            self.config.broker_rack or None,
            endpoints=self.endpoints,
            security_protocols=advertised_security_protocols(
                self.endpoints, self.config.listener_security_protocol_map
            ),
        )

    def _state_change(
        self,
        message: str,
        *args: object,
        epoch: int | None = None,
        correlation: int | None = None,
        partition: str | None = None,
    ) -> None:
        log_state_change(
            ChangeFields(self.broker_id, epoch, correlation, partition),
            "[Broker id=%d] " + message,
            self.broker_id,
            *args,
        )

    def _on_session_state(self, state: str) -> None:
        # Kazoo's thread: a lost session took the ephemeral registration with it; once kazoo has a
        # new session, register again (a new incarnation the controller treats as a restart).
        if state == KazooState.LOST and not self._stopped.is_set():
            self._state_change("ZooKeeper session lost; registering again")
            self._loop.call_soon_threadsafe(lambda: self._loop.create_task(self._reregister()))

    async def _reregister(self) -> None:
        while not self._stopped.is_set():
            try:
                self.broker_epoch = await self._loop.run_in_executor(
                    None,
                    lambda: self.zk.register_broker(
                        self._registration(),
                        timeout_s=2 * self.config.zookeeper_session_timeout_ms / 1000 + 5,
                    ),
                )
                self._state_change("registered again after its ZooKeeper session expired")
                # The expired session's watches died with it: follow config changes again.
                await self._apply_config_changes()
                await self._apply_acl_changes()
                return
            except Exception as exc:  # the connection may still be re-establishing: try again
                logger.warning("broker %d re-registration failed: %s", self.broker_id, exc)
                await asyncio.sleep(0.5)

    # ------------------------------------------------------------------ control requests

    async def leader_and_isr(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        """Become leader or follower for the listed partitions, creating replica actors as needed;
        the answer carries each partition's outcome."""
        async with self._mailbox:
            for p in request.partitions:
                self._state_change(
                    "received LeaderAndIsr from controller %d epoch %d: %s",
                    request.controller_id,
                    request.controller_epoch,
                    describe_state(p),
                    epoch=request.controller_epoch,
                    correlation=request.correlation_id,
                    partition=partition_name(p),
                )
            if self._meant_for_a_previous_incarnation(request):
                return LeaderAndIsrResponse(Errors.STALE_BROKER_EPOCH)
            if request.controller_epoch < self.controller_epoch:
                self._state_change(
                    "refused LeaderAndIsr: controller epoch %d is older than %d",
                    request.controller_epoch,
                    self.controller_epoch,
                    epoch=request.controller_epoch,
                    correlation=request.correlation_id,
                )
                return LeaderAndIsrResponse(Errors.STALE_CONTROLLER_EPOCH)
            self.controller_epoch = request.controller_epoch
            pending = []
            for state in request.partitions:
                if self.broker_id not in state.replicas:
                    continue
                known = self.partition_states.get((state.topic, state.partition))
                # Keep the newest state for restarts: a failover resend may be older than an ISR
                # change.
                if known is None or (state.leader_epoch, state.zk_version) >= (
                    known.leader_epoch,
                    known.zk_version,
                ):
                    self.partition_states[(state.topic, state.partition)] = state
                replica = self._replica(state.topic, state.partition)
                call = (
                    replica.become_leader
                    if state.leader == self.broker_id
                    else replica.become_follower
                )
                pending.append((state, call.remote(state)))
            errors = []
            for state, ref in pending:
                try:
                    error = await ref
                except ray.exceptions.RayActorError as exc:
                    logger.error(
                        "replica %s-%d died applying LeaderAndIsr: %s",
                        state.topic,
                        state.partition,
                        exc,
                    )
                    self.replicas.pop((state.topic, state.partition), None)
                    error = Errors.KAFKA_STORAGE_ERROR
                except ray.exceptions.RayTaskError as exc:
                    # The replica raised applying the state: the controller hears it per partition.
                    logger.error(
                        "replica %s-%d failed to apply LeaderAndIsr: %s",
                        state.topic,
                        state.partition,
                        exc,
                    )
                    error = (
                        Errors.KAFKA_STORAGE_ERROR
                        if isinstance(exc.cause, OSError)
                        else Errors.UNKNOWN_SERVER_ERROR
                    )
                errors.append(PartitionError(state.topic, state.partition, error))
                if state.topic == OFFSETS_TOPIC and error is Errors.NONE:
                    self._tell_coordinator(
                        state.partition, state.leader == self.broker_id, state.leader_epoch
                    )
                elif state.topic == TRANSACTION_STATE_TOPIC and error is Errors.NONE:
                    self._tell_transaction_coordinator(
                        state.partition, state.leader == self.broker_id, state.leader_epoch
                    )
            return LeaderAndIsrResponse(Errors.NONE, tuple(errors))

    def _internal_partition_count(self, topic: str, configured: int) -> int:
        """How many partitions an internal topic has (``configured`` until it exists)."""
        if topic not in self._internal_partitions:
            # Fixed once the topic exists (partitions are never added), so ZooKeeper is read once.
            count = len(self.zk.assignment(topic))
            if not count:
                return configured
            self._internal_partitions[topic] = count
        return self._internal_partitions[topic]

    def _tell_coordinator(self, partition: int, is_leader: bool, leader_epoch: int) -> None:
        """The group coordinator loads (or unloads) the groups of an offsets partition this broker
        leads."""
        count = self._internal_partition_count(
            OFFSETS_TOPIC, self.config.offsets_topic_num_partitions
        )
        self.coordinator.on_leadership.remote(partition, is_leader, leader_epoch, count)

    def _tell_transaction_coordinator(
        self, partition: int, is_leader: bool, leader_epoch: int
    ) -> None:
        """The transaction coordinator loads (or unloads) the transactional ids of a
        ``__transaction_state`` partition this broker leads; the leader epoch is their
        coordinator epoch."""
        count = self._internal_partition_count(
            TRANSACTION_STATE_TOPIC, self.config.transaction_state_log_num_partitions
        )
        self.transaction_coordinator.partition_leadership.remote(
            partition, is_leader, leader_epoch, count
        )

    def _meant_for_a_previous_incarnation(
        self, request: LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest
    ) -> bool:
        """Whether ``request`` was meant for this broker id before it last registered; logged."""
        if not addressed_to_earlier_incarnation(request, self.broker_epoch):
            return False
        self._state_change(
            "refused %s: broker epoch %d is older than %d",
            type(request).__name__.removesuffix("Request"),
            request.broker_epoch,
            self.broker_epoch,
            epoch=request.controller_epoch,
            correlation=request.correlation_id,
        )
        return True

    async def update_metadata(self, request: UpdateMetadataRequest) -> ControlResponse:
        """Refresh the metadata cache from the controller."""
        async with self._mailbox:
            if self._meant_for_a_previous_incarnation(request):
                return ControlResponse(Errors.STALE_BROKER_EPOCH)
            if request.controller_epoch < self.controller_epoch:
                return ControlResponse(Errors.STALE_CONTROLLER_EPOCH)
            self.controller_epoch = request.controller_epoch
            self.metadata_cache.update(request)
            async with self._metadata_updated:
                self._metadata_updated.notify_all()
            if request.deleted_topics:
                self.coordinator.on_topics_deleted.remote(list(request.deleted_topics))
            return ControlResponse(Errors.NONE)

    async def stop_replica(self, request: StopReplicaRequest) -> ControlResponse:
        """Stop serving partitions (and delete their logs when asked)."""
        async with self._mailbox:
            for topic, partition in request.partitions:
                self._state_change(
                    "received StopReplica (delete %s) from controller %d epoch %d",
                    request.delete,
                    request.controller_id,
                    request.controller_epoch,
                    epoch=request.controller_epoch,
                    correlation=request.correlation_id,
                    partition=f"{topic}-{partition}",
                )
            if self._meant_for_a_previous_incarnation(request):
                return ControlResponse(Errors.STALE_BROKER_EPOCH)
            if request.controller_epoch < self.controller_epoch:
                return ControlResponse(Errors.STALE_CONTROLLER_EPOCH)
            self.controller_epoch = request.controller_epoch
            errors = []
            for topic, partition in request.partitions:
                self.partition_states.pop((topic, partition), None)
                if topic == OFFSETS_TOPIC:
                    self._tell_coordinator(partition, False, -1)
                elif topic == TRANSACTION_STATE_TOPIC:
                    self._tell_transaction_coordinator(partition, False, -1)
                error = await self._stop_one(topic, partition, request.delete)
                errors.append(PartitionError(topic, partition, error))
            self._state_change(
                "stopped replicas %s (delete %s) for controller epoch %d",
                [f"{t}-{p}" for t, p in request.partitions],
                request.delete,
                request.controller_epoch,
            )
            return ControlResponse(Errors.NONE, tuple(errors))

    async def _stop_one(self, topic: str, partition: int, delete: bool) -> Errors:
        """Stop one replica (its fetcher and actor); with ``delete`` its directory is renamed at
        once, even with no replica running, and removed after ``file.delete.delay.ms``."""
        replica = self.replicas.pop((topic, partition), None)
        renamed: RenamedLog | None = None
        if replica is not None:
            try:
                renamed = await replica.stop.remote(delete)
                ray.kill(replica, no_restart=True)
            except ray.exceptions.RayActorError:
                if not delete:
                    return Errors.KAFKA_STORAGE_ERROR
        if delete and renamed is None:
            directory = Path(self.config.log_dirs) / partition_dir_name(topic, partition)
            path = rename_for_deletion(directory, topic, partition)
            delay_ms = self.config.log_config().file_delete_delay_ms
            renamed = None if path is None else RenamedLog(str(path), delay_ms)
        if renamed is not None:
            self._dir_remover.schedule(Path(renamed.path), renamed.delete_delay_ms)
        return Errors.NONE

    async def _supervise(self) -> None:
        """Notice replica actors that died while this broker lives; restart them from disk.

        A restarted replica reopens its log (recovering it) and gets the partition's last
        LeaderAndIsr again, so it resumes as leader or follower at the same leader epoch.
        """
        while not self._stopped.is_set():
            await asyncio.sleep(REPLICA_CHECK_INTERVAL_S)
            hosted = list(self.replicas.items())
            pings = [
                asyncio.wait_for(
                    asyncio.wrap_future(r.ping.remote().future()), REPLICA_PING_TIMEOUT_S
                )
                for _, r in hosted
            ]
            results = await asyncio.gather(*pings, return_exceptions=True)
            dead = {
                key
                for (key, replica), result in zip(hosted, results, strict=True)
                if isinstance(result, ray.exceptions.RayActorError)
                and self.replicas.get(key) is replica
            }
            # Ray keeps a dead actor's name while its owner (this broker) holds a handle: drop them
            # all.
            del hosted, pings, results
            for key in dead:
                self.replicas.pop(key, None)
            missing = {key for key in self.partition_states if key not in self.replicas}
            for key in sorted(dead | missing):
                await self._restart_replica(key, replica_died=key in dead)

    async def _restart_replica(self, key: tuple[str, int], replica_died: bool) -> None:
        async with self._mailbox:
            state = self.partition_states.get(key)
            if state is None or self._stopped.is_set():
                self.replicas.pop(key, None)
                return
            if replica_died:
                self.replica_restarts += 1
                self._state_change(
                    "replica %s-%d died; restarting it from disk",
                    *key,
                    partition=f"{key[0]}-{key[1]}",
                )
            try:
                replica = self._replica(*key)
                call = (
                    replica.become_leader
                    if state.leader == self.broker_id
                    else replica.become_follower
                )
                error = await call.remote(state)
                self._state_change(
                    "restarted replica with %s: %s",
                    describe_state(state),
                    error.name,
                    epoch=state.controller_epoch,
                    partition=partition_name(state),
                )
            except (ValueError, ray.exceptions.RayActorError) as exc:
                # The dead actor's name may not be free yet: the next supervision pass retries.
                self.replicas.pop(key, None)
                logger.warning(
                    "restarting replica %s-%d failed, will retry: %s", key[0], key[1], exc
                )

    def _replica(self, topic: str, partition: int) -> Any:
        """The replica actor of a partition on this broker, started (and its log opened) on first
        use."""
        key = (topic, partition)
        if key not in self.replicas:
            log_config = self.configs.log_config(topic)
            self.replicas[key] = spawn.spawn_replica(
                topic, partition, self.config, log_config, self.namespace, self.node_id
            )
        return self.replicas[key]

    # ---------------------------------------------------------- requests from leaders and clients

    async def alter_isr(
        self, topic: str, partition: int, state: LeaderIsrAndEpoch
    ) -> AlterIsrResponse:
        """A leader replica's ISR change: compare-and-set the state znode, then notify the
        controller."""
        try:
            written = await asyncio.get_running_loop().run_in_executor(
                None, self.zk.update_partition_state, topic, partition, state, None
            )
        except (BadVersionError, NoNodeError):
            self._state_change(
                "ISR change of %s-%d to %s refused: znode version %d is stale",
                topic,
                partition,
                list(state.isr),
                state.zk_version,
                partition=f"{topic}-{partition}",
            )
            return AlterIsrResponse(Errors.INVALID_UPDATE_VERSION, -1)
        self._state_change(
            "ISR of %s-%d is now %s (leader epoch %d, zk version %d)",
            topic,
            partition,
            list(state.isr),
            state.leader_epoch,
            written.zk_version,
            partition=f"{topic}-{partition}",
        )
        await asyncio.get_running_loop().run_in_executor(
            None, self.zk.notify_isr_change, [(topic, partition)]
        )
        known = self.partition_states.get((topic, partition))
        if known is not None and known.leader_epoch == state.leader_epoch:
            # A replica restarted from this state must hold the znode version it now has.
            self.partition_states[(topic, partition)] = dataclasses.replace(
                known, isr=state.isr, zk_version=written.zk_version
            )
        return AlterIsrResponse(Errors.NONE, written.zk_version)

    async def metadata(self, request: MetadataRequest) -> MetadataResponse:
        """Answer from the metadata cache; with ``auto_create_topics_enable``, unknown topics asked
        for by name are created (and reported LEADER_NOT_AVAILABLE until they have leaders)."""
        cache = self.metadata_cache
        if (
            self.config.auto_create_topics_enable
            and request.topics
            and request.allow_auto_topic_creation
        ):
            missing = [t for t in request.topics if t not in cache.topics]
            if missing:
                await self._create_topics(
                    [
                        NewTopic(
                            t, self.config.num_partitions, self.config.default_replication_factor
                        )
                        for t in missing
                    ],
                    ReplicaPlacement(racks_if_all=True),
                )
                return MetadataResponse(
                    brokers=tuple(cache.brokers[b] for b in sorted(cache.brokers)),
                    controller_id=cache.controller_id,
                    topics=tuple(
                        t
                        if t.name not in missing
                        else dataclasses.replace(t, error=Errors.LEADER_NOT_AVAILABLE)
                        for t in cache.topic_metadata(request.topics)
                    ),
                    cluster_id=self.cluster_id,
                )
        return MetadataResponse(
            brokers=tuple(cache.brokers[b] for b in sorted(cache.brokers)),
            controller_id=cache.controller_id,
            topics=cache.topic_metadata(request.topics),
            cluster_id=self.cluster_id,
        )

    async def _create_topics(
        self, topics: list[NewTopic], placement: ReplicaPlacement | None = None
    ) -> list[CreateTopicResult]:
        """Ask the controller to create topics; creation is idempotent for our purposes, so an
        unreachable controller or an existing topic is left for the caller's retry to find."""
        try:
            controller = ray.get_actor(
                names.controller_actor_name(self.metadata_cache.controller_id),
                namespace=self.namespace,
            )
            return await controller.create_topics.remote(topics, placement)
        except (ValueError, ray.exceptions.RayActorError) as exc:
            logger.warning(
                "broker %d: cannot reach the controller to create %s: %s",
                self.broker_id,
                [t.name for t in topics],
                exc,
            )
            return [CreateTopicResult(t.name, Errors.NOT_CONTROLLER, str(exc)) for t in topics]

    async def find_coordinator(
        self, key: str, key_type: int = COORDINATOR_TYPE_GROUP
    ) -> FindCoordinatorResponse:
        """FindCoordinator: the leader of the partition owning ``key``, a group id (of
        ``__consumer_offsets``) or a transactional id (of ``__transaction_state``), creating the
        topic on first use; while it has no leader yet, the answer waits up to
        ``COORDINATOR_WAIT_S`` for one, then is COORDINATOR_NOT_AVAILABLE."""
        if key_type == COORDINATOR_TYPE_GROUP:
            try:
                validate_group_id(key)
            except RafkaError as exc:
                return FindCoordinatorResponse(exc.error, error_message=exc.message)
        elif key_type != COORDINATOR_TYPE_TRANSACTION:
            return FindCoordinatorResponse(
                Errors.INVALID_REQUEST, error_message=f"unknown coordinator type {key_type}"
            )
        elif not key or len(key) > MAX_TRANSACTIONAL_ID_LENGTH:
            return FindCoordinatorResponse(
                Errors.INVALID_REQUEST,
                error_message=f"a transactional id has 1 to {MAX_TRANSACTIONAL_ID_LENGTH} chars",
            )
        topic = self._coordinator_topic(key_type)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + COORDINATOR_WAIT_S
        created: Errors | None = None
        while True:
            partitions = self.metadata_cache.topics.get(topic.name)
            if not partitions and created is None:
                created = (await self._create_topics([topic]))[0].error
            owner = partitions[partition_for(key, len(partitions))] if partitions else None
            if owner is not None and owner.error is Errors.NONE and owner.leader >= 0:
                return FindCoordinatorResponse(Errors.NONE, owner.leader)
            if not await self._await_metadata(deadline - loop.time()):
                break
        if owner is None:
            message = f"{topic.name} is being created: {created.name if created else 'NONE'}"
        else:
            kind = "group" if key_type == COORDINATOR_TYPE_GROUP else "transactional id"
            message = f"{topic.name}-{owner.partition}, which owns {kind} {key}, has no leader"
        return FindCoordinatorResponse(Errors.COORDINATOR_NOT_AVAILABLE, error_message=message)

    async def _await_metadata(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the next UpdateMetadata; False if none came."""
        if timeout_s <= 0:
            return False
        async with self._metadata_updated:
            try:
                await asyncio.wait_for(self._metadata_updated.wait(), timeout_s)
            except asyncio.TimeoutError:
                return False
        return True

    def _coordinator_topic(self, key_type: int) -> NewTopic:
        """The internal topic whose partition leaders coordinate ``key_type``'s keys, as it is
        created: at most as many replicas as live brokers, compacted."""
        live = len(self.metadata_cache.brokers) or 1
        if key_type == COORDINATOR_TYPE_GROUP:
            replication = min(self.config.offsets_topic_replication_factor, live)
            segment_bytes = self.config.offsets_topic_segment_bytes
            config: tuple[tuple[str, str], ...] = ()
            name, count = OFFSETS_TOPIC, self.config.offsets_topic_num_partitions
        else:
            replication = min(self.config.transaction_state_log_replication_factor, live)
            segment_bytes = self.config.transaction_state_log_segment_bytes
            # A cluster smaller than the replication factor still gets a usable log.
            min_isr = min(self.config.transaction_state_log_min_isr, replication)
            config = (("min.insync.replicas", str(min_isr)),)
            name, count = TRANSACTION_STATE_TOPIC, self.config.transaction_state_log_num_partitions
        config = (
            ("cleanup.policy", "compact"),
            *config,
            ("segment.bytes", str(segment_bytes)),
        )
        return NewTopic(name, count, replication, config)

    async def replication_throttle(self, kind: QuotaType, max_bytes: int) -> Throttle:
        """A throttled replica about to fetch up to ``max_bytes``: how long it must wait first, or
        how much it may move now, by this broker's ``kind`` replication quota."""
        return self.replication_quotas[kind].throttle(max_bytes)

    async def record_replication(self, kind: QuotaType, granted: int, nbytes: int) -> None:
        """Bytes a throttled replica moved with a grant of ``granted``, settled against this
        broker's ``kind`` quota."""
        self.replication_quotas[kind].settle(granted, nbytes)

    async def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        """InitProducerId for an idempotent producer: a new producer id at epoch 0 (also when the
        producer names its current id to recover from lost state, as Kafka answers). A
        transactional id is the transaction coordinator's business: NOT_COORDINATOR here."""
        if request.transactional_id is not None:
            return InitProducerIdResponse(
                Errors.NOT_COORDINATOR,
                error_message=(
                    f"broker {self.broker_id} gives producer ids only to producers without a "
                    "transactional id; ask the transaction coordinator (FindCoordinator with "
                    "COORDINATOR_TYPE_TRANSACTION)"
                ),
            )
        try:
            producer_id = await self.allocate_producer_id()
        except RafkaError as exc:
            return InitProducerIdResponse(exc.error, error_message=exc.message)
        return InitProducerIdResponse(Errors.NONE, producer_id, 0)

    async def allocate_producer_id(self) -> int:
        """A producer id no other broker hands out (the transaction coordinator's source); claiming
        a new block writes ZooKeeper, so it runs off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(None, self.producer_ids.next_id)

    async def describe_log_dirs(self) -> tuple[LogDirDescription, ...]:
        """DescribeLogDirs: this broker's log directory and each hosted replica's size on disk and
        offset lag (a replica that does not answer is left out: supervision restarts it)."""
        hosted = list(self.replicas.items())
        answers = await asyncio.gather(
            *(
                asyncio.wait_for(
                    asyncio.wrap_future(r.log_dir_info.remote().future()), REPLICA_PING_TIMEOUT_S
                )
                for _, r in hosted
            ),
            return_exceptions=True,
        )
        replicas = {
            TopicPartition(*key): info
            for (key, _), info in zip(hosted, answers, strict=True)
            if isinstance(info, ReplicaLogDirInfo)
        }
        path = str(Path(self.config.log_dirs).resolve())
        return (LogDirDescription(path, Errors.NONE, dict(sorted(replicas.items()))),)

    async def describe(self) -> dict[str, Any]:
        """This broker's identity and what it hosts."""
        return {
            "broker_id": self.broker_id,
            "node_id": self.node_id,
            "host": self.host,
            "endpoints": list(self.endpoints),
            "log_dirs": self.config.log_dirs,
            "controller_epoch": self.controller_epoch,
            "pid": os.getpid(),
            "replica_restarts": self.replica_restarts,
            "zk_session": (self.zk.zk.client_id[0], self.zk.zk.client_id[1].hex()),
            "replicas": sorted(f"{t}-{p}" for t, p in self.replicas),
        }

    async def _export_metrics(self) -> None:
        """Hand the broker's metrics to Ray's metrics system every export interval."""
        interval_s = self.config.metrics_export_interval_ms / 1000
        while not self._stopped.is_set():
            await asyncio.sleep(interval_s)
            try:
                await self.metrics.export(self.coordinator, self.controller)
            except Exception:  # a failed export must not end the exports that follow
                logger.exception("broker %d: exporting metrics failed", self.broker_id)

    async def metrics_snapshot(self) -> list[MetricFamily]:
        """Every metric family of this broker and the processes it hosts, for rafka's Prometheus
        endpoint and the console."""
        return await self.metrics.snapshot(self.coordinator, self.controller)

    async def high_watermarks(self) -> dict[TopicPartition, int]:
        """The high watermarks this broker's leaders had at its last metrics snapshot, for a
        peer's consumer-lag metrics."""
        return self.metrics.high_watermarks()

    async def replica_call(self, topic: str, partition: int, method: str, request: Any) -> Any:
        """``method(request)`` on this broker's replica of the partition, for the Kafka listener:
        UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER (which a Kafka client answers with
        a metadata refresh) when there is none, or it is restarting."""
        replica = self.replicas.get((topic, partition))
        if replica is None:
            if topic not in self.metadata_cache.topics:
                raise Errors.UNKNOWN_TOPIC_OR_PARTITION.exception(f"no topic {topic!r}")
            raise Errors.NOT_LEADER_OR_FOLLOWER.exception(
                f"broker {self.broker_id} hosts no replica of {topic}-{partition}"
            )
        try:
            return await getattr(replica, method).remote(request)
        except ray.exceptions.RayActorError as exc:
            raise Errors.NOT_LEADER_OR_FOLLOWER.exception(
                f"the replica of {topic}-{partition} on broker {self.broker_id} is restarting"
            ) from exc

    async def coordinator_call(self, method: str, *args: Any, kind: str = "group") -> Any:
        """``method(*args)`` on this broker's group (or ``kind="transaction"``) coordinator
        actor, for the Kafka listener: COORDINATOR_NOT_AVAILABLE (a Kafka client then looks the
        coordinator up again) while it is dead or restarting."""
        actor = self.transaction_coordinator if kind == "transaction" else self.coordinator
        try:
            return await getattr(actor, method).remote(*args)
        except ray.exceptions.RayActorError as exc:
            raise Errors.COORDINATOR_NOT_AVAILABLE.exception(
                f"the {kind} coordinator on broker {self.broker_id} is unavailable"
            ) from exc

    async def transaction_coordinator_call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on this broker's transaction coordinator actor, for the Kafka
        listener (as ``coordinator_call``)."""
        return await self.coordinator_call(method, *args, kind="transaction")

    async def controller_call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on the active controller actor, for the Kafka listener's admin
        requests: NOT_CONTROLLER while none is known or it cannot be reached."""
        controller_id = self.metadata_cache.controller_id
        try:
            controller = ray.get_actor(
                names.controller_actor_name(controller_id), namespace=self.namespace
            )
            return await getattr(controller, method).remote(*args)
        except (ValueError, ray.exceptions.RayActorError) as exc:
            raise Errors.NOT_CONTROLLER.exception(
                f"controller {controller_id} cannot be reached from broker {self.broker_id}"
            ) from exc

    async def cluster_metadata(self, request: MetadataRequest) -> list[MetadataResponse]:
        """``request`` answered by every live broker, this one first, for the Kafka listener's
        admin requests (answered once every broker sees their change, as rafka's Admin waits); a
        broker that fails or is silent for PEER_METADATA_TIMEOUT_S is left out."""

        async def ask(broker_id: int) -> MetadataResponse | None:
            try:
                peer = ray.get_actor(names.broker_actor_name(broker_id), namespace=self.namespace)
                answer: MetadataResponse = await asyncio.wait_for(
                    peer.metadata.remote(request), PEER_METADATA_TIMEOUT_S
                )
            except (ValueError, ray.exceptions.RayActorError, asyncio.TimeoutError):
                return None
            return answer

        peers = [b for b in sorted(self.metadata_cache.brokers) if b != self.broker_id]
        answers = await asyncio.gather(*(ask(b) for b in peers))
        return [await self.metadata(request), *(a for a in answers if a is not None)]

    async def replica_handles(self) -> dict[tuple[str, int], Any]:
        """Handles of the replica actors this broker hosts (tools and tests)."""
        return dict(self.replicas)

    async def wait_until_stopped(self) -> int:
        """Returns only when the broker shuts down cleanly: the controller keeps this call
        outstanding, and Ray fails it as soon as the broker's process dies."""
        await self._stopped.wait()
        return self.broker_id

    async def _controlled_shutdown(self) -> None:
        """Ask the controller to move leadership away first (retried while the controller moves)."""
        for _ in range(CONTROLLED_SHUTDOWN_ATTEMPTS):
            controller_id = self.metadata_cache.controller_id
            try:
                controller = ray.get_actor(
                    names.controller_actor_name(controller_id), namespace=self.namespace
                )
                answer = await controller.controlled_shutdown.remote(self.broker_id)
            except (ValueError, ray.exceptions.RayActorError) as exc:
                logger.warning(
                    "controlled shutdown of broker %d: controller %d unreachable: %s",
                    self.broker_id,
                    controller_id,
                    exc,
                )
            else:
                if answer.error is Errors.NONE and answer.remaining == 0:
                    logger.info("controlled shutdown of broker %d succeeded", self.broker_id)
                    return
                logger.warning(
                    "controlled shutdown of broker %d: %s, still leading %d partitions",
                    self.broker_id,
                    answer.error.name,
                    answer.remaining,
                )
            await asyncio.sleep(CONTROLLED_SHUTDOWN_BACKOFF_S)

    async def shutdown(self) -> None:
        """Controlled shutdown, then close every replica's log, stop the controller, end the
        session."""
        logger.info("broker %d shutting down", self.broker_id)
        if self.config.controlled_shutdown_enable:
            await self._controlled_shutdown()
        self._stopped.set()
        for listener in self.listeners:
            await listener.close()
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
            ray.kill(self.coordinator, no_restart=True)
            ray.kill(self.transaction_coordinator, no_restart=True)
            self.zk.close()
        logger.info("broker %d shut down completed", self.broker_id)

    async def server_log(self, position: LogPosition | None, lines: int | None) -> LogChunk:
        """This broker's ``server.log``, for ``rafka logs`` on another machine: its last ``lines``
        lines (None: all of the live file) when ``position`` is None, else what came after it."""
        log_dir = self.config.log_dirs
        if position is None:
            return await asyncio.to_thread(tail, log_dir, lines)
        return await asyncio.to_thread(read_new, log_dir, position)

    async def ping(self) -> int:
        """Liveness check: the broker id."""
        return self.broker_id
