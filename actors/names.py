"""One naming scheme for rafka's Ray actors, so every process finds every actor the same way.

All of a cluster's actors live in the cluster's Ray namespace (default ``rafka``).
"""

from __future__ import annotations

DEFAULT_NAMESPACE = "rafka"
BROKER_PREFIX = "broker-"


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
