"""The sink's ``transactional.id.prefix``: option parsing, one transaction per task around the
task's sends, prepared by the task and ended by the driver (a two-phase commit), with a fake
producer and a fake EndTxn in place of the cluster (no JVM, no Ray)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from rafka.clients.prepared_transaction import PreparedTransaction
from rafka.protocol.errors import (
    Errors,
    InvalidConfigError,
    NotEnoughReplicasError,
    RafkaError,
)
from rafka.spark_bridge import connection
from rafka.spark_bridge import sink as sink_module
from rafka.spark_bridge.options import parse_sink_options
from rafka.spark_bridge.sink import (
    RafkaBatchWriter,
    RafkaCommitMessage,
    RafkaStreamWriter,
    send_batches,
)


def sink(**options: str) -> Any:
    return parse_sink_options({"topic": "out", **options})


def test_the_prefix_is_optional_and_the_prefixed_spelling_wins() -> None:
    assert sink().transactional_id_prefix is None
    assert sink(**{"transactional.id.prefix": " etl "}).transactional_id_prefix == "etl"
    both = {"kafka.transactional.id.prefix": "a", "transactional.id.prefix": "b"}
    assert sink(**both).transactional_id_prefix == "a"


def test_an_empty_prefix_names_the_option() -> None:
    with pytest.raises(InvalidConfigError, match=r"option 'transactional\.id\.prefix'"):
        sink(**{"transactional.id.prefix": " "})


class FakeFuture:
    def __init__(self, error: Exception | None) -> None:
        self.error = error
        self.is_done = True

    def failed(self) -> bool:
        return self.error is not None

    @property
    def exception(self) -> Exception | None:
        return self.error


class FakeProducer:
    """Writes down the calls a task makes; ``fail_on`` values are refused by the cluster."""

    def __init__(self, transactional_id: str, fail_on: bytes | None = None) -> None:
        self.transactional_id = transactional_id
        self.fail_on = fail_on
        self.calls: list[str] = []
        self.config: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        calls = ("init_transactions", "begin_transaction", "commit_transaction")
        if name in (*calls, "abort_transaction", "flush", "close"):
            return lambda: self.calls.append(name)
        raise AttributeError(name)

    def prepare_transaction(self) -> PreparedTransaction:
        self.calls.append("prepare_transaction")
        return PreparedTransaction(self.transactional_id, 7, 3, started=True)

    def send(self, topic: str, value: bytes, *args: Any) -> FakeFuture:
        self.calls.append(f"send {topic} {value.decode()}")
        refused = NotEnoughReplicasError("refused") if value == self.fail_on else None
        return FakeFuture(refused)

    def send_arrow(self, topic: str, batch: pa.RecordBatch) -> FakeFuture:
        values = [str(v).encode() for v in batch.column("value").to_pylist()]
        self.calls.extend(f"send {topic} {value.decode()}" for value in values)
        refused = NotEnoughReplicasError("refused") if self.fail_on in values else None
        return FakeFuture(refused)


def rows(*values: str) -> Any:
    return iter([pa.RecordBatch.from_pydict({"value": list(values)})])


def install(monkeypatch: pytest.MonkeyPatch, fail_on: bytes | None = None) -> list[FakeProducer]:
    made: list[FakeProducer] = []

    def transactional_producer(settings: Any, config: Any, transactional_id: str) -> FakeProducer:
        made.append(FakeProducer(transactional_id, fail_on))
        made[-1].config = dict(config)
        return made[-1]

    monkeypatch.setattr(connection, "transactional_producer", transactional_producer)
    return made


def test_a_task_sends_its_rows_in_one_transaction_of_its_own_producer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = install(monkeypatch)
    result = send_batches(sink(**{"transactional.id.prefix": "etl"}), rows("a", "b"))
    assert result.records == 2
    (producer,) = made
    assert producer.transactional_id == "etl-0"
    assert producer.calls == [
        "init_transactions",
        "begin_transaction",
        "send out a",
        "send out b",
        "flush",
        "prepare_transaction",
        "close",
    ]
    assert result.prepared == PreparedTransaction("etl-0", 7, 3, started=True)


def test_a_refused_row_aborts_the_transaction_and_fails_the_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = install(monkeypatch, fail_on=b"b")
    with pytest.raises(NotEnoughReplicasError):
        send_batches(sink(**{"transactional.id.prefix": "etl"}), rows("a", "b"))
    (producer,) = made
    assert "commit_transaction" not in producer.calls
    assert "prepare_transaction" not in producer.calls
    assert producer.calls[-2:] == ["abort_transaction", "close"]


def test_the_transaction_timeout_option_reaches_the_tasks_producers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = install(monkeypatch)
    options = {"transactional.id.prefix": "etl", "transaction.timeout.ms": "5000"}
    send_batches(sink(**options), rows("a"))
    send_batches(sink(**{"transactional.id.prefix": "etl"}), rows("a"))
    assert made[0].config["transaction_timeout_ms"] == 5000
    assert "transaction_timeout_ms" not in made[1].config


def test_the_transaction_timeout_takes_both_spellings_and_the_prefixed_one_wins() -> None:
    prefix = {"transactional.id.prefix": "etl"}
    assert sink(**prefix).transaction_timeout_ms is None
    assert sink(**prefix, **{"kafka.transaction.timeout.ms": "9000"}).transaction_timeout_ms == 9000
    both = {"kafka.transaction.timeout.ms": "9000", "transaction.timeout.ms": "1000"}
    assert sink(**prefix, **both).transaction_timeout_ms == 9000


@pytest.mark.parametrize(
    "options, named",
    [
        ({"transaction.timeout.ms": "5000"}, "'transaction.timeout.ms'"),
        (
            {"transactional.id.prefix": "etl", "kafka.transaction.timeout.ms": "soon"},
            "'kafka.transaction.timeout.ms'",
        ),
        ({"transactional.id.prefix": "etl", "transaction.timeout.ms": "0"}, "timeout"),
    ],
)
def test_a_bad_or_useless_transaction_timeout_names_the_option(
    options: dict[str, str], named: str
) -> None:
    with pytest.raises(InvalidConfigError, match=named):
        sink(**options)


class EndTxnJournal:
    """Stands in for ``end_prepared_transaction``: notes each call; ``errors`` fails some ids."""

    def __init__(self) -> None:
        self.ended: list[tuple[str, bool]] = []
        self.errors: dict[str, Exception] = {}

    def __call__(
        self, prepared: PreparedTransaction, committed: bool, namespace: str, ray_address: Any
    ) -> None:
        self.ended.append((prepared.transactional_id, committed))
        if prepared.transactional_id in self.errors:
            raise self.errors[prepared.transactional_id]


@pytest.fixture
def end_txn(monkeypatch: pytest.MonkeyPatch) -> EndTxnJournal:
    journal = EndTxnJournal()
    monkeypatch.setattr(sink_module, "end_prepared_transaction", journal)
    return journal


def writer(cls: Any, **options: str) -> Any:
    """A writer as the driver holds it, without planning against a cluster."""
    made = cls.__new__(cls)
    made.sink = sink(**{"transactional.id.prefix": "etl", **options})
    return made


def task_messages(*ids: str) -> list[Any]:
    """Commit messages of finished tasks that prepared ``ids``, and of one that did not finish."""
    prepared = [RafkaCommitMessage(1, PreparedTransaction(i, 7, 3, True)) for i in ids]
    return [*prepared, None]


def test_the_driver_commits_every_tasks_prepared_transaction(end_txn: EndTxnJournal) -> None:
    writer(RafkaBatchWriter).commit(task_messages("etl-0", "etl-1"))
    writer(RafkaStreamWriter).commit(task_messages("etl-0"), 4)
    assert end_txn.ended == [("etl-0", True), ("etl-1", True), ("etl-0", True)]


def test_a_failed_commit_still_commits_the_others_then_raises_naming_it(
    end_txn: EndTxnJournal,
) -> None:
    end_txn.errors["etl-0"] = Errors.PRODUCER_FENCED.exception("fenced")
    with pytest.raises(RafkaError, match="etl-0") as raised:
        writer(RafkaBatchWriter).commit(task_messages("etl-0", "etl-1"))
    assert raised.value.error is Errors.PRODUCER_FENCED
    assert end_txn.ended == [("etl-0", True), ("etl-1", True)]


def test_the_driver_aborts_the_finished_tasks_transactions_and_only_logs_failures(
    end_txn: EndTxnJournal, caplog: pytest.LogCaptureFixture
) -> None:
    end_txn.errors["etl-0"] = Errors.PRODUCER_FENCED.exception("fenced")
    writer(RafkaBatchWriter).abort(task_messages("etl-0", "etl-1"))
    writer(RafkaStreamWriter).abort(task_messages("etl-2"), 4)
    assert end_txn.ended == [("etl-0", False), ("etl-1", False), ("etl-2", False)]
    assert "etl-0" in caplog.text


def test_a_sink_without_transactions_ends_nothing(end_txn: EndTxnJournal) -> None:
    plain = RafkaBatchWriter.__new__(RafkaBatchWriter)
    plain.sink = sink()
    plain.commit([RafkaCommitMessage(3), None])
    plain.abort([RafkaCommitMessage(3)])
    assert end_txn.ended == []
