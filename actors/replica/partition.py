"""One replica of a partition: its log, its role, its high watermark and, as leader, its ISR.

This is plain state with no Ray and no waiting, so it is tested directly; the replica actor wraps it
with the purgatories and the follower fetch loop. The rules are Kafka's (seed 004 §5.1.15):

- the leader sets a follower's LEO to that follower's fetch offset and recomputes
  HW = min(own LEO, LEO of every ISR follower); HW never goes down;
- a follower appends what it fetched and sets HW = min(own LEO, leader's HW), one round late;
- consumers read only below the HW, followers up to the LEO;
- a follower is caught up when it fetched at the leader's LEO; one that has not been caught up for
  ``replica.lag.time.max.ms`` leaves the ISR, and one whose LEO reaches the HW may join it again.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from rafka.log.checkpoint import HIGH_WATERMARK_FILE, OffsetCheckpoint
from rafka.log.leader_epoch_cache import UNDEFINED_EPOCH
from rafka.log.log import Log, LogAppendInfo
from rafka.protocol.errors import (
    Errors,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
)
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.fetch import (
    CONSUMER_REPLICA_ID,
    NO_LEADER_EPOCH,
    FetchRequest,
    FetchResponse,
)
from rafka.protocol.messages.offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsResponse,
)
from rafka.protocol.messages.produce import ACKS_ALL
from rafka.protocol.types import now_ms


class Role(enum.Enum):
    """What this replica does for its partition."""

    NONE = "none"
    LEADER = "leader"
    FOLLOWER = "follower"


@dataclass
class FollowerState:
    """What the leader knows of one follower, learnt from its fetches."""

    broker_id: int
    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = -1


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
        self._hw_checkpoint = OffsetCheckpoint(log.directory / HIGH_WATERMARK_FILE)
        self.high_watermark = min(self._hw_checkpoint.read(0), log.log_end_offset)

    @property
    def name(self) -> str:
        """``topic-partition``, as Kafka prints it."""
        return f"{self.topic}-{self.partition}"

    # ------------------------------------------------------------------ LeaderAndIsr

    def is_stale(self, state: LeaderAndIsrPartitionState) -> bool:
        """Whether a LeaderAndIsr carries an older leader epoch than this replica already applied."""
        return state.leader_epoch < self.leader_epoch

    def already_leads(self, state: LeaderAndIsrPartitionState) -> bool:
        """Whether a LeaderAndIsr naming this replica leader repeats what it already knows.

        A new controller resends every partition's state at its leader epoch; if the leader has changed
        the ISR since (a newer znode version), applying the resent state would bring back the old ISR
        and version, and every later ISR change would fail its version check. Kafka ignores a
        LeaderAndIsr whose epoch is not newer; a newer znode version at the same epoch is still taken.
        """
        return (
            self.role is Role.LEADER
            and state.leader == self.broker_id
            and state.leader_epoch == self.leader_epoch
            and state.zk_version <= self.zk_version
        )

    def make_leader(self, state: LeaderAndIsrPartitionState) -> None:
        """Become leader at ``state.leader_epoch``: new appends are stamped with it."""
        now = self.clock()
        self._apply(state)
        self.role = Role.LEADER
        self.leader_id = self.broker_id
        self.log.epoch_cache.assign(state.leader_epoch, self.log.log_end_offset)
        # Followers start unknown; ISR members get a fresh caught-up time so they are not shrunk at once.
        self.followers = {
            r: FollowerState(r, last_caught_up_ms=now if r in state.isr else 0)
            for r in state.replicas
            if r != self.broker_id
        }
        self.maybe_increment_high_watermark()

    def make_follower(self, state: LeaderAndIsrPartitionState) -> None:
        """Become a follower of ``state.leader``."""
        self._apply(state)
        self.role = Role.FOLLOWER
        self.leader_id = state.leader
        self.followers = {}

    def _apply(self, state: LeaderAndIsrPartitionState) -> None:
        self.leader_epoch = state.leader_epoch
        self.controller_epoch = state.controller_epoch
        self.replicas = state.replicas
        self.isr = state.isr
        self.zk_version = state.zk_version

    # ------------------------------------------------------------------ leader: produce

    def append_as_leader(
        self, records: bytes, acks: int, min_insync_replicas: int
    ) -> LogAppendInfo:
        """Append a producer's batches; NOT_ENOUGH_REPLICAS refuses acks=all before anything is written."""
        if self.role is not Role.LEADER:
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {self.name}"
            )
        if acks == ACKS_ALL and len(self.isr) < min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.name} has {len(self.isr)} in-sync replicas {list(self.isr)}, "
                f"min.insync.replicas is {min_insync_replicas}"
            )
        info = self.log.append_as_leader(records, self.leader_epoch)
        self.maybe_increment_high_watermark()
        return info

    def produce_outcome(self, required_offset: int, min_insync_replicas: int) -> Errors | None:
        """DelayedProduce's completion test: None while the HW is below ``required_offset``."""
        if self.role is not Role.LEADER:
            return Errors.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return None
        if len(self.isr) < min_insync_replicas:
            return Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return Errors.NONE

    def maybe_increment_high_watermark(self) -> bool:
        """HW = min LEO over the ISR, moving only forward; return whether it moved."""
        if self.role is not Role.LEADER:
            return False
        candidate = self.log.log_end_offset
        for replica in self.isr:
            if replica != self.broker_id:
                candidate = min(
                    candidate,
                    self.followers[replica].log_end_offset if replica in self.followers else -1,
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

    def read(self, request: FetchRequest) -> FetchResponse:
        """Answer a fetch now (the actor decides whether to wait for more): followers up to the LEO,
        consumers up to the HW. A follower's fetch offset also updates what the leader knows of it."""
        error = self.epoch_error(request.current_leader_epoch)
        if error is None and self.role is not Role.LEADER:
            error = Errors.NOT_LEADER_OR_FOLLOWER
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
        bound = None if request.replica_id != CONSUMER_REPLICA_ID else self.high_watermark
        try:
            data = self.log.read(request.fetch_offset, request.max_bytes, bound)
        except OffsetOutOfRangeError as exc:
            # As Kafka does, a failed read leaves the follower's fetch state alone: an offset outside the
            # log (a diverged follower ahead of us) says nothing of what the follower holds.
            return self._fetch_error(Errors.OFFSET_OUT_OF_RANGE, exc.message)
        if request.replica_id != CONSUMER_REPLICA_ID:
            self.update_follower(request.replica_id, request.fetch_offset)
        return FetchResponse(
            Errors.NONE,
            self.high_watermark,
            self.log.log_start_offset,
            self.log.log_end_offset,
            data,
            self.leader_epoch,
        )

    def _fetch_error(self, error: Errors, message: str) -> FetchResponse:
        return FetchResponse(
            error,
            self.high_watermark,
            self.log.log_start_offset,
            self.log.log_end_offset,
            leader_epoch=self.leader_epoch,
            error_message=message,
        )

    def update_follower(self, replica_id: int, fetch_offset: int) -> bool:
        """Record a follower's fetch (Kafka's updateFetchState); return whether the HW moved."""
        now = self.clock()
        state = self.followers[replica_id]
        leader_leo = self.log.log_end_offset
        if fetch_offset >= leader_leo:
            state.last_caught_up_ms = now
        elif fetch_offset >= state.last_fetch_leader_leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.last_fetch_leader_leo = leader_leo
        state.last_fetch_ms = now
        state.log_end_offset = fetch_offset
        return self.maybe_increment_high_watermark()

    def lagging_isr_followers(self, max_lag_ms: int) -> list[int]:
        """ISR followers not caught up within ``replica.lag.time.max.ms``: candidates to shrink."""
        now = self.clock()
        return [
            r
            for r in self.isr
            if r != self.broker_id
            and r in self.followers
            and now - self.followers[r].last_caught_up_ms > max_lag_ms
        ]

    def followers_to_add(self) -> list[int]:
        """Out-of-sync followers that reached the HW within the current epoch: candidates to expand."""
        epoch_start = (
            self.log.epoch_cache.entries[-1].start_offset if self.log.epoch_cache.entries else 0
        )
        return [
            r
            for r, state in self.followers.items()
            if r not in self.isr and state.log_end_offset >= max(self.high_watermark, epoch_start)
        ]

    def apply_isr(self, isr: tuple[int, ...], zk_version: int) -> bool:
        """Take an ISR written to ZooKeeper; a shrink may let the HW advance. Returns whether it moved."""
        self.isr = isr
        self.zk_version = zk_version
        return self.maybe_increment_high_watermark()

    # ------------------------------------------------------------------ follower

    def append_as_follower(self, response: FetchResponse) -> int:
        """Append what the leader sent and take HW = min(own LEO, leader HW); return bytes appended."""
        if response.records:
            self.log.append_as_follower(response.records)
        self.high_watermark = min(self.log.log_end_offset, response.high_watermark)
        return len(response.records)

    def truncate_to_leader(self, leader_epoch: int, leader_end_offset: int) -> int:
        """KIP-101: truncate to where this log diverges from the leader's; return bytes removed.

        ``leader_epoch``/``leader_end_offset`` answer OffsetsForLeaderEpoch for this replica's latest
        epoch. If the leader knows only an older epoch, both logs agree up to the end of that epoch
        in both (KIP-279). With no answer (UNDEFINED) the HW is the only safe point left.
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

    def list_offsets(self, timestamp: int, current_leader_epoch: int) -> ListOffsetsResponse:
        """ListOffsets at the leader: earliest, latest (the HW) or by timestamp below the HW."""
        error = self.epoch_error(current_leader_epoch) or (
            None if self.role is Role.LEADER else Errors.NOT_LEADER_OR_FOLLOWER
        )
        if error is not None:
            return ListOffsetsResponse(
                error, error_message=f"{self.name} at broker {self.broker_id}: {error.message}"
            )
        if timestamp == LATEST_TIMESTAMP:
            return ListOffsetsResponse(Errors.NONE, self.high_watermark, -1, self.leader_epoch)
        if timestamp == EARLIEST_TIMESTAMP:
            return ListOffsetsResponse(
                Errors.NONE, self.log.log_start_offset, -1, self.leader_epoch
            )
        found = self.log.offset_for_timestamp(timestamp)
        if found is None or found[0] >= self.high_watermark:
            return ListOffsetsResponse(Errors.NONE, -1, -1, self.leader_epoch)
        return ListOffsetsResponse(Errors.NONE, found[0], found[1], self.leader_epoch)

    def checkpoint(self) -> None:
        """Persist the HW and the log's recovery point and start offset."""
        self._hw_checkpoint.write(self.high_watermark)
        self.log.checkpoint()

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
            "log_start_offset": self.log.log_start_offset,
            "log_end_offset": self.log.log_end_offset,
            "size_in_bytes": self.log.size_in_bytes,
            "segments": len(self.log.segments),
            "epochs": [(e.epoch, e.start_offset) for e in self.log.epoch_cache.entries],
            "followers": {r: s.log_end_offset for r, s in self.followers.items()},
        }
