"""The transactional producer against a fake cluster whose transaction coordinator follows the
contract of protocol/messages/transactions.py: the order of its requests, retries, fencing and
abortable errors."""

from __future__ import annotations

from typing import Any

import pytest

from rafka.actors import names
from rafka.clients.prepared_transaction import PreparedTransaction, end_prepared_transaction
from rafka.clients.producer import Producer
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.produce import ProduceRequest, ProduceResponse
from rafka.protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from rafka.protocol.records.batch import read_header
from rafka.protocol.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

TIMEOUT_S = 5
PRODUCER_ID = 5000
NAMESPACE = names.DEFAULT_NAMESPACE


class Journal:
    """What the fake actors were asked, in order: (actor, what)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, Any]] = []

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.entries]

    def of(self, kind: str) -> list[Any]:
        return [what for k, what in self.entries if k == kind]


class FakeTransactionCoordinator:
    """Broker 0's transaction coordinator: each InitProducerId bumps the epoch; ``errors`` scripts
    the next answers of a method."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.epoch = -1
        self.errors: dict[str, list[Errors]] = {}

    def _scripted(self, method: str, request: Any) -> Errors | None:
        self.journal.entries.append((method, request))
        queued = self.errors.get(method)
        return queued.pop(0) if queued else None

    def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        error = self._scripted("init_producer_id", request)
        if error is not None:
            return InitProducerIdResponse(error, error_message="scripted")
        self.epoch += 1
        return InitProducerIdResponse(Errors.NONE, PRODUCER_ID, self.epoch)

    def add_partitions_to_txn(self, request: AddPartitionsToTxnRequest) -> Any:
        error = self._scripted("add_partitions_to_txn", request)
        if error is not None:
            return AddPartitionsToTxnResponse(
                error, tuple((tp, error) for tp in request.partitions), "scripted"
            )
        return AddPartitionsToTxnResponse(
            Errors.NONE, tuple((tp, Errors.NONE) for tp in request.partitions)
        )

    def add_offsets_to_txn(self, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
        return AddOffsetsToTxnResponse(self._scripted("add_offsets_to_txn", request) or Errors.NONE)

    def end_txn(self, request: EndTxnRequest) -> EndTxnResponse:
        return EndTxnResponse(self._scripted("end_txn", request) or Errors.NONE)


class JournalLeader:
    """A leader replica appending every batch and noting it in the journal."""

    def __init__(self, journal: Journal, tp: TopicPartition) -> None:
        self.journal = journal
        self.tp = tp

    def produce(self, request: ProduceRequest) -> ProduceResponse:
        self.journal.entries.append(("produce", (self.tp, read_header(request.records))))
        return ProduceResponse(Errors.NONE, base_offset=0)


class TxnOffsetsCoordinator:
    """A group coordinator taking transactional offset commits (its other methods are not used)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.errors: list[Errors] = []

    def txn_offset_commit(self, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
        self.journal.entries.append(("txn_offset_commit", request))
        error = self.errors.pop(0) if self.errors else Errors.NONE
        return TxnOffsetCommitResponse(
            Errors.NONE,
            tuple((TopicPartition(e.topic, e.partition), error) for e in request.offsets),
        )


class TxnCluster:
    """The fake cluster's parts a test pokes at."""

    def __init__(self, fake: Any) -> None:
        self.fake = fake
        self.journal = Journal()
        fake.add_brokers(1)
        fake.add_topic("events", [(0, 0), (0, 0)])
        for partition in (0, 1):
            fake.actors[names.replica_actor_name("events", partition, 0)] = JournalLeader(
                self.journal, TopicPartition("events", partition)
            )
        self.coordinator = FakeTransactionCoordinator(self.journal)
        fake.actors[names.transaction_coordinator_actor_name(0)] = self.coordinator
        self.groups = TxnOffsetsCoordinator(self.journal)
        fake.actors[names.coordinator_actor_name(0)] = self.groups

    def producer(self, **configs: Any) -> Producer:
        settings = {"transactional_id": "txn", "linger_ms": 0, "max_block_ms": 2000, **configs}
        return Producer(transport=self.fake.transport, **settings)


@pytest.fixture
def cluster(fake_cluster: Any) -> TxnCluster:
    return TxnCluster(fake_cluster)


def error_of(call: Any, *args: Any) -> RafkaError:
    with pytest.raises(RafkaError) as raised:
        call(*args)
    return raised.value


def test_a_committed_transaction_adds_each_partition_before_its_first_batch(
    cluster: TxnCluster,
) -> None:
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        futures = [producer.send("events", b"x", partition=p) for p in (0, 1, 0)]
        producer.commit_transaction()
        assert all(f.succeeded() for f in futures)
    journal = cluster.journal
    assert journal.of("init_producer_id") == [InitProducerIdRequest("txn", 60_000)]
    for tp in (TopicPartition("events", 0), TopicPartition("events", 1)):
        first_produce = next(
            i for i, (k, what) in enumerate(journal.entries) if k == "produce" and what[0] == tp
        )
        added = [
            i
            for i, (k, what) in enumerate(journal.entries)
            if k == "add_partitions_to_txn" and tp in what.partitions
        ]
        assert added and added[0] < first_produce
    headers = [header for _, header in journal.of("produce")]
    assert all(h.is_transactional and h.producer_id == PRODUCER_ID for h in headers)
    assert journal.kinds()[-1] == "end_txn"
    assert journal.of("end_txn") == [EndTxnRequest("txn", PRODUCER_ID, 0, True)]


def test_an_aborted_transaction_ends_with_an_abort_and_the_next_one_can_commit(
    cluster: TxnCluster,
) -> None:
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("events", b"x", partition=0).get(TIMEOUT_S)
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send("events", b"y", partition=0).get(TIMEOUT_S)
        producer.commit_transaction()
    assert [r.committed for r in cluster.journal.of("end_txn")] == [False, True]
    # Each transaction adds its partitions afresh.
    assert len(cluster.journal.of("add_partitions_to_txn")) == 2


def test_an_empty_transaction_ends_without_asking_the_coordinator(cluster: TxnCluster) -> None:
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.commit_transaction()
        producer.begin_transaction()
        producer.abort_transaction()
    assert cluster.journal.of("end_txn") == []


def test_send_before_begin_transaction_says_to_begin_one(cluster: TxnCluster) -> None:
    with cluster.producer() as producer:
        error = error_of(producer.send, "events", b"x")
        assert error.error is Errors.INVALID_TXN_STATE
        assert "init_transactions()" in str(error)
        producer.init_transactions()
        error = error_of(producer.send, "events", b"x")
        assert "begin_transaction()" in str(error)


def test_commit_before_init_transactions_says_to_call_it(cluster: TxnCluster) -> None:
    with cluster.producer() as producer:
        error = error_of(producer.commit_transaction)
        assert error.error is Errors.INVALID_TXN_STATE
        assert "init_transactions()" in str(error)


def test_transactional_calls_on_a_producer_without_a_transactional_id_are_refused(
    fake_cluster: Any,
) -> None:
    with Producer(transport=fake_cluster.transport) as producer:
        for call in (producer.init_transactions, producer.begin_transaction):
            error = error_of(call)
            assert error.error is Errors.INVALID_TXN_STATE
            assert "transactional_id" in str(error)


def test_coordinator_answers_that_a_retry_fixes_are_retried(cluster: TxnCluster) -> None:
    cluster.coordinator.errors = {
        "init_producer_id": [Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS],
        "add_partitions_to_txn": [Errors.CONCURRENT_TRANSACTIONS],
        "end_txn": [Errors.COORDINATOR_NOT_AVAILABLE],
    }
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("events", b"x", partition=0)
        producer.commit_transaction()
    kinds = cluster.journal.kinds()
    assert kinds.count("init_producer_id") == 3
    assert kinds.count("add_partitions_to_txn") == 2
    assert kinds.count("end_txn") == 2
    # NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE make the producer look the coordinator up again.
    assert len(cluster.fake.broker(0).find_coordinator_calls) >= 3


def test_a_producer_fenced_by_a_newer_instance_fails_every_later_call(cluster: TxnCluster) -> None:
    cluster.coordinator.errors = {"end_txn": [Errors.PRODUCER_FENCED]}
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("events", b"x", partition=0).get(TIMEOUT_S)
        assert error_of(producer.commit_transaction).error is Errors.PRODUCER_FENCED
        for call, args in (
            (producer.send, ("events", b"y")),
            (producer.begin_transaction, ()),
            (producer.abort_transaction, ()),
        ):
            error = error_of(call, *args)
            assert error.error is Errors.PRODUCER_FENCED
            assert "create a new one" in str(error)


def test_a_fenced_init_transactions_is_fatal(cluster: TxnCluster) -> None:
    cluster.coordinator.errors = {"init_producer_id": [Errors.PRODUCER_FENCED]}
    with cluster.producer() as producer:
        assert error_of(producer.init_transactions).error is Errors.PRODUCER_FENCED
        assert error_of(producer.begin_transaction).error is Errors.PRODUCER_FENCED


def test_an_abortable_error_fails_the_records_and_only_abort_is_allowed(
    cluster: TxnCluster,
) -> None:
    cluster.coordinator.errors = {"add_partitions_to_txn": [Errors.TOPIC_AUTHORIZATION_FAILED]}
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        future = producer.send("events", b"x", partition=0)
        with pytest.raises(RafkaError) as raised:
            future.get(TIMEOUT_S)
        assert raised.value.error is Errors.TOPIC_AUTHORIZATION_FAILED
        for call, args in ((producer.send, ("events", b"y")), (producer.commit_transaction, ())):
            error = error_of(call, *args)
            assert error.error is Errors.TOPIC_AUTHORIZATION_FAILED
            assert "abort_transaction()" in str(error)
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send("events", b"z", partition=0).get(TIMEOUT_S)
        producer.commit_transaction()
    assert cluster.journal.of("produce")[-1][1].producer_epoch == 0


def test_abort_fails_the_records_not_sent_yet(cluster: TxnCluster) -> None:
    with cluster.producer(linger_ms=60_000) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        future = producer.send("events", b"x", partition=0)
        producer.abort_transaction()
        with pytest.raises(RafkaError) as raised:
            future.get(0)
        assert raised.value.error is Errors.OPERATION_NOT_ATTEMPTED
    assert cluster.journal.of("produce") == []


def test_a_lost_sequence_in_a_transaction_aborts_it_with_a_new_epoch(cluster: TxnCluster) -> None:
    leader = cluster.fake.actors[names.replica_actor_name("events", 0, 0)]
    answers = [Errors.OUT_OF_ORDER_SEQUENCE_NUMBER]

    def produce(request: ProduceRequest) -> ProduceResponse:
        if answers:
            return ProduceResponse(answers.pop(0))
        return JournalLeader.produce(leader, request)

    leader.produce = produce
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        with pytest.raises(RafkaError):
            producer.send("events", b"x", partition=0).get(TIMEOUT_S)
        assert error_of(producer.commit_transaction).error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send("events", b"y", partition=0).get(TIMEOUT_S)
        producer.commit_transaction()
    inits = cluster.journal.of("init_producer_id")
    assert inits[-1] == InitProducerIdRequest("txn", 60_000, PRODUCER_ID, 0)
    header = cluster.journal.of("produce")[-1][1]
    assert (header.producer_epoch, header.base_sequence) == (1, 0)


def test_offsets_join_the_transaction_through_both_coordinators(cluster: TxnCluster) -> None:
    group = ConsumerGroupMetadata("readers", 4, "member-1", None)
    offsets = {
        TopicPartition("events", 1): OffsetAndMetadata(7, "m"),
        TopicPartition("events", 0): OffsetAndMetadata(3, ""),
    }
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send_offsets_to_transaction(offsets, group)
        producer.commit_transaction()
    kinds = cluster.journal.kinds()
    assert kinds.index("add_offsets_to_txn") < kinds.index("txn_offset_commit")
    assert cluster.journal.of("add_offsets_to_txn") == [
        AddOffsetsToTxnRequest("txn", PRODUCER_ID, 0, "readers")
    ]
    (commit,) = cluster.journal.of("txn_offset_commit")
    assert (commit.group_id, commit.generation_id, commit.member_id) == ("readers", 4, "member-1")
    assert [(e.topic, e.partition, e.offset, e.metadata) for e in commit.offsets] == [
        ("events", 0, 3, ""),
        ("events", 1, 7, "m"),
    ]
    assert cluster.journal.of("end_txn") == [EndTxnRequest("txn", PRODUCER_ID, 0, True)]


def test_offsets_may_name_the_group_by_its_id(cluster: TxnCluster) -> None:
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send_offsets_to_transaction({TopicPartition("events", 0): 5}, "readers")
        producer.commit_transaction()
    (commit,) = cluster.journal.of("txn_offset_commit")
    assert (commit.group_id, commit.generation_id, commit.member_id) == ("readers", -1, "")


def test_a_fenced_group_member_makes_the_transaction_abortable(cluster: TxnCluster) -> None:
    cluster.groups.errors = [Errors.ILLEGAL_GENERATION]
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        error = error_of(
            producer.send_offsets_to_transaction,
            {TopicPartition("events", 0): 5},
            ConsumerGroupMetadata("readers", 1, "old-member"),
        )
        assert error.error is Errors.ILLEGAL_GENERATION
        assert "abort_transaction()" in str(error_of(producer.commit_transaction))
        producer.abort_transaction()


def test_prepare_flushes_the_transaction_and_sends_no_end_txn(cluster: TxnCluster) -> None:
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        future = producer.send("events", b"x", partition=0)
        prepared = producer.prepare_transaction()
        assert future.succeeded()
    assert prepared == PreparedTransaction("txn", PRODUCER_ID, 0, started=True)
    assert cluster.journal.of("end_txn") == []


def test_an_empty_prepared_transaction_is_not_started(cluster: TxnCluster) -> None:
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        prepared = producer.prepare_transaction()
    assert not prepared.started
    end_prepared_transaction(prepared, True, NAMESPACE, timeout_ms=2000)
    assert cluster.journal.of("end_txn") == []


def test_after_prepare_every_transactional_call_is_refused_and_close_aborts_nothing(
    cluster: TxnCluster,
) -> None:
    producer = cluster.producer()
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("events", b"x", partition=0)
    producer.prepare_transaction()
    calls: list[tuple[Any, ...]] = [
        (producer.commit_transaction,),
        (producer.abort_transaction,),
        (producer.prepare_transaction,),
        (producer.begin_transaction,),
        (producer.init_transactions,),
        (producer.send, "events", b"y"),
        (producer.send_offsets_to_transaction, {TopicPartition("in", 0): 1}, "group"),
    ]
    for call, *args in calls:
        error = error_of(call, *args)
        assert error.error is Errors.INVALID_TXN_STATE
        assert "after prepare_transaction()" in str(error)
    producer.close()
    assert cluster.journal.of("end_txn") == []
    assert len(cluster.journal.of("produce")) == 1


def test_a_prepared_transaction_is_committed_or_aborted_by_its_producer_id_and_epoch(
    cluster: TxnCluster,
) -> None:
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("events", b"x", partition=1)
        prepared = producer.prepare_transaction()
    cluster.coordinator.errors = {"end_txn": [Errors.COORDINATOR_NOT_AVAILABLE]}
    end_prepared_transaction(prepared, True, NAMESPACE, timeout_ms=2000)
    end_prepared_transaction(prepared, False, NAMESPACE, timeout_ms=2000)
    assert cluster.journal.of("end_txn") == [
        EndTxnRequest("txn", PRODUCER_ID, 0, True),
        EndTxnRequest("txn", PRODUCER_ID, 0, True),
        EndTxnRequest("txn", PRODUCER_ID, 0, False),
    ]


def test_ending_a_prepared_transaction_raises_the_coordinators_error(cluster: TxnCluster) -> None:
    prepared = PreparedTransaction("txn", PRODUCER_ID, 0, started=True)
    cluster.coordinator.errors = {"end_txn": [Errors.PRODUCER_FENCED]}
    error = error_of(end_prepared_transaction, prepared, True, NAMESPACE, None, 2000)
    assert error.error is Errors.PRODUCER_FENCED
    assert "'txn'" in str(error) and "commit" in str(error)


def test_a_prepare_after_an_abortable_error_raises_it_and_abort_stays_allowed(
    cluster: TxnCluster,
) -> None:
    cluster.coordinator.errors = {"add_partitions_to_txn": [Errors.TOPIC_AUTHORIZATION_FAILED]}
    with cluster.producer() as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("events", b"x", partition=0)
        error = error_of(producer.prepare_transaction)
        assert error.error is Errors.TOPIC_AUTHORIZATION_FAILED
        producer.abort_transaction()
