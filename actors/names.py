"""One naming scheme for rafka's Ray actors, so every process finds every actor the same way.

All of a cluster's actors live in the cluster's Ray namespace (default ``rafka``).
"""

from __future__ import annotations

DEFAULT_NAMESPACE = "rafka"
BROKER_PREFIX = "broker-"
METRICS_ENDPOINT = "metrics-endpoint"
"""The cluster's Prometheus endpoint actor (``rafka up --metrics-port``)."""


def broker_actor_name(broker_id: int) -> str:
    """The broker with ``broker_id``."""
    return f"{BROKER_PREFIX}{broker_id}"


def controller_actor_name(broker_id: int) -> str:
    """The controller actor hosted by ``broker_id`` (active only while that broker is
    controller)."""
    return f"controller-{broker_id}"


def replica_actor_name(topic: str, partition: int, broker_id: int) -> str:
    """The replica of ``topic``-``partition`` on ``broker_id``."""
    return f"replica-{topic}-{partition}@{broker_id}"


def broker_id_of(actor_name: str) -> int | None:
    """The broker id in a broker actor's name, or None for other actors."""
    if actor_name.startswith(BROKER_PREFIX) and actor_name[len(BROKER_PREFIX) :].isdigit():
        return int(actor_name[len(BROKER_PREFIX) :])
    return None


def coordinator_actor_name(broker_id: int) -> str:
    """The group coordinator actor hosted by ``broker_id``."""
    return f"group-coordinator-{broker_id}"


def transaction_coordinator_actor_name(broker_id: int) -> str:
    """The transaction coordinator actor hosted by ``broker_id``."""
    return f"txn-coordinator-{broker_id}"


def hosting_broker(actor_name: str) -> int | None:
    """The broker a rafka actor belongs to (the broker itself, an actor it starts beside itself,
    or one of its replicas), or None for a name outside rafka's scheme."""
    number = actor_name.rpartition("-")[2]
    if number.isdigit():
        broker_id = int(number)
        if actor_name == broker_actor_name(broker_id) or any(
            actor_name == build(broker_id) for build, _ in _COMPANIONS
        ):
            return broker_id
    named, _, host = actor_name.rpartition("@")
    topic, _, partition = named.removeprefix("replica-").rpartition("-")
    if host.isdigit() and partition.isdigit() and topic:
        if actor_name == replica_actor_name(topic, int(partition), int(host)):
            return int(host)
    return None


def describe_actor(actor_name: str) -> str | None:
    """A rafka actor's name in words (``broker 1``, ``the controller of broker 1``, ``replica
    events-0 of broker 1``), or None for a name outside rafka's scheme."""
    broker_id = hosting_broker(actor_name)
    if broker_id is None:
        return None
    if actor_name == broker_actor_name(broker_id):
        return f"broker {broker_id}"
    for build, what in _COMPANIONS:
        if actor_name == build(broker_id):
            return f"{what} of broker {broker_id}"
    topic_partition = actor_name.removeprefix("replica-").rpartition("@")[0]
    return f"replica {topic_partition} of broker {broker_id}"


_COMPANIONS = (
    (controller_actor_name, "the controller"),
    (coordinator_actor_name, "the group coordinator"),
    (transaction_coordinator_actor_name, "the transaction coordinator"),
)
"""The actors a broker starts beside itself, by name builder."""
