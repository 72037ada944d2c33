"""The controller actor: the shell around ``ControllerCore``, owning the mailbox, ZooKeeper and
Ray.

Every broker hosts a controller actor; the one whose ZooKeeper session creates the ephemeral
``/controller`` znode is active, bumps ``/controller_epoch`` and hands the cluster it reads to its
core (Kafka's onControllerFailover). All work goes through one mailbox (``mailbox.py``) handled one
event at a time: watch triggers are answered by reading ZooKeeper and feeding what was read to the
core; the core's effects are carried out here: conditional writes (whose outcomes go straight back
to the core), control requests through one acknowledged channel per broker (``channel_manager.py``),
state-change log lines and replies to remote calls.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Callable
from typing import Any

import ray
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState

from rafka.actors import names
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.config_manager import ConfigManager
from rafka.actors.controller.channel import api_name
from rafka.actors.controller.channel_manager import ControlAnswer, ControllerChannelManager
from rafka.actors.controller.core import ControllerCore
from rafka.actors.controller.death_watch import await_death
from rafka.actors.controller.effects import (
    AddPartitions,
    AlterPartitionReassignmentsReply,
    ClearPreferredReplicaElection,
    ControlledShutdownReply,
    ControlRequest,
    CreatePartitionsReply,
    CreatePartitionState,
    CreateTopic,
    CreateTopicsReply,
    DeleteTopicsReply,
    DeleteTopicZnodes,
    Effects,
    ElectLeadersReply,
    ListPartitionReassignmentsReply,
    QueueTopicDeletion,
    Reply,
    SetTopicAssignment,
    UpdatePartitionState,
    WriteReassignments,
    ZkWrite,
)
from rafka.actors.controller.events import (
    ActiveControllerDied,
    AlterPartitionReassignments,
    BrokerChange,
    BrokerDied,
    BrokersChanged,
    ConfigChangeNotification,
    ConfigsChanged,
    ControlledShutdown,
    ControllerElected,
    ControllerEvent,
    ControllerMoved,
    ControlResponseError,
    CoreEvent,
    CreatePartitions,
    CreateTopics,
    DeleteTopics,
    ElectLeaders,
    IsrChanged,
    IsrChangeNotification,
    LeaderImbalanceCheck,
    ListPartitionReassignments,
    PartitionReassignmentChange,
    PartitionReassignmentsChanged,
    PreferredElectionRequested,
    PreferredReplicaElectionChange,
    Reelect,
    Resign,
    Resigned,
    SessionExpired,
    Startup,
    StopReplicaAnswered,
    TopicChange,
    TopicDeletionChange,
    TopicDeletionsChanged,
    TopicsChanged,
    TopicSnapshot,
    ZkWriteConflict,
    ZkWriteSucceeded,
)
from rafka.actors.controller.mailbox import Mailbox
from rafka.actors.controller.state_machines import PartitionState
from rafka.actors.process import configure_actor_logging
from rafka.actors.state_change import (
    ChangeFields,
    controller_line_fields,
    log_state_change,
    open_state_change_log,
)
from rafka.actors.zk.client import ControllerMovedError, ZkClient
from rafka.actors.zk.data import LeaderIsrAndEpoch
from rafka.metrics import catalog
from rafka.metrics.registry import MetricFamily, family
from rafka.protocol.errors import Errors, TopicAlreadyExistsError
from rafka.protocol.messages.admin import (
    ControlledShutdownResponse,
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
    ElectLeadersResult,
    PartitionReassignment,
    ReassignmentResult,
)
from rafka.protocol.messages.control import LeaderAndIsrRequest, StopReplicaRequest
from rafka.protocol.types import (
    ElectionType,
    NewPartitions,
    NewTopic,
    ReplicaPlacement,
    TopicPartition,
)

logger = logging.getLogger(__name__)


class Controller:
    """Ray actor: the controller of one broker, active only while it holds ``/controller``."""

    def __init__(self, config: BrokerConfig, namespace: str) -> None:
        configure_actor_logging(config.log_dirs)
        open_state_change_log(config.log_dirs)
        self.config = config
        self.broker_id = config.broker_id
        self.namespace = namespace
        self.zk = ZkClient(
            config.zookeeper_connect,
            config.cluster_name,
            config.zookeeper_session_timeout_ms,
            security=config.zk_security(),
        )
        self.configs = ConfigManager(self.zk, config)
        self.core = ControllerCore(
            self.broker_id, self.configs.default_log_config(), config.delete_topic_enable
        )
        self.shutting_down = False
        self.channels = ControllerChannelManager(namespace, self._on_answer)
        self._replies: dict[int, asyncio.Future[tuple[Reply, list[asyncio.Future[Any]]]]] = {}
        self._request_ids = itertools.count()
        self._death_watches: dict[int, asyncio.Task[None]] = {}
        self._active_watch: tuple[int, asyncio.Task[None]] | None = None
        self._stopped = asyncio.Event()
        self.mailbox: Mailbox[ControllerEvent] = Mailbox(
            self.process, f"controller-{self.broker_id}"
        )
        self.zk.zk.add_listener(self._on_session_state)
        self.mailbox.put(Startup())
        if config.auto_leader_rebalance_enable:
            self._leader_balance = asyncio.get_event_loop().create_task(
                self._check_leader_balance()
            )

    # ------------------------------------------------------------------ remote API (enqueue only)

    async def create_topics(
        self,
        topics: list[NewTopic],
        placement: ReplicaPlacement | None = None,
        validate_only: bool = False,
    ) -> list[CreateTopicResult]:
        """Validate and create topics (``validate_only``: validate and create nothing); one result
        per topic, NOT_CONTROLLER if inactive."""
        how = placement or ReplicaPlacement()
        reply, _ = await self._ask(
            lambda request_id: CreateTopics(request_id, tuple(topics), how, validate_only)
        )
        assert isinstance(reply, CreateTopicsReply)
        return list(reply.results)

    async def create_partitions(
        self,
        topics: dict[str, NewPartitions],
        placement: ReplicaPlacement | None = None,
        validate_only: bool = False,
    ) -> list[CreatePartitionsResult]:
        """Grow topics to more partitions (``validate_only``: validate and change nothing); one
        result per topic, NOT_CONTROLLER if inactive."""
        how = placement or ReplicaPlacement()
        requests = tuple(topics.items())
        reply, _ = await self._ask(
            lambda request_id: CreatePartitions(request_id, requests, how, validate_only)
        )
        assert isinstance(reply, CreatePartitionsReply)
        return list(reply.results)

    async def delete_topics(self, topics: list[str]) -> list[DeleteTopicResult]:
        """Queue topics for deletion (``/admin/delete_topics``); one result per topic,
        NOT_CONTROLLER if inactive. The deletion goes on after the answer."""
        reply, _ = await self._ask(lambda request_id: DeleteTopics(request_id, tuple(topics)))
        assert isinstance(reply, DeleteTopicsReply)
        return list(reply.results)

    async def alter_partition_reassignments(
        self, reassignments: dict[TopicPartition, tuple[int, ...]]
    ) -> list[ReassignmentResult]:
        """Start reassigning partitions to new replicas, all or nothing: one result per partition
        (NONE when valid; the reassignments started only if every one is NONE), NOT_CONTROLLER if
        inactive."""
        requests = tuple((TopicPartition(*tp), tuple(r)) for tp, r in reassignments.items())
        reply, _ = await self._ask(
            lambda request_id: AlterPartitionReassignments(request_id, requests)
        )
        assert isinstance(reply, AlterPartitionReassignmentsReply)
        return list(reply.results)

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None = None
    ) -> tuple[Errors, dict[TopicPartition, PartitionReassignment]]:
        """The reassignments in progress (of ``partitions``, or all), or NOT_CONTROLLER."""
        wanted = None if partitions is None else tuple(TopicPartition(*tp) for tp in partitions)
        reply, _ = await self._ask(
            lambda request_id: ListPartitionReassignments(request_id, wanted)
        )
        assert isinstance(reply, ListPartitionReassignmentsReply)
        return reply.error, dict(reply.reassignments)

    async def controlled_shutdown(
        self, broker_id: int, timeout_s: float = 30.0
    ) -> ControlledShutdownResponse:
        """Move leadership off a stopping broker; answer how many partitions it still leads once
        the brokers have answered the requests that moved it, so clients find the new leaders at
        once."""
        reply, answers = await self._ask(
            lambda request_id: ControlledShutdown(request_id, broker_id)
        )
        assert isinstance(reply, ControlledShutdownReply)
        if answers:
            await asyncio.wait(answers, timeout=timeout_s)
        return ControlledShutdownResponse(reply.error, reply.remaining)

    async def elect_leaders(
        self, election_type: ElectionType, partitions: list[TopicPartition] | None
    ) -> list[tuple[TopicPartition, ElectLeadersResult]]:
        """Elect the preferred (or an unclean) leader of each partition, every partition if None;
        one result per partition; raises NOT_CONTROLLER if inactive. Answered once the brokers have
        answered the LeaderAndIsr requests that moved leadership, so clients find the new leaders
        at once."""
        wanted = None if partitions is None else tuple(TopicPartition(*tp) for tp in partitions)
        reply, answers = await self._ask(
            lambda request_id: ElectLeaders(request_id, election_type, wanted)
        )
        assert isinstance(reply, ElectLeadersReply)
        if reply.error is not Errors.NONE:
            raise reply.error.exception(f"broker {self.broker_id} is not the controller")
        if answers:
            await asyncio.wait(answers, timeout=self.config.zookeeper_session_timeout_ms / 1000)
        return list(reply.results)

    async def resign(self) -> None:
        """The hosting broker is stopping: stop acting as controller and release ``/controller``."""
        self.mailbox.put(Resign())
        await asyncio.sleep(0)
        self.zk.close()

    async def describe(self) -> dict[str, Any]:
        """Whether this controller is active, its epoch, what it knows and how its channels fare."""
        stats = self.mailbox.stats
        core = self.core
        return {
            "broker_id": self.broker_id,
            "active": core.active,
            "epoch": core.ctx.epoch,
            "pid": os.getpid(),
            "live_brokers": sorted(core.ctx.live_brokers),
            "topics": sorted(core.ctx.assignments),
            "offline_partitions": len(core.ctx.partitions_in(PartitionState.OFFLINE_PARTITION)),
            "unclean_elections": core.unclean_elections,
            "control_response_errors": core.response_errors,
            "recent_control_response_errors": list(core.recent_response_errors),
            "channels": self.channels.describe(),
            "events_processed": stats.processed,
            "events_failed": stats.failed,
            "event_queue_size": stats.queue_size,
            "max_event_queue_time_ms": round(stats.max_queue_time_ms, 3),
        }

    async def metrics_report(self) -> list[MetricFamily]:
        """ActiveControllerCount, and on the active controller the offline and global partition
        counts; leader and unclean elections this controller made."""
        core = self.core
        labels = {"broker": self.broker_id}
        active = core.active
        offline = len(core.ctx.partitions_in(PartitionState.OFFLINE_PARTITION)) if active else 0
        total = len(core.ctx.partitions()) if active else 0
        return [
            family(catalog.ACTIVE_CONTROLLER, [(labels, float(active))]),
            family(catalog.OFFLINE_PARTITIONS, [(labels, float(offline))]),
            family(catalog.GLOBAL_PARTITIONS, [(labels, float(total))]),
            family(catalog.LEADER_ELECTIONS, [(labels, float(core.leader_elections))]),
            family(catalog.UNCLEAN_LEADER_ELECTIONS, [(labels, float(core.unclean_elections))]),
        ]

    async def ping(self) -> int:
        """Liveness check: the broker id."""
        return self.broker_id

    async def wait_until_stopped(self) -> int:
        """Returns only when the controller resigns for good: standby controllers keep this call
        outstanding on the active one, and Ray fails it as soon as its process dies."""
        await self._stopped.wait()
        return self.broker_id

    async def _check_leader_balance(self) -> None:
        """Kafka's auto-leader-rebalance task: every check interval, ask the active core to
        check the leader balance."""
        while not self.shutting_down:
            await asyncio.sleep(self.config.leader_imbalance_check_interval_seconds)
            if self.core.active and not self.shutting_down:
                self.mailbox.put(
                    LeaderImbalanceCheck(self.config.leader_imbalance_per_broker_percentage)
                )

    async def _ask(
        self, make: Callable[[int], CoreEvent]
    ) -> tuple[Reply, list[asyncio.Future[Any]]]:
        request_id = next(self._request_ids)
        reply = self._replies[request_id] = asyncio.get_running_loop().create_future()
        self.mailbox.put(make(request_id))
        return await reply

    def _on_session_state(self, state: str) -> None:
        # Runs on kazoo's thread: only enqueue.
        if state == KazooState.LOST and not self.shutting_down:
            log_state_change(
                ChangeFields(self.broker_id),
                "[Controller id=%d] ZooKeeper session lost; will resign and stand again",
                self.broker_id,
            )
            self.mailbox.put_threadsafe(SessionExpired())

    def _watcher(self, event: ControllerEvent) -> Callable[[object], None]:
        def fire(_watched: object) -> None:
            if not self.shutting_down:
                self.mailbox.put_threadsafe(event)

        return fire

    def _on_answer(self, broker_id: int, request: ControlRequest, answer: ControlAnswer) -> None:
        errors = tuple(e for e in answer.partition_errors if e.error is not Errors.NONE)
        if isinstance(request, LeaderAndIsrRequest):
            outcome = {(e.topic, e.partition): e.error for e in errors}
            for p in request.partitions:
                log_state_change(
                    ChangeFields(
                        self.broker_id,
                        request.controller_epoch,
                        request.correlation_id,
                        f"{p.topic}-{p.partition}",
                    ),
                    "[Controller id=%d epoch=%d] broker %d answered LeaderAndIsr: %s",
                    self.broker_id,
                    request.controller_epoch,
                    broker_id,
                    outcome.get((p.topic, p.partition), answer.error).name,
                )
        if isinstance(request, StopReplicaRequest) and request.delete:
            self.mailbox.put(
                StopReplicaAnswered(broker_id, request.partitions, answer.error, errors)
            )
        elif answer.error is not Errors.NONE or errors:
            self.mailbox.put(
                ControlResponseError(broker_id, api_name(request), answer.error, errors)
            )

    # ------------------------------------------------------------------ dispatch

    def process(self, event: ControllerEvent) -> None:
        """Handle one mailbox event: answer a trigger by reading ZooKeeper, or pass it to the
        core."""
        match event:
            case Startup() | SessionExpired():
                self._resign()
                self._elect()
                self._watch_active_controller()
                self._follow_config_changes()
            case Reelect():
                current = self.zk.controller_id(watch=self._watcher(Reelect()))
                log_state_change(
                    ChangeFields(self.broker_id),
                    "[Controller id=%d] /controller changed: controller is now %d",
                    self.broker_id,
                    current,
                )
                if self.core.active and current != self.broker_id:
                    self._resign()
                if current == -1:
                    self._elect()
                self._watch_active_controller()
            case ActiveControllerDied(broker_id=dead, session_id=session):
                if not self.core.active and self.zk.release_dead_controller(session):
                    log_state_change(
                        ChangeFields(self.broker_id),
                        "[Controller id=%d] Ray reports controller %d's process gone; freed "
                        "/controller of its dead session for an election now",
                        self.broker_id,
                        dead,
                    )
            case Resign():
                self.shutting_down = True
                self._stopped.set()
                self._resign()
            case BrokerChange():
                if self.core.active:
                    watch = self._watcher(BrokerChange())
                    self._drive(BrokersChanged(self.zk.live_brokers(watch=watch)))
            case TopicChange():
                if self.core.active:
                    self._drive(self._read_topics())
            case TopicDeletionChange():
                if self.core.active:
                    watch = self._watcher(TopicDeletionChange())
                    self._drive(TopicDeletionsChanged(frozenset(self.zk.topic_deletions(watch))))
            case ConfigChangeNotification():
                self._follow_config_changes()
            case PreferredReplicaElectionChange():
                if self.core.active:
                    self._read_preferred_replica_election()
            case PartitionReassignmentChange():
                if self.core.active:
                    self._drive(self._read_reassignments())
            case IsrChangeNotification():
                if self.core.active:
                    watch = self._watcher(IsrChangeNotification())
                    changed = sorted(set(self.zk.take_isr_changes(watch=watch)))
                    reads = self.zk.partition_states_written(
                        [TopicPartition(*tp) for tp in changed]
                    )
                    self._drive(
                        IsrChanged(
                            {tp: None if r is None else r[0] for tp, r in reads.items()},
                            {tp: r[1] for tp, r in reads.items() if r is not None},
                        )
                    )
            case _:
                self._drive(event)

    def _read_preferred_replica_election(self) -> None:
        """Elect the preferred replicas ``/admin/preferred_replica_election`` names, if it exists
        (and watch it for the next request)."""
        partitions = self.zk.preferred_replica_election(
            self._watcher(PreferredReplicaElectionChange())
        )
        if partitions is not None:
            self._drive(PreferredElectionRequested(tuple(partitions)))

    def _follow_config_changes(self) -> None:
        """Re-read what new config change notifications name (and watch for the next): the core
        elects with the live ``unclean.leader.election.enable``."""
        changes = self.configs.take_changes(self._watcher(ConfigChangeNotification()))
        self._drive(
            ConfigsChanged(
                {t: self.configs.topic_overrides(t) for t in sorted(changes.topics)},
                self.configs.default_log_config(),
            )
        )

    def _drive(self, event: CoreEvent) -> None:
        """Hand one event to the core and carry out its effects, feeding every write's outcome back
        before the mailbox's next event.

        The writes of one step go to ZooKeeper together (``_write_all``) and their outcomes are fed
        back in order; the core resumes the operation once it has them all, so the next step's
        writes follow as the next batch.
        """
        effects = self.core.handle(event)
        self._carry_out(effects)
        writes = list(effects.writes)
        while writes:
            outcomes = self._write_all(writes)
            writes = []
            for outcome in outcomes:
                effects = self.core.handle(outcome)
                self._carry_out(effects)
                writes.extend(effects.writes)
                if not self.core.awaiting_writes:
                    writes = []
                    break

    def _carry_out(self, effects: Effects) -> None:
        for line in effects.state_changes:
            log_state_change(controller_line_fields(self.broker_id, line), "%s", line)
        for broker_id in effects.brokers_removed:
            self.channels.remove_broker(broker_id)
        if effects.release_controller:
            self.zk.release_controller()
        answers: list[asyncio.Future[Any]] = [
            self.channels.send(r.broker_id, r.request) for r in effects.requests
        ]
        for reply in effects.replies:
            waiting = self._replies.pop(reply.request_id, None)
            if waiting is not None and not waiting.done():
                waiting.set_result((reply, answers))
        self._watch_broker_deaths()

    def _write_all(self, writes: list[ZkWrite]) -> list[CoreEvent]:
        """Perform a step's conditional writes, the partition states' in one pipeline each for
        creations and updates; their outcomes, in order, as the events the core expects."""
        outcomes: dict[int, CoreEvent] = {}
        creates = [(i, w) for i, w in enumerate(writes) if isinstance(w, CreatePartitionState)]
        updates = [(i, w) for i, w in enumerate(writes) if isinstance(w, UpdatePartitionState)]
        state_writes: list[tuple[int, CreatePartitionState | UpdatePartitionState]] = [
            *creates,
            *updates,
        ]
        try:
            answers = [
                *self.zk.create_partition_states(
                    [(w.tp, w.state, w.epoch_zk_version) for _, w in creates]
                ),
                *self.zk.update_partition_states(
                    [(w.tp, w.state, w.epoch_zk_version) for _, w in updates]
                ),
            ]
            conflicted = [
                w.tp
                for (_, w), a in zip(state_writes, answers, strict=True)
                if isinstance(a, _CONFLICTS)
            ]
            current = self.zk.partition_states_written(conflicted)
        except Exception:
            # A pipeline that could not be sent or read back (the session is gone, say) leaves the
            # controller unsure of ZooKeeper: give controllership up, as Kafka's
            # triggerControllerMove does, so an election rebuilds the state from ZooKeeper.
            logger.exception("controller %d: ZooKeeper state writes failed", self.broker_id)
            return [ControllerMoved()]
        for (i, state_write), answer in zip(state_writes, answers, strict=True):
            outcomes[i] = _state_outcome(state_write, answer, current.get(state_write.tp))
        failed = [a for a in answers if isinstance(a, Exception) and not isinstance(a, _CONFLICTS)]
        if failed:
            logger.warning("controller %d: %s; resigning", self.broker_id, failed[0])
        for i, write in enumerate(writes):
            if i not in outcomes:
                outcomes[i] = self._write(write)
        return [outcomes[i] for i in range(len(writes))]

    def _write(self, write: ZkWrite) -> CoreEvent:
        """Perform one conditional write other than a partition state's; its outcome as the event
        the core expects."""
        try:
            match write:
                case CreatePartitionState() | UpdatePartitionState():
                    raise TypeError("partition state writes go through _write_all")
                case CreateTopic():
                    self.zk.create_topic(
                        write.name,
                        dict(write.assignment),
                        dict(write.config),
                        write.epoch_zk_version,
                    )
                    return ZkWriteSucceeded(write, 0)
                case AddPartitions():
                    self.zk.add_partitions(
                        write.name, dict(write.assignment), write.epoch_zk_version
                    )
                    return ZkWriteSucceeded(write, 0)
                case SetTopicAssignment():
                    self.zk.set_topic_assignment(
                        write.name, dict(write.assignment), write.epoch_zk_version
                    )
                    return ZkWriteSucceeded(write, 0)
                case WriteReassignments():
                    version = self.zk.write_reassignments(
                        dict(write.partitions), write.zk_version, write.epoch_zk_version
                    )
                    return ZkWriteSucceeded(write, version)
                case QueueTopicDeletion(name=name):
                    self.zk.queue_topic_deletion(name)
                    return ZkWriteSucceeded(write, 0)
                case DeleteTopicZnodes(name=name, epoch_zk_version=fence):
                    self.zk.delete_topic_znodes(name, fence)
                    return ZkWriteSucceeded(write, 0)
                case ClearPreferredReplicaElection(epoch_zk_version=fence):
                    self.zk.delete_preferred_replica_election(fence)
                    return ZkWriteSucceeded(write, 0)
        except ControllerMovedError as exc:
            logger.warning("controller %d: %s; resigning", self.broker_id, exc)
            return ControllerMoved()
        except (TopicAlreadyExistsError, BadVersionError, NodeExistsError, NoNodeError):
            return ZkWriteConflict(write, None)
        except Exception:
            # As for state writes (``_write_all``): unsure of ZooKeeper, give controllership up.
            logger.exception("controller %d: a ZooKeeper write failed", self.broker_id)
            return ControllerMoved()

    # ------------------------------------------------------------------ election and reads

    def _elect(self) -> None:
        if self.shutting_down:
            return
        if self.zk.controller_id(watch=self._watcher(Reelect())) != -1:
            return
        if not self.zk.try_elect_controller(self.broker_id):
            self.zk.controller_id(watch=self._watcher(Reelect()))
            return
        epoch, version = self.zk.increment_controller_epoch()
        brokers = self.zk.live_brokers(watch=self._watcher(BrokerChange()))
        topics = self.zk.topics(watch=self._watcher(TopicChange()))
        snapshots = self._snapshots(topics)
        deletions = frozenset(self.zk.topic_deletions(watch=self._watcher(TopicDeletionChange())))
        # Pending notifications are stale: every partition state was just read.
        self.zk.take_isr_changes(watch=self._watcher(IsrChangeNotification()))
        logger.info("broker %d is controller at epoch %d", self.broker_id, epoch)
        self._drive(ControllerElected(epoch, version, brokers, snapshots, deletions))
        # Resume the reassignments a previous controller left (seed 000's failover steps).
        self._drive(self._read_reassignments())
        # A preferred replica election left behind by the previous controller is resumed too.
        self._read_preferred_replica_election()

    def _read_reassignments(self) -> PartitionReassignmentsChanged:
        partitions, version = self.zk.reassignments(self._watcher(PartitionReassignmentChange()))
        return PartitionReassignmentsChanged(partitions, version)

    def _resign(self) -> None:
        self._drive(Resigned())
        self.channels.close()

    def _read_topics(self) -> TopicsChanged:
        topics = frozenset(self.zk.topics(watch=self._watcher(TopicChange())))
        unknown = sorted(topics - set(self.core.ctx.assignments))
        return TopicsChanged(topics, self._snapshots(unknown))

    def _snapshots(self, topics: list[str]) -> tuple[TopicSnapshot, ...]:
        """The topics' assignments, configs and partition states, in two pipelined reads (Kafka's
        controller reads them the same way on failover) rather than one round trip per znode."""
        znodes = self.zk.topic_znodes(topics)
        partitions = [
            TopicPartition(topic, p) for topic in topics for p in sorted(znodes[topic][0])
        ]
        reads = self.zk.partition_states_written(partitions)
        written: dict[str, dict[int, tuple[LeaderIsrAndEpoch, int]]] = {t: {} for t in topics}
        for tp, read in reads.items():
            if read is not None:
                written[tp.topic][tp.partition] = read
        return tuple(
            TopicSnapshot(
                topic,
                assignment,
                config,
                {p: state for p, (state, _) in written[topic].items()},
                {p: zxid for p, (_, zxid) in written[topic].items()},
            )
            for topic, (assignment, config) in znodes.items()
        )

    # ------------------------------------------------------------------ Ray failure detection

    def _watch_broker_deaths(self) -> None:
        """Keep one call outstanding on every live broker: Ray fails it as soon as the process
        dies."""
        live = self.core.ctx.live_brokers if self.config.ray_failure_detection_enable else {}
        for broker in [b for b in self._death_watches if b not in live]:
            self._death_watches.pop(broker).cancel()
        for broker, registration in live.items():
            watch = self._death_watches.get(broker)
            if (
                watch is not None
                and not watch.done()
                and getattr(watch, "registered_at", None) == registration.timestamp
            ):
                continue
            if watch is not None:
                watch.cancel()
            task = asyncio.get_running_loop().create_task(
                self._await_death(
                    names.broker_actor_name(broker), BrokerDied(broker, registration.timestamp)
                )
            )
            task.registered_at = registration.timestamp  # type: ignore[attr-defined]
            self._death_watches[broker] = task

    def _watch_active_controller(self) -> None:
        """As a standby, keep one call outstanding on the active controller: Ray fails it as soon
        as that process dies, which is seconds before its ZooKeeper session expires."""
        holder, session = self.zk.controller_session()
        watching = holder not in (-1, self.broker_id) and not self.shutting_down
        watching = watching and self.config.ray_failure_detection_enable
        if self._active_watch is not None:
            watched, task = self._active_watch
            if watching and watched == session and not task.done():
                return
            task.cancel()
            self._active_watch = None
        if watching:
            task = asyncio.get_running_loop().create_task(
                self._await_death(
                    names.controller_actor_name(holder), ActiveControllerDied(holder, session)
                )
            )
            self._active_watch = (session, task)

    async def _await_death(self, actor_name: str, died: ControllerEvent) -> None:
        """Put ``died`` in the mailbox once Ray reports the named actor's process gone."""
        await await_death(
            lambda: ray.get_actor(actor_name, namespace=self.namespace),
            lambda: self.mailbox.put(died),
        )


_CONFLICTS = (BadVersionError, NodeExistsError, NoNodeError)
"""A partition state write that lost a race: the core decides again from the fresh znode."""


def _state_outcome(
    write: CreatePartitionState | UpdatePartitionState,
    answer: object,
    current: tuple[LeaderIsrAndEpoch, int] | None,
) -> CoreEvent:
    """A partition state write's outcome for the core, from what its pipeline answered and the
    znode read again after a conflict."""
    if isinstance(answer, LeaderIsrAndEpoch):
        return ZkWriteSucceeded(write, answer.zk_version)
    if isinstance(answer, _CONFLICTS):
        return ZkWriteConflict(write, None if current is None else current[0])
    return ControllerMoved()
