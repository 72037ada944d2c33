"""Tests for the decisions the replica actor asks of its partition: when a produce or a fetch is
answered, which ISR change the leader proposes and when, and what a follower does with the leader's
answers (append, reset out of range, back off, truncate by leader epoch)."""

from __future__ import annotations

import pytest

from rafka.actors.replica.partition import FollowerAction, Partition, Role
from rafka.protocol.errors import Errors
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.fetch import FetchRequest, FetchResponse
from rafka.protocol.messages.offsets import (
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from rafka.protocol.messages.produce import ACKS_ALL, ACKS_LEADER, ACKS_NONE
from rafka.protocol.records.builder import build_batch

EPOCH = 5
MAX_LAG_MS = 100


def leader_and_isr(
    leader: int = 0, epoch: int = EPOCH, isr: tuple[int, ...] = (0, 1, 2)
) -> LeaderAndIsrPartitionState:
    """Replicas (0, 1, 2) at controller epoch 1 and znode version 3."""
    return LeaderAndIsrPartitionState("events", 0, 1, leader, epoch, isr, 3, (0, 1, 2))


def records(count: int) -> bytes:
    return build_batch([(None, b"v%d" % i, 1) for i in range(count)])


def replicate(leader: Partition, *replica_ids: int) -> None:
    """Each named follower fetches at the leader's LEO."""
    for replica in replica_ids:
        leader.read(FetchRequest(leader.log.log_end_offset, replica_id=replica))


@pytest.fixture
def leader(open_log, clock) -> Partition:
    """Broker 0 leading epoch 5 with AR = ISR = (0, 1, 2) on an empty log."""
    partition = Partition("events", 0, 0, open_log("leader"), clock)
    partition.make_leader(leader_and_isr())
    return partition


@pytest.fixture
def follower(open_log, clock) -> Partition:
    """Broker 1 following broker 0 at epoch 5 on an empty log."""
    partition = Partition("events", 0, 1, open_log("follower"), clock)
    partition.make_follower(leader_and_isr())
    return partition


# ------------------------------------------------------------------ produce


@pytest.mark.parametrize(
    ("acks", "waits"), [(ACKS_ALL, True), (ACKS_LEADER, False), (ACKS_NONE, False)]
)
def test_only_acks_all_waits_for_the_high_watermark_to_pass_its_last_record(
    leader: Partition, acks: int, waits: bool
) -> None:
    leader.append_as_leader(records(2), ACKS_LEADER, 1)
    info = leader.append_as_leader(records(3), acks, 1)
    assert leader.required_offset(info, acks) == (5 if waits else None)


def test_a_successful_produce_answer_carries_the_base_offset_and_log_start(
    leader: Partition,
) -> None:
    leader.append_as_leader(records(2), ACKS_LEADER, 1)
    info = leader.append_as_leader(records(3), ACKS_ALL, 1)
    response = leader.produce_response(info)
    assert (response.error, response.base_offset, response.log_start_offset) == (Errors.NONE, 2, 0)


def test_a_failed_produce_answer_names_the_partition_and_no_offset(leader: Partition) -> None:
    info = leader.append_as_leader(records(1), ACKS_ALL, 1)
    response = leader.produce_response(info, Errors.REQUEST_TIMED_OUT)
    assert (response.error, response.base_offset) == (Errors.REQUEST_TIMED_OUT, -1)
    assert response.error_message is not None and response.error_message.startswith("events-0: ")


# ------------------------------------------------------------------ fetch: answer now or wait


@pytest.mark.parametrize(
    ("response", "request_", "at_once"),
    [
        (FetchResponse(Errors.NOT_LEADER_OR_FOLLOWER), FetchRequest(0), True),
        (FetchResponse(Errors.NONE, records=b"x"), FetchRequest(0), True),
        (FetchResponse(Errors.NONE), FetchRequest(0, max_wait_ms=0), True),
        (FetchResponse(Errors.NONE, records=b"x"), FetchRequest(0, min_bytes=2), False),
        (FetchResponse(Errors.NONE), FetchRequest(0), False),
    ],
)
def test_a_fetch_is_answered_at_once_on_error_enough_bytes_or_no_wait(
    response: FetchResponse, request_: FetchRequest, at_once: bool
) -> None:
    assert Partition.answered_at_once(request_, response) is at_once


def test_a_waiting_consumer_fetch_is_ready_once_the_high_watermark_passes_its_offset(
    leader: Partition,
) -> None:
    request = FetchRequest(0)
    leader.append_as_leader(records(2), ACKS_LEADER, 1)
    assert leader.fetch_ready(request) is None  # records above the HW are not for consumers
    replicate(leader, 1, 2)
    assert leader.fetch_ready(request) is True


def test_a_waiting_follower_fetch_is_ready_once_the_leo_passes_its_offset(
    leader: Partition,
) -> None:
    request = FetchRequest(0, replica_id=1)
    assert leader.fetch_ready(request) is None
    leader.append_as_leader(records(1), ACKS_LEADER, 1)
    assert leader.fetch_ready(request) is True


def test_a_waiting_fetch_with_min_bytes_is_ready_once_that_many_bytes_arrived(
    leader: Partition,
) -> None:
    one_batch = len(records(1))
    request = FetchRequest(0, replica_id=1, min_bytes=2 * one_batch)
    leader.append_as_leader(records(1), ACKS_LEADER, 1)
    assert leader.fetch_ready(request) is None
    leader.append_as_leader(records(1), ACKS_LEADER, 1)
    assert leader.fetch_ready(request) is True


def test_a_waiting_fetch_is_ready_when_the_leader_steps_down(leader: Partition) -> None:
    request = FetchRequest(0)
    assert leader.fetch_ready(request) is None
    leader.make_follower(leader_and_isr(leader=1, epoch=EPOCH + 1))
    assert leader.fetch_ready(request) is True


# ------------------------------------------------------------------ OffsetsForLeaderEpoch


def test_the_leader_answers_where_an_epoch_ends_in_its_log(open_log, clock) -> None:
    log = open_log()
    log.append_as_leader(records(3), 2)
    log.append_as_leader(records(2), 4)
    partition = Partition("events", 0, 0, log, clock)
    partition.make_leader(leader_and_isr())
    answer = partition.end_offset_for_epoch(OffsetsForLeaderEpochRequest(3, 1, EPOCH))
    assert (answer.error, answer.leader_epoch, answer.end_offset) == (Errors.NONE, 2, 3)


@pytest.mark.parametrize(
    ("current_epoch", "error"),
    [(EPOCH - 1, Errors.FENCED_LEADER_EPOCH), (EPOCH + 1, Errors.UNKNOWN_LEADER_EPOCH)],
)
def test_an_epoch_query_from_another_leader_epoch_is_refused(
    leader: Partition, current_epoch: int, error: Errors
) -> None:
    answer = leader.end_offset_for_epoch(OffsetsForLeaderEpochRequest(EPOCH, 1, current_epoch))
    assert (answer.error, answer.end_offset) == (error, -1)


def test_a_follower_refuses_epoch_queries(follower: Partition) -> None:
    answer = follower.end_offset_for_epoch(OffsetsForLeaderEpochRequest(EPOCH, 2, EPOCH))
    assert answer.error is Errors.NOT_LEADER_OR_FOLLOWER


# ------------------------------------------------------------------ ISR changes at the leader


def test_a_caught_up_follower_is_proposed_back_into_the_isr(open_log, clock) -> None:
    partition = Partition("events", 0, 0, open_log(), clock)
    partition.make_leader(leader_and_isr(isr=(0, 1)))
    partition.append_as_leader(records(3), ACKS_LEADER, 1)
    assert partition.isr_to_expand() is None
    replicate(partition, 1, 2)
    assert partition.isr_to_expand() == (0, 1, 2)


def test_followers_lagging_past_max_lag_are_proposed_out_of_the_isr(
    leader: Partition, clock
) -> None:
    clock.advance(MAX_LAG_MS)
    replicate(leader, 1)
    assert leader.isr_to_shrink(MAX_LAG_MS) is None
    clock.advance(1)
    assert leader.isr_to_shrink(MAX_LAG_MS) == (0, 1)


def test_a_proposal_carries_the_leader_epoch_controller_epoch_and_znode_version(
    leader: Partition,
) -> None:
    proposal = leader.propose_isr((0, 1))
    assert (proposal.leader, proposal.leader_epoch, proposal.isr) == (0, EPOCH, (0, 1))
    assert (proposal.controller_epoch, proposal.zk_version) == (1, 3)
    assert leader.pending_isr is proposal
    assert leader.isr == (0, 1, 2)  # nothing changes before ZooKeeper answers


def test_no_isr_change_is_proposed_while_one_is_pending(open_log, clock) -> None:
    partition = Partition("events", 0, 0, open_log(), clock)
    partition.make_leader(leader_and_isr(isr=(0, 1)))
    partition.append_as_leader(records(3), ACKS_LEADER, 1)
    replicate(partition, 1, 2)
    proposal = partition.propose_isr((0, 1, 2))
    assert partition.isr_to_expand() is None
    clock.advance(MAX_LAG_MS + 1)
    assert partition.isr_to_shrink(MAX_LAG_MS) is None
    partition.finish_isr_change(proposal, Errors.NONE, 4)
    assert partition.isr_to_shrink(MAX_LAG_MS) == (0,)


def test_a_written_isr_change_is_applied_and_may_advance_the_high_watermark(
    leader: Partition,
) -> None:
    leader.append_as_leader(records(3), ACKS_ALL, 2)
    replicate(leader, 1)
    proposal = leader.propose_isr((0, 1))
    assert leader.finish_isr_change(proposal, Errors.NONE, 4) is True
    assert (leader.isr, leader.zk_version, leader.high_watermark) == ((0, 1), 4, 3)
    assert leader.pending_isr is None


def test_a_refused_isr_change_is_dropped_and_a_new_one_may_be_proposed(
    leader: Partition, clock
) -> None:
    proposal = leader.propose_isr((0, 1))
    assert leader.finish_isr_change(proposal, Errors.INVALID_UPDATE_VERSION, -1) is False
    assert (leader.isr, leader.zk_version, leader.pending_isr) == ((0, 1, 2), 3, None)
    clock.advance(MAX_LAG_MS + 1)
    assert leader.isr_to_shrink(MAX_LAG_MS) == (0,)


def test_an_isr_change_answered_after_a_new_leader_epoch_is_not_applied(
    leader: Partition,
) -> None:
    proposal = leader.propose_isr((0, 1))
    leader.make_leader(leader_and_isr(epoch=EPOCH + 1))
    assert leader.finish_isr_change(proposal, Errors.NONE, 9) is False
    assert (leader.isr, leader.zk_version) == ((0, 1, 2), 3)


def test_a_follower_proposes_no_isr_change(follower: Partition, clock) -> None:
    clock.advance(10 * MAX_LAG_MS)
    assert follower.isr_to_expand() is None
    assert follower.isr_to_shrink(MAX_LAG_MS) is None


# ------------------------------------------------------------------ follower side


def test_a_follower_restarts_its_fetcher_only_for_another_leader_epoch(
    follower: Partition, leader: Partition
) -> None:
    assert follower.already_follows(leader_and_isr(leader=0))
    assert not follower.already_follows(leader_and_isr(leader=2, epoch=EPOCH + 1))
    assert not leader.already_follows(leader_and_isr(leader=1))


def test_a_follower_fetches_at_its_log_end_under_its_own_id_and_epoch(
    follower: Partition,
) -> None:
    follower.log.append_as_leader(records(4), EPOCH)
    request = follower.follower_fetch_request(1024, 250, 1)
    assert request == FetchRequest(4, 1024, 250, 1, replica_id=1, current_leader_epoch=EPOCH)


def test_a_follower_appends_what_it_fetched_and_fetches_again(
    leader: Partition, follower: Partition
) -> None:
    leader.append_as_leader(records(3), ACKS_LEADER, 1)
    response = leader.read(follower.follower_fetch_request(1 << 20, 0, 1))
    assert follower.apply_fetch_response(response) is FollowerAction.FETCH
    assert follower.log.log_end_offset == 3


def test_a_follower_that_cannot_append_truncates_again(follower: Partition) -> None:
    garbage = FetchResponse(Errors.NONE, 5, 0, 5, b"not a record batch" * 4, EPOCH)
    assert follower.apply_fetch_response(garbage) is FollowerAction.TRUNCATE
    assert follower.log.log_end_offset == 0


@pytest.mark.parametrize(
    "error",
    [Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_LEADER_EPOCH],
)
def test_a_follower_backs_off_when_the_leader_refuses_its_fetch(
    follower: Partition, error: Errors
) -> None:
    follower.log.append_as_leader(records(2), EPOCH)
    assert follower.apply_fetch_response(FetchResponse(error, 0, 0, 0)) is FollowerAction.BACK_OFF
    assert follower.log.log_end_offset == 2


def test_a_follower_ahead_of_the_leader_truncates_to_its_end(follower: Partition) -> None:
    for _ in range(3):
        follower.log.append_as_leader(records(2), EPOCH)
    follower.high_watermark = 5
    out_of_range = FetchResponse(Errors.OFFSET_OUT_OF_RANGE, 2, 0, 4)
    assert follower.apply_fetch_response(out_of_range) is FollowerAction.FETCH
    assert (follower.log.log_start_offset, follower.log.log_end_offset) == (0, 4)
    assert follower.high_watermark == 4


def test_a_follower_behind_the_leader_log_start_starts_again_there(follower: Partition) -> None:
    follower.log.append_as_leader(records(3), EPOCH)
    out_of_range = FetchResponse(Errors.OFFSET_OUT_OF_RANGE, 20, 10, 25)
    assert follower.apply_fetch_response(out_of_range) is FollowerAction.FETCH
    assert (follower.log.log_start_offset, follower.log.log_end_offset) == (10, 10)
    assert follower.log.size_in_bytes == 0


def test_a_follower_asks_the_leader_where_its_latest_epoch_ends(follower: Partition) -> None:
    follower.log.append_as_leader(records(2), 3)
    follower.log.append_as_leader(records(2), 4)
    assert follower.epoch_query() == OffsetsForLeaderEpochRequest(4, 1, EPOCH)
    assert follower.log.log_end_offset == 4


def test_a_follower_without_epochs_truncates_to_its_high_watermark_without_asking(
    follower: Partition,
) -> None:
    for _ in range(5):
        follower.log.append_as_leader(records(1), 3)
    follower.log.epoch_cache.clear()
    follower.high_watermark = 2
    assert follower.epoch_query() is None
    assert follower.log.log_end_offset == 2


def test_a_follower_truncates_where_the_leader_says_its_epoch_ends(follower: Partition) -> None:
    follower.log.append_as_leader(records(3), 3)
    follower.log.append_as_leader(records(2), 4)
    removed = follower.truncate_on_epoch_answer(OffsetsForLeaderEpochResponse(Errors.NONE, 3, 3))
    assert removed is not None and removed > 0
    assert follower.log.log_end_offset == 3
    assert follower.log.epoch_cache.latest_epoch == 3


def test_a_follower_keeps_its_log_when_the_epoch_query_fails(follower: Partition) -> None:
    follower.log.append_as_leader(records(3), 3)
    refused = OffsetsForLeaderEpochResponse(Errors.NOT_LEADER_OR_FOLLOWER)
    assert follower.truncate_on_epoch_answer(refused) is None
    assert follower.log.log_end_offset == 3


def test_a_stopped_replica_is_neither_leader_nor_follower(leader: Partition) -> None:
    leader.stop()
    assert leader.role is Role.NONE
    assert not leader.follows(EPOCH)
    assert leader.produce_outcome(0, 1) is Errors.NOT_LEADER_OR_FOLLOWER
