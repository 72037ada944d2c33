"""Producer.flush keeps its timeout when a partition leader never answers (a fake cluster)."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

import pytest

from rafka.actors import names
from rafka.clients.producer import Producer
from rafka.protocol.errors import KafkaTimeoutError
from rafka.protocol.messages.produce import ProduceRequest, ProduceResponse

SLACK_S = 0.25


class SilentLeader:
    """A leader replica that takes produce requests and never answers them."""

    def __init__(self) -> None:
        self.requests: list[ProduceRequest] = []

    def produce(self, request: ProduceRequest) -> Future[ProduceResponse]:
        self.requests.append(request)
        return Future()


def test_flush_and_close_keep_their_timeout_when_the_leader_never_answers(
    fake_cluster: Any,
) -> None:
    fake_cluster.add_brokers(1)
    fake_cluster.add_topic("events", [(0, 0)])
    leader = SilentLeader()
    fake_cluster.actors[names.replica_actor_name("events", 0, 0)] = leader
    producer = Producer(transport=fake_cluster.transport, linger_ms=0)
    producer.send("events", b"x", partition=0)
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError):
        producer.flush(timeout=0.3)
    assert time.monotonic() - started < 0.3 + SLACK_S
    assert len(leader.requests) == 1
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError):
        producer.close(timeout=0.3)
    assert time.monotonic() - started < 0.3 + SLACK_S
