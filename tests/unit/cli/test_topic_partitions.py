"""Tests for rafka.cli.topic_partitions: kafka-topics' partition options parsed into admin calls."""

from __future__ import annotations

import argparse

import pytest

from rafka.cli.main import build_parser
from rafka.cli.topic_partitions import create_arguments, parse_replica_assignment
from rafka.cli.topics import check
from rafka.protocol.types import ReplicaPlacement


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["topics", *argv])


def test_replica_assignment_lists_brokers_per_partition() -> None:
    assert parse_replica_assignment("0:1,1:2,2:0") == [[0, 1], [1, 2], [2, 0]]
    assert parse_replica_assignment("3") == [[3]]


def test_a_malformed_replica_assignment_is_an_argument_error() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="'0:x'"):
        parse_replica_assignment("0:x")


def test_create_with_an_assignment_passes_it_by_partition() -> None:
    args = parse("--create", "--topic", "t", "--replica-assignment", "0:1,1:2")
    assert create_arguments(args)["replica_assignments"] == {0: [0, 1], 1: [1, 2]}


def test_create_defaults_to_one_partition_placed_rack_aware() -> None:
    made = create_arguments(parse("--create", "--topic", "t"))
    assert made["num_partitions"] == 1 and made["replica_assignments"] is None
    assert made["placement"] == ReplicaPlacement()


def test_disable_rack_aware_places_without_racks() -> None:
    made = create_arguments(parse("--create", "--topic", "t", "--disable-rack-aware"))
    assert made["placement"] == ReplicaPlacement(rack_aware=False)


@pytest.mark.parametrize("argv", [["--alter", "--topic", "t"], ["--alter", "--partitions", "3"]])
def test_alter_needs_a_topic_and_a_partition_count(argv: list[str]) -> None:
    with pytest.raises(SystemExit, match="--alter needs --topic and --partitions"):
        check(parse(*argv))
