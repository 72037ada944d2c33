"""One replica of a partition: its log, its role, its high watermark and, as leader, its ISR.

This is plain state with no Ray and no waiting, so it is tested directly; the replica actor wraps
it with the purgatories, the follower fetch loop and the ZooKeeper writes, and asks it every
question of Kafka's replication protocol (Kafka's documentation, "Replication"; KIP-101 for
truncation):

- the leader sets a follower's LEO to that follower's fetch offset and recomputes
  HW = min(own LEO, LEO of every ISR follower); HW never goes down (the ISR rules are in ``isr``);
- a follower appends what it fetched and sets HW = min(own LEO, leader's HW), one round late;
- consumers read only below the HW, followers up to the LEO; a request naming another leader epoch
  is fenced (older) or refused as unknown (newer);
- read_committed consumers read only below the last stable offset (LSO: the HW, or the first offset
  of a transaction not yet ended below it) and are told the aborted transactions in what they read;
- a transaction marker (WriteTxnMarkers) is appended by the leader like an acks=all produce;
- an acks=all produce is answered once the HW passes its last record;
- a follower that starts following truncates its log where it diverges from the leader's, found by
  leader epoch, and one whose fetch offset is outside the leader's log starts again inside it;
- replication throttles (KIP-73) hold back only replicas listed in the topic's
  ``*.replication.throttled.replicas`` that are catching up: at the leader, fetches of followers
  outside the ISR; at a follower, fetches while it is behind the leader's end offset.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable

from rafka.actors.replica import isr as isr_rules
from rafka.actors.replica.isr import FollowerState
from rafka.actors.zk.data import LeaderIsrAndEpoch
from rafka.log.checkpoint import HIGH_WATERMARK_FILE, OffsetCheckpoint
from rafka.log.leader_epoch_cache import UNDEFINED_EPOCH
from rafka.log.log import Log, LogAppendInfo
from rafka.protocol.errors import (
    Errors,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    RafkaError,
)
from rafka.protocol.messages.admin import ReplicaLogDirInfo
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.fetch import (
    CONSUMER_REPLICA_ID,
    NO_LEADER_EPOCH,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    AbortedTransaction,
    FetchRequest,
    FetchResponse,
)
from rafka.protocol.messages.offsets import (
    EARLIEST_TIMESTAMP,
    HIGH_WATERMARK,
    LATEST_TIMESTAMP,
    DeleteRecordsResponse,
    ListOffsetsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from rafka.protocol.messages.produce import ACKS_ALL, AppendOrigin, ProduceResponse
from rafka.protocol.messages.transactions import WriteTxnMarkersRequest
from rafka.protocol.records.batch import iter_batches
from rafka.protocol.records.control import marker_for
from rafka.protocol.types import now_ms

logger = logging.getLogger(__name__)


class Role(enum.Enum):
    """What this replica does for its partition."""

    NONE = "none"
    LEADER = "leader"
    FOLLOWER = "follower"


class FollowerAction(enum.Enum):
    """What a follower's fetch loop does once it applied a fetch response."""

    FETCH = "fetch"  # fetch again at once
    BACK_OFF = "back off"  # the leader refused the fetch: retry after a short pause
    TRUNCATE = "truncate"  # the append failed: pause, then truncate by leader epoch again


class Partition:
    """A partition replica's state and rules; owned by one replica actor."""

    def __init__(
        self,
        topic: str,
        partition: int,
        broker_id: int,
        log: Log,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.broker_id = broker_id
        self.log = log
        self.clock = clock
        self.role = Role.NONE
        self.leader_id = -1
        self.leader_epoch = NO_LEADER_EPOCH
        self.controller_epoch = 0
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.zk_version = 0
        self.followers: dict[int, FollowerState] = {}
        # The ISR change written to ZooKeeper and not answered yet: Kafka's pending ISR state.
        self.pending_isr: LeaderIsrAndEpoch | None = None
        # A follower's view of its leader's LEO from the last fetch answered (-1: none yet).
        self.leader_end_offset = -1
        self._hw_checkpoint = OffsetCheckpoint(log.directory / HIGH_WATERMARK_FILE)
        self.high_watermark: int = min(self._hw_checkpoint.read(0), log.log_end_offset)

    @property
    def name(self) -> str:
        """``topic-partition``, as Kafka prints it."""
        return f"{self.topic}-{self.partition}"

    # ------------------------------------------------------------------ LeaderAndIsr

    def is_stale(self, state: LeaderAndIsrPartitionState) -> bool:
        """Whether a LeaderAndIsr carries an older leader epoch than this replica applied."""
        return state.leader_epoch < self.leader_epoch

    def already_leads(self, state: LeaderAndIsrPartitionState) -> bool:
        """Whether a LeaderAndIsr naming this replica leader repeats what it already knows.

        A new controller resends every partition's state at its leader epoch; if the leader has
        changed the ISR since (a newer znode version), applying the resent state would bring back
        the old ISR and version, and every later ISR change would fail its version check. Kafka
        ignores a LeaderAndIsr whose epoch is not newer; a newer znode version at the same epoch is
        taken.
        """
        return (
            self.role is Role.LEADER
            and state.leader == self.broker_id
            and state.leader_epoch == self.leader_epoch
            and state.zk_version <= self.zk_version
        )

    def already_follows(self, state: LeaderAndIsrPartitionState) -> bool:
        """Whether a LeaderAndIsr naming another leader repeats the epoch this replica follows."""
        return self.follows(state.leader_epoch)

    def follows(self, leader_epoch: int) -> bool:
        """Whether this replica follows at ``leader_epoch`` (a fetch loop's epoch is current)."""
        return self.role is Role.FOLLOWER and self.leader_epoch == leader_epoch

    def make_leader(self, state: LeaderAndIsrPartitionState) -> None:
        """Become leader at ``state.leader_epoch``: new appends are stamped with it."""
        now = self.clock()
        self._apply(state)
        self.role = Role.LEADER
        self.leader_id = self.broker_id
        self.log.epoch_cache.assign(state.leader_epoch, self.log.log_end_offset)
        self.followers = isr_rules.initial_followers(self.broker_id, state.replicas, state.isr, now)
        self.maybe_increment_high_watermark()

    def make_follower(self, state: LeaderAndIsrPartitionState) -> None:
        """Become a follower of ``state.leader``."""
        self._apply(state)
        self.role = Role.FOLLOWER
        self.leader_id = state.leader
        self.followers = {}
        self.leader_end_offset = -1

    def stop(self) -> None:
        """StopReplica: serve nothing more; parked requests see the role change."""
        self.role = Role.NONE

    def _apply(self, state: LeaderAndIsrPartitionState) -> None:
        self.leader_epoch = state.leader_epoch
        self.controller_epoch = state.controller_epoch
        self.replicas = state.replicas
        self.isr = state.isr
        self.zk_version = state.zk_version

    # ------------------------------------------------------------------ leader: produce

    def append_as_leader(
        self,
        records: bytes,
        acks: int,
        min_insync_replicas: int,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> LogAppendInfo:
        """Append a producer's batches; NOT_ENOUGH_REPLICAS refuses acks=all before any write.

        A retried batch already in the log is answered with its original offsets (``duplicate``).
        """
        if self.role is not Role.LEADER:
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {self.name}"
            )
        if acks == ACKS_ALL and len(self.isr) < min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.name} has {len(self.isr)} in-sync replicas {list(self.isr)}, "
                f"min.insync.replicas is {min_insync_replicas}"
            )
        info = self.log.append_as_leader(records, self.leader_epoch, origin)
        self.maybe_increment_high_watermark()
        return info

    def append_marker(
        self, request: WriteTxnMarkersRequest, min_insync_replicas: int
    ) -> LogAppendInfo:
        """Append the COMMIT or ABORT marker a transaction coordinator asks for, stamped with this
        leader's clock; it is then awaited like an acks=all produce."""
        marker = marker_for(request, self.clock())
        return self.append_as_leader(
            marker, ACKS_ALL, min_insync_replicas, AppendOrigin.COORDINATOR
        )

    @property
    def last_stable_offset(self) -> int:
        """LSO: the HW, or the first offset of a transaction not yet ended below it if lower."""
        return self.log.last_stable_offset(self.high_watermark)

    def consumer_bound(self, isolation_level: int) -> int:
        """How far a consumer reads: the HW, or the LSO for read_committed."""
        if isolation_level == READ_COMMITTED:
            return self.last_stable_offset
        return self.high_watermark

    @staticmethod
    def required_offset(info: LogAppendInfo, acks: int) -> int | None:
        """The HW an append waits for before it is answered; None to answer at once (acks 0, 1)."""
        return info.last_offset + 1 if acks == ACKS_ALL else None

    def produce_outcome(self, required_offset: int, min_insync_replicas: int) -> Errors | None:
        """DelayedProduce's completion test: None while the HW is below ``required_offset``."""
        if self.role is not Role.LEADER:
            return Errors.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return None
        if len(self.isr) < min_insync_replicas:
            return Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return Errors.NONE

    def produce_response(self, info: LogAppendInfo, error: Errors = Errors.NONE) -> ProduceResponse:
        """The answer to a produce request whose append gave ``info`` and whose wait ``error``."""
        if error is not Errors.NONE:
            return self.produce_error(error)
        return ProduceResponse(Errors.NONE, info.first_offset, -1, self.log.log_start_offset)

    def produce_error(self, error: Errors) -> ProduceResponse:
        """The answer to a produce that failed with ``error`` after its append."""
        return ProduceResponse(error, error_message=f"{self.name}: {error.message}")

    def maybe_increment_high_watermark(self) -> bool:
        """HW = min LEO over the ISR, moving only forward; return whether it moved."""
        if self.role is not Role.LEADER:
            return False
        candidate = isr_rules.high_watermark_candidate(
            self.log.log_end_offset, self.broker_id, self.isr, self.followers
        )
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    # ------------------------------------------------------------------ leader: fetch

    def epoch_error(self, current_leader_epoch: int) -> Errors | None:
        """Fence requests from clients or followers that know a different leader epoch."""
        if current_leader_epoch == NO_LEADER_EPOCH or current_leader_epoch == self.leader_epoch:
            return None
        return (
            Errors.FENCED_LEADER_EPOCH
            if current_leader_epoch < self.leader_epoch
            else Errors.UNKNOWN_LEADER_EPOCH
        )

    def leader_error(self, current_leader_epoch: int) -> Errors | None:
        """Why a request to the leader is refused: a fenced or unknown epoch, or not leading."""
        error = self.epoch_error(current_leader_epoch)
        if error is None and self.role is not Role.LEADER:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return error

    def read(self, request: FetchRequest, max_bytes: int | None = None) -> FetchResponse:
        """Answer a fetch now (``fetch_ready`` says when to answer a waiting one).

        Followers read up to the LEO, consumers up to the HW. A follower's fetch offset also updates
        what the leader knows of it. ``max_bytes`` lowers the request's own limit (a replication
        throttle); 0 returns no records.
        """
        error = self.leader_error(request.current_leader_epoch)
        if (
            error is None
            and request.replica_id != CONSUMER_REPLICA_ID
            and request.replica_id not in self.followers
        ):
            error = Errors.NOT_LEADER_OR_FOLLOWER
        if error is not None:
            return self._fetch_error(
                error, f"{self.name} at broker {self.broker_id}: {error.message}"
            )
        bound = (
            None
            if request.replica_id != CONSUMER_REPLICA_ID
            else self.consumer_bound(request.isolation_level)
        )
        limit = request.max_bytes if max_bytes is None else min(request.max_bytes, max_bytes)
        min_one_batch = max_bytes != 0
        found = None
        if request.file_regions and request.replica_id == CONSUMER_REPLICA_ID:
            found = self.log.region(request.fetch_offset, limit, bound, min_one_batch)
        data = b""
        if found is None:
            try:
                data = self.log.read(request.fetch_offset, limit, bound, min_one_batch)
            except OffsetOutOfRangeError as exc:
                # As Kafka does, a failed read leaves the follower's fetch state alone: an offset
                # outside the log (a diverged follower ahead of us) says nothing of what it holds.
                return self._fetch_error(Errors.OFFSET_OUT_OF_RANGE, exc.message)
        if request.replica_id != CONSUMER_REPLICA_ID:
            self.update_follower(request.replica_id, request.fetch_offset)
        aborted: tuple[AbortedTransaction, ...] = ()
        if request.isolation_level == READ_COMMITTED and (data or found):
            end = found[1] if found is not None else _next_offset(data, request.fetch_offset)
            aborted = tuple(self.log.collect_aborted_transactions(request.fetch_offset, end))
        return FetchResponse(
            Errors.NONE,
            self.high_watermark,
            self.log.log_start_offset,
            self.log.log_end_offset,
            data,
            self.leader_epoch,
            last_stable_offset=self.last_stable_offset,
            aborted_transactions=aborted,
            region=None if found is None else found[0],
        )

    def _fetch_error(self, error: Errors, message: str) -> FetchResponse:
        return FetchResponse(
            error,
            self.high_watermark,
            self.log.log_start_offset,
            self.log.log_end_offset,
            leader_epoch=self.leader_epoch,
            error_message=message,
            last_stable_offset=self.last_stable_offset,
        )

    @staticmethod
    def answered_at_once(request: FetchRequest, response: FetchResponse) -> bool:
        """Whether to answer with ``response`` now: an error, ``min_bytes`` read, or no wait."""
        return (
            response.error is not Errors.NONE
            or response.size >= request.min_bytes
            or request.max_wait_ms <= 0
        )

    def fetch_ready(self, request: FetchRequest) -> bool | None:
        """DelayedFetch's test: True to answer a parked fetch now, None to keep it waiting.

        It is answered once ``min_bytes`` of new data lie below the fetcher's bound (the LEO for a
        follower, the HW for a consumer, the LSO for a read_committed one), or when this replica
        stops leading.
        """
        if self.role is not Role.LEADER:
            return True
        bound = (
            self.log.log_end_offset
            if request.replica_id != CONSUMER_REPLICA_ID
            else self.consumer_bound(request.isolation_level)
        )
        if bound <= request.fetch_offset:
            return None
        if request.min_bytes <= 1:
            return True
        try:
            available = len(self.log.read(request.fetch_offset, request.min_bytes, bound))
        except RafkaError:
            return True
        return True if available >= request.min_bytes else None

    def stopped_leading(self) -> bool | None:
        """A parked fetch's test for waking early: True once this replica no longer leads."""
        return True if self.role is not Role.LEADER else None

    def leader_throttles(self, replica_id: int) -> bool:
        """Whether a fetch by follower ``replica_id`` counts against this broker's leader
        replication quota: this leader is listed in ``leader.replication.throttled.replicas`` and
        the follower is out of the ISR (Kafka never throttles in-sync replicas)."""
        return (
            self.role is Role.LEADER
            and replica_id != CONSUMER_REPLICA_ID
            and replica_id not in self.isr
            and self.log.config.leader_throttled.includes(self.partition, self.broker_id)
        )

    def update_follower(self, replica_id: int, fetch_offset: int) -> bool:
        """Record a follower's fetch (Kafka's updateFetchState); return whether the HW moved."""
        self.followers[replica_id].record_fetch(fetch_offset, self.log.log_end_offset, self.clock())
        return self.maybe_increment_high_watermark()

    def end_offset_for_epoch(
        self, request: OffsetsForLeaderEpochRequest
    ) -> OffsetsForLeaderEpochResponse:
        """OffsetsForLeaderEpoch at the leader: where ``request.leader_epoch`` ends in its log."""
        error = self.leader_error(request.current_leader_epoch)
        if error is not None:
            return OffsetsForLeaderEpochResponse(
                error, error_message=f"{self.name}: {error.message}"
            )
        epoch, end = self.log.end_offset_for_epoch(request.leader_epoch)
        return OffsetsForLeaderEpochResponse(Errors.NONE, epoch, end)

    # ------------------------------------------------------------------ leader: ISR

    def lagging_isr_followers(self, max_lag_ms: int) -> list[int]:
        """ISR followers not caught up within ``replica.lag.time.max.ms``: candidates to shrink."""
        return isr_rules.lagging_followers(
            self.broker_id, self.isr, self.followers, self.clock(), max_lag_ms
        )

    def followers_to_add(self) -> list[int]:
        """Out-of-sync followers that reached the HW within the current epoch: candidates to add."""
        entries = self.log.epoch_cache.entries
        epoch_start = entries[-1].start_offset if entries else 0
        return isr_rules.followers_to_add(
            self.isr, self.followers, self.high_watermark, epoch_start
        )

    def isr_to_expand(self) -> tuple[int, ...] | None:
        """The ISR with every caught-up follower added; None if none is, or a change is pending."""
        if self.role is not Role.LEADER or self.pending_isr is not None:
            return None
        joining = self.followers_to_add()
        return isr_rules.expanded_isr(self.replicas, self.isr, joining) if joining else None

    def isr_to_shrink(self, max_lag_ms: int) -> tuple[int, ...] | None:
        """The ISR without its lagging followers, or None: none lags, or a change is pending."""
        if self.role is not Role.LEADER or self.pending_isr is not None:
            return None
        lagging = self.lagging_isr_followers(max_lag_ms)
        return isr_rules.shrunk_isr(self.isr, lagging) if lagging else None

    def propose_isr(self, isr: tuple[int, ...]) -> LeaderIsrAndEpoch:
        """The state znode to compare-and-set for ``isr``; it stays pending until answered."""
        proposal = LeaderIsrAndEpoch(
            self.broker_id, self.leader_epoch, isr, self.controller_epoch, self.zk_version
        )
        self.pending_isr = proposal
        return proposal

    def finish_isr_change(
        self, proposal: LeaderIsrAndEpoch, error: Errors, zk_version: int
    ) -> bool:
        """Take ZooKeeper's answer to ``proposal``; return whether its ISR was applied.

        It is applied only if written while this replica still leads at the proposal's epoch.
        """
        self.pending_isr = None
        if (
            error is Errors.NONE
            and self.role is Role.LEADER
            and self.leader_epoch == proposal.leader_epoch
        ):
            self.apply_isr(proposal.isr, zk_version)
            return True
        return False

    def apply_isr(self, isr: tuple[int, ...], zk_version: int) -> bool:
        """Take an ISR written to ZooKeeper; a shrink may let the HW advance (returned: whether)."""
        self.isr = isr
        self.zk_version = zk_version
        return self.maybe_increment_high_watermark()

    # ------------------------------------------------------------------ follower

    def follower_fetch_request(
        self, max_bytes: int, max_wait_ms: int, min_bytes: int
    ) -> FetchRequest:
        """The next fetch from the leader: at this log's end, at the epoch this replica follows."""
        return FetchRequest(
            fetch_offset=self.log.log_end_offset,
            max_bytes=max_bytes,
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            replica_id=self.broker_id,
            current_leader_epoch=self.leader_epoch,
        )

    def follower_throttled(self) -> bool:
        """Whether this follower's fetches count against its broker's follower replication quota:
        it is listed in ``follower.replication.throttled.replicas`` and is behind the leader's end
        offset (or has not heard from the leader yet)."""
        return (
            self.role is Role.FOLLOWER
            and (self.leader_end_offset < 0 or self.log.log_end_offset < self.leader_end_offset)
            and self.log.config.follower_throttled.includes(self.partition, self.broker_id)
        )

    def apply_fetch_response(self, response: FetchResponse) -> FollowerAction:
        """Apply the leader's answer to a follower fetch and say what the fetch loop does next."""
        if response.error is Errors.NONE:
            try:
                self.append_as_follower(response)
            except RafkaError as exc:
                logger.error("%s: follower append failed: %s", self.name, exc)
                return FollowerAction.TRUNCATE
            self.leader_end_offset = response.log_end_offset
            return FollowerAction.FETCH
        if response.error is Errors.OFFSET_OUT_OF_RANGE:
            self.reset_out_of_range(response)
            return FollowerAction.FETCH
        return FollowerAction.BACK_OFF

    def append_as_follower(self, response: FetchResponse) -> int:
        """Append what the leader sent, take HW = min(own LEO, leader HW); return bytes appended."""
        if response.records:
            self.log.append_as_follower(response.records)
        self.high_watermark = min(self.log.log_end_offset, response.high_watermark)
        # The leader's DeleteRecords reaches followers as its log start offset (KIP-107).
        if response.log_start_offset <= self.log.log_end_offset:
            self.log.advance_log_start_offset(response.log_start_offset)
        return len(response.records)

    def reset_out_of_range(self, response: FetchResponse) -> None:
        """Recover from a fetch offset outside the leader's log.

        Ahead of its end (an unclean election left this log longer): truncate to it. Behind its
        start: start again, empty, at the leader's log start.
        """
        if self.log.log_end_offset > response.log_end_offset:
            self.log.truncate_to(response.log_end_offset)
        else:
            self.log.truncate_fully_and_start_at(response.log_start_offset)
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)

    def epoch_query(self) -> OffsetsForLeaderEpochRequest | None:
        """KIP-101's question for the leader before following it: where our latest epoch ends.

        A log without epochs (empty, or written before epochs) has nothing to ask: it is truncated
        to its HW at once, Kafka's fallback, and None is returned.
        """
        latest = self.log.epoch_cache.latest_epoch
        if latest == UNDEFINED_EPOCH:
            self.truncate_to_leader(UNDEFINED_EPOCH, -1)
            return None
        return OffsetsForLeaderEpochRequest(latest, self.broker_id, self.leader_epoch)

    def truncate_on_epoch_answer(self, response: OffsetsForLeaderEpochResponse) -> int | None:
        """Truncate as the leader's OffsetsForLeaderEpoch answer says; return the bytes removed.

        None means the leader refused (an error): nothing changed, ask again later.
        """
        if response.error is not Errors.NONE:
            return None
        return self.truncate_to_leader(response.leader_epoch, response.end_offset)

    def truncate_to_leader(self, leader_epoch: int, leader_end_offset: int) -> int:
        """KIP-101: truncate to where this log diverges from the leader's; return bytes removed.

        ``leader_epoch``/``leader_end_offset`` answer OffsetsForLeaderEpoch for this replica's
        latest epoch. If the leader knows only an older epoch, both logs agree up to the end of that
        epoch in both (KIP-279). With no answer (UNDEFINED) the HW is the only safe point left.
        """
        if leader_epoch == UNDEFINED_EPOCH:
            target = self.high_watermark
        else:
            local_end = self.log.end_offset_for_epoch(leader_epoch)[1]
            target = min(leader_end_offset, local_end) if local_end >= 0 else leader_end_offset
        removed = self.log.truncate_to(target)
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        return removed

    # ------------------------------------------------------------------ offsets

    def list_offsets(
        self,
        timestamp: int,
        current_leader_epoch: int,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> ListOffsetsResponse:
        """ListOffsets at the leader: earliest, latest (the HW, or the LSO for read_committed) or
        by timestamp below that."""
        error = self.leader_error(current_leader_epoch)
        if error is not None:
            return ListOffsetsResponse(
                error, error_message=f"{self.name} at broker {self.broker_id}: {error.message}"
            )
        bound = self.consumer_bound(isolation_level)
        if timestamp == LATEST_TIMESTAMP:
            return ListOffsetsResponse(Errors.NONE, bound, -1, self.leader_epoch)
        if timestamp == EARLIEST_TIMESTAMP:
            return ListOffsetsResponse(
                Errors.NONE, self.log.log_start_offset, -1, self.leader_epoch
            )
        found = self.log.offset_for_timestamp(timestamp)
        if found is None or found[0] >= bound:
            return ListOffsetsResponse(Errors.NONE, -1, -1, self.leader_epoch)
        return ListOffsetsResponse(Errors.NONE, found[0], found[1], self.leader_epoch)

    def delete_records(self, offset: int) -> DeleteRecordsResponse:
        """DeleteRecords at the leader: move the log start offset to ``offset`` (HIGH_WATERMARK:
        the HW), which may not pass the HW; followers take it from their next fetch."""
        error = self.leader_error(NO_LEADER_EPOCH)
        if error is not None:
            return DeleteRecordsResponse(error, error_message=f"{self.name}: {error.message}")
        target = self.high_watermark if offset == HIGH_WATERMARK else offset
        if not 0 <= target <= self.high_watermark:
            return DeleteRecordsResponse(
                Errors.OFFSET_OUT_OF_RANGE,
                error_message=f"{self.name}: offset {offset} is outside 0..{self.high_watermark}",
            )
        self.log.advance_log_start_offset(target)
        return DeleteRecordsResponse(Errors.NONE, self.log.log_start_offset)

    def checkpoint(self) -> None:
        """Persist the HW and the log's recovery point and start offset."""
        self._hw_checkpoint.write(self.high_watermark)
        self.log.checkpoint()

    def log_dir_info(self) -> ReplicaLogDirInfo:
        """DescribeLogDirs' entry for this replica: its segments' bytes on disk and how far its
        end offset is behind the leader's, as its last fetch saw it (0 for a leader, and for a
        follower that has not fetched yet).

        The leader's end offset, not its high watermark: a follower still in the ISR holds the high
        watermark back to its own end offset, and would show no lag at all while catching up."""
        lag = 0
        if self.role is Role.FOLLOWER:
            lag = max(0, self.leader_end_offset - self.log.log_end_offset)
        return ReplicaLogDirInfo(self.log.size_in_bytes, lag)

    def describe(self) -> dict[str, object]:
        """A snapshot for tools and tests."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "broker_id": self.broker_id,
            "role": self.role.value,
            "leader": self.leader_id,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
            "replicas": list(self.replicas),
            "high_watermark": self.high_watermark,
            "last_stable_offset": self.last_stable_offset,
            "log_start_offset": self.log.log_start_offset,
            "log_end_offset": self.log.log_end_offset,
            "size_in_bytes": self.log.size_in_bytes,
            "segments": len(self.log.segments),
            "epochs": [(e.epoch, e.start_offset) for e in self.log.epoch_cache.entries],
            "followers": {r: s.log_end_offset for r, s in self.followers.items()},
        }


def _next_offset(data: bytes, fetch_offset: int) -> int:
    """The offset after the last batch in ``data`` read from ``fetch_offset``."""
    end = fetch_offset
    for _, header in iter_batches(data):
        end = header.next_offset
    return end
