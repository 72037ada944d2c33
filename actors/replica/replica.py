"""The partition replica actor: one per topic, partition and broker, placed on its broker's node.

It is a threaded Ray actor whose handlers each run under the replica's one lock, so messages are
applied one at a time; a handler gives the lock up only while parked in a purgatory, and re-checks
state when it wakes. A threaded actor because a call into it costs less CPU than one into an asyncio
actor, and a leader takes three calls per replicated batch. As leader it appends produce requests
and answers fetches from consumers and followers; as follower a thread of its own runs the fetch
loop, first truncating the log to the leader's end offset for its latest epoch (KIP-101). Every
rule is the partition's (``partition``, ``isr``): this shell receives the messages, takes the lock,
asks the partition, and makes the remote calls, outside the lock. A throttled replica's fetch asks
its broker's replication quota first (``replication_quota``) and records what it moved after.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import ray

from rafka.actors import names
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.replication_quota import QuotaType, Throttle
from rafka.actors.process import configure_actor_logging
from rafka.actors.replica.partition import FollowerAction, Partition
from rafka.actors.replica.purgatory import Purgatory
from rafka.actors.replica.replica_metrics import ReplicaMetrics
from rafka.actors.state_change import (
    ChangeFields,
    describe_state,
    log_state_change,
    open_state_change_log,
)
from rafka.actors.zk.data import LeaderIsrAndEpoch
from rafka.log.cleaner import maybe_compact
from rafka.log.config import LogConfig
from rafka.log.deleted_dirs import RenamedLog
from rafka.log.files import partition_dir_name
from rafka.log.log import Log
from rafka.metrics.broker_view import ReplicaReport
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.admin import ReplicaLogDirInfo
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.fetch import (
    CONSUMER_REPLICA_ID,
    FetchRequest,
    FetchResponse,
)
from rafka.protocol.messages.offsets import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from rafka.protocol.messages.produce import (
    HighWatermarkReached,
    HighWatermarkWait,
    ProduceAppended,
    ProduceRequest,
    ProduceResponse,
)
from rafka.protocol.messages.transactions import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from rafka.protocol.types import now_ms

logger = logging.getLogger(__name__)

HOUSEKEEPING_TICK_S = 1.0
SLOW_PRODUCE_S = 2.0
"""An acks=all produce parked longer than this is written to the state-change log."""
QUOTA_TIMEOUT_S = 5.0
"""Longest a throttled fetch waits for its broker's quota answer before going ahead unthrottled."""
# Handler threads: each request parked in a purgatory holds one (consumers' long polls, acks=all
# produces); a request finding none free waits for one to return. Followers' fetches and the
# controller's requests have thread pools of their own, so parked produces can never hold every
# thread while the follower fetches that would complete them wait behind.
MAX_CONCURRENCY = 64
CONCURRENCY_GROUPS = {"replication": 8, "control": 2}
# Errors after which a follower looks its leader up again and backs off: no such actor (ValueError),
# a dead leader, a timeout, or a leader that raised.
_LEADER_UNREACHABLE = (ValueError, ray.exceptions.RayError)


class _Fetcher:
    """A follower's fetch loop thread for one leader epoch, ended by setting ``stopped``."""

    def __init__(self, epoch: int, run: Callable[[_Fetcher], None], name: str) -> None:
        self.epoch = epoch
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=run, args=(self,), name=name, daemon=True)
        self.thread.start()

    def alive(self) -> bool:
        """Whether the loop still runs and has not been told to stop."""
        return self.thread.is_alive() and not self.stopped.is_set()


class PartitionReplica:
    """Ray actor serving one replica of one partition from its broker's local disk."""

    def __init__(
        self,
        topic: str,
        partition: int,
        broker_id: int,
        config: BrokerConfig,
        log_config: LogConfig,
        namespace: str,
    ) -> None:
        self.config = config
        self.namespace = namespace
        configure_actor_logging(config.log_dirs)
        open_state_change_log(config.log_dirs)
        self.log = Log(Path(config.log_dirs) / partition_dir_name(topic, partition), log_config)
        self.partition = Partition(topic, partition, broker_id, self.log)
        self._lock = threading.RLock()
        self.produce_waiters: Purgatory[Errors] = Purgatory("produce", self._lock)
        self.fetch_waiters: Purgatory[bool] = Purgatory("fetch", self._lock)
        self.metrics = ReplicaMetrics(
            self.partition,
            {"Produce": self.produce_waiters, "Fetch": self.fetch_waiters},
            config.metrics_enabled,
        )
        self._fetcher: _Fetcher | None = None
        self._broker: Any = None
        # Wall-clock ms this replica last became leader (-1: never), for recovery timelines.
        self._leader_since_ms = -1
        self._stopped = threading.Event()
        self._housekeeping = threading.Thread(
            target=self._housekeep, name=f"{self.partition.name}-housekeeping", daemon=True
        )
        self._housekeeping.start()

    def _state_change(self, message: str, *args: object, epoch: int | None = None) -> None:
        log_state_change(
            ChangeFields(self.partition.broker_id, epoch, partition=self.partition.name),
            "[Replica %s@%d] " + message,
            self.partition.name,
            self.partition.broker_id,
            *args,
        )

    def _positions(self) -> str:
        return f"LEO {self.log.log_end_offset} HW {self.partition.high_watermark}"

    # ------------------------------------------------------------------ control

    @ray.method(concurrency_group="control")
    def become_leader(self, state: LeaderAndIsrPartitionState) -> Errors:
        """Apply a LeaderAndIsr naming this replica leader."""
        with self._lock:
            if self.partition.is_stale(state):
                self._state_change(
                    "ignored stale LeaderAndIsr (%s): at epoch %d",
                    describe_state(state),
                    self.partition.leader_epoch,
                    epoch=state.controller_epoch,
                )
                return Errors.STALE_CONTROLLER_EPOCH
            if self.partition.already_leads(state):
                return Errors.NONE
            self._stop_fetcher()
            self.partition.make_leader(state)
            self._leader_since_ms = now_ms()
            self._partition_changed()
            self._state_change(
                "became leader: %s, %s",
                describe_state(state),
                self._positions(),
                epoch=state.controller_epoch,
            )
        return Errors.NONE

    @ray.method(concurrency_group="control")
    def become_follower(self, state: LeaderAndIsrPartitionState) -> Errors:
        """Apply a LeaderAndIsr naming another replica leader; (re)start the fetch loop."""
        with self._lock:
            if self.partition.is_stale(state):
                self._state_change(
                    "ignored stale LeaderAndIsr (%s): at epoch %d",
                    describe_state(state),
                    self.partition.leader_epoch,
                    epoch=state.controller_epoch,
                )
                return Errors.STALE_CONTROLLER_EPOCH
            if (
                self.partition.already_follows(state)
                and self._fetcher is not None
                and self._fetcher.alive()
            ):
                return Errors.NONE
            self._stop_fetcher()
            self.partition.make_follower(state)
            self._partition_changed()
            self._state_change(
                "became follower: %s, %s",
                describe_state(state),
                self._positions(),
                epoch=state.controller_epoch,
            )
            if state.leader >= 0:
                self._fetcher = _Fetcher(
                    state.leader_epoch, self._fetch_loop, f"{self.partition.name}-fetcher"
                )
        return Errors.NONE

    @ray.method(concurrency_group="control")
    def update_config(self, config: LogConfig) -> None:
        """A dynamic config change: the log applies it from its next append, roll or retention
        pass, and acks=all produces from then on check its ``min.insync.replicas``."""
        with self._lock:
            self.log.update_config(config)
            self._partition_changed()

    @ray.method(concurrency_group="control")
    def stop(self, delete: bool = False) -> RenamedLog | None:
        """StopReplica: stop serving, then close the log, or with ``delete`` rename its directory
        for deletion (the broker removes it after ``file.delete.delay.ms``)."""
        with self._lock:
            self._stopped.set()
            self.partition.stop()
            self._partition_changed()
            self._stop_fetcher()
            if delete:
                path = self.log.rename_for_deletion()
                return RenamedLog(str(path), self.log.config.file_delete_delay_ms)
            self.partition.checkpoint()
            self.log.close()
            return None

    # ------------------------------------------------------------------ produce and fetch

    def produce(self, request: ProduceRequest) -> ProduceResponse:
        """Append as leader; with acks=all, wait in the purgatory until the HW passes the batch.

        A retried batch already in the log is answered with its original base offset, once the HW
        passes it (acks=all).
        """
        started = time.perf_counter()
        with self._lock:
            appended = self._append(request)
            response = appended.response
            if appended.required_offset is not None:
                error = self._await_high_watermark(
                    appended.required_offset,
                    self.log.config.min_insync_replicas,
                    request.timeout_ms,
                    "produce",
                )
                if error is not Errors.NONE:
                    response = self.partition.produce_error(error)
            self.metrics.produce_answered(response.error, (time.perf_counter() - started) * 1000)
            return response

    def append(self, request: ProduceRequest) -> ProduceAppended:
        """The first half of ``produce``: append, and say what HW an acks=all produce must wait
        for. The Kafka listener appends a connection's requests in order with this, then waits
        for them together with ``await_high_watermark``."""
        with self._lock:
            return self._append(request)

    def await_high_watermark(self, request: HighWatermarkWait) -> HighWatermarkReached:
        """The second half of acks=all ``produce``s: wait until the HW reaches the offset; the
        outcome, and the answer for every produce waiting at or below the HW then."""
        with self._lock:
            partition = self.partition
            min_isr = self.log.config.min_insync_replicas
            error = self._await_high_watermark(
                request.required_offset, min_isr, request.timeout_ms, "produce"
            )
            below = partition.produce_outcome(partition.high_watermark, min_isr)
            return HighWatermarkReached(
                error, partition.high_watermark, Errors.NONE if below is None else below
            )

    def _append(self, request: ProduceRequest) -> ProduceAppended:
        """Append as leader (the caller holds the lock); the answer, and the HW to wait for."""
        partition = self.partition
        try:
            info = partition.append_as_leader(
                request.records, request.acks, self.log.config.min_insync_replicas, request.origin
            )
        except RafkaError as exc:
            return ProduceAppended(ProduceResponse(exc.error, error_message=exc.message))
        if not info.duplicate:
            self.metrics.appended(info.record_count, info.size_in_bytes)
            self._partition_changed()
        return ProduceAppended(
            partition.produce_response(info), partition.required_offset(info, request.acks)
        )

    def write_txn_markers(self, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
        """Append a transaction coordinator's COMMIT or ABORT marker as leader; answer once the
        HW passes it (REQUEST_TIMED_OUT after ``request.timeout_ms``)."""
        with self._lock:
            partition = self.partition
            min_isr = self.log.config.min_insync_replicas
            try:
                info = partition.append_marker(request, min_isr)
            except RafkaError as exc:
                return WriteTxnMarkersResponse(exc.error, exc.message)
            self._partition_changed()
            error = self._await_high_watermark(
                info.last_offset + 1, min_isr, request.timeout_ms, "marker"
            )
            if error is Errors.NONE:
                return WriteTxnMarkersResponse(Errors.NONE)
            return WriteTxnMarkersResponse(error, f"{partition.name}: {error.message}")

    def _await_high_watermark(
        self, required: int, min_isr: int, timeout_ms: int, what: str
    ) -> Errors:
        """Park (the caller holds the lock) until the HW reaches ``required``; the outcome."""
        partition = self.partition
        parked = time.monotonic()
        error = self.produce_waiters.wait(
            lambda: partition.produce_outcome(required, min_isr),
            timeout_ms / 1000,
            lambda: Errors.REQUEST_TIMED_OUT,
        )
        waited = time.monotonic() - parked
        if error is not Errors.NONE or waited > SLOW_PRODUCE_S:
            self._state_change(
                "acks=all %s up to offset %d answered %s after %.1fs: ISR %s, %s",
                what,
                required,
                error.name,
                waited,
                list(partition.isr),
                self._positions(),
            )
        return error

    def fetch(self, request: FetchRequest) -> FetchResponse:
        """Read for a consumer or follower (``_fetch``), counted and timed."""
        started = time.perf_counter()
        response = self._fetch(request)
        self.metrics.fetch_answered(request, response, (time.perf_counter() - started) * 1000)
        return response

    def _fetch(self, request: FetchRequest) -> FetchResponse:
        """Read for a consumer or follower; with nothing to return, wait up to ``max_wait_ms``.

        A throttled follower reads at most what this broker's leader replication quota allows;
        over the quota it gets no records, answered when the quota may allow more (at most
        ``max_wait_ms`` later), as Kafka's DelayedFetch leaves throttled partitions out.
        """
        throttle = None
        if request.replica_id != CONSUMER_REPLICA_ID:
            with self._lock:
                throttled = self.partition.leader_throttles(request.replica_id)
            if throttled:
                throttle = self._ask_quota(QuotaType.LEADER, request.max_bytes)
        limit = None if throttle is None else throttle.max_bytes
        with self._lock:
            partition = self.partition
            response = partition.read(request, limit)
            if request.replica_id != CONSUMER_REPLICA_ID:
                self._partition_changed()
                new_isr = partition.isr_to_expand()
                if new_isr is not None:
                    self._start_isr_change(new_isr)
            if throttle is not None and not throttle.allowed:
                wait_s = min(throttle.wait_s, request.max_wait_ms / 1000)
                self.fetch_waiters.wait(partition.stopped_leading, wait_s, lambda: False)
                return partition.read(request, 0)
            if not partition.answered_at_once(request, response):
                self.fetch_waiters.wait(
                    lambda: partition.fetch_ready(request),
                    request.max_wait_ms / 1000,
                    lambda: False,
                )
                response = partition.read(request, limit)
        if throttle is not None:
            self._settle_quota(QuotaType.LEADER, throttle.max_bytes, response.size)
        return response

    def _ask_quota(self, kind: QuotaType, max_bytes: int) -> Throttle | None:
        """This broker's replication quota's answer for a throttled fetch of up to ``max_bytes``;
        None (go ahead unthrottled) if the broker does not answer."""
        try:
            if self._broker is None:
                self._broker = ray.get_actor(
                    names.broker_actor_name(self.partition.broker_id), namespace=self.namespace
                )
            return cast(
                Throttle,
                ray.get(
                    self._broker.replication_throttle.remote(kind, max_bytes),
                    timeout=QUOTA_TIMEOUT_S,
                ),
            )
        except _LEADER_UNREACHABLE as exc:
            logger.warning("%s: no %s quota answer: %s", self.partition.name, kind.value, exc)
            self._broker = None
            return None

    def _settle_quota(self, kind: QuotaType, granted: int, nbytes: int) -> None:
        """Settle the bytes a throttled fetch moved against its grant from this broker's quota
        (not waited for)."""
        broker = self._broker
        if (granted or nbytes) and broker is not None:
            broker.record_replication.remote(kind, granted, nbytes)

    def _partition_changed(self) -> None:
        """Wake what waits here: followers on new data, acks=all and consumers on the HW."""
        self.fetch_waiters.check_and_complete()
        self.produce_waiters.check_and_complete()

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        """ListOffsets: earliest, latest (the LSO for read_committed), or by timestamp."""
        with self._lock:
            return self.partition.list_offsets(
                request.timestamp, request.current_leader_epoch, request.isolation_level
            )

    def delete_records(self, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
        """DeleteRecords: move this leader's log start offset forward (KIP-107)."""
        with self._lock:
            return self.partition.delete_records(request.offset)

    @ray.method(concurrency_group="replication")
    def offsets_for_leader_epoch(
        self, request: OffsetsForLeaderEpochRequest
    ) -> OffsetsForLeaderEpochResponse:
        """Where ``request.leader_epoch`` ends in this leader's log (KIP-101)."""
        with self._lock:
            return self.partition.end_offset_for_epoch(request)

    @ray.method(concurrency_group="control")
    def describe(self) -> dict[str, Any]:
        """The replica's state for tools and tests, with its process id and log directory."""
        with self._lock:
            return {
                **self.partition.describe(),
                "pid": os.getpid(),
                "log_dir": str(self.log.directory),
                "leader_since_ms": self._leader_since_ms,
            }

    @ray.method(concurrency_group="control")
    def log_dir_info(self) -> ReplicaLogDirInfo:
        """This replica's size on disk and offset lag, for DescribeLogDirs."""
        with self._lock:
            return self.partition.log_dir_info()

    @ray.method(concurrency_group="control")
    def metrics_report(self) -> ReplicaReport:
        """This replica's metric families and status, for its broker's snapshot."""
        with self._lock:
            return self.metrics.report(self.log.config.min_insync_replicas)

    @ray.method(concurrency_group="control")
    def ping(self) -> str:
        """Liveness check for the broker's supervision: the replica's role."""
        return self.partition.role.value

    @ray.method(concurrency_group="control")
    def read_log(self, offset: int, max_bytes: int) -> bytes:
        """Raw bytes of this replica's own log (tools and tests comparing replicas)."""
        with self._lock:
            return self.log.read(offset, max_bytes)

    # ------------------------------------------------------------------ follower fetch loop

    def _following(self, fetcher: _Fetcher) -> bool:
        """Whether ``fetcher`` still serves the current leader epoch (the caller holds the lock)."""
        return not fetcher.stopped.is_set() and self.partition.follows(fetcher.epoch)

    def _fetch_loop(self, fetcher: _Fetcher) -> None:
        config = self.config
        backoff = config.replica_fetch_backoff_ms / 1000
        timeout_s = max(config.replica_socket_timeout_ms, config.replica_fetch_wait_max_ms) / 1000
        partition = self.partition
        # The leader is fixed for the fetcher's epoch: become_follower set it before this thread.
        leader_name = names.replica_actor_name(
            partition.topic, partition.partition, partition.leader_id
        )
        leader: Any = None
        fetch: Any = None
        truncated = False
        failing: str | None = None
        while True:
            with self._lock:
                if not self._following(fetcher):
                    return
                throttled = truncated and partition.follower_throttled()
                request = partition.follower_fetch_request(
                    config.replica_fetch_max_bytes,
                    config.replica_fetch_wait_max_ms,
                    config.replica_fetch_min_bytes,
                )
            throttle = self._ask_quota(QuotaType.FOLLOWER, request.max_bytes) if throttled else None
            if throttle is not None:
                if not throttle.allowed:
                    # Over the follower quota: this partition sits the fetch out.
                    fetcher.stopped.wait(throttle.wait_s)
                    continue
                request = dataclasses.replace(request, max_bytes=throttle.max_bytes)
            moved = 0
            try:
                if leader is None:
                    leader = ray.get_actor(leader_name, namespace=self.namespace)
                    fetch = leader.fetch.options(concurrency_group="replication")
                if not truncated:
                    truncated = self._truncate_to_leader_epoch(leader, fetcher, timeout_s)
                    if not truncated:
                        fetcher.stopped.wait(backoff)
                    continue
                response = cast(FetchResponse, ray.get(fetch.remote(request), timeout=timeout_s))
                moved = len(response.records)
            except _LEADER_UNREACHABLE as exc:
                if failing != type(exc).__name__:
                    failing = type(exc).__name__
                    self._state_change(
                        "leader %d unreachable at epoch %d: %s",
                        partition.leader_id,
                        fetcher.epoch,
                        failing,
                    )
                leader = None
                fetcher.stopped.wait(backoff)
                continue
            finally:
                if throttle is not None:
                    self._settle_quota(QuotaType.FOLLOWER, throttle.max_bytes, moved)
            with self._lock:
                if not self._following(fetcher):
                    return
                action = partition.apply_fetch_response(response)
            outcome = None if response.error is Errors.NONE else response.error.name
            if outcome != failing:
                self._state_change(
                    "fetch from leader %d at epoch %d: %s, %s",
                    partition.leader_id,
                    fetcher.epoch,
                    outcome or "fetching again",
                    self._positions(),
                )
                failing = outcome
            if action is FollowerAction.FETCH:
                continue
            if action is FollowerAction.TRUNCATE:
                truncated = False
                fetcher.stopped.wait(backoff)
            else:
                fetcher.stopped.wait(min(backoff, 0.1))

    def _truncate_to_leader_epoch(self, leader: Any, fetcher: _Fetcher, timeout_s: float) -> bool:
        """Truncate where the leader's log diverges from ours, by epochs; False to retry later."""
        with self._lock:
            if not self._following(fetcher):
                return True
            query = self.partition.epoch_query()
        if query is None:
            return True
        response: OffsetsForLeaderEpochResponse = ray.get(
            leader.offsets_for_leader_epoch.remote(query), timeout=timeout_s
        )
        with self._lock:
            if not self._following(fetcher):
                return True
            removed = self.partition.truncate_on_epoch_answer(response)
        if removed is None:
            return False
        self._state_change(
            "truncated %d bytes to offset %d on the leader's answer (epoch %d ends at %d)",
            removed,
            self.log.log_end_offset,
            response.leader_epoch,
            response.end_offset,
        )
        return True

    def _stop_fetcher(self) -> None:
        """Tell the fetch loop to exit; it checks under the lock, so applies nothing after this."""
        if self._fetcher is not None:
            self._fetcher.stopped.set()
        self._fetcher = None

    # ------------------------------------------------------------------ ISR changes

    def _start_isr_change(self, new_isr: tuple[int, ...]) -> None:
        """Hand the ZooKeeper write to a thread: the caller holds the lock and must not wait."""
        proposal = self.partition.propose_isr(new_isr)
        self._state_change(
            "proposing ISR %s (was %s) at epoch %d, %s",
            list(new_isr),
            list(self.partition.isr),
            proposal.leader_epoch,
            self._positions(),
        )
        threading.Thread(
            target=self._change_isr,
            args=(proposal,),
            name=f"{self.partition.name}-isr",
            daemon=True,
        ).start()

    def _change_isr(self, proposal: LeaderIsrAndEpoch) -> None:
        """Write the new ISR to ZooKeeper through the broker (compare-and-set), then apply it."""
        partition = self.partition
        error, version = Errors.BROKER_NOT_AVAILABLE, -1
        try:
            broker = ray.get_actor(
                names.broker_actor_name(partition.broker_id), namespace=self.namespace
            )
            # No timeout: giving up on a write ZooKeeper may still apply would leave this leader
            # with a stale znode version, and every later ISR change would fail its version check.
            answer = ray.get(
                broker.alter_isr.remote(partition.topic, partition.partition, proposal)
            )
            error, version = answer.error, answer.zk_version
        except _LEADER_UNREACHABLE as exc:
            logger.warning(
                "%s: ISR change to %s failed: %s", partition.name, list(proposal.isr), exc
            )
        finally:
            with self._lock:
                before = len(partition.isr)
                applied = partition.finish_isr_change(proposal, error, version)
                if applied:
                    self.metrics.isr_changed(before, len(partition.isr))
                    self._partition_changed()
                self._state_change(
                    "ISR change to %s: %s, %s",
                    list(proposal.isr),
                    error.name if applied or error is not Errors.NONE else "written, not applied",
                    self._positions(),
                )

    # ------------------------------------------------------------------ housekeeping

    def _housekeep(self) -> None:
        """Periodic work: ISR shrink, flush.ms, checkpoints, retention, compaction and expiry of
        idle producer ids."""
        clock = time.monotonic
        config = self.config
        last_checkpoint = last_retention = last_expiry = clock()
        while not self._stopped.wait(HOUSEKEEPING_TICK_S):
            now = clock()
            with self._lock:
                if self._stopped.is_set():
                    return
                try:
                    new_isr = self.partition.isr_to_shrink(config.replica_lag_time_max_ms)
                    if new_isr is not None:
                        self._start_isr_change(new_isr)
                    self.log.maybe_flush()
                    if (
                        now - last_checkpoint
                        >= config.replica_high_watermark_checkpoint_interval_ms / 1000
                    ):
                        self.partition.checkpoint()
                        last_checkpoint = now
                    if now - last_retention >= config.log_retention_check_interval_ms / 1000:
                        self.log.delete_old_segments()
                        maybe_compact(self.log)
                        last_retention = now
                    if now - last_expiry >= config.producer_id_expiration_check_interval_ms / 1000:
                        self.log.remove_expired_producers(config.producer_id_expiration_ms)
                        last_expiry = now
                except Exception:
                    logger.exception("%s: housekeeping failed", self.partition.name)
