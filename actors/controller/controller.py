"""The controller: elected through ``/controller``, it decides leadership and tells the brokers.

Every broker hosts a controller actor; the one whose ZooKeeper session creates the ephemeral
``/controller`` znode is active, bumps ``/controller_epoch`` and runs Kafka's onControllerFailover
steps. All work goes through one mailbox of typed events (``controller_events.py``) handled one at a
time. Leader choice and replica placement are pure functions (``election.py``,
``replica_assignment.py``); state transitions are checked against the tables in
``state_machines.py``; every ZooKeeper write is fenced by the controller epoch (``zk_client.py``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import ray
from kazoo.exceptions import BadVersionError, NodeExistsError
from kazoo.protocol.states import KazooState

from rafka.actors import names
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.controller.context import ControllerContext
from rafka.actors.controller.election import (
    NO_LEADER,
    controlled_shutdown_leader,
    offline_leader,
)
from rafka.actors.controller.events import (
    BrokerChange,
    BrokerDied,
    ControlledShutdown,
    ControllerEvent,
    CreateTopics,
    IsrChangeNotification,
    NewTopic,
    Reelect,
    Resign,
    SessionExpired,
    Startup,
    TopicChange,
)
from rafka.actors.controller.mailbox import Mailbox
from rafka.actors.controller.replica_assignment import (
    assign_replicas,
    topic_names_collide,
    validate_topic_name,
)
from rafka.actors.controller.request_batch import RequestBatch
from rafka.actors.controller.state_machines import (
    PARTITION_VALID_PREVIOUS,
    PartitionState,
    ReplicaState,
    split_valid,
)
from rafka.actors.zk.client import ControllerMovedError, ZkClient
from rafka.actors.zk.data import LeaderIsrAndEpoch
from rafka.log.config import LogConfig
from rafka.protocol.errors import Errors, RafkaError, TopicAlreadyExistsError
from rafka.protocol.types import TopicPartition

logger = logging.getLogger(__name__)
state_change_logger = logging.getLogger("rafka.state_change")

ELECTION_ATTEMPTS = 5


class Controller:
    """Ray actor: the controller logic of one broker, active only while it holds ``/controller``."""

    def __init__(self, config: BrokerConfig, namespace: str) -> None:
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s"
        )
        self.config = config
        self.broker_id = config.broker_id
        self.namespace = namespace
        self.zk = ZkClient(
            config.zookeeper_connect, config.cluster_name, config.zookeeper_session_timeout_ms
        )
        self.ctx = ControllerContext()
        self.active = False
        self.shutting_down = False
        self.unclean_elections = 0
        self._broker_handles: dict[int, Any] = {}
        self._death_watches: dict[int, asyncio.Task] = {}
        self.mailbox: Mailbox[ControllerEvent] = Mailbox(
            self.process, f"controller-{self.broker_id}"
        )
        self.zk.zk.add_listener(self._on_session_state)
        self.mailbox.put(Startup())

    # ------------------------------------------------------------------ remote API (enqueue only)

    async def create_topics(self, topics: list[NewTopic]) -> list[tuple[str, Errors, str | None]]:
        """Validate and create topics; per topic (name, error, message). NOT_CONTROLLER if inactive."""
        result: asyncio.Future = asyncio.get_running_loop().create_future()
        self.mailbox.put(CreateTopics(tuple(topics), result))
        return await result

    async def controlled_shutdown(
        self, broker_id: int, timeout_s: float = 30.0
    ) -> tuple[Errors, int]:
        """Move leadership off a stopping broker; return (error, partitions it still leads) once the
        new leaders have applied their LeaderAndIsr, so clients find them at once."""
        result: asyncio.Future = asyncio.get_running_loop().create_future()
        self.mailbox.put(ControlledShutdown(broker_id, result))
        error, remaining, refs = await result
        if refs:
            await asyncio.wait(
                [asyncio.wrap_future(ref.future()) for ref in refs], timeout=timeout_s
            )
        return error, remaining

    async def resign(self) -> None:
        """The hosting broker is stopping: stop acting as controller and release ``/controller``."""
        self.mailbox.put(Resign())
        await asyncio.sleep(0)
        self.zk.close()

    async def describe(self) -> dict[str, Any]:
        """Whether this controller is active, its epoch and what it knows."""
        stats = self.mailbox.stats
        return {
            "broker_id": self.broker_id,
            "active": self.active,
            "epoch": self.ctx.epoch,
            "pid": os.getpid(),
            "live_brokers": sorted(self.ctx.live_brokers),
            "topics": sorted(self.ctx.assignments),
            "offline_partitions": len(self.ctx.partitions_in(PartitionState.OFFLINE_PARTITION)),
            "unclean_elections": self.unclean_elections,
            "events_processed": stats.processed,
            "events_failed": stats.failed,
            "event_queue_size": stats.queue_size,
            "max_event_queue_time_ms": round(stats.max_queue_time_ms, 3),
        }

    def _on_session_state(self, state: str) -> None:
        # Runs on kazoo's thread: only enqueue.
        if state == KazooState.LOST and not self.shutting_down:
            self.mailbox.put_threadsafe(SessionExpired())

    def _watcher(self, event: ControllerEvent) -> Any:
        def fire(_watched: object) -> None:
            if not self.shutting_down:
                self.mailbox.put_threadsafe(event)

        return fire

    # ------------------------------------------------------------------ dispatch

    def process(self, event: ControllerEvent) -> None:
        """Handle one event; only election-related events and admin requests run while inactive."""
        try:
            self._dispatch(event)
        except ControllerMovedError as exc:
            # Kafka's triggerControllerMove: resign and give up /controller, so an election follows.
            logger.warning("controller %d: %s; resigning", self.broker_id, exc)
            self._resign()
            self.zk.release_controller()

    def _dispatch(self, event: ControllerEvent) -> None:
        match event:
            case Startup() | SessionExpired():
                self._resign()
                self._elect()
            case Reelect():
                self._process_reelect()
            case Resign():
                self.shutting_down = True
                self._resign()
            case CreateTopics():
                self._process_create_topics(event)
            case ControlledShutdown():
                self._process_controlled_shutdown(event)
            case BrokerDied() if self.active:
                self._process_broker_died(event)
            case BrokerChange() if self.active:
                self._process_broker_change()
            case TopicChange() if self.active:
                self._process_topic_change()
            case IsrChangeNotification() if self.active:
                self._process_isr_change()

    # ------------------------------------------------------------------ election and failover

    def _elect(self) -> None:
        if self.shutting_down:
            return
        current = self.zk.controller_id(watch=self._watcher(Reelect()))
        if current != -1:
            return
        if self.zk.try_elect_controller(self.broker_id):
            self._on_controller_failover()
        else:
            self.zk.controller_id(watch=self._watcher(Reelect()))

    def _process_reelect(self) -> None:
        current = self.zk.controller_id(watch=self._watcher(Reelect()))
        if self.active and current != self.broker_id:
            self._resign()
        if current == -1:
            self._elect()

    def _resign(self) -> None:
        if self.active:
            logger.info("controller %d resigning at epoch %d", self.broker_id, self.ctx.epoch)
        self.active = False
        self.ctx = ControllerContext()
        self._broker_handles.clear()
        for watch in self._death_watches.values():
            watch.cancel()
        self._death_watches.clear()

    def _on_controller_failover(self) -> None:
        """Kafka's onControllerFailover: bump the epoch, watch, rebuild the context, resend leadership."""
        epoch, version = self.zk.increment_controller_epoch()
        ctx = self.ctx = ControllerContext(epoch=epoch, epoch_zk_version=version)
        self.active = True
        logger.info("broker %d is controller at epoch %d", self.broker_id, epoch)
        ctx.live_brokers = self.zk.live_brokers(watch=self._watcher(BrokerChange()))
        for topic in self.zk.topics(watch=self._watcher(TopicChange())):
            self._load_topic(topic)
        self.zk.take_isr_changes(watch=self._watcher(IsrChangeNotification()))
        for tp in ctx.partitions():
            state = ctx.leadership.get(tp)
            if state is None:
                ctx.partition_states[tp] = PartitionState.NEW_PARTITION
            elif ctx.is_live(state.leader):
                ctx.partition_states[tp] = PartitionState.ONLINE_PARTITION
            else:
                ctx.partition_states[tp] = PartitionState.OFFLINE_PARTITION
            for replica in ctx.replicas(tp):
                live = ctx.is_live(replica)
                ctx.replica_states[(tp[0], tp[1], replica)] = (
                    ReplicaState.ONLINE_REPLICA if live else ReplicaState.OFFLINE_REPLICA
                )
        self._watch_broker_deaths()
        batch = RequestBatch()
        batch.add_full_metadata(list(ctx.live_brokers))
        for tp in ctx.partitions():
            if tp in ctx.leadership:
                batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)
        self._online_partitions(
            ctx.partitions_in(PartitionState.NEW_PARTITION)
            + ctx.partitions_in(PartitionState.OFFLINE_PARTITION),
            batch,
        )
        self._send(batch)

    def _load_topic(self, topic: str) -> list[TopicPartition]:
        ctx = self.ctx
        ctx.assignments[topic] = self.zk.assignment(topic)
        ctx.topic_configs[topic] = self.zk.topic_config(topic)
        for partition in ctx.assignments[topic]:
            state = self.zk.partition_state(topic, partition)
            if state is not None:
                ctx.leadership[(topic, partition)] = state
        return [(topic, p) for p in sorted(ctx.assignments[topic])]

    # ------------------------------------------------------------------ partition state machine

    def _online_partitions(self, partitions: list[TopicPartition], batch: RequestBatch) -> None:
        """Move partitions to Online: initialise new ones, elect a leader for offline ones."""
        ctx = self.ctx
        current = {
            tp: ctx.partition_states.get(tp, PartitionState.NON_EXISTENT_PARTITION)
            for tp in partitions
        }
        valid, invalid = split_valid(
            current, PartitionState.ONLINE_PARTITION, PARTITION_VALID_PREVIOUS
        )
        for tp in invalid:
            self._log_state_change(
                f"invalid transition of {tp[0]}-{tp[1]} from {current[tp].value} to OnlinePartition"
            )
        for tp in valid:
            if current[tp] is PartitionState.NEW_PARTITION:
                elected = self._initialize_leader(tp, batch)
            else:
                elected = self._elect_leader(tp, batch)
            if elected:
                ctx.partition_states[tp] = PartitionState.ONLINE_PARTITION
                state = ctx.leadership[tp]
                self._log_state_change(
                    f"{tp[0]}-{tp[1]} {current[tp].value} -> OnlinePartition, leader {state.leader} "
                    f"epoch {state.leader_epoch} ISR {list(state.isr)}"
                )

    def _initialize_leader(self, tp: TopicPartition, batch: RequestBatch) -> bool:
        """New partition: leader = first live assigned replica, ISR = live assigned replicas."""
        ctx = self.ctx
        electable = ctx.electable()
        live = tuple(r for r in ctx.replicas(tp) if r in electable)
        if not live:
            self._log_state_change(
                f"{tp[0]}-{tp[1]} has no live replica among {list(ctx.replicas(tp))}; stays NewPartition"
            )
            return False
        state = LeaderIsrAndEpoch(live[0], 0, live, ctx.epoch)
        try:
            ctx.leadership[tp] = self.zk.create_partition_state(
                tp[0], tp[1], state, ctx.epoch_zk_version
            )
        except NodeExistsError:
            return self._elect_leader(tp, batch)
        batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp, is_new=True)
        return True

    def _elect_leader(self, tp: TopicPartition, batch: RequestBatch) -> bool:
        """Offline election with compare-and-set on the state znode, retrying on concurrent changes."""
        ctx = self.ctx
        unclean_allowed = LogConfig.from_dict(
            ctx.topic_configs.get(tp[0], {}), base=self.config.log_config()
        ).unclean_leader_election_enable
        for _ in range(ELECTION_ATTEMPTS):
            current = self.zk.partition_state(*tp)
            if current is None:
                return self._initialize_leader(tp, batch)
            if current.leader in ctx.electable():
                ctx.leadership[tp] = current
                batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)
                return True
            decision, unclean = offline_leader(
                ctx.replicas(tp), current.isr, ctx.electable(), unclean_allowed
            )
            if decision.leader == NO_LEADER:
                ctx.leadership[tp] = current
                self._log_state_change(
                    f"{tp[0]}-{tp[1]}: no live in-sync replica in ISR {list(current.isr)}; stays offline"
                )
                return False
            if unclean:
                self.unclean_elections += 1
                logger.warning(
                    "unclean election of %s-%d: replica %d was not in ISR %s; data may be lost",
                    tp[0],
                    tp[1],
                    decision.leader,
                    list(current.isr),
                )
            new = LeaderIsrAndEpoch(
                decision.leader,
                current.leader_epoch + 1,
                decision.isr,
                ctx.epoch,
                current.zk_version,
            )
            try:
                ctx.leadership[tp] = self.zk.update_partition_state(
                    tp[0], tp[1], new, ctx.epoch_zk_version
                )
            except BadVersionError:
                continue
            batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)
            return True
        return False

    def _remove_from_isr(self, tp: TopicPartition, brokers: set[int], batch: RequestBatch) -> None:
        """OfflineReplica: drop dead replicas from the ISR (keeping the last member, as Kafka does)."""
        ctx = self.ctx
        for _ in range(ELECTION_ATTEMPTS):
            current = self.zk.partition_state(*tp)
            if current is None or not brokers.intersection(current.isr + (current.leader,)):
                return
            isr = tuple(r for r in current.isr if r not in brokers) or current.isr[:1]
            leader = NO_LEADER if current.leader in brokers else current.leader
            new = LeaderIsrAndEpoch(
                leader, current.leader_epoch + 1, isr, ctx.epoch, current.zk_version
            )
            try:
                ctx.leadership[tp] = self.zk.update_partition_state(
                    tp[0], tp[1], new, ctx.epoch_zk_version
                )
            except BadVersionError:
                continue
            self._log_state_change(
                f"{tp[0]}-{tp[1]}: brokers {sorted(brokers)} offline; leader {leader} epoch "
                f"{new.leader_epoch} ISR {list(isr)} (was leader {current.leader} ISR {list(current.isr)})"
            )
            batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)
            return

    # ------------------------------------------------------------------ broker changes

    def _process_broker_change(self) -> None:
        ctx = self.ctx
        current = self.zk.live_brokers(watch=self._watcher(BrokerChange()))
        # A broker Ray reported dead keeps its ephemeral znode until its session expires: that
        # znode is the dead incarnation, not a restart.
        for broker, registered_at in list(ctx.dead_incarnations.items()):
            if broker in current and current[broker].timestamp == registered_at:
                del current[broker]
            else:
                del ctx.dead_incarnations[broker]
        started = set(current) - set(ctx.live_brokers)
        failed = set(ctx.live_brokers) - set(current)
        # A broker that restarted between two reads registers with a new session: treat it as both.
        bounced = {
            b
            for b in set(current) & set(ctx.live_brokers)
            if current[b].timestamp != ctx.live_brokers[b].timestamp
        }
        ctx.live_brokers = current
        for broker in failed | started | bounced:
            self._broker_handles.pop(broker, None)
        ctx.shutting_down -= failed
        self._watch_broker_deaths()
        batch = RequestBatch()
        if failed | bounced:
            self._on_broker_failure(failed | bounced, batch)
        if started | bounced:
            self._on_broker_startup(started | bounced, batch)
        batch.add_broker_change()
        self._send(batch)

    def _on_broker_failure(self, failed: set[int], batch: RequestBatch) -> None:
        """Seeds' steps: partitions led by dead brokers go offline and get a new leader; dead followers leave ISRs."""
        ctx = self.ctx
        logger.info("controller %d: brokers %s failed", self.broker_id, sorted(failed))
        led = ctx.partitions_led_by(failed)
        for tp in led:
            ctx.partition_states[tp] = PartitionState.OFFLINE_PARTITION
        for tp in ctx.partitions_on(failed):
            for replica in set(ctx.replicas(tp)) & failed:
                ctx.replica_states[(tp[0], tp[1], replica)] = ReplicaState.OFFLINE_REPLICA
        self._online_partitions(led, batch)
        for tp in ctx.partitions_on(failed):
            if ctx.partition_states.get(tp) is PartitionState.ONLINE_PARTITION:
                self._remove_from_isr(tp, failed & set(ctx.replicas(tp)), batch)
            elif tp in led:
                self._remove_from_isr(tp, failed & set(ctx.replicas(tp)), batch)
        batch.add_update_metadata(ctx.partitions_on(failed))

    def _on_broker_startup(self, started: set[int], batch: RequestBatch) -> None:
        """Seeds' steps: full metadata to the new brokers, their replicas go online, offline partitions elect."""
        ctx = self.ctx
        logger.info("controller %d: brokers %s started", self.broker_id, sorted(started))
        batch.add_full_metadata(list(started))
        for tp in ctx.partitions_on(started):
            for replica in set(ctx.replicas(tp)) & started:
                ctx.replica_states[(tp[0], tp[1], replica)] = ReplicaState.ONLINE_REPLICA
            if tp in ctx.leadership:
                batch.add_leader_and_isr(ctx, sorted(set(ctx.replicas(tp)) & started), tp)
        self._online_partitions(
            ctx.partitions_in(PartitionState.OFFLINE_PARTITION)
            + ctx.partitions_in(PartitionState.NEW_PARTITION),
            batch,
        )

    def _process_broker_died(self, event: BrokerDied) -> None:
        ctx = self.ctx
        registration = ctx.live_brokers.get(event.broker_id)
        if registration is None or registration.timestamp != event.registered_at:
            return
        logger.info(
            "controller %d: Ray reports broker %d's process gone; failing it over now",
            self.broker_id,
            event.broker_id,
        )
        del ctx.live_brokers[event.broker_id]
        ctx.dead_incarnations[event.broker_id] = event.registered_at
        ctx.shutting_down.discard(event.broker_id)
        self._broker_handles.pop(event.broker_id, None)
        batch = RequestBatch()
        self._on_broker_failure({event.broker_id}, batch)
        batch.add_broker_change()
        self._send(batch)

    def _watch_broker_deaths(self) -> None:
        """Keep one call outstanding on every live broker: Ray fails it as soon as the process dies."""
        if not self.config.ray_failure_detection_enable:
            return
        for broker, registration in self.ctx.live_brokers.items():
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
                self._await_death(broker, registration.timestamp)
            )
            task.registered_at = registration.timestamp  # type: ignore[attr-defined]
            self._death_watches[broker] = task

    async def _await_death(self, broker: int, registered_at: int) -> None:
        try:
            handle = ray.get_actor(names.broker_actor_name(broker), namespace=self.namespace)
            await handle.wait_until_stopped.remote()
        except ray.exceptions.RayActorError:
            self.mailbox.put(BrokerDied(broker, registered_at))
        except (ValueError, asyncio.CancelledError):
            return

    def _process_controlled_shutdown(self, event: ControlledShutdown) -> None:
        """Kafka's controlled shutdown: new leaders by the controlled-shutdown selector, then drop the
        broker from the ISRs it follows, so stopping it makes nothing unavailable."""
        if not self.active:
            event.result.set_result((Errors.NOT_CONTROLLER, -1, []))
            return
        ctx = self.ctx
        broker = event.broker_id
        if not ctx.is_live(broker):
            event.result.set_result((Errors.NONE, 0, []))
            return
        ctx.shutting_down.add(broker)
        batch = RequestBatch()
        for tp in ctx.partitions_led_by({broker}):
            self._move_leadership_off(tp, broker, batch)
        for tp in ctx.partitions_on({broker}):
            if ctx.leadership.get(tp) is not None and ctx.leadership[tp].leader != broker:
                self._remove_from_isr(tp, {broker}, batch)
        refs = self._send(batch)
        # Count only what could have moved: a partition with no other live in-sync replica stays put.
        remaining = [
            tp
            for tp in ctx.partitions_led_by({broker})
            if set(ctx.leadership[tp].isr) & ctx.electable() - {broker}
        ]
        event.result.set_result((Errors.NONE, len(remaining), refs))

    def _move_leadership_off(self, tp: TopicPartition, broker: int, batch: RequestBatch) -> None:
        ctx = self.ctx
        for _ in range(ELECTION_ATTEMPTS):
            current = self.zk.partition_state(*tp)
            if current is None or current.leader != broker:
                return
            decision = controlled_shutdown_leader(
                ctx.replicas(tp), current.isr, set(ctx.live_brokers), ctx.shutting_down
            )
            if decision is None:
                return
            new = LeaderIsrAndEpoch(
                decision.leader,
                current.leader_epoch + 1,
                decision.isr,
                ctx.epoch,
                current.zk_version,
            )
            try:
                ctx.leadership[tp] = self.zk.update_partition_state(
                    tp[0], tp[1], new, ctx.epoch_zk_version
                )
            except BadVersionError:
                continue
            self._log_state_change(
                f"{tp[0]}-{tp[1]}: leadership moved off shutting-down broker {broker} to {decision.leader}"
            )
            batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)
            return

    # ------------------------------------------------------------------ topics and ISR changes

    def _process_topic_change(self) -> None:
        ctx = self.ctx
        topics = set(self.zk.topics(watch=self._watcher(TopicChange())))
        created = sorted(topics - set(ctx.assignments))
        for topic in sorted(set(ctx.assignments) - topics):
            ctx.remove_topic(topic)
        batch = RequestBatch()
        new_partitions: list[TopicPartition] = []
        for topic in created:
            for tp in self._load_topic(topic):
                if tp not in ctx.leadership:
                    ctx.partition_states[tp] = PartitionState.NEW_PARTITION
                    for replica in ctx.replicas(tp):
                        ctx.replica_states[(tp[0], tp[1], replica)] = ReplicaState.NEW_REPLICA
                    new_partitions.append(tp)
        self._online_partitions(new_partitions, batch)
        for tp in new_partitions:
            for replica in ctx.replicas(tp):
                if ctx.is_live(replica):
                    ctx.replica_states[(tp[0], tp[1], replica)] = ReplicaState.ONLINE_REPLICA
        self._send(batch)

    def _process_isr_change(self) -> None:
        ctx = self.ctx
        changed = sorted(
            set(self.zk.take_isr_changes(watch=self._watcher(IsrChangeNotification())))
        )
        known = [tp for tp in changed if tp[0] in ctx.assignments]
        for tp in known:
            state = self.zk.partition_state(*tp)
            if state is not None:
                ctx.leadership[tp] = state
        batch = RequestBatch()
        batch.add_update_metadata(known)
        self._send(batch)

    def _process_create_topics(self, event: CreateTopics) -> None:
        results: list[tuple[str, Errors, str | None]] = []
        for topic in event.topics:
            if not self.active:
                results.append(
                    (
                        topic.name,
                        Errors.NOT_CONTROLLER,
                        f"broker {self.broker_id} is not the controller",
                    )
                )
                continue
            try:
                self._create_topic(topic)
                results.append((topic.name, Errors.NONE, None))
            except RafkaError as exc:
                results.append((topic.name, exc.error, exc.message))
        if not event.result.done():
            event.result.set_result(results)
        if self.active:
            self._process_topic_change()

    def _create_topic(self, topic: NewTopic) -> None:
        validate_topic_name(topic.name)
        for existing in self.ctx.assignments:
            if existing == topic.name:
                raise TopicAlreadyExistsError(f"topic {topic.name!r} already exists")
            if topic_names_collide(existing, topic.name):
                raise TopicAlreadyExistsError(
                    f"topic {topic.name!r} collides with {existing!r} ('.' and '_' collide)"
                )
        config = dict(topic.config)
        LogConfig.from_dict(config, base=self.config.log_config())
        assignment = assign_replicas(
            self.ctx.live_brokers, topic.num_partitions, topic.replication_factor
        )
        self.zk.create_topic(topic.name, assignment, config)

    # ------------------------------------------------------------------ sending

    def _send(self, batch: RequestBatch) -> list[Any]:
        """Send LeaderAndIsr, then UpdateMetadata, to each broker (each broker applies them in order);
        return the refs of the requests sent."""
        leader_and_isr, update_metadata = batch.build(self.ctx, self.broker_id)
        refs = [
            self._call(broker, "leader_and_isr", request)
            for broker, request in leader_and_isr.items()
        ]
        refs += [
            self._call(broker, "update_metadata", request)
            for broker, request in update_metadata.items()
        ]
        return [ref for ref in refs if ref is not None]

    def _call(self, broker: int, method: str, request: object) -> Any:
        handle = self._broker_handles.get(broker)
        if handle is None:
            try:
                handle = self._broker_handles[broker] = ray.get_actor(
                    names.broker_actor_name(broker), namespace=self.namespace
                )
            except ValueError:
                logger.warning(
                    "controller %d: broker %d has no actor; %s not sent",
                    self.broker_id,
                    broker,
                    method,
                )
                return None
        ref = getattr(handle, method).remote(request)
        ref.future().add_done_callback(lambda done: _log_failure(done, broker, method))
        return ref

    def _log_state_change(self, message: str) -> None:
        state_change_logger.info(
            "[Controller id=%d epoch=%d] %s", self.broker_id, self.ctx.epoch, message
        )

    async def ping(self) -> int:
        """Liveness check: the broker id."""
        return self.broker_id


def _log_failure(done: Any, broker: int, method: str) -> None:
    error = done.exception()
    if error is not None:
        logger.warning("%s to broker %d failed: %s", method, broker, error)
