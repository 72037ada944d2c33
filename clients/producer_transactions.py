"""An idempotent or transactional producer's work outside produce requests.

The sender thread, before each turn, gets an idempotent producer its producer id (and a new one
after a broker lost its state) and adds a transaction's new partitions with AddPartitionsToTxn
before their first batch goes; once the transaction failed it fails the batches still waiting.
The application's threads run Kafka's transactional API here: ``init_transactions``,
``begin_transaction``, ``send_offsets_to_transaction``, ``commit_transaction`` and
``abort_transaction``, and ``prepare_transaction``, a commit's first half for a two-phase commit
(clients/prepared_transaction.py). Every decision about states is ``TransactionManager``'s; each
call waits at most ``max_block_ms``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from rafka.clients.accumulator import ProducerBatch, RecordAccumulator
from rafka.clients.coordinator_lookup import pause
from rafka.clients.prepared_transaction import PreparedTransaction
from rafka.clients.transaction_manager import (
    ProducerIdAndEpoch,
    TransactionManager,
    TransactionState,
    is_fatal,
)
from rafka.clients.transactional_requests import TransactionalRequests
from rafka.protocol.errors import Errors, KafkaTimeoutError, RafkaError
from rafka.protocol.messages.groups import OffsetCommitEntry
from rafka.protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
)
from rafka.protocol.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

logger = logging.getLogger(__name__)


class ProducerTransactions:
    """The producer id, the transaction's partitions and the transactional API of one producer."""

    def __init__(
        self,
        txn: TransactionManager,
        requests: TransactionalRequests,
        accumulator: RecordAccumulator,
        flush: Callable[[float | None], None],
        fail_unsent: Callable[[RafkaError], None],
        fatal: Callable[[RafkaError], None],
        wakeup: threading.Event,
        max_block_s: float,
    ) -> None:
        self.txn = txn
        self.requests = requests
        self.accumulator = accumulator
        self.flush = flush
        self.fail_unsent = fail_unsent
        self.fatal = fatal
        self.wakeup = wakeup
        self.max_block_s = max_block_s

    def error(self, error: RafkaError) -> None:
        """An error for the transaction (abortable) or the producer (fatal)."""
        if is_fatal(error.error):
            self.fatal(error)
        else:
            self.txn.fail(error)

    def _checked(self, error: Errors, message: str | None, what: str) -> None:
        """Raise (and record) the error a coordinator answered, if any."""
        if error is Errors.NONE:
            return
        exc = error.exception(
            f"{what} for transactional id {self.txn.transactional_id!r}: {message or error.message}"
        )
        self.error(exc)
        raise exc

    def _deadline(self) -> float:
        return time.monotonic() + self.max_block_s

    # ------------------------------------------------------------------ the sender thread

    def stamp(self, batch: ProducerBatch) -> None:
        """Give a batch about to be sent for the first time the producer id, epoch and its
        partition's next sequence."""
        txn = self.txn
        producer = txn.producer
        batch.stamp(
            producer.producer_id,
            producer.epoch,
            txn.next_sequence(batch.topic_partition, batch.builder.record_count),
            txn.is_transactional,
        )

    def prepare(self) -> None:
        """Before a sender turn: fail what waits in a failed transaction, get an idempotent
        producer's id, add a transaction's new partitions."""
        txn = self.txn
        if txn.state in (TransactionState.ABORTABLE_ERROR, TransactionState.FATAL_ERROR):
            if self.accumulator.has_unsent():
                self.fail_unsent(
                    txn.last_error or Errors.INVALID_TXN_STATE.exception("the producer failed")
                )
            return
        # Cheap checks first: this runs on every sender wake-up.
        if txn.is_transactional:
            if not txn.needs_producer_id and self.accumulator.has_unsent():
                self._add_partitions()
        elif txn.needs_producer_id and self.accumulator.has_unsent():
            self._idempotent_producer_id()

    def _idempotent_producer_id(self) -> None:
        """Get an idempotent producer's id (again, naming the current one, after a broker lost its
        state: KIP-360) within ``max_block_ms``; failing that, fail the waiting batches."""
        txn = self.txn
        current = txn.producer
        request = InitProducerIdRequest(
            None, txn.transaction_timeout_ms, current.producer_id, current.epoch
        )
        try:
            response = self.requests.producer_id_from_broker(request, self._deadline())
        except RafkaError as exc:
            self._no_producer_id(exc)
            return
        except Exception as exc:  # the broker raised: a bug there, which no retry fixes
            self._no_producer_id(Errors.UNKNOWN_SERVER_ERROR.exception(f"InitProducerId: {exc!r}"))
            return
        if response.error is not Errors.NONE:
            self._no_producer_id(response.error.exception(response.error_message))
            return
        txn.set_producer(ProducerIdAndEpoch(response.producer_id, response.producer_epoch))
        logger.debug("producer id %d, epoch %d", response.producer_id, response.producer_epoch)

    def _no_producer_id(self, error: RafkaError) -> None:
        """Fail the batches waiting for a producer id (a fatal error fails the producer too)."""
        logger.warning("no producer id: %s", error)
        if is_fatal(error.error):
            self.fatal(error)
        self.fail_unsent(error)

    def _add_partitions(self) -> None:
        """AddPartitionsToTxn for the partitions with batches that the transaction lacks."""
        txn = self.txn
        new = txn.partitions_to_add(self.accumulator.queued_partitions())
        if not new:
            return
        assert txn.transactional_id is not None
        producer = txn.producer
        request = AddPartitionsToTxnRequest(
            txn.transactional_id, producer.producer_id, producer.epoch, tuple(new)
        )
        try:
            response: AddPartitionsToTxnResponse = self.requests.coordinator_request(
                "add_partitions_to_txn", request, self._deadline()
            )
        except RafkaError as exc:
            logger.info("AddPartitionsToTxn for %s: %s; trying again", new, exc)
            return
        failed = [(tp, error) for tp, error in response.results if error is not Errors.NONE]
        if response.error is Errors.NONE and not failed:
            txn.partitions_added(new)
            self.wakeup.set()
            return
        error = response.error if response.error is not Errors.NONE else failed[0][1]
        detail = response.error_message or ", ".join(
            f"{tp.topic}-{tp.partition}: {e.name}" for tp, e in failed
        )
        self.error(error.exception(f"AddPartitionsToTxn: {detail}"))

    # ------------------------------------------------------------------ the transactional API

    def init_transactions(self) -> None:
        """Get the transactional id's producer id and epoch from its coordinator, fencing any
        older producer with the same transactional id and finishing its open transaction."""
        txn = self.txn
        txn.begin_init()
        assert txn.transactional_id is not None
        self._init(InitProducerIdRequest(txn.transactional_id, txn.transaction_timeout_ms))

    def _init(self, request: InitProducerIdRequest) -> None:
        """InitProducerId to the coordinator (the state is INITIALIZING); a timeout leaves it so, to
        be called again."""
        txn = self.txn
        response: InitProducerIdResponse = self.requests.coordinator_request(
            "init_producer_id", request, self._deadline()
        )
        if response.error is not Errors.NONE:
            exc = response.error.exception(
                f"InitProducerId for transactional id {txn.transactional_id!r}: "
                f"{response.error_message or response.error.message}"
            )
            if is_fatal(response.error):
                self.fatal(exc)
            elif txn.producer.is_valid:
                txn.fail(exc)  # an epoch bump after an abort: abort again to retry it
            else:
                txn.transition(TransactionState.UNINITIALIZED)
            raise exc
        txn.set_producer(ProducerIdAndEpoch(response.producer_id, response.producer_epoch))

    def begin_transaction(self) -> None:
        """Open a transaction: sends from now on belong to it."""
        self.txn.begin_transaction()

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: ConsumerGroupMetadata | str,
    ) -> None:
        """Commit a consumer group's offsets as part of the transaction (consume-transform-produce):
        AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to the group's."""
        txn = self.txn
        txn.check_in_transaction("send_offsets_to_transaction")
        if isinstance(group_metadata, str):
            group_metadata = ConsumerGroupMetadata(group_metadata)
        if not isinstance(group_metadata, ConsumerGroupMetadata):
            raise TypeError(
                "group_metadata must be a ConsumerGroupMetadata (consumer.group_metadata()) or a "
                f"group id, not {type(group_metadata).__name__}"
            )
        assert txn.transactional_id is not None
        producer = txn.producer
        deadline = self._deadline()
        added = self.requests.coordinator_request(
            "add_offsets_to_txn",
            AddOffsetsToTxnRequest(
                txn.transactional_id,
                producer.producer_id,
                producer.epoch,
                group_metadata.group_id,
            ),
            deadline,
        )
        self._checked(added.error, added.error_message, "AddOffsetsToTxn")
        txn.offsets_added()
        entries = []
        for tp, value in sorted(
            offsets.items(), key=lambda item: (item[0].topic, item[0].partition)
        ):
            offset, metadata = (value, "") if isinstance(value, int) else value
            entries.append(OffsetCommitEntry(tp.topic, tp.partition, offset, metadata or ""))
        request = TxnOffsetCommitRequest(
            txn.transactional_id,
            group_metadata.group_id,
            producer.producer_id,
            producer.epoch,
            tuple(entries),
            group_metadata.generation_id,
            group_metadata.member_id,
            group_metadata.group_instance_id,
        )
        while True:
            response = self.requests.txn_offset_commit(request, deadline)
            error = response.error
            if error is Errors.NONE:
                error = next((e for _, e in response.results if e is not Errors.NONE), error)
            if error is Errors.NONE:
                return
            if not error.retriable:
                self._checked(error, response.error_message, "TxnOffsetCommit")
            if not pause(deadline):
                raise KafkaTimeoutError(
                    f"TxnOffsetCommit for group {group_metadata.group_id!r}: {error.name} until "
                    "max_block_ms passed"
                )

    def commit_transaction(self) -> None:
        """Send every record of the transaction, then commit it (EndTxn). An abortable error
        raises, and only ``abort_transaction`` is allowed after it."""
        txn = self.txn
        txn.begin_commit()
        self.flush(self.max_block_s)
        txn.check_can_commit()
        self._end(True)

    def prepare_transaction(self) -> PreparedTransaction:
        """Send every record of the transaction and check it can commit, but leave its EndTxn to
        ``end_prepared_transaction``: the producer may only be closed afterwards."""
        txn = self.txn
        txn.begin_commit("prepare_transaction")
        self.flush(self.max_block_s)
        txn.check_can_commit()
        txn.mark_prepared()
        assert txn.transactional_id is not None
        producer = txn.producer
        return PreparedTransaction(
            txn.transactional_id, producer.producer_id, producer.epoch, txn.started
        )

    def abort_transaction(self) -> None:
        """Drop the batches not sent yet, wait for those in flight, and abort the transaction
        (EndTxn); after a batch failed with an unknown outcome, bump the epoch (KIP-360)."""
        txn = self.txn
        txn.begin_abort()
        self.fail_unsent(
            Errors.OPERATION_NOT_ATTEMPTED.exception(
                "the transaction was aborted before this batch was sent"
            )
        )
        self.flush(self.max_block_s)
        self._end(False)

    def _end(self, committed: bool) -> None:
        """EndTxn (unless nothing reached the coordinator), then READY, or INITIALIZING to bump the
        epoch after an abort that needs it."""
        txn = self.txn
        assert txn.transactional_id is not None
        producer = txn.producer
        if txn.started:
            response = self.requests.coordinator_request(
                "end_txn",
                EndTxnRequest(
                    txn.transactional_id, producer.producer_id, producer.epoch, committed
                ),
                self._deadline(),
            )
            self._checked(response.error, response.error_message, "EndTxn")
        if committed or not txn.needs_producer_id:
            txn.completed()
            return
        txn.transition(TransactionState.INITIALIZING)
        self._init(
            InitProducerIdRequest(
                txn.transactional_id,
                txn.transaction_timeout_ms,
                producer.producer_id,
                producer.epoch,
            )
        )


class TransactionalApi:
    """Kafka's transactional producer methods, for the producer class to inherit; they act through
    its ``_transactions`` (None for a producer that is not idempotent)."""

    _transactions: ProducerTransactions | None

    def init_transactions(self) -> None:
        """Get this transactional producer's id and epoch, fencing older producers with the same
        ``transactional_id`` and completing their open transaction. Call once, before the first
        transaction."""
        self._transactional("init_transactions").init_transactions()

    def begin_transaction(self) -> None:
        """Open a transaction: every record sent until commit or abort belongs to it."""
        self._transactional("begin_transaction").begin_transaction()

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: ConsumerGroupMetadata | str,
    ) -> None:
        """Commit the consumer group's ``offsets`` with the transaction (they count only if it
        commits); ``group_metadata`` is ``consumer.group_metadata()`` or the group id."""
        transactions = self._transactional("send_offsets_to_transaction")
        transactions.send_offsets_to_transaction(offsets, group_metadata)

    def commit_transaction(self) -> None:
        """Flush the transaction's records, then commit it."""
        self._transactional("commit_transaction").commit_transaction()

    def prepare_transaction(self) -> PreparedTransaction:
        """Flush the transaction's records and check it can commit, without committing it: the
        first phase of a two-phase commit. Pass the answer to ``end_prepared_transaction`` (from
        any process) to commit or abort; this producer may then only be closed, which leaves the
        transaction open."""
        return self._transactional("prepare_transaction").prepare_transaction()

    def abort_transaction(self) -> None:
        """Abort the transaction: records not sent yet fail, those written are never read by
        read_committed consumers."""
        self._transactional("abort_transaction").abort_transaction()

    def _transactional(self, method: str) -> ProducerTransactions:
        transactions = self._transactions
        if transactions is None or not transactions.txn.is_transactional:
            raise Errors.INVALID_TXN_STATE.exception(
                f"{method}() needs a transactional producer: set transactional_id"
            )
        return transactions
