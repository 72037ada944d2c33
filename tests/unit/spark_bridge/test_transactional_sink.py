"""The sink's ``transactional.id.prefix``: option parsing, and one transaction per task around the
task's sends, with a fake producer in place of the cluster (no JVM, no Ray)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from rafka.protocol.errors import InvalidConfigError, NotEnoughReplicasError
from rafka.spark_bridge import connection
from rafka.spark_bridge.options import parse_sink_options
from rafka.spark_bridge.sink import send_batches


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

    def __getattr__(self, name: str) -> Any:
        calls = ("init_transactions", "begin_transaction", "commit_transaction")
        if name in (*calls, "abort_transaction", "flush", "close"):
            return lambda: self.calls.append(name)
        raise AttributeError(name)

    def send(self, topic: str, value: bytes, *args: Any) -> FakeFuture:
        self.calls.append(f"send {topic} {value.decode()}")
        refused = NotEnoughReplicasError("refused") if value == self.fail_on else None
        return FakeFuture(refused)


def rows(*values: str) -> Any:
    return iter([pa.RecordBatch.from_pydict({"value": list(values)})])


def install(monkeypatch: pytest.MonkeyPatch, fail_on: bytes | None = None) -> list[FakeProducer]:
    made: list[FakeProducer] = []

    def transactional_producer(settings: Any, config: Any, transactional_id: str) -> FakeProducer:
        made.append(FakeProducer(transactional_id, fail_on))
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
        "commit_transaction",
        "close",
    ]


def test_a_refused_row_aborts_the_transaction_and_fails_the_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = install(monkeypatch, fail_on=b"b")
    with pytest.raises(NotEnoughReplicasError):
        send_batches(sink(**{"transactional.id.prefix": "etl"}), rows("a", "b"))
    (producer,) = made
    assert "commit_transaction" not in producer.calls
    assert producer.calls[-2:] == ["abort_transaction", "close"]
