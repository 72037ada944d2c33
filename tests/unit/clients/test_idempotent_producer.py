"""The idempotent producer against a fake cluster: producer ids, sequence numbers, and what it does
with each sequence-related answer of a leader."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

import pytest

from rafka.actors import names
from rafka.clients.producer import Producer
from rafka.clients.transactional_requests import HEDGE_AFTER_S
from rafka.protocol.errors import Errors, InvalidConfigError, KafkaTimeoutError, RafkaError
from rafka.protocol.messages.produce import ACKS_ALL, ProduceRequest, ProduceResponse
from rafka.protocol.messages.transactions import InitProducerIdRequest, InitProducerIdResponse
from rafka.protocol.records.batch import (
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
    read_header,
)
from rafka.testing import wait_until

TIMEOUT_S = 5


class SequencedLeader:
    """A leader replica keeping each produce request's batch header; answers the scripted
    ``errors`` first, then appends."""

    def __init__(self) -> None:
        self.requests: list[ProduceRequest] = []
        self.errors: list[Errors] = []
        self.log_end = 0

    @property
    def headers(self) -> list[BatchHeader]:
        return [read_header(request.records) for request in self.requests]

    def produce(self, request: ProduceRequest) -> ProduceResponse:
        self.requests.append(request)
        if self.errors:
            return ProduceResponse(self.errors.pop(0), error_message="scripted")
        base, self.log_end = self.log_end, self.log_end + read_header(request.records).record_count
        return ProduceResponse(Errors.NONE, base_offset=base)


@pytest.fixture
def leader(fake_cluster: Any) -> SequencedLeader:
    """Topic "events" with one partition, led by broker 0 through a SequencedLeader."""
    fake_cluster.add_brokers(1)
    fake_cluster.add_topic("events", [(0, 0)])
    found = SequencedLeader()
    fake_cluster.actors[names.replica_actor_name("events", 0, 0)] = found
    return found


def producer_id_requests(fake_cluster: Any) -> list[InitProducerIdRequest]:
    return getattr(fake_cluster.broker(0), "init_producer_id_requests", [])


def stamps(leader: SequencedLeader) -> list[tuple[int, int, int]]:
    return [(h.producer_id, h.producer_epoch, h.base_sequence) for h in leader.headers]


def test_batches_carry_the_brokers_producer_id_and_consecutive_sequences(
    fake_cluster: Any, leader: SequencedLeader
) -> None:
    with Producer(transport=fake_cluster.transport, linger_ms=0) as producer:
        producer.send("events", b"a").get(TIMEOUT_S)
        producer.send("events", b"b").get(TIMEOUT_S)
        producer.send("events", b"c").get(TIMEOUT_S)
    assert stamps(leader) == [(1000, 0, 0), (1000, 0, 1), (1000, 0, 2)]
    assert {r.acks for r in leader.requests} == {ACKS_ALL}
    assert producer_id_requests(fake_cluster) == [InitProducerIdRequest()]


def test_a_batch_of_several_records_advances_the_sequence_by_its_record_count(
    fake_cluster: Any, leader: SequencedLeader
) -> None:
    with Producer(transport=fake_cluster.transport, linger_ms=10_000) as producer:
        for value in (b"a", b"b", b"c"):
            producer.send("events", value)
        producer.flush(TIMEOUT_S)
        producer.send("events", b"d")
        producer.flush(TIMEOUT_S)
    assert [h.base_sequence for h in leader.headers] == [0, 3]
    assert [h.record_count for h in leader.headers] == [3, 1]


def test_a_retried_batch_is_resent_with_the_same_bytes_and_sequence(
    fake_cluster: Any, leader: SequencedLeader
) -> None:
    leader.errors.append(Errors.NOT_LEADER_OR_FOLLOWER)
    with Producer(transport=fake_cluster.transport, linger_ms=0, retry_backoff_ms=1) as producer:
        assert producer.send("events", b"a").get(TIMEOUT_S).offset == 0
    assert len(leader.requests) == 2
    assert leader.requests[0].records == leader.requests[1].records


def test_a_duplicate_sequence_answer_counts_as_success(
    fake_cluster: Any, leader: SequencedLeader
) -> None:
    leader.errors.append(Errors.DUPLICATE_SEQUENCE_NUMBER)
    with Producer(transport=fake_cluster.transport, linger_ms=0) as producer:
        producer.send("events", b"a").get(TIMEOUT_S)
        assert producer.metrics()["producer-metrics"]["record-error-total"] == 0
    assert len(leader.requests) == 1


@pytest.mark.parametrize("lost", [Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.UNKNOWN_PRODUCER_ID])
def test_a_leader_that_lost_the_producers_state_gets_the_batch_again_under_a_new_id(
    fake_cluster: Any, leader: SequencedLeader, lost: Errors
) -> None:
    leader.errors.append(lost)
    with Producer(transport=fake_cluster.transport, linger_ms=0) as producer:
        producer.send("events", b"a").get(TIMEOUT_S)
        producer.send("events", b"b").get(TIMEOUT_S)
    assert stamps(leader) == [(1000, 0, 0), (1001, 0, 0), (1001, 0, 1)]
    # KIP-360: the producer names its current id and epoch when asking for a new one.
    assert producer_id_requests(fake_cluster)[1] == InitProducerIdRequest(
        None, 60_000, producer_id=1000, producer_epoch=0
    )


def test_a_batch_that_may_have_been_written_fails_rather_than_risk_a_duplicate(
    fake_cluster: Any, leader: SequencedLeader
) -> None:
    leader.errors += [Errors.REQUEST_TIMED_OUT, Errors.UNKNOWN_PRODUCER_ID]
    with Producer(transport=fake_cluster.transport, linger_ms=0, retry_backoff_ms=1) as producer:
        with pytest.raises(RafkaError) as raised:
            producer.send("events", b"a").get(TIMEOUT_S)
        assert raised.value.error is Errors.UNKNOWN_PRODUCER_ID
        producer.send("events", b"b").get(TIMEOUT_S)
    assert stamps(leader)[-1] == (1001, 0, 0)


def test_a_batch_that_failed_after_taking_a_sequence_makes_the_next_use_a_new_id(
    fake_cluster: Any, leader: SequencedLeader
) -> None:
    leader.errors.append(Errors.MESSAGE_TOO_LARGE)
    with Producer(transport=fake_cluster.transport, linger_ms=0) as producer:
        with pytest.raises(RafkaError):
            producer.send("events", b"a").get(TIMEOUT_S)
        producer.send("events", b"b").get(TIMEOUT_S)
    assert stamps(leader) == [(1000, 0, 0), (1001, 0, 0)]


@pytest.mark.parametrize("fenced", [Errors.INVALID_PRODUCER_EPOCH, Errors.PRODUCER_FENCED])
def test_a_fenced_epoch_fails_the_producer(
    fake_cluster: Any, leader: SequencedLeader, fenced: Errors
) -> None:
    leader.errors.append(fenced)
    producer = Producer(transport=fake_cluster.transport, linger_ms=0)
    with pytest.raises(RafkaError) as raised:
        producer.send("events", b"a").get(TIMEOUT_S)
    assert raised.value.error is fenced
    with pytest.raises(RafkaError) as raised:
        producer.send("events", b"b")
    assert raised.value.error is fenced
    assert "create a new one" in str(raised.value)
    assert len(leader.requests) == 1
    producer.close(TIMEOUT_S)


def test_no_producer_id_within_max_block_ms_fails_the_waiting_records(
    fake_cluster: Any, leader: SequencedLeader
) -> None:
    fake_cluster.broker(0).init_producer_id = lambda request: InitProducerIdResponse(
        Errors.COORDINATOR_LOAD_IN_PROGRESS
    )
    producer = Producer(transport=fake_cluster.transport, linger_ms=0, max_block_ms=300)
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match="no producer id"):
        producer.send("events", b"a").get(TIMEOUT_S)
    assert time.monotonic() - started < TIMEOUT_S
    assert leader.requests == []
    producer.close(TIMEOUT_S)


def test_a_producer_with_acks_1_is_plain_and_asks_for_no_producer_id(
    fake_cluster: Any, leader: SequencedLeader
) -> None:
    with Producer(transport=fake_cluster.transport, acks=1, linger_ms=0) as producer:
        assert not producer.idempotent
        producer.send("events", b"a").get(TIMEOUT_S)
    assert [(h.producer_id, h.base_sequence) for h in leader.headers] == [
        (NO_PRODUCER_ID, NO_SEQUENCE)
    ]
    assert producer_id_requests(fake_cluster) == []


def test_an_idle_idempotent_producer_asks_for_no_producer_id(fake_cluster: Any) -> None:
    fake_cluster.add_brokers(1)
    Producer(transport=fake_cluster.transport).close(TIMEOUT_S)
    assert producer_id_requests(fake_cluster) == []


@pytest.mark.parametrize(
    ("configs", "named"),
    [
        ({"enable_idempotence": True, "acks": 1}, "acks"),
        ({"enable_idempotence": True, "max_in_flight_requests_per_connection": 6}, "max_in_flight"),
        ({"transactional_id": "txn", "acks": 0}, "acks"),
        ({"transactional_id": ""}, "transactional_id"),
    ],
)
def test_settings_that_break_idempotence_are_refused_naming_the_setting(
    fake_cluster: Any, configs: dict[str, Any], named: str
) -> None:
    with pytest.raises(InvalidConfigError, match=named):
        Producer(transport=fake_cluster.transport, **configs)


def test_records_wait_for_the_producer_id_without_blocking_send(
    fake_cluster: Any, leader: SequencedLeader
) -> None:
    answers: list[InitProducerIdResponse] = []
    broker = fake_cluster.broker(0)
    original = broker.init_producer_id

    def slow(request: InitProducerIdRequest) -> InitProducerIdResponse:
        if not answers:
            answers.append(InitProducerIdResponse(Errors.COORDINATOR_LOAD_IN_PROGRESS))
            return answers[-1]
        return original(request)

    broker.init_producer_id = slow
    with Producer(transport=fake_cluster.transport, linger_ms=0) as producer:
        futures = [producer.send("events", bytes([i])) for i in range(3)]
        wait_until(lambda: all(f.is_done for f in futures), TIMEOUT_S, "the records")
        assert [f.get(0).offset for f in futures] == [0, 1, 2]
    assert all(h.producer_id == 1000 for h in leader.headers)


def test_a_broker_that_never_answers_does_not_hold_up_the_producer_id(
    fake_cluster: Any,
) -> None:
    fake_cluster.add_brokers(2)
    fake_cluster.add_topic("events", [(0, 0)])
    leader = SequencedLeader()
    fake_cluster.actors[names.replica_actor_name("events", 0, 0)] = leader
    asked: list[InitProducerIdRequest] = []

    def frozen(request: InitProducerIdRequest) -> Future[InitProducerIdResponse]:
        asked.append(request)
        return Future()  # a paused broker: the answer never comes

    fake_cluster.broker(0).init_producer_id = frozen
    fake_cluster.broker(1).next_producer_id = 2000
    with Producer(transport=fake_cluster.transport, linger_ms=0) as producer:
        started = time.monotonic()
        producer.send("events", b"a").get(TIMEOUT_S)
        assert time.monotonic() - started < HEDGE_AFTER_S + 1.0
    assert asked
    assert stamps(leader) == [(2000, 0, 0)]
