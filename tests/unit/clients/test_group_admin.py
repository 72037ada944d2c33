"""Tests for the Admin client's consumer-group operations (rafka.clients.group_admin) against an
in-memory fake cluster: coordinator lookup and its retries, error mapping, and the offsets round
trip."""

from __future__ import annotations

import time

import pytest

from rafka.clients.admin import Admin
from rafka.clients.records import OffsetAndTimestamp
from rafka.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    Errors,
    GroupIdNotFoundError,
    InvalidGroupIdError,
    NonEmptyGroupError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.groups import (
    NO_GENERATION,
    NO_MEMBER,
    GroupListing,
    OffsetCommitEntry,
)
from rafka.protocol.messages.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from rafka.protocol.types import OffsetAndMetadata, TopicPartition


@pytest.fixture
def admin(fake_cluster) -> Admin:
    """An admin client of a fake three-broker cluster with topic 'events' (two partitions)."""
    fake_cluster.add_brokers(3)
    fake_cluster.add_topic(
        "events", [(0, 10), (4, 20)], timestamps={1: {4: 1000, 5: 2000, 6: 3000}}
    )
    return Admin(request_timeout_ms=2000)


# ------------------------------------------------------------------ list_groups


def test_list_groups_merges_every_coordinator_sorted_by_id(fake_cluster, admin: Admin) -> None:
    fake_cluster.add_group("zeta", broker_id=0)
    fake_cluster.add_group(
        "alpha", state="Stable", members=[fake_cluster.member("m1", [("events", 0)])], broker_id=2
    )
    fake_cluster.add_group("mid", broker_id=1)
    assert admin.list_groups() == [
        GroupListing("alpha", "consumer", "Stable"),
        GroupListing("mid", "consumer", "Empty"),
        GroupListing("zeta", "consumer", "Empty"),
    ]


def test_list_groups_reports_the_reachable_coordinators_when_one_is_dead(
    fake_cluster, admin: Admin
) -> None:
    fake_cluster.add_group("on-zero", broker_id=0)
    fake_cluster.add_group("on-one", broker_id=1)
    fake_cluster.dead.add("group-coordinator-1")
    assert [g.group_id for g in admin.list_groups()] == ["on-zero"]


# ------------------------------------------------------------------ finding the coordinator


def test_describe_group_asks_the_coordinator_that_find_coordinator_names(
    fake_cluster, admin: Admin
) -> None:
    member = fake_cluster.member("m1", [("events", 1)], client_id="app")
    fake_cluster.add_group("g", state="Stable", members=[member], broker_id=2)
    description = admin.describe_group("g")
    assert (description.state, description.protocol, description.members) == (
        "Stable",
        "range",
        (member,),
    )


def test_coordinator_not_available_is_retried_until_the_lookup_succeeds(
    fake_cluster, admin: Admin
) -> None:
    fake_cluster.add_group("g", state="Empty", broker_id=1)
    fake_cluster.find_coordinator_errors = [Errors.COORDINATOR_NOT_AVAILABLE] * 3
    assert admin.describe_group("g").state == "Empty"
    assert fake_cluster.broker(0).find_coordinator_calls == ["g"] * 4


def test_not_coordinator_makes_the_admin_look_the_coordinator_up_again(
    fake_cluster, admin: Admin
) -> None:
    # The first lookup names broker 0, whose coordinator no longer owns the group (it moved to 2).
    fake_cluster.add_group("g", offsets={("events", 0): 7}, broker_id=2)
    fake_cluster.stale_coordinator_answers = [0]
    assert admin.list_group_offsets("g") == {TopicPartition("events", 0): OffsetAndMetadata(7, "")}
    assert len(fake_cluster.broker(0).find_coordinator_calls) == 2


def test_a_dead_broker_is_skipped_when_looking_up_the_coordinator(
    fake_cluster, admin: Admin
) -> None:
    fake_cluster.add_group("g", state="Empty", broker_id=1)
    fake_cluster.dead.add("broker-0")
    assert admin.describe_group("g").state == "Empty"
    assert fake_cluster.broker(1).find_coordinator_calls == ["g"]


def test_an_unreachable_coordinator_is_retried_until_it_is_back(
    fake_cluster, admin: Admin, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cluster.add_group("g", state="Empty", broker_id=1)
    fake_cluster.dead.add("group-coordinator-1")
    real_sleep = time.sleep

    def sleep_then_revive(seconds: float) -> None:
        fake_cluster.dead.discard("group-coordinator-1")
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", sleep_then_revive)
    assert admin.describe_group("g").state == "Empty"


def test_retriable_errors_past_the_request_timeout_raise_their_error_naming_the_group(
    fake_cluster,
) -> None:
    fake_cluster.add_brokers(1)
    fake_cluster.find_coordinator_errors = [Errors.COORDINATOR_LOAD_IN_PROGRESS] * 10_000
    admin = Admin(request_timeout_ms=150)
    started = time.monotonic()
    with pytest.raises(
        CoordinatorLoadInProgressError, match=r"group 'slow'.*still failing after 0.1s"
    ):
        admin.describe_group("slow")
    assert 0.1 <= time.monotonic() - started < 2


def test_no_live_broker_means_coordinator_not_available(fake_cluster) -> None:
    with pytest.raises(CoordinatorNotAvailableError, match="group 'g'"):
        Admin(request_timeout_ms=50).describe_group("g")


def test_a_non_retriable_lookup_error_raises_at_once(fake_cluster, admin: Admin) -> None:
    with pytest.raises(InvalidGroupIdError, match="group ''"):
        admin.describe_group("")
    assert fake_cluster.broker(0).find_coordinator_calls == [""]


# ------------------------------------------------------------------ offsets


def test_alter_group_offsets_makes_an_admin_commit_that_list_group_offsets_reads_back(
    fake_cluster, admin: Admin
) -> None:
    fake_cluster.add_group("g", offsets={("events", 0): 3}, broker_id=1)
    admin.alter_group_offsets(
        "g", {TopicPartition("events", 1): 15, TopicPartition("events", 0): 9}
    )
    (commit,) = fake_cluster.coordinator(1).commits
    assert (commit.generation_id, commit.member_id) == (NO_GENERATION, NO_MEMBER)
    assert commit.offsets == (OffsetCommitEntry("events", 0, 9), OffsetCommitEntry("events", 1, 15))
    assert admin.list_group_offsets("g") == {
        TopicPartition("events", 0): OffsetAndMetadata(9, ""),
        TopicPartition("events", 1): OffsetAndMetadata(15, ""),
    }


def test_alter_group_offsets_of_an_active_group_raises_unknown_member_saying_it_is_active(
    fake_cluster, admin: Admin
) -> None:
    fake_cluster.add_group(
        "busy", state="Stable", members=[fake_cluster.member("m1", [("events", 0)])]
    )
    with pytest.raises(UnknownMemberIdError, match="group 'busy' has active members"):
        admin.alter_group_offsets("busy", {TopicPartition("events", 0): 0})
    assert fake_cluster.coordinator(0).commits == []


def test_a_partition_error_in_the_commit_raises_its_class_naming_group_and_partition(
    fake_cluster, admin: Admin
) -> None:
    with pytest.raises(UnknownTopicOrPartitionError, match="group 'g': gone-3"):
        admin.alter_group_offsets("g", {TopicPartition("gone", 3): 1})


def test_a_commit_failing_with_not_coordinator_on_its_partitions_is_retried(
    fake_cluster, admin: Admin
) -> None:
    fake_cluster.add_group("g", broker_id=1)
    fake_cluster.coordinator(1).append_errors = [Errors.NOT_COORDINATOR]
    admin.alter_group_offsets("g", {TopicPartition("events", 0): 2})
    assert admin.list_group_offsets("g") == {TopicPartition("events", 0): OffsetAndMetadata(2, "")}


def test_list_offsets_answers_earliest_latest_and_by_time(admin: Admin) -> None:
    tp0, tp1 = TopicPartition("events", 0), TopicPartition("events", 1)
    assert admin.list_offsets([tp0, tp1], EARLIEST_TIMESTAMP) == {
        tp0: OffsetAndTimestamp(0, -1),
        tp1: OffsetAndTimestamp(4, -1),
    }
    assert admin.list_offsets([tp1], LATEST_TIMESTAMP) == {tp1: OffsetAndTimestamp(20, -1)}
    assert admin.list_offsets([tp1], 1500) == {tp1: OffsetAndTimestamp(5, 2000)}


# ------------------------------------------------------------------ delete


def test_delete_group_removes_an_empty_group(fake_cluster, admin: Admin) -> None:
    fake_cluster.add_group("old", offsets={("events", 0): 1}, broker_id=2)
    admin.delete_group("old")
    assert admin.list_groups() == []


def test_delete_group_with_members_raises_non_empty_group_naming_it(
    fake_cluster, admin: Admin
) -> None:
    fake_cluster.add_group("busy", state="Stable", members=[fake_cluster.member("m1", [])])
    with pytest.raises(NonEmptyGroupError, match="group 'busy'"):
        admin.delete_group("busy")
    assert [g.group_id for g in admin.list_groups()] == ["busy"]


def test_delete_group_of_an_unknown_group_raises_group_id_not_found(admin: Admin) -> None:
    with pytest.raises(GroupIdNotFoundError, match="group 'nobody'"):
        admin.delete_group("nobody")
