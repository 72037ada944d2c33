"""The producer's deadlines against leaders that do not answer (a fake cluster).

flush and close keep their timeouts; a request is sent again once its leader lost leadership or
request_timeout_ms passed, while a slow answer from the partition's leader is still waited for."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

import pytest

from rafka.actors import names
from rafka.clients.cluster import METADATA_GRACE_S
from rafka.clients.producer import IN_FLIGHT_CHECK_S, Producer
from rafka.protocol.errors import Errors, KafkaTimeoutError
from rafka.protocol.messages.metadata import (
    BrokerMetadata,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from rafka.protocol.messages.produce import ProduceRequest, ProduceResponse
from rafka.protocol.messages.transactions import InitProducerIdRequest, InitProducerIdResponse
from rafka.testing import wait_until

SLACK_S = 0.25


class SilentLeader:
    """A leader replica that takes produce requests and answers only when a test says so."""

    def __init__(self) -> None:
        self.requests: list[ProduceRequest] = []
        self.answers: list[Future[ProduceResponse]] = []

    def produce(self, request: ProduceRequest) -> Future[ProduceResponse]:
        self.requests.append(request)
        self.answers.append(Future())
        return self.answers[-1]


def _silent_leader(fake_cluster: Any) -> SilentLeader:
    """One broker leading the one partition of topic "events" through a SilentLeader."""
    fake_cluster.add_brokers(1)
    fake_cluster.add_topic("events", [(0, 0)])
    leader = SilentLeader()
    fake_cluster.actors[names.replica_actor_name("events", 0, 0)] = leader
    return leader


def test_flush_and_close_keep_their_timeout_when_the_leader_never_answers(
    fake_cluster: Any,
) -> None:
    leader = _silent_leader(fake_cluster)
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


class AnsweringLeader:
    """A leader replica that acknowledges every produce request at once."""

    def __init__(self) -> None:
        self.requests: list[ProduceRequest] = []

    def produce(self, request: ProduceRequest) -> ProduceResponse:
        self.requests.append(request)
        return ProduceResponse(Errors.NONE, base_offset=len(self.requests) - 1)


class Leadership:
    """A broker answering metadata for one single-partition topic whose leader a test moves."""

    def __init__(self, topic: str, brokers: int) -> None:
        self.topic = topic
        self.brokers = brokers
        self.leader = 0
        self.leader_epoch = 0

    def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        return InitProducerIdResponse(Errors.NONE, 1000, 0)

    def metadata(self, request: MetadataRequest) -> MetadataResponse:
        replicas = tuple(range(self.brokers))
        partition = PartitionMetadata(0, self.leader, self.leader_epoch, replicas, replicas)
        return MetadataResponse(
            tuple(BrokerMetadata(b, "127.0.0.1", f"node-{b}") for b in replicas),
            0,
            (TopicMetadata(self.topic, (partition,)),),
            "fake-cluster",
        )


def test_a_request_to_a_leader_that_lost_leadership_is_sent_to_the_new_leader(
    fake_cluster: Any,
) -> None:
    fake_cluster.add_brokers(2)
    leadership = Leadership("events", 2)
    for broker_id in (0, 1):
        fake_cluster.actors[names.broker_actor_name(broker_id)] = leadership
    frozen, new_leader = SilentLeader(), AnsweringLeader()
    fake_cluster.actors[names.replica_actor_name("events", 0, 0)] = frozen
    fake_cluster.actors[names.replica_actor_name("events", 0, 1)] = new_leader
    producer = Producer(transport=fake_cluster.transport, acks="all", linger_ms=0)
    future = producer.send("events", b"x", partition=0)
    wait_until(lambda: frozen.requests, 5, "the request to the first leader")
    leadership.leader, leadership.leader_epoch = 1, 1
    moved = time.monotonic()
    assert future.get(timeout=5).offset == 0
    assert time.monotonic() - moved < IN_FLIGHT_CHECK_S + METADATA_GRACE_S + 1.0
    assert len(new_leader.requests) == 1
    producer.close(timeout=5)


def test_a_request_unanswered_for_request_timeout_ms_is_sent_again(fake_cluster: Any) -> None:
    leader = _silent_leader(fake_cluster)
    producer = Producer(
        transport=fake_cluster.transport, linger_ms=0, request_timeout_ms=600, retry_backoff_ms=10
    )
    future = producer.send("events", b"x", partition=0)
    wait_until(lambda: len(leader.requests) >= 2, 5, "the request to be sent again")
    assert leader.requests[0].records == leader.requests[1].records
    leader.answers[0].set_result(ProduceResponse(Errors.NONE, base_offset=3))
    leader.answers[1].set_result(ProduceResponse(Errors.NONE, base_offset=5))
    assert future.get(timeout=5).offset == 5  # the answer to the request given up on is ignored
    producer.close(timeout=5)


def test_a_slow_answer_from_the_same_leader_is_waited_for(fake_cluster: Any) -> None:
    leader = _silent_leader(fake_cluster)
    producer = Producer(transport=fake_cluster.transport, linger_ms=0)
    future = producer.send("events", b"x", partition=0)
    wait_until(lambda: leader.requests, 5, "the request")
    time.sleep(3 * IN_FLIGHT_CHECK_S)  # several in-flight checks must pass without a resend
    assert len(leader.requests) == 1
    pending = leader.answers[0]
    pending.set_result(ProduceResponse(Errors.NONE, base_offset=7))
    assert future.get(timeout=5).offset == 7
    producer.close(timeout=5)
