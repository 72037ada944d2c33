"""The controller's channels to the brokers on a real cluster: every control request is answered,
and a broker whose replica cannot apply a LeaderAndIsr tells the controller so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

from rafka.actors import names
from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.log.files import partition_dir_name
from rafka.testing import serving_replica, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NS = "rafka-test"


def controller_state(admin: Admin) -> dict[str, Any]:
    """The active controller's describe()."""
    controller_id = admin.describe_cluster().controller_id
    controller = ray.get_actor(names.controller_actor_name(controller_id), namespace=NS)
    return ray.get(controller.describe.remote(), timeout=30)


@pytest.fixture
def broken_log_dirs(cluster: LocalCluster, topic_name: str) -> Iterator[list[Path]]:
    """A plain file where each broker would create partition 0's log directory: opening the log
    fails with a real OSError, as on a broken disk. Removed afterwards, so the broker's supervisor
    can restart the replica and the shared cluster is whole again."""
    blocked = []
    for broker in cluster.brokers.values():
        log_dirs = ray.get(broker.describe.remote(), timeout=30)["log_dirs"]
        path = Path(log_dirs) / partition_dir_name(topic_name, 0)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not a directory")
        blocked.append(path)
    yield blocked
    for path in blocked:
        path.unlink(missing_ok=True)


def test_every_control_request_sent_to_a_broker_is_answered(admin: Admin, topic_name: str) -> None:
    admin.create_topic(topic_name, 3, 2)

    def settled() -> dict[str, Any] | None:
        state = controller_state(admin)
        channels = state["channels"]
        idle = len(channels) == 3 and all(c["queued"] == 0 for c in channels.values())
        return state if idle else None

    state = wait_until(settled, 60, "every broker to answer the controller's requests")
    assert all(channel["answered"] > 0 for channel in state["channels"].values())


def test_a_replica_that_cannot_open_its_log_is_reported_to_the_controller(
    admin: Admin, topic_name: str, broken_log_dirs: list[Path]
) -> None:
    before = controller_state(admin)["control_response_errors"]
    leader = admin.create_topic(topic_name, 1, 1).partitions[0].leader
    expected = f"broker {leader} failed leader_and_isr for {topic_name}-0: KAFKA_STORAGE_ERROR"
    state = wait_until(
        lambda: (
            (s := controller_state(admin))["recent_control_response_errors"]
            and expected in s["recent_control_response_errors"]
            and s
        ),
        60,
        f"the controller to hear {expected!r}",
    )
    assert state["control_response_errors"] > before
    for path in broken_log_dirs:
        path.unlink(missing_ok=True)
    broken_log_dirs.clear()
    serving_replica(topic_name, 0, leader, NS, timeout_s=60)
