"""Listener names and security protocols: Kafka's ``listener.security.protocol.map`` parsed and
checked, which of them use TLS and SASL, and what a broker registers for its endpoints."""

from __future__ import annotations

import json

import pytest

from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.security_protocols import (
    SecurityProtocol,
    advertised_security_protocols,
    listener_protocols,
    parse_security_protocol_map,
)
from rafka.actors.zk.data import BrokerRegistration
from rafka.protocol.errors import Errors, InvalidConfigError, RafkaError
from rafka.protocol.messages.metadata import BrokerMetadata, parse_listeners

pytestmark = pytest.mark.timeout(30)


def test_the_default_map_names_each_protocol_after_itself() -> None:
    mapping = parse_security_protocol_map(BrokerConfig().listener_security_protocol_map)
    assert mapping == {p.value: p for p in SecurityProtocol}


def test_the_map_is_read_case_insensitively_and_written_back_in_upper_case() -> None:
    config = BrokerConfig.from_dict({"listener.security.protocol.map": "client:ssl, ops:Plaintext"})
    assert config.listener_security_protocol_map == "CLIENT:SSL,OPS:PLAINTEXT"


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"listener.security.protocol.map": "CLIENT"}, "listener.security.protocol.map"),
        ({"listener.security.protocol.map": "CLIENT:TLS"}, "'TLS'"),
        ({"listener.security.protocol.map": "A:SSL,a:SSL"}, "mapped twice"),
        ({"ssl.client.auth": "always"}, "none, requested, required"),
        ({"ssl.keystore.type": "JKS"}, "PEM"),
        ({"ssl.enabled.protocols": "TLSv1.1"}, "'TLSv1.1'"),
        ({"ssl.enabled.protocols": ""}, "ssl.enabled.protocols"),
    ],
)
def test_a_bad_security_setting_is_invalid_config_naming_it(
    settings: dict[str, str], named: str
) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        BrokerConfig.from_dict(settings)
    assert named in str(raised.value)


def test_listeners_get_their_protocols_by_name() -> None:
    listeners = parse_listeners("PLAINTEXT://:0,SSL://:0,CLIENTS://:0")
    assert listener_protocols(listeners, "PLAINTEXT:PLAINTEXT,SSL:SSL,CLIENTS:SSL") == {
        "PLAINTEXT": SecurityProtocol.PLAINTEXT,
        "SSL": SecurityProtocol.SSL,
        "CLIENTS": SecurityProtocol.SSL,
    }


def test_a_listener_the_map_lacks_is_invalid_config_naming_the_map() -> None:
    with pytest.raises(RafkaError) as raised:
        listener_protocols(parse_listeners("CLIENTS://:0"), "SSL:SSL")
    assert raised.value.error is Errors.INVALID_CONFIG
    assert "listener_security_protocol_map" in str(raised.value)


@pytest.mark.parametrize(
    ("listeners", "protocol_map", "tls", "sasl"),
    [
        ("SASL_SSL://:9094", "SASL_SSL:SASL_SSL", True, True),
        ("INTERNAL://:9094", "INTERNAL:SASL_PLAINTEXT", False, True),
        ("CLIENTS://:9094", "CLIENTS:SSL", True, False),
    ],
)
def test_each_listener_knows_whether_it_speaks_tls_and_sasl(
    listeners: str, protocol_map: str, tls: bool, sasl: bool
) -> None:
    (protocol,) = listener_protocols(parse_listeners(listeners), protocol_map).values()
    assert (protocol.uses_tls, protocol.uses_sasl) == (tls, sasl)


def test_the_registration_maps_each_endpoint_to_its_real_protocol() -> None:
    endpoints = ("PLAINTEXT://h:9092", "CLIENTS://h:9093")
    protocols = advertised_security_protocols(endpoints, "PLAINTEXT:PLAINTEXT,SSL:SSL,CLIENTS:SSL")
    assert protocols == (("CLIENTS", "SSL"), ("PLAINTEXT", "PLAINTEXT"))
    registration = BrokerRegistration(
        1, "h", "n", timestamp=42, endpoints=endpoints, security_protocols=protocols
    )
    written = json.loads(registration.encode())
    assert written["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "CLIENTS": "SSL"}
    assert written["endpoints"] == list(endpoints)
    assert written["port"] == 9092
    assert BrokerRegistration.decode(1, registration.encode()) == registration


def test_a_broker_is_reached_at_the_endpoint_of_the_listener_asked_for() -> None:
    broker = BrokerMetadata(0, "h", "n", endpoints=("PLAINTEXT://h:9092", "SSL://tls.h:9093"))
    assert broker.listener() == ("h", 9092)
    assert broker.listener("SSL") == ("tls.h", 9093)
    assert broker.listener("CLIENTS") is None
