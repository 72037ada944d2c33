"""Tests for the partition's replication throttle decisions (KIP-73) and its DescribeLogDirs entry:
which fetches count against a quota, how a throttled read is cut, and the offset lag it reports."""

from __future__ import annotations

import pytest

from rafka.actors.replica.partition import Partition
from rafka.log.config import LogConfig
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import ReplicaLogDirInfo
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.fetch import CONSUMER_REPLICA_ID, FetchRequest
from rafka.protocol.messages.produce import ACKS_LEADER
from rafka.protocol.records.builder import build_batch

EPOCH = 3


def state(leader: int, isr: tuple[int, ...]) -> LeaderAndIsrPartitionState:
    """Partition events-0 with replicas (0, 1, 2)."""
    return LeaderAndIsrPartitionState("events", 0, 1, leader, EPOCH, isr, 1, (0, 1, 2))


def throttle(partition: Partition, **lists: str) -> None:
    """Set the partition's topic configs, as a dynamic config change does."""
    partition.log.update_config(
        LogConfig.from_dict({f"{k}_replication_throttled_replicas": v for k, v in lists.items()})
    )


def batch(size: int = 100) -> bytes:
    return build_batch([(None, b"x" * size, 1)])


@pytest.fixture
def leader(open_log, clock) -> Partition:
    """Broker 0 leading with follower 1 in the ISR and follower 2 out of it, three batches."""
    partition = Partition("events", 0, 0, open_log("leader"), clock)
    partition.make_leader(state(0, (0, 1)))
    for _ in range(3):
        partition.append_as_leader(batch(), ACKS_LEADER, 1)
    return partition


@pytest.fixture
def follower(open_log, clock) -> Partition:
    """Broker 2 following broker 0, out of the ISR, on an empty log."""
    partition = Partition("events", 0, 2, open_log("follower"), clock)
    partition.make_follower(state(0, (0, 1)))
    return partition


def test_a_listed_leader_throttles_only_followers_out_of_the_isr(leader: Partition) -> None:
    assert not leader.leader_throttles(2)
    throttle(leader, leader="0:0")
    assert leader.leader_throttles(2)
    assert not leader.leader_throttles(1)
    assert not leader.leader_throttles(CONSUMER_REPLICA_ID)


@pytest.mark.parametrize(("listed", "throttled"), [("*", True), ("0:1,1:0", False)])
def test_the_leader_list_names_the_leaders_own_replica(
    leader: Partition, listed: str, throttled: bool
) -> None:
    throttle(leader, leader=listed)
    assert leader.leader_throttles(2) is throttled


def test_a_follower_list_does_not_throttle_the_leader(leader: Partition) -> None:
    throttle(leader, follower="*")
    assert not leader.leader_throttles(2)


def test_a_listed_follower_is_throttled_until_it_reaches_the_leaders_end(
    leader: Partition, follower: Partition
) -> None:
    assert not follower.follower_throttled()
    throttle(follower, follower="0:2")
    assert follower.follower_throttled()  # it has not heard from the leader yet
    request = follower.follower_fetch_request(150, 0, 1)
    assert follower.apply_fetch_response(leader.read(request)).name == "FETCH"
    assert follower.follower_throttled()
    while follower.log.log_end_offset < leader.log.log_end_offset:
        follower.apply_fetch_response(leader.read(follower.follower_fetch_request(1 << 20, 0, 1)))
    assert not follower.follower_throttled()


def test_a_follower_listed_on_another_broker_is_not_throttled(follower: Partition) -> None:
    throttle(follower, follower="0:1", leader="*")
    assert not follower.follower_throttled()


def test_a_throttled_read_is_cut_to_the_quota_and_to_nothing_over_it(leader: Partition) -> None:
    request = FetchRequest(0, replica_id=2)
    whole = leader.read(request)
    one = leader.read(request, 10)
    none = leader.read(request, 0)
    assert (whole.error, one.error, none.error) == (Errors.NONE,) * 3
    assert len(whole.records) == 3 * len(one.records)
    assert none.records == b""
    assert none.high_watermark == whole.high_watermark


def test_a_read_with_nothing_allowed_still_records_the_followers_offset(leader: Partition) -> None:
    end = leader.log.log_end_offset
    assert leader.followers[2].log_end_offset != end
    leader.read(FetchRequest(end, replica_id=2), 0)
    assert leader.followers[2].log_end_offset == end


def test_a_leader_reports_its_size_and_no_lag(leader: Partition) -> None:
    assert leader.log_dir_info() == ReplicaLogDirInfo(leader.log.size_in_bytes, 0)
    assert leader.log.size_in_bytes > 0


def test_a_follower_lags_by_the_leaders_end_offset_seen_in_its_last_fetch(
    leader: Partition, follower: Partition
) -> None:
    assert leader.high_watermark == 0  # follower 1, in the ISR, holds it back: the lag ignores it
    assert follower.log_dir_info() == ReplicaLogDirInfo(0, 0)  # no fetch answered yet
    follower.apply_fetch_response(leader.read(follower.follower_fetch_request(150, 0, 1)))
    assert follower.log_dir_info() == ReplicaLogDirInfo(follower.log.size_in_bytes, 2)
    while follower.log.log_end_offset < leader.log.log_end_offset:
        follower.apply_fetch_response(leader.read(follower.follower_fetch_request(1 << 20, 0, 1)))
    assert follower.log_dir_info() == ReplicaLogDirInfo(leader.log.size_in_bytes, 0)
