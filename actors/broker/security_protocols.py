"""Listener security protocols: Kafka's names for them, the map from listener names to them, and the
TLS versions an SSL listener accepts, parsed and checked with no socket and no file opened.

A listener is named in ``listeners`` (``CLIENT://:9093``); ``listener_security_protocol_map``
(``CLIENT:SSL``) says what it speaks. Kafka's default map names each protocol after itself, so
``SSL://:9093`` needs no entry. A SASL_PLAINTEXT or SASL_SSL listener logs each connection in
with ``sasl_enabled_mechanisms``; SASL_SSL and SSL ones speak TLS.
"""

from __future__ import annotations

import enum
import ssl

from rafka.protocol.errors import Errors
from rafka.protocol.messages.metadata import ListenerAddress, parse_listeners


class SecurityProtocol(enum.Enum):
    """What a listener speaks, as Kafka names it."""

    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        """Whether its connections are wrapped in TLS."""
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        """Whether its connections log in with SASL before anything else."""
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


class ClientAuth(enum.Enum):
    """Kafka's ``ssl.client.auth``: whether an SSL listener asks its clients for a certificate."""

    NONE = "none"
    REQUESTED = "requested"
    REQUIRED = "required"

    @property
    def verify_mode(self) -> ssl.VerifyMode:
        """The ``ssl`` module's setting for it: a requested certificate is checked if sent."""
        return {
            ClientAuth.NONE: ssl.CERT_NONE,
            ClientAuth.REQUESTED: ssl.CERT_OPTIONAL,
            ClientAuth.REQUIRED: ssl.CERT_REQUIRED,
        }[self]


TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
"""The ``ssl_enabled_protocols`` rafka accepts; Kafka's older TLSv1 and TLSv1.1 are insecure and
disabled by OpenSSL's defaults anyway."""


def parse_security_protocol_map(value: str) -> dict[str, SecurityProtocol]:
    """``NAME:PROTOCOL,...`` as a dict keyed by upper-case listener name; ValueError names the
    first bad entry."""
    mapping: dict[str, SecurityProtocol] = {}
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        name, colon, protocol = entry.partition(":")
        if not colon or not name:
            raise ValueError(f"{entry!r} is not NAME:PROTOCOL")
        try:
            security_protocol = SecurityProtocol(protocol.upper())
        except ValueError:
            known = ", ".join(p.value for p in SecurityProtocol)
            raise ValueError(f"{protocol!r} in {entry!r} is not one of {known}") from None
        if name.upper() in mapping:
            raise ValueError(f"listener name {name!r} is mapped twice")
        mapping[name.upper()] = security_protocol
    return mapping


def security_protocol_map_text(value: str) -> str:
    """The config's value checked (ValueError if malformed) and written back in upper case."""
    mapping = parse_security_protocol_map(value)
    return ",".join(f"{name}:{protocol.value}" for name, protocol in mapping.items())


def tls_versions(value: str) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """The lowest and highest of the TLS versions ``ssl_enabled_protocols`` lists; ValueError if it
    names one rafka does not accept or none at all."""
    versions = []
    for name in (part.strip() for part in value.split(",")):
        if not name:
            continue
        if name not in TLS_VERSIONS:
            raise ValueError(f"{name!r} is not one of {', '.join(TLS_VERSIONS)}")
        versions.append(TLS_VERSIONS[name])
    if not versions:
        raise ValueError(f"name at least one of {', '.join(TLS_VERSIONS)}")
    return min(versions), max(versions)


def tls_versions_text(value: str) -> str:
    """The config's value checked (ValueError if bad), unchanged."""
    tls_versions(value)
    return value


def listener_protocols(
    listeners: list[ListenerAddress], protocol_map: str
) -> dict[str, SecurityProtocol]:
    """Each listener's security protocol by its name; INVALID_CONFIG for a name the map lacks."""
    mapping = parse_security_protocol_map(protocol_map)
    protocols = {}
    for address in listeners:
        protocol = mapping.get(address.listener_name)
        if protocol is None:
            raise Errors.INVALID_CONFIG.exception(
                f"listeners: {address} has no security protocol: add "
                f"{address.listener_name}:<PROTOCOL> to listener_security_protocol_map"
            )
        protocols[address.listener_name] = protocol
    return protocols


def advertised_security_protocols(
    endpoints: tuple[str, ...], protocol_map: str
) -> tuple[tuple[str, str], ...]:
    """The name and security protocol of each advertised endpoint, by name, as the broker registers
    them (Kafka's ``listener_security_protocol_map`` of ``/brokers/ids/<id>``); every name is one
    of ``listeners``, which ``listener_protocols`` checked are all mapped."""
    mapping = parse_security_protocol_map(protocol_map)
    return tuple(
        sorted(
            (address.listener_name, mapping[address.listener_name].value)
            for address in parse_listeners(",".join(endpoints), "endpoints")
        )
    )
