"""Tests for ``ClusterDescription``'s bootstrap strings, one per listener name."""

from __future__ import annotations

from rafka.clients.admin import ClusterDescription
from rafka.protocol.messages.metadata import BrokerMetadata

CLUSTER = ClusterDescription(
    "c1",
    0,
    (
        BrokerMetadata(0, "h0", "n0", endpoints=("PLAINTEXT://h0:9092", "SSL://h0:9093")),
        BrokerMetadata(1, "h1", "n1", endpoints=("SSL://h1:9093", "CLIENTS://h1:9094")),
        BrokerMetadata(2, "h2", "n2"),
    ),
)


def test_bootstrap_servers_are_the_plaintext_listeners() -> None:
    assert CLUSTER.bootstrap_servers == "h0:9092"


def test_each_listener_has_its_own_bootstrap_servers() -> None:
    assert CLUSTER.listener_bootstrap_servers("SSL") == "h0:9093,h1:9093"
    assert CLUSTER.listener_bootstrap_servers("CLIENTS") == "h1:9094"
    assert CLUSTER.listener_bootstrap_servers("SASL_SSL") == ""


def test_listener_names_are_listed_once_in_the_brokers_order() -> None:
    assert CLUSTER.listener_names == ("PLAINTEXT", "SSL", "CLIENTS")
