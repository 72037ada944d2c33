"""Tests for rafka.cluster.racks: a broker's rack from a local cluster's list or its Ray node."""

from __future__ import annotations

from rafka.actors.broker.config import BrokerConfig
from rafka.cluster.racks import broker_rack, node_rack, racks_by_node


def test_a_nodes_label_names_its_rack_before_any_resource() -> None:
    node = {"NodeID": "n1", "Labels": {"rafka.rack": "east"}, "Resources": {"rack:west": 1.0}}
    assert node_rack(node) == "east"


def test_a_rack_resource_names_the_rack_of_a_node_without_the_label() -> None:
    assert (
        node_rack({"NodeID": "n1", "Labels": {}, "Resources": {"CPU": 4.0, "rack:b": 1.0}}) == "b"
    )


def test_a_node_with_neither_has_no_rack_and_is_left_out() -> None:
    nodes = [
        {"NodeID": "n1", "Resources": {"CPU": 1.0}},
        {"NodeID": "n2", "Labels": {"rafka.rack": "a"}, "Resources": {}},
    ]
    assert racks_by_node(nodes) == {"n2": "a"}


def test_local_cluster_racks_as_mapping_or_list() -> None:
    assert broker_rack({0: "a", 2: "c"}, 2) == "c"
    assert broker_rack({0: "a"}, 1) is None
    assert broker_rack(["a", "b"], 1) == "b"
    assert broker_rack(["a", "b"], 2) is None
    assert broker_rack(None, 0) is None


def test_broker_rack_is_a_broker_config_with_kafkas_name() -> None:
    assert BrokerConfig.from_dict({"broker.rack": "us-east-1a"}).broker_rack == "us-east-1a"
    assert BrokerConfig().broker_rack == ""
