"""The client-side value types, named as kafka-python names them.

``TopicPartition``, ``RecordMetadata``, ``ConsumerRecord``, ``OffsetAndTimestamp`` and
``OffsetAndMetadata`` are named tuples; ``FutureRecordMetadata`` is what ``Producer.send`` returns:
``get(timeout)`` blocks for the record's offset, ``add_callback`` / ``add_errback`` run when its
batch completes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from rafka.protocol.errors import KafkaTimeoutError
from rafka.protocol.types import TopicPartition

logger = logging.getLogger(__name__)


class RecordMetadata(NamedTuple):
    """Where a produced record landed."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class ConsumerRecord(NamedTuple):
    """A record as a consumer receives it."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | Any | None
    value: bytes | Any | None
    headers: list[tuple[str, bytes | None]]


class OffsetAndTimestamp(NamedTuple):
    """Answer of ``offsets_for_times`` for one partition."""

    offset: int
    timestamp: int


class ProduceRequestResult:
    """The outcome of one batch, shared by the futures of its records."""

    __slots__ = ("_done", "_watchers", "base_offset", "error", "lock", "topic_partition")

    def __init__(self, topic_partition: TopicPartition) -> None:
        self.topic_partition = topic_partition
        self._done = threading.Event()
        self.base_offset = -1
        self.error: BaseException | None = None
        self._watchers: list[FutureRecordMetadata] = []
        self.lock = threading.Lock()

    def complete(self, base_offset: int, error: BaseException | None) -> None:
        """Record the batch's outcome and run the callbacks registered so far."""
        with self.lock:
            self.base_offset = base_offset
            self.error = error
            self._done.set()
            watchers, self._watchers = self._watchers, []
        for future in watchers:
            future._run_callbacks()

    def wait(self, timeout: float | None) -> bool:
        """Block until the batch completes; False on timeout."""
        return self._done.wait(timeout)

    @property
    def is_done(self) -> bool:
        """Whether the batch completed (successfully or not)."""
        return self._done.is_set()


Callback = tuple[Callable[..., Any], tuple[Any, ...], bool]


class FutureRecordMetadata:
    """The pending result of one ``send``."""

    __slots__ = ("_callbacks", "_relative_offset", "_result", "_timestamp")

    def __init__(self, result: ProduceRequestResult, relative_offset: int, timestamp: int) -> None:
        self._result = result
        self._relative_offset = relative_offset
        self._timestamp = timestamp
        self._callbacks: list[Callback] | None = None

    @property
    def is_done(self) -> bool:
        """Whether the record's batch completed."""
        return self._result.is_done

    def succeeded(self) -> bool:
        """Done without an error."""
        return self._result.is_done and self._result.error is None

    def failed(self) -> bool:
        """Done with an error."""
        return self._result.is_done and self._result.error is not None

    @property
    def exception(self) -> BaseException | None:
        """The error, once failed."""
        return self._result.error

    @property
    def value(self) -> RecordMetadata | None:
        """The metadata, once succeeded."""
        return self._metadata() if self.succeeded() else None

    def _metadata(self) -> RecordMetadata:
        tp = self._result.topic_partition
        base = self._result.base_offset
        return RecordMetadata(
            tp.topic,
            tp.partition,
            base + self._relative_offset if base >= 0 else -1,
            self._timestamp,
        )

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """Block until the record is acknowledged; raise its error, or KafkaTimeoutError after
        ``timeout`` s."""
        if not self._result.wait(timeout):
            tp = self._result.topic_partition
            raise KafkaTimeoutError(
                f"record for {tp.topic}-{tp.partition} not acknowledged within {timeout}s"
            )
        if self._result.error is not None:
            raise self._result.error
        return self._metadata()

    def add_callback(self, fn: Callable[..., Any], *args: Any) -> FutureRecordMetadata:
        """Call ``fn(*args, record_metadata)`` on success (at once if already done)."""
        return self._add((fn, args, True))

    def add_errback(self, fn: Callable[..., Any], *args: Any) -> FutureRecordMetadata:
        """Call ``fn(*args, exception)`` on failure (at once if already done)."""
        return self._add((fn, args, False))

    def _add(self, callback: Callback) -> FutureRecordMetadata:
        # Registration and completion share the batch's lock, so each callback runs exactly once.
        with self._result.lock:
            if not self._result.is_done:
                if self._callbacks is None:
                    self._callbacks = []
                    self._result._watchers.append(self)
                self._callbacks.append(callback)
                return self
        self._invoke(callback)
        return self

    def _run_callbacks(self) -> None:
        for callback in self._callbacks or ():
            self._invoke(callback)

    def _invoke(self, callback: Callback) -> None:
        fn, args, on_success = callback
        error = self._result.error
        try:
            if error is None and on_success:
                fn(*args, self._metadata())
            elif error is not None and not on_success:
                fn(*args, error)
        except Exception:
            # As in Kafka and kafka-python: a failing user callback is logged, never raised into the
            # sender thread (which would stop it) or into the other records' callbacks.
            tp = self._result.topic_partition
            logger.exception("error in a produce callback for %s-%d", tp.topic, tp.partition)


class FutureArrowSend:
    """The pending result of one ``send_arrow``: every batch its rows were cut into."""

    __slots__ = ("_results", "records")

    def __init__(self, results: list[ProduceRequestResult], records: int) -> None:
        self._results = results
        self.records = records

    @property
    def is_done(self) -> bool:
        """Whether every batch completed."""
        return all(result.is_done for result in self._results)

    def failed(self) -> bool:
        """Done, and some batch failed."""
        return self.is_done and any(result.error is not None for result in self._results)

    @property
    def exception(self) -> BaseException | None:
        """The first failed batch's error, once done."""
        return next((r.error for r in self._results if r.is_done and r.error is not None), None)

    def get(self, timeout: float | None = None) -> int:
        """Block until every row is acknowledged and return how many there were; raise the first
        failed batch's error, or KafkaTimeoutError after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for result in self._results:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not result.wait(remaining):
                tp = result.topic_partition
                raise KafkaTimeoutError(
                    f"rows for {tp.topic}-{tp.partition} not acknowledged within {timeout}s"
                )
        error = self.exception
        if error is not None:
            raise error
        return self.records
