"""What each of a broker's listeners needs to secure its connections: the TLS context of an SSL
or SASL_SSL listener and the SASL settings of a SASL_PLAINTEXT or SASL_SSL one, built from the
broker's config before any listener binds, so a bad setting fails the broker's start."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from rafka.actors.broker.authentication import SaslSettings
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.security_protocols import listener_protocols
from rafka.actors.broker.tls import listener_ssl_contexts
from rafka.protocol.messages.metadata import parse_listeners
from rafka.security.sasl import SaslSession, check_mechanisms
from rafka.security.scram import CredentialLookup


@dataclass(frozen=True)
class ListenerSecurity:
    """One listener's TLS context (None: plain TCP) and SASL settings (None: no login)."""

    ssl_context: ssl.SSLContext | None
    sasl: SaslSettings | None


def listener_security(
    config: BrokerConfig, lookup: CredentialLookup
) -> dict[str, ListenerSecurity]:
    """Each listener's security by listener name; INVALID_CONFIG as ``listener_ssl_contexts``
    raises it."""
    protocols = listener_protocols(
        parse_listeners(config.listeners), config.listener_security_protocol_map
    )
    contexts = listener_ssl_contexts(config)
    mechanisms = check_mechanisms(config.sasl_enabled_mechanisms.split(","))
    sasl = SaslSettings(
        lambda: SaslSession(mechanisms, lookup),
        config.sasl_server_max_receive_size,
        config.connection_failed_authentication_delay_ms / 1000,
    )
    return {
        name: ListenerSecurity(contexts[name], sasl if protocol.uses_sasl else None)
        for name, protocol in protocols.items()
    }
