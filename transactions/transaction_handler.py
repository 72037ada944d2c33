"""The transaction coordinator's request handlers, as plain logic over its log, its producer id
source, the cluster's metadata and its marker sender (Kafka's ``TransactionCoordinator``).

InitProducerId hands a transactional producer its id and a bumped epoch (fencing every older
instance), aborting first a transaction the old instance left open. AddPartitionsToTxn and
AddOffsetsToTxn record the partitions a transaction writes to. EndTxn persists the decision
(PREPARE_COMMIT or PREPARE_ABORT) and answers; markers are then written to every partition and the
transaction completes (COMPLETE_COMMIT or COMPLETE_ABORT). Transactions past their timeout are
aborted with an epoch bump, so their producer is fenced; ids idle past their expiration are
forgotten.

Everything runs on one event loop. Checks and the ``prepare_*`` that marks a transition pending
happen with no ``await`` between them, so a concurrent request sees CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from rafka.groups.group_metadata_manager import TopicMetadata
from rafka.groups.offsets_codec import OFFSETS_TOPIC
from rafka.groups.offsets_codec import partition_for as group_partition_for
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.transactions import (
    MAX_TRANSACTIONAL_ID_LENGTH,
    NO_PRODUCER_ID,
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    WriteTxnMarkersRequest,
)
from rafka.protocol.types import TopicPartition, now_ms
from rafka.transactions.marker_sender import MarkerSender
from rafka.transactions.transaction_metadata import (
    TransactionMetadata,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from rafka.transactions.transaction_state import (
    IllegalTransitionError,
    TransactionState,
)
from rafka.transactions.transaction_state_manager import TransactionStateManager

logger = logging.getLogger(__name__)

COMPLETE_RETRY_BACKOFF_S = 0.1
_S = TransactionState


@dataclass(frozen=True)
class TransactionLimits:
    """The broker settings the handlers enforce."""

    max_timeout_ms: int
    transactional_id_expiration_ms: int
    offsets_topic_num_partitions: int


class TransactionHandler:
    """InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn for the ids of the
    ``__transaction_state`` partitions ``manager`` owns; timeouts and expiry."""

    def __init__(
        self,
        manager: TransactionStateManager,
        allocate_producer_id: Callable[[], Awaitable[int]],
        metadata: TopicMetadata,
        sender: MarkerSender,
        limits: TransactionLimits,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.manager = manager
        self.allocate_producer_id = allocate_producer_id
        self.metadata = metadata
        self.sender = sender
        self.limits = limits
        self.clock = clock
        self.completions: set[asyncio.Task[None]] = set()
        """Transactions whose markers are being written (held: the loop keeps tasks weakly)."""

    # ------------------------------------------------------------------ InitProducerId

    async def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        """A producer id and a bumped epoch for the transactional id (CONCURRENT_TRANSACTIONS while
        a transaction it left open is being aborted)."""
        transactional_id = request.transactional_id
        if not transactional_id or len(transactional_id) > MAX_TRANSACTIONAL_ID_LENGTH:
            return InitProducerIdResponse(
                Errors.INVALID_REQUEST, error_message="a transactional id must be 1-32767 chars"
            )
        timeout_ms = request.transaction_timeout_ms
        if not 0 < timeout_ms <= self.limits.max_timeout_ms:
            return InitProducerIdResponse(
                Errors.INVALID_TRANSACTION_TIMEOUT,
                error_message=f"transaction timeout {timeout_ms} ms is not in "
                f"(0, {self.limits.max_timeout_ms}] (transaction_max_timeout_ms)",
            )
        expected = None if request.producer_id == NO_PRODUCER_ID else request.producer_id
        expected_epoch = None if expected is None else request.producer_epoch
        new_producer_id: int | None = None
        while True:
            error = self.manager.ownership_error(transactional_id)
            if error is not None:
                return InitProducerIdResponse(error[0], error_message=error[1])
            metadata = self.manager.get(transactional_id)
            needs_id = metadata is None or (
                metadata.is_producer_epoch_exhausted and metadata.state.is_complete
            )
            if not needs_id or new_producer_id is not None:
                break
            # The only await before the checks: they are all made again after it.
            try:
                new_producer_id = await self.allocate_producer_id()
            except RafkaError as exc:
                return InitProducerIdResponse(exc.error, error_message=exc.message)
        if metadata is None:
            assert new_producer_id is not None
            metadata = self.manager.put_if_absent(
                TransactionMetadata.new(transactional_id, new_producer_id, timeout_ms, self.clock())
            )
            new_producer_id = None
        transit = self._prepare_init(
            metadata, timeout_ms, expected, expected_epoch, new_producer_id
        )
        if isinstance(transit, Errors):
            return InitProducerIdResponse(transit)
        epoch = self._epoch_of(transactional_id)
        if transit.state is _S.PREPARE_EPOCH_FENCE:
            ended = await self._end_transaction(
                transactional_id, transit.producer_id, transit.producer_epoch, False, False
            )
            return InitProducerIdResponse(
                Errors.CONCURRENT_TRANSACTIONS if ended is Errors.NONE else ended
            )
        written = await self.manager.append(metadata, transit, epoch)
        if written is not Errors.NONE:
            return InitProducerIdResponse(written)
        return InitProducerIdResponse(Errors.NONE, transit.producer_id, transit.producer_epoch)

    def _prepare_init(
        self,
        metadata: TransactionMetadata,
        timeout_ms: int,
        expected: int | None,
        expected_epoch: int | None,
        new_producer_id: int | None,
    ) -> TxnTransitMetadata | Errors:
        if metadata.pending_transition_in_progress or metadata.state.is_preparing:
            return Errors.CONCURRENT_TRANSACTIONS
        if expected is not None and not (
            metadata.producer_epoch < 0
            or expected == metadata.producer_id
            or (
                expected == metadata.last_producer_id
                and expected_epoch is not None
                and is_epoch_exhausted(expected_epoch)
            )
        ):
            return Errors.PRODUCER_FENCED
        if metadata.state is _S.ONGOING:
            return metadata.prepare_fence_epoch()
        if not metadata.state.is_complete:
            raise IllegalTransitionError(
                f"{metadata.transactional_id} is {metadata.state.value}, which is never cached"
            )
        now = self.clock()
        if metadata.is_producer_epoch_exhausted and expected_epoch in (
            None,
            metadata.producer_epoch,
        ):
            assert new_producer_id is not None
            return metadata.prepare_producer_id_rotation(
                new_producer_id, timeout_ms, now, expected is not None
            )
        return metadata.prepare_increment_epoch(timeout_ms, expected_epoch, now)

    # ------------------------------------------------------------------ AddPartitions/AddOffsets

    async def add_partitions_to_txn(
        self, request: AddPartitionsToTxnRequest
    ) -> AddPartitionsToTxnResponse:
        """Add partitions to the ongoing transaction (starting one if none is open)."""
        partitions = frozenset(request.partitions)
        known = await self.metadata.partition_counts(tuple(sorted({t for t, _ in partitions})))
        unknown = {tp for tp in partitions if not 0 <= tp.partition < known.get(tp.topic, 0)}
        if unknown:
            return AddPartitionsToTxnResponse(
                Errors.UNKNOWN_TOPIC_OR_PARTITION,
                tuple(
                    (
                        tp,
                        Errors.UNKNOWN_TOPIC_OR_PARTITION
                        if tp in unknown
                        else Errors.OPERATION_NOT_ATTEMPTED,
                    )
                    for tp in sorted(partitions)
                ),
                f"unknown partitions {sorted(unknown)}",
            )
        error, message = await self._add_partitions(
            request.transactional_id, request.producer_id, request.producer_epoch, partitions
        )
        return AddPartitionsToTxnResponse(
            error, tuple((tp, error) for tp in sorted(partitions)), message
        )

    async def add_offsets_to_txn(self, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
        """Add the ``__consumer_offsets`` partition of the request's group to the transaction."""
        counts = await self.metadata.partition_counts((OFFSETS_TOPIC,))
        offsets_partitions = counts.get(OFFSETS_TOPIC) or self.limits.offsets_topic_num_partitions
        partition = TopicPartition(
            OFFSETS_TOPIC, group_partition_for(request.group_id, offsets_partitions)
        )
        error, message = await self._add_partitions(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            frozenset({partition}),
        )
        return AddOffsetsToTxnResponse(error, message)

    async def _add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
    ) -> tuple[Errors, str | None]:
        refused = self._producer_error(transactional_id, producer_id, producer_epoch)
        if refused is not None:
            return refused
        metadata = self.manager.get(transactional_id)
        assert metadata is not None
        if metadata.pending_transition_in_progress or metadata.state.is_preparing:
            return Errors.CONCURRENT_TRANSACTIONS, f"{transactional_id} is {metadata.state.value}"
        if metadata.state is _S.ONGOING and partitions <= metadata.partitions:
            return Errors.NONE, None
        transit = metadata.prepare_add_partitions(partitions, self.clock())
        written = await self.manager.append(metadata, transit, self._epoch_of(transactional_id))
        return written, None

    def _producer_error(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> tuple[Errors, str] | None:
        """Why a client request of this producer is refused: ownership, id, epoch."""
        if not transactional_id:
            return Errors.INVALID_REQUEST, "the transactional id is empty"
        error = self.manager.ownership_error(transactional_id)
        if error is not None:
            return error
        metadata = self.manager.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return Errors.INVALID_PRODUCER_ID_MAPPING, (
                f"producer {producer_id} is not the producer of {transactional_id}"
            )
        if metadata.producer_epoch != producer_epoch:
            return Errors.PRODUCER_FENCED, (
                f"epoch {producer_epoch} of producer {producer_id} is not the current "
                f"{metadata.producer_epoch}"
            )
        return None

    def _epoch_of(self, transactional_id: str) -> int:
        epoch = self.manager.coordinator_epoch(self.manager.partition_for(transactional_id))
        assert epoch is not None, "checked by ownership_error with no await since"
        return epoch

    # ------------------------------------------------------------------ EndTxn

    async def end_txn(self, request: EndTxnRequest) -> EndTxnResponse:
        """Commit or abort: answered once PREPARE_COMMIT or PREPARE_ABORT is durable."""
        if not request.transactional_id:
            return EndTxnResponse(Errors.INVALID_REQUEST, "the transactional id is empty")
        error = self.manager.ownership_error(request.transactional_id)
        if error is not None:
            return EndTxnResponse(*error)
        ended = await self._end_transaction(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            request.committed,
            True,
        )
        return EndTxnResponse(ended)

    async def _end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        from_client: bool,
    ) -> Errors:
        """Kafka's ``endTransaction``: the coordinator itself calls it (not ``from_client``) with
        the bumped epoch of a pending epoch fence, to abort a transaction its producer left."""
        metadata = self.manager.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        if (from_client and producer_epoch != metadata.producer_epoch) or (
            producer_epoch < metadata.producer_epoch
        ):
            return Errors.PRODUCER_FENCED
        fencing = metadata.pending_state is _S.PREPARE_EPOCH_FENCE
        if metadata.pending_transition_in_progress and not fencing:
            return Errors.CONCURRENT_TRANSACTIONS
        target = _S.PREPARE_COMMIT if committed else _S.PREPARE_ABORT
        state = metadata.state
        if state is _S.ONGOING:
            if fencing and not committed:
                metadata.apply_epoch_fence(producer_epoch)
            prepared = metadata.prepare_abort_or_commit(target, self.clock())
        elif state in (_S.COMPLETE_COMMIT, _S.COMPLETE_ABORT, _S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            same = (state in (_S.COMPLETE_COMMIT, _S.PREPARE_COMMIT)) == committed
            if not same:
                return Errors.INVALID_TXN_STATE
            return Errors.NONE if state.is_complete else Errors.CONCURRENT_TRANSACTIONS
        elif state is _S.EMPTY:
            return Errors.INVALID_TXN_STATE
        else:
            raise IllegalTransitionError(f"{transactional_id} is cached in {state.value}")
        coordinator_epoch = self._epoch_of(transactional_id)
        written = await self.manager.append(metadata, prepared, coordinator_epoch)
        if written is not Errors.NONE:
            if fencing:
                metadata.has_failed_epoch_fence = True
            return written
        self._complete_later(metadata, coordinator_epoch)
        return Errors.NONE

    def _complete_later(self, metadata: TransactionMetadata, coordinator_epoch: int) -> None:
        """Mark COMPLETE_* pending, then write the markers and persist it in a task."""
        complete = metadata.prepare_complete(self.clock())
        task = asyncio.get_running_loop().create_task(
            self._complete(metadata, complete, coordinator_epoch)
        )
        self.completions.add(task)
        task.add_done_callback(self.completions.discard)

    async def _complete(
        self, metadata: TransactionMetadata, complete: TxnTransitMetadata, coordinator_epoch: int
    ) -> None:
        partition = self.manager.partition_for(metadata.transactional_id)

        def still_current() -> bool:
            return (
                self.manager.coordinator_epoch(partition) == coordinator_epoch
                and self.manager.get(metadata.transactional_id) is metadata
            )

        request = WriteTxnMarkersRequest(
            metadata.producer_id,
            metadata.producer_epoch,
            complete.state is _S.COMPLETE_COMMIT,
            coordinator_epoch,
        )
        try:
            if not await self.sender.send(metadata.partitions, request, still_current):
                return
            while still_current():
                written = await self.manager.append(
                    metadata, complete, coordinator_epoch, abandon_on_error=False
                )
                if written in (Errors.NONE, Errors.NOT_COORDINATOR):
                    return
                logger.warning(
                    "%s: writing %s failed (%s), retrying",
                    metadata.transactional_id,
                    complete.state.value,
                    written.name,
                )
                await asyncio.sleep(COMPLETE_RETRY_BACKOFF_S)
        except Exception:  # a bug must not leave the id silently stuck: say so
            logger.exception("%s: completing the transaction failed", metadata.transactional_id)
            raise

    def on_loaded(self, loaded: Iterable[TransactionMetadata], coordinator_epoch: int) -> None:
        """A partition was loaded: finish the transactions whose decision it holds."""
        for metadata in loaded:
            if metadata.state.is_preparing:
                self._complete_later(metadata, coordinator_epoch)

    # ------------------------------------------------------------------ timeouts and expiry

    async def abort_timed_out_transactions(self) -> list[str]:
        """Abort every ONGOING transaction past its timeout by bumping its epoch (the producer is
        fenced); the ids whose abort was prepared."""
        aborted = []
        for timed_out in self.manager.timed_out_transactions(self.clock()):
            metadata = self.manager.get(timed_out.transactional_id)
            if (
                metadata is None
                or metadata.producer_id != timed_out.producer_id
                or metadata.pending_transition_in_progress
                or metadata.state is not _S.ONGOING
            ):
                continue
            fence = metadata.prepare_fence_epoch()
            ended = await self._end_transaction(
                metadata.transactional_id, fence.producer_id, fence.producer_epoch, False, False
            )
            if ended is Errors.NONE:
                aborted.append(metadata.transactional_id)
            else:
                logger.warning(
                    "aborting timed-out transaction of %s failed: %s",
                    metadata.transactional_id,
                    ended.name,
                )
        return aborted

    async def expire_transactional_ids(self) -> list[str]:
        """Forget ids unused for ``transactional_id_expiration_ms`` (tombstoned); the ids
        forgotten."""
        expired = []
        candidates = self.manager.expired_transactional_ids(
            self.clock(), self.limits.transactional_id_expiration_ms
        )
        for metadata in candidates:
            transactional_id = metadata.transactional_id
            if self.manager.get(transactional_id) is not metadata:
                continue
            if metadata.pending_transition_in_progress or not metadata.state.is_complete:
                continue
            dead = metadata.prepare_dead()
            written = await self.manager.append(metadata, dead, self._epoch_of(transactional_id))
            if written is Errors.NONE:
                expired.append(transactional_id)
        return expired
