"""How ``rafka reassign-partitions --verify`` judges a partition and draws the copy progress
(rafka.cli.reassignment_progress)."""

from __future__ import annotations

import io

import pytest

from rafka.cli.reassignment_progress import (
    CopyProgress,
    ProgressLine,
    ReassignmentState,
    copy_progress,
    format_bytes,
    partition_status,
    progress_bar,
    replica_sizes,
    status_report,
)
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import (
    LogDirDescription,
    PartitionReassignment,
    ReplicaLogDirInfo,
)
from rafka.protocol.types import TopicPartition

FOO0, FOO1 = TopicPartition("foo", 0), TopicPartition("foo", 1)
MIB = 1024 * 1024


@pytest.mark.parametrize(
    ("current", "reassigning", "state"),
    [
        ((1, 2, 3, 4, 5, 6), True, ReassignmentState.IN_PROGRESS),
        ((1, 2, 3), True, ReassignmentState.IN_PROGRESS),
        ((4, 5, 6), False, ReassignmentState.COMPLETE),
        ((6, 5, 4), False, ReassignmentState.FAILED),
        ((1, 2, 3), False, ReassignmentState.FAILED),
        ((4, 5, 6, 1), False, ReassignmentState.FAILED),
        (None, False, ReassignmentState.FAILED),
    ],
)
def test_a_partition_is_in_progress_while_reassigned_then_complete_only_on_its_target(
    current: tuple[int, ...] | None, reassigning: bool, state: ReassignmentState
) -> None:
    assert partition_status(FOO0, [4, 5, 6], current, reassigning).state is state


def test_each_state_reads_as_kafkas_line() -> None:
    lines = [
        partition_status(FOO0, [4, 5, 6], (4, 5, 6), False).describe(),
        partition_status(FOO0, [4, 5, 6], (1, 2, 3, 4, 5, 6), True).describe(),
        partition_status(FOO0, [4, 5, 6], (1, 2, 3), False).describe(),
        partition_status(FOO0, [4, 5, 6], None, False).describe(),
    ]
    assert lines == [
        "Reassignment of partition foo-0 is complete.",
        "Reassignment of partition foo-0 is still in progress.",
        "Reassignment of partition foo-0 failed: there is no active reassignment, but its replica "
        "set is 1,2,3 rather than 4,5,6.",
        "Reassignment of partition foo-0 failed: the partition no longer exists.",
    ]


def test_the_status_report_lists_partitions_in_order_under_kafkas_heading() -> None:
    statuses = [
        partition_status(TopicPartition("foo", 10), [1], (1,), False),
        partition_status(TopicPartition("foo", 2), [1], (2,), True),
        partition_status(TopicPartition("bar", 0), [1], (1,), False),
    ]
    assert status_report(statuses).splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition bar-0 is complete.",
        "Reassignment of partition foo-2 is still in progress.",
        "Reassignment of partition foo-10 is complete.",
    ]


def log_dir(sizes: dict[TopicPartition, int], error: Errors = Errors.NONE) -> LogDirDescription:
    """A log directory holding replicas of the given sizes."""
    return LogDirDescription(
        "/data", error, {tp: ReplicaLogDirInfo(size, 0) for tp, size in sizes.items()}
    )


SEED_MOVE = PartitionReassignment((1, 2, 3, 4, 5, 6), (4, 5, 6), (1, 2, 3))


def test_progress_compares_each_new_replica_with_the_leader() -> None:
    log_dirs = {
        1: (log_dir({FOO0: 100 * MIB}),),
        2: (log_dir({FOO0: 90 * MIB}),),
        4: (log_dir({FOO0: 100 * MIB}),),
        5: (log_dir({FOO0: 50 * MIB}),),
        6: (log_dir({}),),
    }
    progress = copy_progress({FOO0: SEED_MOVE}, {FOO0: 1}, log_dirs)
    assert progress == CopyProgress(150 * MIB, 300 * MIB, 3)
    assert progress.fraction == 0.5


def test_a_new_replica_counts_as_copied_up_to_the_leaders_size() -> None:
    # The leader's log shrank (retention) after the follower copied its segments.
    log_dirs = {1: (log_dir({FOO0: 10}),), 4: (log_dir({FOO0: 30}),)}
    move = PartitionReassignment((1, 4), (4,), (1,))
    assert copy_progress({FOO0: move}, {FOO0: 1}, log_dirs) == CopyProgress(10, 10, 1)


def test_without_the_leaders_log_the_largest_existing_replica_is_the_target() -> None:
    log_dirs = {2: (log_dir({FOO0: 80}),), 3: (log_dir({FOO0: 60}),), 4: (log_dir({FOO0: 20}),)}
    move = PartitionReassignment((2, 3, 4), (4,), ())
    assert copy_progress({FOO0: move}, {FOO0: 9}, log_dirs) == CopyProgress(20, 80, 1)
    assert copy_progress({FOO0: move}, {}, log_dirs) == CopyProgress(20, 80, 1)


def test_progress_adds_up_every_partition_being_moved() -> None:
    log_dirs = {1: (log_dir({FOO0: 100, FOO1: 300}),), 2: (log_dir({FOO0: 100, FOO1: 100}),)}
    moves = {
        FOO0: PartitionReassignment((1, 2), (2,), ()),
        FOO1: PartitionReassignment((1, 2), (2,), ()),
    }
    assert copy_progress(moves, {FOO0: 1, FOO1: 1}, log_dirs) == CopyProgress(200, 400, 2)


def test_unreadable_directories_and_future_replicas_do_not_count() -> None:
    future = LogDirDescription("/d2", Errors.NONE, {FOO0: ReplicaLogDirInfo(70, 0, is_future=True)})
    log_dirs = {
        4: (log_dir({FOO0: 5}), log_dir({FOO0: 999}, Errors.KAFKA_STORAGE_ERROR), future),
    }
    assert replica_sizes(log_dirs) == {(FOO0, 4): 5}


def test_a_replica_spread_over_directories_counts_all_of_them() -> None:
    log_dirs = {4: (log_dir({FOO0: 5}), log_dir({FOO0: 7}))}
    assert replica_sizes(log_dirs) == {(FOO0, 4): 12}


def test_the_bar_shows_the_share_copied_rounded_down() -> None:
    assert progress_bar(CopyProgress(150 * MIB, 300 * MIB, 3), width=10) == (
        "[#####-----]  50% 150.0 MiB of 300.0 MiB copied to 3 new replicas"
    )
    assert progress_bar(CopyProgress(999, 1000, 1), width=10) == (
        "[#########-]  99% 999 B of 1000 B copied to 1 new replica"
    )
    assert progress_bar(CopyProgress(0, 2048, 2), width=4) == (
        "[----]   0% 0 B of 2.0 KiB copied to 2 new replicas"
    )


def test_nothing_to_copy_is_a_full_bar() -> None:
    assert progress_bar(CopyProgress(0, 0, 0), width=4) == (
        "[####] 100% 0 B of 0 B copied to 0 new replicas"
    )


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (5 * MIB, "5.0 MiB"),
        (3 * 1024 * MIB, "3.0 GiB"),
        (2048 * 1024 * 1024 * MIB, "2048.0 TiB"),
    ],
)
def test_byte_counts_read_in_binary_units(count: int, text: str) -> None:
    assert format_bytes(count) == text


class Terminal(io.StringIO):
    """Output that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_line_is_redrawn_in_place() -> None:
    out = Terminal()
    line = ProgressLine(out)
    line.draw("[--] 10% long text")
    line.draw("[#-] 50%")
    line.end()
    assert out.getvalue() == "\r[--] 10% long text\r[#-] 50%          \n"


def test_elsewhere_each_drawing_is_a_line_of_its_own() -> None:
    out = io.StringIO()
    line = ProgressLine(out)
    line.draw("[--] 10%")
    line.draw("[#-] 50%")
    line.end()
    assert out.getvalue() == "[--] 10%\n[#-] 50%\n"


def test_ending_a_line_never_drawn_prints_nothing() -> None:
    out = Terminal()
    ProgressLine(out).end()
    assert out.getvalue() == ""
