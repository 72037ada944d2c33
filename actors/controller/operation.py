"""How the controller core runs an operation that writes to ZooKeeper, with no Ray, no ZooKeeper
client and no event loop.

An operation is a generator: it yields the conditional writes it needs and is resumed with their
outcomes once the shell has fed them all back, with the context already updated from them (a
written state with its new znode version, a conflict with the fresh znode). Control requests are
gathered in one ``RequestBatch`` per operation and built when it finishes, so the brokers never hear
of a write that failed.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field, replace

from rafka.actors.controller.context import ControllerContext
from rafka.actors.controller.effects import (
    BrokerRequest,
    ControlRequest,
    CreatePartitionState,
    Effects,
    Reply,
    UpdatePartitionState,
    ZkWrite,
)
from rafka.actors.controller.events import ZkWriteConflict, ZkWriteSucceeded
from rafka.actors.controller.request_batch import RequestBatch
from rafka.protocol.types import TopicPartition

ELECTION_ATTEMPTS = 5
"""Decisions per partition and operation before giving up on compare-and-set conflicts."""

Outcome = ZkWriteSucceeded | ZkWriteConflict
Outcomes = Mapping[ZkWrite, Outcome]
Step = Generator[tuple[ZkWrite, ...], Outcomes, None]
PartitionWrite = CreatePartitionState | UpdatePartitionState


@dataclass
class _Collector:
    """The effects gathered while one event is handled."""

    writes: list[ZkWrite] = field(default_factory=list)
    requests: list[BrokerRequest] = field(default_factory=list)
    state_changes: list[str] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    brokers_removed: list[int] = field(default_factory=list)
    release_controller: bool = False

    def build(self) -> Effects:
        """The gathered effects, frozen."""
        return Effects(
            tuple(self.writes),
            tuple(self.requests),
            tuple(self.state_changes),
            tuple(self.replies),
            tuple(self.brokers_removed),
            self.release_controller,
        )


class OperationRunner:
    """Runs one operation at a time over a context and gathers its effects."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.ctx = ControllerContext()
        self._operation: Step | None = None
        self._outstanding: dict[ZkWrite, Outcome | None] = {}
        self._abort_reply: Callable[[], Reply] | None = None
        self._batch = RequestBatch()
        self._out = _Collector()

    def _begin(self) -> None:
        """Start gathering the effects of a new event."""
        self._out = _Collector()

    def _effects(self) -> Effects:
        """What the current event made the core decide."""
        return self._out.build()

    @property
    def awaiting_writes(self) -> bool:
        """Whether an operation waits for the outcomes of writes it asked for."""
        return self._operation is not None

    def _run(self, operation: Step) -> None:
        self._operation = operation
        self._batch = RequestBatch()
        self._advance(None)

    def _advance(self, outcomes: Outcomes | None) -> None:
        operation = self._operation
        assert operation is not None
        try:
            writes = next(operation) if outcomes is None else operation.send(outcomes)
        except StopIteration:
            self._operation = None
            self._abort_reply = None
            self._flush()
            return
        self._outstanding = dict.fromkeys(writes)
        self._out.writes.extend(writes)

    def _record(self, event: Outcome) -> None:
        """Apply one write's outcome to the context; resume the operation once all are in."""
        write = event.write
        if write not in self._outstanding or self._outstanding[write] is not None:
            return
        self._outstanding[write] = event
        if isinstance(write, CreatePartitionState | UpdatePartitionState):
            if isinstance(event, ZkWriteSucceeded):
                self.ctx.leadership[write.tp] = replace(write.state, zk_version=event.zk_version)
            elif event.current is not None:
                self.ctx.leadership[write.tp] = event.current
            else:
                self.ctx.leadership.pop(write.tp, None)
        if all(outcome is not None for outcome in self._outstanding.values()):
            outcomes = {w: o for w, o in self._outstanding.items() if o is not None}
            self._outstanding = {}
            self._advance(outcomes)

    @staticmethod
    def _perform(writes: tuple[ZkWrite, ...]) -> Generator[tuple[ZkWrite, ...], Outcomes, Outcomes]:
        """Suspend until the shell reports the outcome of every write."""
        if not writes:
            return {}
        return (yield writes)

    def _retrying(
        self,
        partitions: Iterable[TopicPartition],
        decide: Callable[[TopicPartition], PartitionWrite | None],
        written: Callable[[TopicPartition, PartitionWrite], None],
    ) -> Step:
        """Write each partition's decision; decide again for those whose znode had changed."""
        pending = list(partitions)
        for _ in range(ELECTION_ATTEMPTS):
            writes: dict[PartitionWrite, TopicPartition] = {}
            for tp in pending:
                decided = decide(tp)
                if decided is not None:
                    writes[decided] = tp
            outcomes = yield from self._perform(tuple(writes))
            pending = []
            for write, tp in writes.items():
                if isinstance(outcomes[write], ZkWriteSucceeded):
                    written(tp, write)
                else:
                    pending.append(tp)
            if not pending:
                return

    def _flush(self) -> None:
        """Build the operation's requests: LeaderAndIsr, UpdateMetadata, then StopReplica, per
        broker."""
        leader_and_isr, update_metadata = self._batch.build(self.ctx, self.broker_id)
        stop_replica = self._batch.stop_replica_requests(self.ctx, self.broker_id)
        self._batch = RequestBatch()
        requests: list[tuple[int, ControlRequest]] = [
            *leader_and_isr.items(),
            *update_metadata.items(),
            *stop_replica,
        ]
        for broker, request in requests:
            # Addressed to this incarnation of the broker: one that restarts before the request
            # arrives refuses it (STALE_BROKER_EPOCH) instead of acting on old leadership.
            registration = self.ctx.live_brokers.get(broker)
            if registration is not None and registration.zxid > 0:
                request = replace(request, broker_epoch=registration.zxid)
            self._out.requests.append(BrokerRequest(broker, request))

    def _reply(self, reply: Reply) -> None:
        self._abort_reply = None
        self._out.replies.append(reply)

    def _log(self, message: str) -> None:
        self._out.state_changes.append(
            f"[Controller id={self.broker_id} epoch={self.ctx.epoch}] {message}"
        )

    def _abandon(self) -> None:
        """Drop the running operation; its caller is answered as the operation said it should be."""
        if self._operation is not None:
            self._operation.close()
            self._operation = None
            self._outstanding = {}
        if self._abort_reply is not None:
            self._reply(self._abort_reply())
        self._batch = RequestBatch()
