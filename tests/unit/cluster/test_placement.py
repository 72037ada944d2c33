"""Tests for rafka.cluster.placement: one broker per node, each broker back on the disk holding its
logs, and each node's data directory from its own environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from rafka.cluster.placement import (
    BrokerPlacement,
    NodeDisk,
    broker_log_dir,
    brokers_in,
    node_data_dir,
    place,
)


def machines(*held: tuple[int, ...]) -> list[NodeDisk]:
    """One node per machine (address 10.0.0.i), each with /data and the broker dirs given."""
    return [NodeDisk(f"n{i}", f"10.0.0.{i}", "/data", ids) for i, ids in enumerate(held)]


def where(placements: list[BrokerPlacement]) -> dict[int, str]:
    return {p.broker_id: p.node_id for p in placements}


def test_a_fresh_cluster_gets_one_broker_per_node_in_the_order_given() -> None:
    placed = place(machines((), (), ()), 3)
    assert placed == [
        BrokerPlacement(0, "n0", "/data/broker-0"),
        BrokerPlacement(1, "n1", "/data/broker-1"),
        BrokerPlacement(2, "n2", "/data/broker-2"),
    ]


def test_more_brokers_than_nodes_go_round_the_nodes() -> None:
    assert where(place(machines((), ()), 5)) == {0: "n0", 1: "n1", 2: "n0", 3: "n1", 4: "n0"}


def test_one_node_holds_every_broker_in_its_data_directory() -> None:
    placed = place([NodeDisk("head", "127.0.0.1", "/srv/rafka")], 3)
    assert [(p.node_id, p.log_dir) for p in placed] == [
        ("head", "/srv/rafka/broker-0"),
        ("head", "/srv/rafka/broker-1"),
        ("head", "/srv/rafka/broker-2"),
    ]


def test_each_broker_returns_to_the_machine_holding_its_logs_whatever_the_node_order() -> None:
    # After a restart Ray lists the workers in another order (new node ids); the disks decide.
    nodes = machines((0,), (2,), (1,))
    assert where(place(nodes, 3)) == {0: "n0", 1: "n2", 2: "n1"}
    assert where(place(list(reversed(nodes)), 3)) == {0: "n0", 1: "n2", 2: "n1"}


def test_a_new_broker_takes_the_node_without_one_and_old_ones_stay() -> None:
    # A third machine joined: brokers 0 and 1 keep theirs, broker 2 goes to the new one.
    assert where(place(machines((), (1,), (0,)), 3)) == {0: "n2", 1: "n1", 2: "n0"}


def test_brokers_whose_logs_share_a_disk_stay_on_it_even_when_other_nodes_are_free() -> None:
    # Three brokers ran on the head alone; two machines joined, but the logs are on the head.
    nodes = machines((0, 1, 2), (), ())
    assert where(place(nodes, 3)) == {0: "n0", 1: "n0", 2: "n0"}


def test_nodes_sharing_a_disk_spread_the_brokers_found_on_it() -> None:
    # Three Ray nodes on one machine with one data directory all see every broker directory.
    shared = [NodeDisk(f"n{i}", "127.0.0.1", "/data", (0, 1, 2)) for i in range(3)]
    assert where(place(shared, 3)) == {0: "n0", 1: "n1", 2: "n2"}


def test_each_node_writes_to_its_own_data_directory() -> None:
    nodes = [NodeDisk(f"n{i}", "127.0.0.1", f"/tmp/node-{i}") for i in range(3)]
    assert [p.log_dir for p in place(nodes, 3)] == [
        "/tmp/node-0/broker-0",
        "/tmp/node-1/broker-1",
        "/tmp/node-2/broker-2",
    ]


def test_a_broker_found_on_two_disks_goes_to_the_first() -> None:
    assert where(place(machines((), (0,), (0,)), 1)) == {0: "n1"}


def test_directories_of_brokers_beyond_the_count_are_left_alone() -> None:
    assert where(place(machines((5,), ()), 2)) == {0: "n0", 1: "n1"}


def test_no_node_is_an_error() -> None:
    with pytest.raises(ValueError, match="no live Ray node"):
        place([], 3)


def test_the_nodes_environment_names_its_data_directory_else_the_default() -> None:
    assert node_data_dir("/default", {"RAFKA_DATA_DIR": "/disk2/rafka"}) == "/disk2/rafka"
    assert node_data_dir("/default", {"RAFKA_DATA_DIR": ""}) == "/default"
    assert node_data_dir("/default", {}) == "/default"


def test_brokers_in_lists_only_broker_directories(tmp_path: Path) -> None:
    assert brokers_in(tmp_path / "missing") == ()
    for name in ("broker-10", "broker-2", "broker-x", "zookeeper"):
        (tmp_path / name).mkdir()
    (tmp_path / "broker-3").write_text("a file, not a log directory")
    assert brokers_in(tmp_path) == (2, 10)
    assert broker_log_dir(str(tmp_path), 2) == str(tmp_path / "broker-2")
