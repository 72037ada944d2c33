"""The replica assignment of a topic being created or grown: an explicit one checked, or one
computed by Kafka's placement (``replica_assignment``).

Pure functions the controller calls before writing ``/brokers/topics/<t>``: each returns the
partitions to write or raises the error the admin gets (INVALID_REPLICA_ASSIGNMENT,
INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_REQUEST) with a message naming what was
wrong, so nothing is written for a bad request.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence

from rafka.actors.controller.replica_assignment import assign_replicas, broker_racks
from rafka.protocol.errors import (
    Errors,
    InvalidPartitionsError,
    InvalidRequestError,
    RafkaError,
)
from rafka.protocol.types import NewPartitions, NewTopic, ReplicaPlacement

Assignment = dict[int, tuple[int, ...]]


def _invalid(message: str) -> RafkaError:
    return Errors.INVALID_REPLICA_ASSIGNMENT.exception(message)


def check_assignment(
    assignment: Mapping[int, Sequence[int]],
    live_brokers: Sequence[int] | set[int],
    first_partition: int = 0,
    replication_factor: int | None = None,
) -> Assignment:
    """An explicit assignment, checked as Kafka checks one: partitions numbered from
    ``first_partition`` without gaps, each with at least one replica, no broker twice in a
    partition, every partition the same replication factor (``replication_factor`` if given), every
    broker live. Returns it normalised to tuples; raises INVALID_REPLICA_ASSIGNMENT naming the first
    problem found."""
    if not assignment:
        raise _invalid("the replica assignment is empty")
    partitions = sorted(int(p) for p in assignment)
    expected = list(range(first_partition, first_partition + len(partitions)))
    if partitions != expected:
        raise _invalid(
            f"partitions must be consecutive integers from {first_partition}: got {partitions}"
        )
    checked = {int(p): tuple(int(b) for b in replicas) for p, replicas in assignment.items()}
    for partition, replicas in sorted(checked.items()):
        if not replicas:
            raise _invalid(f"partition {partition} has no replicas")
        if len(set(replicas)) != len(replicas):
            raise _invalid(
                f"duplicate brokers in the replica assignment of partition {partition}: "
                f"{list(replicas)}"
            )
    factors = {p: len(r) for p, r in sorted(checked.items())}
    wanted = replication_factor if replication_factor is not None else factors[first_partition]
    uneven = {p: f for p, f in factors.items() if f != wanted}
    if uneven:
        raise _invalid(
            f"inconsistent replication factor: expected {wanted} replicas per partition, "
            f"but partitions {sorted(uneven)} have {[uneven[p] for p in sorted(uneven)]}"
        )
    unknown = sorted({b for r in checked.values() for b in r} - set(live_brokers))
    if unknown:
        raise _invalid(f"unknown broker(s) {unknown} in the replica assignment")
    return dict(sorted(checked.items()))


def new_topic_assignment(
    topic: NewTopic, racks: Mapping[int, str | None], placement: ReplicaPlacement
) -> Assignment:
    """The assignment of a topic to create on the live brokers ``racks`` (id -> rack): its
    explicit ``replica_assignments`` checked, else Kafka's placement."""
    if not topic.replica_assignments:
        return assign_replicas(
            broker_racks(racks, placement.rack_aware, placement.racks_if_all),
            topic.num_partitions,
            topic.replication_factor,
            start_index=placement.start_index,
            replica_shift=placement.replica_shift,
        )
    assignment = check_assignment(topic.replica_assignments, sorted(racks))
    factor = len(assignment[0])
    if topic.num_partitions not in (-1, len(assignment)) or topic.replication_factor not in (
        -1,
        factor,
    ):
        raise InvalidRequestError(
            f"topic {topic.name!r} asks for {topic.num_partitions} partitions of replication "
            f"factor {topic.replication_factor} but its replica assignment has {len(assignment)} "
            f"of {factor}; give -1 for both, or agreeing numbers"
        )
    return assignment


def added_partitions_assignment(
    topic: str,
    existing: Mapping[int, tuple[int, ...]],
    request: NewPartitions,
    racks: Mapping[int, str | None],
    rack_aware: bool = True,
) -> Assignment:
    """The partitions to add to ``topic`` (whose assignment is ``existing``) to reach
    ``request.total_count``, with the replication factor of partition 0, as Kafka's
    ``AdminZkClient.addPartitions``: explicit ``new_assignments`` checked, else placed starting from
    the broker that leads partition 0. Only growing is allowed (INVALID_PARTITIONS)."""
    current = len(existing)
    if request.total_count < current:
        raise InvalidPartitionsError(
            f"topic {topic!r} currently has {current} partitions, which is higher than the "
            f"requested {request.total_count}: partitions can only be added"
        )
    if request.total_count == current:
        raise InvalidPartitionsError(f"topic {topic!r} already has {current} partitions")
    adding = request.total_count - current
    factor = len(existing[0])
    if request.new_assignments is not None:
        if len(request.new_assignments) != adding:
            raise _invalid(
                f"growing {topic!r} from {current} to {request.total_count} partitions needs "
                f"{adding} new replica assignments, got {len(request.new_assignments)}"
            )
        explicit = {current + i: tuple(r) for i, r in enumerate(request.new_assignments)}
        return check_assignment(explicit, sorted(racks), current, factor)
    brokers = sorted(racks)
    start = bisect.bisect_left(brokers, existing[0][0]) % len(brokers) if brokers else 0
    return assign_replicas(
        broker_racks(racks, rack_aware), adding, factor, start_partition=current, start_index=start
    )
