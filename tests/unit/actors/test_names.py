"""Tests for rafka.actors.names: an actor's name read back as what it is."""

from __future__ import annotations

import pytest

from rafka.actors import names


@pytest.mark.parametrize(
    ("name", "words"),
    [
        (names.broker_actor_name(12), "broker 12"),
        (names.controller_actor_name(1), "the controller of broker 1"),
        (names.coordinator_actor_name(0), "the group coordinator of broker 0"),
        (names.transaction_coordinator_actor_name(2), "the transaction coordinator of broker 2"),
        (names.replica_actor_name("events", 3, 1), "replica events-3 of broker 1"),
        (names.replica_actor_name("a-b-7", 0, 2), "replica a-b-7-0 of broker 2"),
        (names.replica_actor_name("x@y", 1, 0), "replica x@y-1 of broker 0"),
    ],
)
def test_rafkas_actor_names_read_as_what_they_are(name: str, words: str) -> None:
    assert names.describe_actor(name) == words


@pytest.mark.parametrize(
    "name", ["", "broker-", "broker-x", "my-actor-1", "replica-t@1", "replica-t-0@x", "t-0@1"]
)
def test_other_names_are_not_rafkas(name: str) -> None:
    assert names.describe_actor(name) is None


@pytest.mark.parametrize(
    ("name", "broker_id"),
    [
        (names.broker_actor_name(12), 12),
        (names.controller_actor_name(1), 1),
        (names.coordinator_actor_name(0), 0),
        (names.transaction_coordinator_actor_name(2), 2),
        (names.replica_actor_name("a-b-7", 0, 2), 2),
        (names.replica_actor_name("x@y", 1, 3), 3),
        (names.METRICS_ENDPOINT, None),
        ("my-actor-1", None),
    ],
)
def test_each_actor_of_a_broker_names_its_broker(name: str, broker_id: int | None) -> None:
    assert names.hosting_broker(name) == broker_id
