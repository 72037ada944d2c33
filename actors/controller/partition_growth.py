"""Adding partitions to existing topics, the controller's side of Kafka's CreatePartitions.

The admin's request reaches the active controller; each topic's added partitions are placed
(``assignment_plan``) and the whole assignment is rewritten to ``/brokers/topics/<t>`` in one write
fenced by the controller epoch. Once written, the request is answered and the new partitions go
NewPartition -> OnlinePartition with a leader, exactly as a new topic's partitions do; existing
partitions, their state znodes and their logs are not touched. A bad request writes nothing.
"""

from __future__ import annotations

from rafka.actors.controller.assignment_plan import added_partitions_assignment
from rafka.actors.controller.effects import AddPartitions, CreatePartitionsReply
from rafka.actors.controller.events import CreatePartitions, TopicSnapshot, ZkWriteSucceeded
from rafka.actors.controller.operation import OperationRunner, Step
from rafka.protocol.errors import (
    Errors,
    InvalidRequestError,
    RafkaError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.admin import CreatePartitionsResult
from rafka.protocol.types import NewPartitions, ReplicaPlacement


class PartitionGrowth(OperationRunner):
    """The CreatePartitions operation, mixed into ``ControllerCore``, which brings new partitions
    online through ``_add_topics``."""

    active: bool

    def _add_topics(self, topics: list[TopicSnapshot]) -> Step:
        """Load new topics, or new partitions of known ones, and bring them online."""
        raise NotImplementedError

    def _broker_racks(self) -> dict[int, str | None]:
        """Each live broker's rack (None: it has none)."""
        return {b: r.rack for b, r in self.ctx.live_brokers.items()}

    def _create_partitions(self, event: CreatePartitions) -> Step:
        """Validate and write grown assignments, answer, then bring the new partitions online with
        a leader (Kafka's onNewPartitionCreation); existing partitions are untouched."""
        names = [name for name, _ in event.topics]
        results: dict[int, CreatePartitionsResult] = {}

        def reply(error: Errors = Errors.NOT_CONTROLLER) -> CreatePartitionsReply:
            moved = f"broker {self.broker_id} is not the controller"
            return CreatePartitionsReply(
                event.request_id,
                tuple(
                    results.get(i, CreatePartitionsResult(name, error, moved))
                    for i, name in enumerate(names)
                ),
            )

        if not self.active:
            self._reply(reply())
            return
        self._abort_reply = reply
        writes: dict[AddPartitions, int] = {}
        for i, (name, request) in enumerate(event.topics):
            try:
                if names.index(name) != i:
                    raise InvalidRequestError(f"topic {name!r} appears twice in the request")
                writes[self._partitions_write(name, request, event.placement)] = i
            except RafkaError as exc:
                results[i] = CreatePartitionsResult(name, exc.error, exc.message)
        if event.validate_only:
            results.update(
                (i, CreatePartitionsResult(w.name, Errors.NONE)) for w, i in writes.items()
            )
            self._reply(reply())
            return
        outcomes = yield from self._perform(tuple(writes))
        grown: list[TopicSnapshot] = []
        for write, i in writes.items():
            if isinstance(outcomes[write], ZkWriteSucceeded):
                results[i] = CreatePartitionsResult(write.name, Errors.NONE)
                config = self.ctx.topic_configs.get(write.name, {})
                grown.append(TopicSnapshot(write.name, dict(write.assignment), config, {}))
            else:
                gone = UnknownTopicOrPartitionError(f"topic {write.name!r} does not exist")
                results[i] = CreatePartitionsResult(write.name, gone.error, gone.message)
        self._reply(reply())
        for topic in grown:
            added = len(topic.assignment) - len(self.ctx.assignments[topic.name])
            self._log(f"topic {topic.name} grows to {len(topic.assignment)} partitions (+{added})")
        yield from self._add_topics(grown)

    def _partitions_write(
        self, name: str, request: NewPartitions, placement: ReplicaPlacement
    ) -> AddPartitions:
        existing = self.ctx.assignments.get(name)
        if existing is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        added = added_partitions_assignment(
            name, existing, request, self._broker_racks(), placement.rack_aware
        )
        return AddPartitions(
            name, tuple(sorted({**existing, **added}.items())), self.ctx.epoch_zk_version
        )
