"""Tests for Admin.describe_log_dirs (rafka.clients.log_dir_admin) against an in-memory fake
cluster: every live broker by default, the brokers asked for, and a missing or silent broker."""

from __future__ import annotations

import pytest

from rafka.actors import names
from rafka.clients.admin import Admin
from rafka.clients.transport import UnreachableError
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.admin import LogDirDescription, ReplicaLogDirInfo
from rafka.protocol.types import TopicPartition


def log_dir(broker_id: int) -> tuple[LogDirDescription, ...]:
    """Broker ``broker_id``'s one log directory, holding events-<broker_id>."""
    return (
        LogDirDescription(
            f"/data/broker-{broker_id}",
            Errors.NONE,
            {TopicPartition("events", broker_id): ReplicaLogDirInfo(100 * broker_id, broker_id)},
        ),
    )


@pytest.fixture
def admin(fake_cluster) -> Admin:
    """An admin client of three fake brokers that describe their log directories."""
    fake_cluster.add_brokers(3)
    for broker_id in range(3):
        fake_cluster.broker(broker_id).describe_log_dirs = lambda b=broker_id: log_dir(b)
    return Admin(request_timeout_ms=2000)


def test_every_live_broker_describes_its_log_dirs_by_default(admin: Admin) -> None:
    assert admin.describe_log_dirs() == {b: log_dir(b) for b in range(3)}


def test_only_the_brokers_asked_for_are_described(fake_cluster, admin: Admin) -> None:
    assert admin.describe_log_dirs([2, 0]) == {0: log_dir(0), 2: log_dir(2)}
    asked = {e for e, m in fake_cluster.transport.sent if m == "describe_log_dirs"}
    assert asked == {names.broker_actor_name(0), names.broker_actor_name(2)}


def test_a_broker_that_does_not_exist_is_broker_not_available(admin: Admin) -> None:
    with pytest.raises(RafkaError, match=r"BROKER_NOT_AVAILABLE.*\[7\]") as raised:
        admin.describe_log_dirs([0, 7])
    assert raised.value.error is Errors.BROKER_NOT_AVAILABLE


def test_a_broker_that_dies_is_broker_not_available_naming_it(fake_cluster, admin: Admin) -> None:
    def dead() -> None:
        raise UnreachableError("the broker's process died")

    fake_cluster.broker(1).describe_log_dirs = dead
    with pytest.raises(RafkaError, match=r"BROKER_NOT_AVAILABLE.*broker 1"):
        admin.describe_log_dirs()
