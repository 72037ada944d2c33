"""The controller's decisions, with no Ray, no ZooKeeper client and no event loop (Kafka's
KafkaController logic over its ControllerContext).

``ControllerCore.handle`` takes one event and returns ``Effects``: conditional ZooKeeper writes,
control requests per broker, state-change log lines and replies. Writes are decided from the
partition states (with their znode versions) in the context, as Kafka's zkVersion compare-and-set,
and run as ``operation.py`` describes: a conflict is decided again from the fresh znode, and the
requests are built once the whole operation has finished. The shell must feed every outcome of a
step before any other event; only ``Resigned`` and ``ControllerMoved`` may interrupt an operation,
which is then abandoned (its caller is told NOT_CONTROLLER).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Mapping

from typing_extensions import assert_never

from rafka.actors.controller.assignment_plan import new_topic_assignment
from rafka.actors.controller.context import ControllerContext
from rafka.actors.controller.deletion_steps import TopicDeletionSteps
from rafka.actors.controller.effects import (
    ControlledShutdownReply,
    CreatePartitionState,
    CreateTopic,
    CreateTopicsReply,
    Effects,
    UpdatePartitionState,
    ZkWrite,
)
from rafka.actors.controller.election import (
    NO_LEADER,
    controlled_shutdown_leader,
    offline_leader,
)
from rafka.actors.controller.events import (
    AlterPartitionReassignments,
    BrokerDied,
    BrokersChanged,
    ConfigsChanged,
    ControlledShutdown,
    ControllerElected,
    ControllerMoved,
    ControlResponseError,
    CoreEvent,
    CreatePartitions,
    CreateTopics,
    DeleteTopics,
    ElectLeaders,
    IsrChanged,
    LeaderImbalanceCheck,
    ListPartitionReassignments,
    PartitionReassignmentsChanged,
    PreferredElectionRequested,
    Resigned,
    StopReplicaAnswered,
    TopicDeletionsChanged,
    TopicsChanged,
    TopicSnapshot,
    ZkWriteConflict,
    ZkWriteSucceeded,
)
from rafka.actors.controller.operation import PartitionWrite, Step
from rafka.actors.controller.partition_growth import PartitionGrowth
from rafka.actors.controller.partition_reassignment import ReassignmentSteps
from rafka.actors.controller.preferred_election import PreferredElection
from rafka.actors.controller.replica_assignment import (
    topic_names_collide,
    validate_topic_name,
)
from rafka.actors.controller.request_batch import RequestBatch
from rafka.actors.controller.state_machines import (
    PARTITION_VALID_PREVIOUS,
    PartitionState,
    ReplicaKey,
    ReplicaState,
    split_valid,
)
from rafka.actors.zk.data import BrokerRegistration, LeaderIsrAndEpoch
from rafka.log.config import LogConfig
from rafka.protocol.errors import Errors, RafkaError, TopicAlreadyExistsError
from rafka.protocol.messages.admin import CreateTopicResult
from rafka.protocol.types import NewTopic, ReplicaPlacement, TopicPartition, partition_name

RECENT_RESPONSE_ERRORS = 20


class ControllerCore(PartitionGrowth, TopicDeletionSteps, ReassignmentSteps, PreferredElection):
    """The controller's state machine: the context, and what each event makes it do."""

    def __init__(
        self, broker_id: int, log_config: LogConfig, delete_topic_enable: bool = True
    ) -> None:
        super().__init__(broker_id)
        self.log_config = log_config
        self.delete_topic_enable = delete_topic_enable
        self.active = False
        self.unclean_elections = 0
        self.leader_elections = 0
        """Offline partitions given a leader (Kafka's LeaderElectionRateAndTimeMs count)."""
        self.response_errors = 0
        self.recent_response_errors: deque[str] = deque(maxlen=RECENT_RESPONSE_ERRORS)

    def handle(self, event: CoreEvent) -> Effects:
        """Process one event; return what the shell must do."""
        self._begin()
        interrupting = (ZkWriteSucceeded, ZkWriteConflict, ControllerMoved, Resigned)
        if self._operation is not None and not isinstance(event, interrupting):
            raise RuntimeError(f"{type(event).__name__} arrived while writes are outstanding")
        match event:
            case ZkWriteSucceeded() | ZkWriteConflict():
                self._record(event)
            case ControllerMoved():
                self._resign(release=True)
            case Resigned():
                self._resign(release=False)
            case ControllerElected():
                self._run(self._failover(event))
            case BrokersChanged():
                if self.active:
                    self._run(self._broker_change(event.brokers))
            case BrokerDied():
                if self.active:
                    self._run(self._broker_died(event))
            case TopicsChanged():
                if self.active:
                    self._run(self._topic_change(event))
            case IsrChanged():
                if self.active:
                    self._run(self._isr_change(event))
            case ConfigsChanged():
                self._configs_changed(event)
            case CreateTopics():
                self._run(self._create_topics(event))
            case CreatePartitions():
                self._run(self._create_partitions(event))
            case ControlledShutdown():
                self._run(self._controlled_shutdown(event))
            case DeleteTopics():
                self._run(self._delete_topics(event))
            case TopicDeletionsChanged():
                if self.active:
                    self._run(self._topic_deletions(event.names))
            case StopReplicaAnswered():
                if self.active:
                    self._run(self._stop_replica_answered(event))
            case ControlResponseError():
                self._response_error(event)
            case ElectLeaders():
                self._run(self._elect_leaders(event))
            case PreferredElectionRequested():
                if self.active:
                    self._run(self._admin_preferred_election(event))
            case LeaderImbalanceCheck():
                if self.active:
                    self._run(self._check_leader_imbalance(event))
            case AlterPartitionReassignments():
                self._run(self._alter_reassignments(event))
            case ListPartitionReassignments():
                self._list_reassignments(event)
            case PartitionReassignmentsChanged():
                if self.active:
                    self._run(self._reassignments_changed(event))
            case _:
                assert_never(event)
        return self._effects()

    # ------------------------------------------------------------------ election and failover

    def _resign(self, release: bool) -> None:
        self._abandon()
        if self.active:
            self._log("resigning")
        self._out.brokers_removed.extend(sorted(self.ctx.live_brokers))
        self._out.release_controller = release
        self.active = False
        self.ctx = ControllerContext()

    def _failover(self, event: ControllerElected) -> Step:
        """Kafka's onControllerFailover: rebuild the context, resend leadership, elect offline
        partitions."""
        ctx = self.ctx = ControllerContext(
            epoch=event.epoch, epoch_zk_version=event.epoch_zk_version
        )
        self.active = True
        self._log(f"broker {self.broker_id} is controller")
        ctx.live_brokers = dict(event.brokers)
        for topic in event.topics:
            self._load_topic(topic)
        for tp in ctx.partitions():
            self._initialise_states(tp)
        yield from self._topic_deletions(event.topics_to_delete)
        self._batch.add_full_metadata(list(ctx.live_brokers))
        for tp in ctx.partitions():
            if tp in ctx.leadership:
                self._batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)
        yield from self._online_partitions(
            ctx.partitions_in(PartitionState.NEW_PARTITION)
            + ctx.partitions_in(PartitionState.OFFLINE_PARTITION)
        )
        yield from self._replace_restarted_leaders(
            {
                tp: brokers
                for tp, brokers in _restarted_since_written(event).items()
                if not ctx.is_queued_for_deletion(tp[0])
            }
        )

    def _initialise_states(self, tp: TopicPartition) -> None:
        """A loaded partition's states, from its leadership and the live brokers (Kafka's
        initializePartitionState and initializeReplicaState: a start, not a transition)."""
        ctx = self.ctx
        state = ctx.leadership.get(tp)
        if state is None:
            ctx.partition_states[tp] = PartitionState.NEW_PARTITION
        elif ctx.is_live(state.leader):
            ctx.partition_states[tp] = PartitionState.ONLINE_PARTITION
        else:
            ctx.partition_states[tp] = PartitionState.OFFLINE_PARTITION
        for replica in ctx.replicas(tp):
            ctx.replica_states[(tp[0], tp[1], replica)] = (
                ReplicaState.ONLINE_REPLICA
                if ctx.is_live(replica)
                else ReplicaState.OFFLINE_REPLICA
            )

    def _replace_restarted_leaders(self, restarted: Mapping[TopicPartition, set[int]]) -> Step:
        """Move leadership off leaders whose broker registered again after their partition's state
        was last written.

        Such a broker restarted (or lost its session) while no controller watched, so no election
        ran: its replica must reopen its log and start before the partition takes writes again,
        and until its followers have fetched from it the high watermark stands still. Another live
        in-sync replica that kept running leads at once instead; the restarted one leaves the ISR
        and rejoins it once caught up, as after any broker failure (Kafka's broker epochs,
        KIP-380). With no such replica the restarted leader stays.
        """
        ctx = self.ctx

        def decide(tp: TopicPartition) -> PartitionWrite | None:
            return self._move_leadership(tp, restarted[tp], restarted[tp], ctx.electable())

        def written(tp: TopicPartition, write: PartitionWrite) -> None:
            self._log(
                f"{tp[0]}-{tp[1]}: brokers {sorted(restarted[tp])} registered again since its "
                f"state was written; leader {write.state.leader} epoch {write.state.leader_epoch} "
                f"ISR {list(write.state.isr)}"
            )
            self._batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)

        yield from self._retrying(sorted(restarted), decide, written)

    def _move_leadership(
        self,
        tp: TopicPartition,
        leaders: Collection[int],
        leaving: Collection[int],
        live: Collection[int],
    ) -> PartitionWrite | None:
        """The write moving ``tp``'s leadership, if one of ``leaders`` holds it, to a live in-sync
        replica outside ``leaving`` (which also leave the ISR); None if none can lead."""
        ctx = self.ctx
        current = ctx.leadership.get(tp)
        if current is None or current.leader not in leaders:
            return None
        decision = controlled_shutdown_leader(ctx.replicas(tp), current.isr, live, leaving)
        if decision is None:
            return None
        new = LeaderIsrAndEpoch(
            decision.leader, current.leader_epoch + 1, decision.isr, ctx.epoch, current.zk_version
        )
        return UpdatePartitionState(tp, new, ctx.epoch_zk_version)

    def _configs_changed(self, event: ConfigsChanged) -> None:
        """Keep the configs elections read current; an offline partition whose topic may now
        allow an unclean election gets one at once, as Kafka's controller does."""
        defaults_changed = event.log_config != self.log_config
        self.log_config = event.log_config
        if not self.active:
            return
        ctx = self.ctx
        for topic, config in event.topic_configs.items():
            if topic in ctx.assignments:
                ctx.topic_configs[topic] = dict(config)
        offline = [
            tp
            for tp in ctx.partitions_in(PartitionState.OFFLINE_PARTITION)
            if defaults_changed or tp.topic in event.topic_configs
        ]
        if offline:
            self._run(self._online_partitions(offline))

    def _load_topic(self, topic: TopicSnapshot) -> list[TopicPartition]:
        ctx = self.ctx
        ctx.assignments[topic.name] = dict(topic.assignment)
        ctx.topic_configs[topic.name] = dict(topic.config)
        for partition, state in topic.states.items():
            if partition in topic.assignment:
                ctx.leadership[TopicPartition(topic.name, partition)] = state
        return [TopicPartition(topic.name, p) for p in sorted(topic.assignment)]

    # ------------------------------------------------------------------ partition state machine

    def _online_partitions(self, partitions: list[TopicPartition]) -> Step:
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
            self._log(
                f"invalid transition of {tp[0]}-{tp[1]} from {current[tp].value} to OnlinePartition"
            )
        unclean: set[ZkWrite] = set()

        def decide(tp: TopicPartition) -> PartitionWrite | None:
            known = ctx.leadership.get(tp)
            if known is not None and known.leader in ctx.electable():
                self._became_online(tp, current[tp], is_new=False)
                return None
            write, was_unclean = self._leader_write(tp)
            if write is not None and was_unclean:
                unclean.add(write)
            return write

        def written(tp: TopicPartition, write: PartitionWrite) -> None:
            if not isinstance(write, CreatePartitionState):
                self.leader_elections += 1
            if write in unclean:
                self.unclean_elections += 1
                self._log(
                    f"unclean election of {tp[0]}-{tp[1]}: replica {write.state.leader} was not "
                    "in the ISR; data may be lost"
                )
            self._became_online(tp, current[tp], is_new=isinstance(write, CreatePartitionState))

        yield from self._retrying(valid, decide, written)

    def _leader_write(self, tp: TopicPartition) -> tuple[PartitionWrite | None, bool]:
        """The write that gives ``tp`` (whose known leader is not live) a leader, and whether that
        election is unclean; None when no replica may lead."""
        ctx = self.ctx
        electable = ctx.electable()
        known = ctx.leadership.get(tp)
        if known is None:
            live = tuple(r for r in ctx.replicas(tp) if r in electable)
            if not live:
                self._log(
                    f"{tp[0]}-{tp[1]} has no live replica among {list(ctx.replicas(tp))}; "
                    "stays NewPartition"
                )
                return None, False
            state = LeaderIsrAndEpoch(live[0], 0, live, ctx.epoch)
            return CreatePartitionState(tp, state, ctx.epoch_zk_version), False
        unclean_allowed = LogConfig.from_dict(
            ctx.topic_configs.get(tp[0], {}), base=self.log_config
        ).unclean_leader_election_enable
        decision, unclean = offline_leader(ctx.replicas(tp), known.isr, electable, unclean_allowed)
        if decision.leader == NO_LEADER:
            self._log(
                f"{tp[0]}-{tp[1]}: no live in-sync replica in ISR {list(known.isr)}; stays offline"
            )
            return None, False
        new = LeaderIsrAndEpoch(
            decision.leader, known.leader_epoch + 1, decision.isr, ctx.epoch, known.zk_version
        )
        return UpdatePartitionState(tp, new, ctx.epoch_zk_version), unclean

    def _became_online(self, tp: TopicPartition, previous: PartitionState, is_new: bool) -> None:
        ctx = self.ctx
        ctx.partition_states[tp] = PartitionState.ONLINE_PARTITION
        self._batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp, is_new=is_new)
        state = ctx.leadership[tp]
        self._log(
            f"{tp[0]}-{tp[1]} {previous.value} -> OnlinePartition, leader {state.leader} "
            f"epoch {state.leader_epoch} ISR {list(state.isr)}"
        )

    def _remove_from_isr(self, partitions: list[TopicPartition], brokers: set[int]) -> Step:
        """OfflineReplica: drop ``brokers`` from the ISRs (keeping the last member, as Kafka
        does)."""
        ctx = self.ctx
        before: dict[TopicPartition, LeaderIsrAndEpoch] = {}

        def decide(tp: TopicPartition) -> PartitionWrite | None:
            current = ctx.leadership.get(tp)
            if current is None or not brokers.intersection((*current.isr, current.leader)):
                return None
            before[tp] = current
            isr = tuple(r for r in current.isr if r not in brokers) or current.isr[:1]
            leader = NO_LEADER if current.leader in brokers else current.leader
            new = LeaderIsrAndEpoch(
                leader, current.leader_epoch + 1, isr, ctx.epoch, current.zk_version
            )
            return UpdatePartitionState(tp, new, ctx.epoch_zk_version)

        def written(tp: TopicPartition, write: PartitionWrite) -> None:
            old, new = before[tp], write.state
            self._log(
                f"{tp[0]}-{tp[1]}: brokers {sorted(brokers)} offline; leader {new.leader} epoch "
                f"{new.leader_epoch} ISR {list(new.isr)} "
                f"(was leader {old.leader} ISR {list(old.isr)})"
            )
            self._batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)

        yield from self._retrying(partitions, decide, written)

    # ------------------------------------------------------------------ broker changes

    def _broker_change(self, brokers: Mapping[int, BrokerRegistration]) -> Step:
        ctx = self.ctx
        current = dict(brokers)
        # A broker Ray reported dead keeps its ephemeral znode until its session expires: that
        # znode is the dead incarnation, not a restart.
        for broker, registered_at in list(ctx.dead_incarnations.items()):
            if broker in current and current[broker].timestamp == registered_at:
                del current[broker]
            else:
                del ctx.dead_incarnations[broker]
        started = set(current) - set(ctx.live_brokers)
        failed = set(ctx.live_brokers) - set(current)
        # A broker that restarted between two reads registers with a new session: it fails (while
        # not live, as in Kafka, so it is not re-elected) and then starts.
        bounced = {
            b
            for b in set(current) & set(ctx.live_brokers)
            if current[b].timestamp != ctx.live_brokers[b].timestamp
        }
        self._out.brokers_removed.extend(sorted(failed | bounced))
        ctx.shutting_down -= failed | bounced
        if failed | bounced:
            ctx.live_brokers = {b: r for b, r in current.items() if b not in bounced}
            yield from self._on_broker_failure(failed | bounced)
        ctx.live_brokers = current
        if started | bounced:
            yield from self._on_broker_startup(started | bounced)
        self._batch.add_broker_change()

    def _broker_died(self, event: BrokerDied) -> Step:
        ctx = self.ctx
        registration = ctx.live_brokers.get(event.broker_id)
        if registration is None or registration.timestamp != event.registered_at:
            return
        self._log(f"Ray reports broker {event.broker_id}'s process gone; failing it over now")
        del ctx.live_brokers[event.broker_id]
        ctx.dead_incarnations[event.broker_id] = event.registered_at
        ctx.shutting_down.discard(event.broker_id)
        self._out.brokers_removed.append(event.broker_id)
        yield from self._on_broker_failure({event.broker_id})
        self._batch.add_broker_change()

    def _on_broker_failure(self, failed: set[int]) -> Step:
        """Partitions led by dead brokers go offline and get a new leader; dead followers leave
        the ISRs."""
        ctx = self.ctx
        self._log(f"brokers {sorted(failed)} failed")
        led = ctx.partitions_led_by(failed)
        self._partition_states().transition(led, PartitionState.OFFLINE_PARTITION)
        self._replica_states().transition(
            _replicas_on(ctx.partitions_on(failed), ctx, failed), ReplicaState.OFFLINE_REPLICA
        )
        deletion = self._deletion()
        deletion.fail_replicas(
            [
                key
                for topic in sorted(ctx.topics_to_be_deleted)
                for key in deletion.replicas_of(topic)
                if key[2] in failed
            ]
        )
        yield from self._online_partitions(led)
        yield from self._remove_from_isr(
            [
                tp
                for tp in ctx.partitions_on(failed)
                if ctx.partition_states.get(tp) is PartitionState.ONLINE_PARTITION or tp in led
            ],
            failed,
        )
        self._batch.add_update_metadata(ctx.partitions_on(failed))

    def _on_broker_startup(self, started: set[int]) -> Step:
        """Full metadata to the new brokers, their replicas go online, offline partitions elect."""
        ctx = self.ctx
        self._log(f"brokers {sorted(started)} started")
        self._batch.add_full_metadata(list(started))
        self._replica_states().transition(
            _replicas_on(ctx.partitions_on(started), ctx, started), ReplicaState.ONLINE_REPLICA
        )
        for tp in ctx.partitions_on(started):
            if tp in ctx.leadership:
                self._batch.add_leader_and_isr(ctx, sorted(set(ctx.replicas(tp)) & started), tp)
        yield from self._online_partitions(
            ctx.partitions_in(PartitionState.OFFLINE_PARTITION)
            + ctx.partitions_in(PartitionState.NEW_PARTITION)
        )
        self._deletion().brokers_started(started)
        yield from self._resume_deletions()

    def _controlled_shutdown(self, event: ControlledShutdown) -> Step:
        """Move leadership off a stopping broker, then drop it from the ISRs it follows, so stopping
        it makes nothing unavailable."""
        ctx = self.ctx
        broker = event.broker_id
        if not self.active:
            self._reply(ControlledShutdownReply(event.request_id, Errors.NOT_CONTROLLER, -1))
            return
        if not ctx.is_live(broker):
            self._reply(ControlledShutdownReply(event.request_id, Errors.NONE, 0))
            return
        self._abort_reply = lambda: ControlledShutdownReply(
            event.request_id, Errors.NOT_CONTROLLER, -1
        )
        ctx.shutting_down.add(broker)

        def decide(tp: TopicPartition) -> PartitionWrite | None:
            return self._move_leadership(tp, {broker}, ctx.shutting_down, set(ctx.live_brokers))

        def written(tp: TopicPartition, write: PartitionWrite) -> None:
            self._log(
                f"{tp[0]}-{tp[1]}: leadership moved off shutting-down broker {broker} "
                f"to {write.state.leader}"
            )
            self._batch.add_leader_and_isr(ctx, list(ctx.replicas(tp)), tp)

        yield from self._retrying(ctx.partitions_led_by({broker}), decide, written)
        followed = [
            tp
            for tp in ctx.partitions_on({broker})
            if tp in ctx.leadership and ctx.leadership[tp].leader != broker
        ]
        yield from self._remove_from_isr(followed, {broker})
        # Its followers go offline by decision: OfflineReplica, stopped without deletion.
        stopped = self._replica_states().transition(
            _replicas_on(followed, ctx, {broker}), ReplicaState.OFFLINE_REPLICA
        )
        for topic, partition, _ in stopped:
            self._batch.add_stop_replica(broker, TopicPartition(topic, partition), delete=False)
        # Count only what could have moved: with no other live in-sync replica a partition stays.
        remaining = [
            tp
            for tp in ctx.partitions_led_by({broker})
            if set(ctx.leadership[tp].isr) & ctx.electable() - {broker}
        ]
        self._reply(ControlledShutdownReply(event.request_id, Errors.NONE, len(remaining)))

    # ------------------------------------------------------------------ topics and ISR changes

    def _topic_change(self, event: TopicsChanged) -> Step:
        ctx = self.ctx
        for topic in sorted(set(ctx.assignments) - event.names):
            ctx.remove_topic(topic)
        yield from self._add_topics(
            [t for t in event.new_topics if t.name in event.names and t.name not in ctx.assignments]
        )

    def _add_topics(self, topics: list[TopicSnapshot]) -> Step:
        """Load new topics; their partitions without a state znode go New, then Online."""
        ctx = self.ctx
        new_partitions: list[TopicPartition] = []
        for topic in sorted(topics, key=lambda t: t.name):
            for tp in self._load_topic(topic):
                if tp not in ctx.leadership:
                    new_partitions.append(tp)
                else:
                    self._initialise_states(tp)
        self._partition_states().transition(new_partitions, PartitionState.NEW_PARTITION)
        replicas = self._replica_states()
        replicas.transition(_replicas_on(new_partitions, ctx), ReplicaState.NEW_REPLICA)
        yield from self._online_partitions(new_partitions)
        replicas.transition(
            _replicas_on(new_partitions, ctx, set(ctx.live_brokers)), ReplicaState.ONLINE_REPLICA
        )

    def _isr_change(self, event: IsrChanged) -> Step:
        """A leader changed an ISR: cache it and tell the brokers; then take out of it any
        follower that may not be there (KIP-841's ineligible replicas), and let reassignments
        waiting for it go on."""
        ctx = self.ctx
        # A topic being deleted gets no elections: acting on its ISR would bring back replicas
        # the deletion has just stopped and deleted.
        known = sorted(
            tp
            for tp in event.states
            if tp[0] in ctx.assignments and not ctx.is_queued_for_deletion(tp[0])
        )
        for tp in known:
            state = event.states[tp]
            if state is not None:
                ctx.leadership[tp] = state
                self._log(
                    f"{tp[0]}-{tp[1]} ISR changed by its leader: leader {state.leader} epoch "
                    f"{state.leader_epoch} ISR {list(state.isr)} zk version {state.zk_version}"
                )
        self._batch = RequestBatch()
        self._batch.add_update_metadata(known)
        self._flush()
        ineligible: dict[frozenset[int], list[TopicPartition]] = {}
        for tp in known:
            found = self._ineligible_in_isr(tp, event.written_at.get(tp))
            if found:
                ineligible.setdefault(frozenset(found), []).append(tp)
        for brokers, partitions in ineligible.items():
            self._log(
                f"{', '.join(map(partition_name, partitions))}: ISR names brokers "
                f"{sorted(brokers)} that are down, shutting down or restarted since it was "
                "written; removing them"
            )
            yield from self._remove_from_isr(partitions, set(brokers))
        yield from self._continue_reassignments(known)

    def _ineligible_in_isr(self, tp: TopicPartition, written_at: int | None) -> set[int]:
        """Followers in ``tp``'s ISR that may not be: dead or shutting-down brokers, whose
        replica cannot be trusted to stay in sync (a stopping broker's last fetch can reach the
        leader after the controller took it out), and brokers registered after the ISR was written
        (the member was an earlier incarnation, whose unflushed records may be gone)."""
        ctx = self.ctx
        state = ctx.leadership.get(tp)
        if state is None:
            return set()
        return {
            b
            for b in state.isr
            if b != state.leader
            and (
                not ctx.is_live(b)
                or b in ctx.shutting_down
                or (written_at is not None and ctx.live_brokers[b].zxid > written_at)
            )
        }

    def _create_topics(self, event: CreateTopics) -> Step:
        """Validate and write new topics, answer, then elect their leaders."""
        if not self.active:
            message = f"broker {self.broker_id} is not the controller"
            self._reply(
                CreateTopicsReply(
                    event.request_id,
                    tuple(
                        CreateTopicResult(t.name, Errors.NOT_CONTROLLER, message)
                        for t in event.topics
                    ),
                )
            )
            return
        results: dict[int, CreateTopicResult] = {}

        def reply() -> CreateTopicsReply:
            moved = f"broker {self.broker_id} stopped being the controller"
            return CreateTopicsReply(
                event.request_id,
                tuple(
                    results.get(i, CreateTopicResult(t.name, Errors.NOT_CONTROLLER, moved))
                    for i, t in enumerate(event.topics)
                ),
            )

        self._abort_reply = reply
        writes: dict[CreateTopic, int] = {}
        for i, topic in enumerate(event.topics):
            try:
                write = self._topic_write(topic, event.placement)
            except RafkaError as exc:
                results[i] = CreateTopicResult(topic.name, exc.error, exc.message)
                continue
            if write in writes:
                results[i] = _already_exists(topic.name)
            else:
                writes[write] = i
        if event.validate_only:
            results.update((i, CreateTopicResult(w.name, Errors.NONE)) for w, i in writes.items())
            self._reply(reply())
            return
        outcomes = yield from self._perform(tuple(writes))
        created: list[TopicSnapshot] = []
        for write, i in writes.items():
            if isinstance(outcomes[write], ZkWriteSucceeded):
                results[i] = CreateTopicResult(write.name, Errors.NONE)
                created.append(
                    TopicSnapshot(write.name, dict(write.assignment), dict(write.config), {})
                )
            else:
                results[i] = _already_exists(write.name)
        self._reply(reply())
        yield from self._add_topics(created)

    def _topic_write(self, topic: NewTopic, placement: ReplicaPlacement) -> CreateTopic:
        validate_topic_name(topic.name)
        for existing in self.ctx.assignments:
            if existing == topic.name:
                raise TopicAlreadyExistsError(f"topic {topic.name!r} already exists")
            if topic_names_collide(existing, topic.name):
                raise TopicAlreadyExistsError(
                    f"topic {topic.name!r} collides with {existing!r} ('.' and '_' collide)"
                )
        config = dict(topic.config)
        LogConfig.from_dict(config, base=self.log_config)
        assignment = new_topic_assignment(topic, self._broker_racks(), placement)
        return CreateTopic(
            topic.name,
            tuple(sorted(assignment.items())),
            tuple(sorted(config.items())),
            self.ctx.epoch_zk_version,
        )

    # ------------------------------------------------------------------ broker answers

    def _response_error(self, event: ControlResponseError) -> None:
        """A broker failed to apply a control request, wholly or for some partitions: log and
        count it."""
        lines = []
        if event.error is not Errors.NONE:
            lines.append(f"broker {event.broker_id} answered {event.api} with {event.error.name}")
        lines += [
            f"broker {event.broker_id} failed {event.api} for {e.topic}-{e.partition}: "
            f"{e.error.name}"
            for e in event.partition_errors
            if e.error is not Errors.NONE
        ]
        self.response_errors += len(lines)
        for line in lines:
            self.recent_response_errors.append(line)
            self._log(line)


def _restarted_since_written(event: ControllerElected) -> dict[TopicPartition, set[int]]:
    """Per partition, the live brokers whose registration is newer than the partition's state: they
    restarted, or lost their session, after that state was written."""
    restarted: dict[TopicPartition, set[int]] = {}
    for topic in event.topics:
        for partition, written_at in topic.written_at.items():
            brokers = {b for b, r in event.brokers.items() if r.zxid > written_at}
            if brokers:
                restarted[TopicPartition(topic.name, partition)] = brokers
    return restarted


def _replicas_on(
    partitions: list[TopicPartition], ctx: ControllerContext, brokers: set[int] | None = None
) -> list[ReplicaKey]:
    """The replicas of ``partitions`` (only those on ``brokers``, if given)."""
    return [
        (tp[0], tp[1], replica)
        for tp in partitions
        for replica in ctx.replicas(tp)
        if brokers is None or replica in brokers
    ]


def _already_exists(name: str) -> CreateTopicResult:
    error = TopicAlreadyExistsError(f"topic {name!r} already exists")
    return CreateTopicResult(name, error.error, error.message)
