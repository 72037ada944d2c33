"""Producer state of one partition log: what idempotence and transactions need to know per producer.

After Kafka's ProducerStateManager (KIP-98). For every producer id that wrote to the partition the
leader keeps its epoch, the sequence and offset ranges of its last five batches, the epoch of the
transaction coordinator that last wrote a marker for it, and the first offset of its ongoing
transaction. A leader checks every client batch against this before anything is written:

- a batch from an older epoch is INVALID_PRODUCER_EPOCH;
- a batch whose sequence range equals one of the five cached is a duplicate: it is not appended
  and is answered with the original offsets (a retry after a lost response);
- a new epoch must start at sequence 0, and within an epoch each batch must start right after the
  previous one's last sequence (int32 wrap-around): else OUT_OF_ORDER_SEQUENCE_NUMBER;
- an unknown producer id whose batch does not start at 0 is UNKNOWN_PRODUCER_ID.

Followers apply the same updates unchecked, so a new leader dedupes what the old one accepted.
Transactional batches open a transaction at their first offset; a COMMIT or ABORT marker closes it.
The first offset of every open transaction bounds the last stable offset (LSO): a read_committed
consumer reads no further. A transaction whose marker is not yet below the high watermark still
bounds it, so a consumer never sees a transaction end that a leader change could undo.

The state changes only through ``prepare``/``commit`` (leader), ``replay`` (followers, recovery)
and the housekeeping calls; batches with producer id -1 never reach it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rafka.log.transaction_index import AbortedTxn
from rafka.protocol.errors import Errors
from rafka.protocol.records.batch import NO_PRODUCER_EPOCH, NO_TIMESTAMP, BatchHeader
from rafka.protocol.records.control import ControlRecordType, EndTransactionMarker

INT32_MAX = (1 << 31) - 1
NUM_BATCHES_TO_RETAIN = 5
"""Batches per producer remembered for deduplication: a client has at most five in flight."""
NO_COORDINATOR_EPOCH = -1
NO_TXN = -1


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """The sequence of a batch's last record; sequences wrap from INT32_MAX to 0, as in Kafka."""
    last = base_sequence + last_offset_delta
    return last - INT32_MAX - 1 if last > INT32_MAX else last


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """Whether ``next_seq`` directly follows ``last_seq`` (INT32_MAX is followed by 0)."""
    return next_seq == (0 if last_seq == INT32_MAX else last_seq + 1)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One appended batch of a producer: its sequence range, offsets and timestamp."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    """What the log knows of one producer id."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: list[BatchMetadata] = field(default_factory=list)
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    current_txn_first_offset: int = NO_TXN
    last_timestamp: int = NO_TIMESTAMP

    @property
    def last_seq(self) -> int:
        """The last sequence appended in the current epoch, or -1 when none is cached."""
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        """The last offset of the newest cached batch, or -1."""
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerStateEntry:
        """A copy whose batch list may be changed without touching this one."""
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            list(self.batches),
            self.coordinator_epoch,
            self.current_txn_first_offset,
            self.last_timestamp,
        )

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The cached batch with exactly this epoch and sequence range, if any."""
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def update_epoch(self, epoch: int) -> None:
        """Move to ``epoch``; a new epoch starts its sequences afresh."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, batch: BatchMetadata) -> None:
        """Remember a batch, forgetting the oldest beyond five."""
        self.batches.append(batch)
        if len(self.batches) > NUM_BATCHES_TO_RETAIN:
            del self.batches[0]


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker: its producer, first offset, the marker's offset, and how."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class AppendBatch:
    """One batch of an append as producer state sees it: the header with its final offsets and,
    for a control batch, its marker."""

    header: BatchHeader
    marker: EndTransactionMarker | None = None


@dataclass
class ProducerAppend:
    """The changes one append makes, computed before the write and committed after it."""

    updates: dict[int, ProducerStateEntry] = field(default_factory=dict)
    started: list[tuple[int, int]] = field(default_factory=list)
    completed: list[CompletedTxn] = field(default_factory=list)
    duplicate: BatchMetadata | None = None


class ProducerStateManager:
    """Producer entries and transactions of one partition log; no I/O (snapshots are separate)."""

    def __init__(self, partition: str) -> None:
        self.partition = partition
        self.producers: dict[int, ProducerStateEntry] = {}
        # Open transactions, pid -> first offset. Appends come in offset order, so insertion order
        # is first-offset order and the first value is the smallest.
        self.ongoing: dict[int, int] = {}
        # Ended transactions whose marker is not yet below the high watermark, in marker order.
        self.unreplicated: deque[CompletedTxn] = deque()

    # ------------------------------------------------------------------ appends

    def prepare(self, batches: Sequence[AppendBatch], check_sequence: bool) -> ProducerAppend:
        """Check an append's batches (all with producer id >= 0) as a leader; nothing changes yet.

        ``check_sequence`` is False for a coordinator's appends, whose epochs are still checked.
        Raises the Kafka error of the first batch that breaks a rule; a duplicate is returned in
        ``duplicate`` (the whole append is then skipped, as in Kafka).
        """
        append = ProducerAppend()
        for batch in batches:
            header = batch.header
            pid = header.producer_id
            current = self.producers.get(pid)
            if check_sequence and batch.marker is None and current is not None:
                duplicate = current.find_duplicate(
                    header.producer_epoch,
                    header.base_sequence,
                    last_sequence(header.base_sequence, header.last_offset_delta),
                )
                if duplicate is not None:
                    return ProducerAppend(duplicate=duplicate)
            entry = append.updates.get(pid)
            if entry is None:
                entry = current.copy() if current is not None else ProducerStateEntry(pid)
                append.updates[pid] = entry
            self._check_epoch(entry, header)
            if batch.marker is not None:
                self._check_coordinator_epoch(entry, header, batch.marker)
            else:
                if check_sequence:
                    self._check_sequence(entry, header)
                if entry.current_txn_first_offset != NO_TXN and not header.is_transactional:
                    raise Errors.INVALID_TXN_STATE.exception(
                        f"{self.partition}: producer {pid} wrote a non-transactional batch at "
                        f"offset {header.base_offset} inside its transaction open since "
                        f"offset {entry.current_txn_first_offset}"
                    )
            _apply(entry, batch, append)
        return append

    def commit(self, append: ProducerAppend) -> list[AbortedTxn]:
        """Apply a prepared append after its write; return the aborted transactions it ended, each
        with the LSO at its end, for the transaction index."""
        self.producers.update(append.updates)
        for pid, first_offset in append.started:
            self.ongoing[pid] = first_offset
        aborted: list[AbortedTxn] = []
        for txn in append.completed:
            if txn.is_aborted:
                aborted.append(
                    AbortedTxn(
                        txn.producer_id,
                        txn.first_offset,
                        txn.last_offset,
                        self._stable_offset_after(txn),
                    )
                )
            self.ongoing.pop(txn.producer_id, None)
            self.unreplicated.append(txn)
        return aborted

    def replay(self, batch: AppendBatch) -> list[AbortedTxn]:
        """Apply one batch unchecked (a follower's append, recovery); return the transaction it
        aborted, if any. One batch at a time, so an abort's LSO is the one at its marker."""
        pid = batch.header.producer_id
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerStateEntry(pid)
        append = ProducerAppend()
        _apply(entry, batch, append)
        return self.commit(append)

    def _stable_offset_after(self, txn: CompletedTxn) -> int:
        """Kafka's LSO recorded with an aborted transaction: the first offset of another open
        transaction, else the offset after the marker. A fetch stops scanning the index there."""
        for pid, first_offset in self.ongoing.items():
            if pid != txn.producer_id:
                return first_offset
        return txn.last_offset + 1

    # ------------------------------------------------------------------ checks

    def _check_epoch(self, entry: ProducerStateEntry, header: BatchHeader) -> None:
        if header.producer_epoch < entry.producer_epoch:
            raise Errors.INVALID_PRODUCER_EPOCH.exception(
                f"{self.partition}: producer {header.producer_id} wrote at epoch "
                f"{header.producer_epoch} (sequence {header.base_sequence}, offset "
                f"{header.base_offset}), older than its current epoch {entry.producer_epoch}"
            )

    def _check_coordinator_epoch(
        self, entry: ProducerStateEntry, header: BatchHeader, marker: EndTransactionMarker
    ) -> None:
        if marker.coordinator_epoch < entry.coordinator_epoch:
            raise Errors.TRANSACTION_COORDINATOR_FENCED.exception(
                f"{self.partition}: {marker.control_type.name} marker for producer "
                f"{header.producer_id} comes from coordinator epoch {marker.coordinator_epoch}, "
                f"older than {entry.coordinator_epoch}"
            )

    def _check_sequence(self, entry: ProducerStateEntry, header: BatchHeader) -> None:
        pid, first = header.producer_id, header.base_sequence
        if entry.producer_epoch == NO_PRODUCER_EPOCH:
            if first != 0:
                raise Errors.UNKNOWN_PRODUCER_ID.exception(
                    f"{self.partition}: no state for producer {pid}, whose batch starts at "
                    f"sequence {first} (not 0); it may have expired or been deleted by retention"
                )
            return
        if header.producer_epoch != entry.producer_epoch:
            if first != 0:
                raise Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.exception(
                    f"{self.partition}: producer {pid} starts epoch {header.producer_epoch} at "
                    f"sequence {first}, not 0"
                )
            return
        last = entry.last_seq
        if (last == -1 and first != 0) or (last != -1 and not in_sequence(last, first)):
            raise Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.exception(
                f"{self.partition}: producer {pid} at epoch {header.producer_epoch} sent "
                f"sequence {first}, expected {0 if last == -1 else (last + 1) & INT32_MAX}"
            )

    # ------------------------------------------------------------------ queries

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of a transaction not yet ended below ``high_watermark``, or None."""
        while self.unreplicated and self.unreplicated[0].last_offset < high_watermark:
            self.unreplicated.popleft()
        first = next(iter(self.ongoing.values()), None)
        for txn in self.unreplicated:
            if first is None or txn.first_offset < first:
                first = txn.first_offset
        return first

    def last_stable_offset(self, high_watermark: int) -> int:
        """LSO: the high watermark, or the first unstable offset if that is lower."""
        first = self.first_unstable_offset(high_watermark)
        return high_watermark if first is None else min(first, high_watermark)

    @property
    def is_empty(self) -> bool:
        """Whether no producer is known (nothing worth a snapshot)."""
        return not self.producers

    # ------------------------------------------------------------------ housekeeping

    def load(self, entries: Iterable[ProducerStateEntry]) -> None:
        """Replace the state by ``entries`` (a snapshot); open transactions are taken from them."""
        self.producers = {entry.producer_id: entry for entry in entries}
        opened = sorted(
            (entry.current_txn_first_offset, pid)
            for pid, entry in self.producers.items()
            if entry.current_txn_first_offset != NO_TXN
        )
        self.ongoing = {pid: first for first, pid in opened}
        self.unreplicated.clear()

    def clear(self) -> None:
        """Forget every producer (the log was emptied)."""
        self.load(())

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers idle ``expiration_ms`` with no open transaction; return their ids."""
        expired = [
            pid
            for pid, entry in self.producers.items()
            if entry.current_txn_first_offset == NO_TXN
            and now_ms - entry.last_timestamp >= expiration_ms
        ]
        for pid in expired:
            del self.producers[pid]
        return expired

    def truncate_head(self, log_start_offset: int) -> None:
        """Retention moved the log start: forget producers all of whose batches are gone (unless a
        transaction of theirs is open) and ended transactions below it."""
        gone = [
            pid
            for pid, entry in self.producers.items()
            if entry.current_txn_first_offset == NO_TXN
            and entry.last_data_offset < log_start_offset
        ]
        for pid in gone:
            del self.producers[pid]
        while self.unreplicated and self.unreplicated[0].last_offset < log_start_offset:
            self.unreplicated.popleft()


def _apply(entry: ProducerStateEntry, batch: AppendBatch, append: ProducerAppend) -> None:
    """Update ``entry`` (a working copy) by one batch, noting transactions started or ended."""
    header = batch.header
    entry.update_epoch(header.producer_epoch)
    entry.last_timestamp = header.max_timestamp
    marker = batch.marker
    if marker is not None:
        first = entry.current_txn_first_offset
        append.completed.append(
            CompletedTxn(
                header.producer_id,
                header.base_offset if first == NO_TXN else first,
                header.base_offset,
                marker.control_type is ControlRecordType.ABORT,
            )
        )
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.current_txn_first_offset = NO_TXN
        return
    if header.base_sequence >= 0:
        entry.add_batch(
            BatchMetadata(
                header.base_sequence,
                last_sequence(header.base_sequence, header.last_offset_delta),
                header.base_offset,
                header.last_offset,
                header.max_timestamp,
            )
        )
    if header.is_transactional and entry.current_txn_first_offset == NO_TXN:
        entry.current_txn_first_offset = header.base_offset
        append.started.append((header.producer_id, header.base_offset))
