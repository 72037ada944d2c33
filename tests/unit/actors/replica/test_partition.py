"""Tests for rafka.actors.replica.partition: Kafka's high watermark, ISR and fencing rules."""

from __future__ import annotations

import random

import pytest

from rafka.actors.replica.partition import Partition, Role
from rafka.protocol.errors import (
    Errors,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
)
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.fetch import FetchRequest, FetchResponse
from rafka.protocol.messages.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from rafka.protocol.messages.produce import ACKS_ALL, ACKS_LEADER
from rafka.protocol.records.batch import decode_records, iter_batches
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.kafka_records import native_to_kafka

START_MS = 1_700_000_000_000
TOPIC = "events"
MAX_LAG_MS = 100


def state(
    epoch: int = 5,
    isr: tuple[int, ...] = (0, 1, 2),
    replicas: tuple[int, ...] = (0, 1, 2),
    leader: int = 0,
    zk_version: int = 0,
) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState(TOPIC, 0, 1, leader, epoch, isr, zk_version, replicas)


def batch(count: int, first_ts: int = START_MS, step_ms: int = 10) -> bytes:
    return build_batch([(b"k%d" % i, b"v%d" % i, first_ts + i * step_ms) for i in range(count)])


def offsets_in(data: bytes) -> list[int]:
    return [
        r.offset
        for position, header in iter_batches(data)
        for r in decode_records(data, position, header)
    ]


def follower_fetch(
    partition: Partition, replica: int, offset: int, epoch: int = -1
) -> FetchResponse:
    return partition.read(FetchRequest(offset, replica_id=replica, current_leader_epoch=epoch))


@pytest.fixture
def leader(open_log, clock) -> Partition:
    """Broker 0 leading epoch 5 with AR = ISR = (0, 1, 2) on an empty log."""
    partition = Partition(TOPIC, 0, 0, open_log(), clock)
    partition.make_leader(state())
    return partition


def test_leader_ignores_a_resent_state_older_than_its_own_isr_change(leader: Partition) -> None:
    assert leader.apply_isr((0, 1), zk_version=3) is False
    resent = state(
        isr=(0, 1, 2), zk_version=2
    )  # a new controller's failover resend, read before the shrink
    assert leader.already_leads(resent)
    assert not leader.already_leads(
        state(isr=(0, 1), zk_version=4)
    )  # newer znode, same epoch: take it
    assert not leader.already_leads(state(epoch=6, zk_version=0))  # newer epoch: take it


def test_follower_never_counts_a_state_as_already_led(open_log, clock) -> None:
    follower = Partition(TOPIC, 0, 1, open_log(), clock)
    follower.make_follower(state())
    assert not follower.already_leads(state(leader=1))


# ------------------------------------------------------------------ high watermark at the leader


def test_leader_high_watermark_waits_for_every_isr_follower(leader: Partition) -> None:
    leader.append_as_leader(batch(3), ACKS_ALL, 2)
    assert leader.log.log_end_offset == 3
    assert leader.high_watermark == 0
    follower_fetch(leader, 1, 3)
    assert leader.high_watermark == 0  # follower 2 has fetched nothing yet


def test_follower_fetch_advances_leader_high_watermark(leader: Partition) -> None:
    leader.append_as_leader(batch(3), ACKS_ALL, 2)
    follower_fetch(leader, 1, 3)
    response = follower_fetch(leader, 2, 2)
    assert leader.followers[2].log_end_offset == 2
    assert leader.high_watermark == 2 == response.high_watermark
    follower_fetch(leader, 2, 3)
    assert leader.high_watermark == 3


def test_leader_high_watermark_never_decreases(leader: Partition) -> None:
    leader.append_as_leader(batch(4), ACKS_ALL, 2)
    follower_fetch(leader, 1, 4)
    follower_fetch(leader, 2, 4)
    assert leader.high_watermark == 4
    follower_fetch(leader, 1, 1)  # e.g. a follower that truncated and refetches
    assert leader.followers[1].log_end_offset == 1
    assert leader.high_watermark == 4
    assert leader.maybe_increment_high_watermark() is False


@pytest.mark.parametrize("seed", [3, 17, 2024])
def test_high_watermark_is_monotonic_min_isr_leo_under_random_traffic(
    leader: Partition, seed: int
) -> None:
    rng = random.Random(seed)
    boundaries = [0]  # followers hold whole batches, so they fetch at batch boundaries
    follower_leo = {1: 0, 2: 0}
    expected_hw = 0
    for _ in range(60):
        if rng.random() < 0.4:
            boundaries.append(
                leader.append_as_leader(batch(rng.randint(1, 4)), ACKS_LEADER, 1).last_offset + 1
            )
        else:
            replica = rng.choice((1, 2))
            follower_leo[replica] = rng.choice(boundaries)
            follower_fetch(leader, replica, follower_leo[replica])
        expected_hw = max(expected_hw, min(leader.log.log_end_offset, *follower_leo.values()))
        assert leader.high_watermark == expected_hw
        consumed = offsets_in(leader.read(FetchRequest(0)).records)
        assert all(offset < leader.high_watermark for offset in consumed)


def test_consumer_fetch_never_returns_records_above_high_watermark(leader: Partition) -> None:
    leader.append_as_leader(batch(3), ACKS_ALL, 2)
    follower_fetch(leader, 1, 3)
    follower_fetch(leader, 2, 3)
    leader.append_as_leader(batch(3), ACKS_ALL, 2)
    assert (leader.high_watermark, leader.log.log_end_offset) == (3, 6)

    consumer = leader.read(FetchRequest(0))
    assert consumer.error is Errors.NONE
    assert offsets_in(consumer.records) == [0, 1, 2]
    assert leader.read(FetchRequest(3)).records == b""
    assert offsets_in(follower_fetch(leader, 1, 3).records) == [3, 4, 5]


def test_a_consumer_fetch_asking_for_regions_gets_kafka_layout_batches_as_one(
    leader: Partition,
) -> None:
    kafka_batch = native_to_kafka(batch(3))
    leader.append_as_leader(kafka_batch, ACKS_ALL, 2)
    leader.append_as_leader(batch(2), ACKS_ALL, 2)
    for follower in (1, 2):
        follower_fetch(leader, follower, 5)
    answer = leader.read(FetchRequest(0, max_bytes=len(kafka_batch), file_regions=True))
    assert answer.records == b"" and answer.region is not None
    assert answer.size == answer.region.size == len(kafka_batch)
    # A read reaching the columnar batch needs it converted for a Kafka client: bytes, then.
    both = leader.read(FetchRequest(0, file_regions=True))
    assert both.region is None and offsets_in(both.records) == [0, 1, 2, 3, 4]
    # A follower reads bytes, whatever it asks.
    assert leader.read(FetchRequest(0, replica_id=1, file_regions=True)).region is None


def test_fetch_response_carries_watermarks_and_epoch(leader: Partition) -> None:
    leader.append_as_leader(batch(2), ACKS_LEADER, 1)
    response = leader.read(FetchRequest(0))
    assert (response.high_watermark, response.log_start_offset, response.log_end_offset) == (
        0,
        0,
        2,
    )
    assert response.leader_epoch == 5


# ------------------------------------------------------------------ follower side


def test_follower_append_takes_min_of_own_leo_and_leader_high_watermark(
    leader: Partition, open_log, clock
) -> None:
    leader.append_as_leader(batch(3), ACKS_ALL, 2)
    fetched = follower_fetch(leader, 1, 0)
    follower = Partition(TOPIC, 0, 1, open_log("follower-1"), clock)
    follower.make_follower(state(leader=0))

    appended = follower.append_as_follower(FetchResponse(Errors.NONE, 2, 0, 3, fetched.records, 5))
    assert appended == len(fetched.records)
    assert follower.log.log_end_offset == 3
    assert follower.high_watermark == 2  # the leader's HW is lower than what we hold

    follower.append_as_follower(FetchResponse(Errors.NONE, 10, 0, 10, b"", 5))
    assert follower.high_watermark == 3  # never above our own LEO


# ------------------------------------------------------------------ produce


def test_acks_all_is_refused_when_isr_below_min_insync_and_nothing_is_written(
    open_log, clock
) -> None:
    partition = Partition(TOPIC, 0, 0, open_log(), clock)
    partition.make_leader(state(isr=(0,)))
    with pytest.raises(NotEnoughReplicasError):
        partition.append_as_leader(batch(3), ACKS_ALL, 2)
    assert partition.log.log_end_offset == 0
    assert partition.log.size_in_bytes == 0


def test_acks_one_is_accepted_with_isr_below_min_insync(open_log, clock) -> None:
    partition = Partition(TOPIC, 0, 0, open_log(), clock)
    partition.make_leader(state(isr=(0,)))
    info = partition.append_as_leader(batch(3), ACKS_LEADER, 2)
    assert (info.first_offset, info.last_offset) == (0, 2)
    assert partition.high_watermark == 3  # a single-member ISR commits at once


def test_append_as_leader_on_a_follower_is_refused(open_log, clock) -> None:
    partition = Partition(TOPIC, 0, 1, open_log(), clock)
    partition.make_follower(state(leader=0))
    with pytest.raises(NotLeaderOrFollowerError):
        partition.append_as_leader(batch(1), ACKS_LEADER, 1)
    assert partition.log.log_end_offset == 0


def test_produce_outcome_waits_for_high_watermark_then_succeeds(leader: Partition) -> None:
    info = leader.append_as_leader(batch(3), ACKS_ALL, 2)
    required = info.last_offset + 1
    assert leader.produce_outcome(required, 2) is None
    follower_fetch(leader, 1, 3)
    assert leader.produce_outcome(required, 2) is None
    follower_fetch(leader, 2, 3)
    assert leader.produce_outcome(required, 2) is Errors.NONE


def test_produce_outcome_reports_isr_shrunk_after_append(leader: Partition) -> None:
    info = leader.append_as_leader(batch(3), ACKS_ALL, 2)
    follower_fetch(leader, 1, 3)
    assert leader.apply_isr((0,), 1) is True  # both followers dropped; HW = leader LEO
    assert (
        leader.produce_outcome(info.last_offset + 1, 2) is Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    )


def test_produce_outcome_after_becoming_follower_is_not_leader(leader: Partition) -> None:
    info = leader.append_as_leader(batch(3), ACKS_ALL, 2)
    leader.make_follower(state(epoch=6, leader=1))
    assert (leader.role, leader.leader_id, leader.followers) == (Role.FOLLOWER, 1, {})
    assert leader.produce_outcome(info.last_offset + 1, 2) is Errors.NOT_LEADER_OR_FOLLOWER


# ------------------------------------------------------------------ epochs and fencing


@pytest.mark.parametrize(
    ("request_epoch", "expected"),
    [
        (4, Errors.FENCED_LEADER_EPOCH),
        (6, Errors.UNKNOWN_LEADER_EPOCH),
        (5, None),
        (-1, None),
    ],
)
def test_epoch_error_fences_older_and_rejects_newer_epochs(
    leader: Partition, request_epoch: int, expected
) -> None:
    assert leader.epoch_error(request_epoch) is expected


def test_fenced_follower_fetch_does_not_update_its_state(leader: Partition) -> None:
    leader.append_as_leader(batch(3), ACKS_ALL, 2)
    response = follower_fetch(leader, 1, 3, epoch=4)
    assert response.error is Errors.FENCED_LEADER_EPOCH
    assert response.records == b""
    assert leader.followers[1].log_end_offset == -1


def test_is_stale_only_for_older_leader_epochs(leader: Partition) -> None:
    assert leader.is_stale(state(epoch=4))
    assert not leader.is_stale(state(epoch=5))
    assert not leader.is_stale(state(epoch=6))


def test_make_leader_assigns_epoch_at_log_end_offset(open_log, clock) -> None:
    log = open_log()
    log.append_as_leader(batch(4), 5)
    partition = Partition(TOPIC, 0, 0, log, clock)
    partition.make_leader(state(epoch=7))
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(5, 0), (7, 4)]
    partition.append_as_leader(batch(1), ACKS_LEADER, 1)
    header = next(h for _, h in iter_batches(log.read(4)))
    assert header.partition_leader_epoch == 7


# ------------------------------------------------------------------ ISR shrink and expand


def test_isr_follower_that_never_fetches_lags_after_max_lag(leader: Partition, clock) -> None:
    clock.advance(MAX_LAG_MS)
    assert leader.lagging_isr_followers(MAX_LAG_MS) == []
    clock.advance(1)
    assert leader.lagging_isr_followers(MAX_LAG_MS) == [1, 2]


def test_follower_fetching_at_leader_leo_is_caught_up(leader: Partition, clock) -> None:
    leader.append_as_leader(batch(3), ACKS_ALL, 2)
    clock.advance(50)
    follower_fetch(leader, 1, 3)
    clock.advance(MAX_LAG_MS)
    assert leader.lagging_isr_followers(MAX_LAG_MS) == [2]


def test_follower_keeping_pace_with_a_moving_leo_stays_in_sync(leader: Partition, clock) -> None:
    # Each fetch reaches the LEO the leader had at the previous fetch, though never the current one.
    for _ in range(20):
        clock.advance(40)
        previous_leo = leader.log.log_end_offset
        leader.append_as_leader(batch(2), ACKS_LEADER, 1)
        follower_fetch(leader, 1, previous_leo)
        follower_fetch(leader, 2, previous_leo)
        assert leader.lagging_isr_followers(MAX_LAG_MS) == []


def test_follower_falling_behind_a_moving_leo_lags_after_max_lag(leader: Partition, clock) -> None:
    # The leader gains 2 records per 30 ms and the follower 1: after its 2nd fetch it never catches
    # up.
    lagging_at = []
    for step in range(1, 8):
        clock.advance(30)
        leader.append_as_leader(batch(2), ACKS_LEADER, 1)
        follower_fetch(leader, 1, step)
        follower_fetch(leader, 2, leader.log.log_end_offset)
        if 1 in leader.lagging_isr_followers(MAX_LAG_MS):
            lagging_at.append(step)
    last_caught_up = START_MS + 30  # its 2nd fetch reached the LEO seen at its 1st
    assert leader.followers[1].last_caught_up_ms == last_caught_up
    assert lagging_at == [s for s in range(1, 8) if START_MS + 30 * s - last_caught_up > MAX_LAG_MS]
    assert lagging_at[0] == 5


def test_followers_to_add_needs_high_watermark(open_log, clock) -> None:
    partition = Partition(TOPIC, 0, 0, open_log(), clock)
    partition.make_leader(state(isr=(0, 1)))
    partition.append_as_leader(batch(3), ACKS_ALL, 2)
    follower_fetch(partition, 1, 3)
    assert partition.high_watermark == 3
    follower_fetch(partition, 2, 2)
    assert partition.followers_to_add() == []
    follower_fetch(partition, 2, 3)
    assert partition.followers_to_add() == [2]


def test_followers_to_add_needs_start_of_current_leader_epoch(open_log, clock) -> None:
    log = open_log()
    log.append_as_leader(batch(5), 5)
    partition = Partition(TOPIC, 0, 0, log, clock)  # no HW checkpoint: HW 0, epoch 6 starts at 5
    partition.make_leader(state(epoch=6, isr=(0, 1)))
    follower_fetch(partition, 2, 4)
    assert partition.high_watermark == 0
    assert partition.followers_to_add() == []
    follower_fetch(partition, 2, 5)
    assert partition.followers_to_add() == [2]


def test_isr_shrink_lets_high_watermark_advance(leader: Partition) -> None:
    leader.append_as_leader(batch(3), ACKS_ALL, 2)
    follower_fetch(leader, 1, 3)
    assert leader.high_watermark == 0
    assert leader.apply_isr((0, 1), 7) is True
    assert (leader.isr, leader.zk_version, leader.high_watermark) == ((0, 1), 7, 3)


# ------------------------------------------------------------------ list offsets


@pytest.fixture
def committed(leader: Partition) -> Partition:
    """Offsets 0-2 (ts +0, +10, +20) committed; 3-4 (ts +30, +40) above the HW."""
    leader.append_as_leader(batch(3), ACKS_ALL, 2)
    follower_fetch(leader, 1, 3)
    follower_fetch(leader, 2, 3)
    leader.append_as_leader(batch(2, first_ts=START_MS + 30), ACKS_ALL, 2)
    assert leader.high_watermark == 3
    return leader


def test_list_offsets_latest_is_high_watermark(committed: Partition) -> None:
    response = committed.list_offsets(LATEST_TIMESTAMP, -1)
    assert (response.error, response.offset, response.leader_epoch) == (Errors.NONE, 3, 5)


def test_list_offsets_earliest_is_log_start(committed: Partition) -> None:
    assert committed.list_offsets(EARLIEST_TIMESTAMP, 5).offset == 0


def test_list_offsets_by_timestamp_finds_first_record_at_or_after_it(committed: Partition) -> None:
    response = committed.list_offsets(START_MS + 5, -1)
    assert (response.offset, response.timestamp) == (1, START_MS + 10)


@pytest.mark.parametrize("delta", [30, 35, 40, 10_000])
def test_list_offsets_by_timestamp_hides_records_at_or_above_high_watermark(
    committed: Partition, delta: int
) -> None:
    response = committed.list_offsets(START_MS + delta, -1)
    assert (response.error, response.offset, response.timestamp) == (Errors.NONE, -1, -1)


def test_list_offsets_is_fenced_and_refused_off_the_leader(committed: Partition) -> None:
    assert committed.list_offsets(LATEST_TIMESTAMP, 4).error is Errors.FENCED_LEADER_EPOCH
    committed.make_follower(state(epoch=6, leader=1))
    assert committed.list_offsets(LATEST_TIMESTAMP, -1).error is Errors.NOT_LEADER_OR_FOLLOWER


# ------------------------------------------------------------------ fetch errors


def test_fetch_from_unassigned_replica_is_not_leader_or_follower(leader: Partition) -> None:
    leader.append_as_leader(batch(2), ACKS_LEADER, 1)
    response = follower_fetch(leader, 9, 0)
    assert response.error is Errors.NOT_LEADER_OR_FOLLOWER
    assert response.records == b""
    assert 9 not in leader.followers


def test_fetch_from_a_follower_replica_is_not_leader_or_follower(open_log, clock) -> None:
    partition = Partition(TOPIC, 0, 1, open_log(), clock)
    partition.make_follower(state(leader=0))
    assert partition.read(FetchRequest(0)).error is Errors.NOT_LEADER_OR_FOLLOWER


@pytest.mark.parametrize("offset", [4, 100])
def test_consumer_fetch_beyond_log_end_is_offset_out_of_range(
    leader: Partition, offset: int
) -> None:
    leader.append_as_leader(batch(3), ACKS_LEADER, 1)
    response = leader.read(FetchRequest(offset))
    assert response.error is Errors.OFFSET_OUT_OF_RANGE
    assert (response.log_start_offset, response.log_end_offset) == (0, 3)
    assert response.error_message


def test_out_of_range_follower_fetch_does_not_count_as_replicated(leader: Partition) -> None:
    # A diverged follower ahead of the leader (after an unclean election) must not move the HW or
    # look caught up: Kafka skips the follower's fetch state when the read fails.
    leader.append_as_leader(batch(3), ACKS_ALL, 2)
    follower_fetch(leader, 1, 3)
    response = follower_fetch(leader, 2, 7)
    assert response.error is Errors.OFFSET_OUT_OF_RANGE
    assert leader.followers[2].log_end_offset == -1
    assert leader.followers[2].last_fetch_ms == 0
    assert leader.high_watermark == 0


# ------------------------------------------------------------------ high watermark checkpoint


def test_high_watermark_checkpoint_is_read_back_by_a_new_partition(
    leader: Partition, open_log, clock
) -> None:
    leader.append_as_leader(batch(4), ACKS_ALL, 2)
    follower_fetch(leader, 1, 3)
    follower_fetch(leader, 2, 3)
    leader.checkpoint()
    leader.log.close()
    reopened = Partition(TOPIC, 0, 0, open_log(), clock)
    assert reopened.high_watermark == 3
    assert reopened.log.log_end_offset == 4


def test_high_watermark_checkpoint_is_clamped_to_log_end_offset(
    leader: Partition, open_log, clock
) -> None:
    leader.apply_isr((0,), 1)
    leader.append_as_leader(batch(2), ACKS_LEADER, 1)
    leader.append_as_leader(batch(3), ACKS_LEADER, 1)
    leader.checkpoint()
    assert leader.high_watermark == 5
    leader.log.truncate_to(2)
    leader.log.close()
    assert Partition(TOPIC, 0, 0, open_log(), clock).high_watermark == 2
