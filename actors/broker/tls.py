"""TLS for the broker's SSL listeners: the server ``ssl.SSLContext`` built from Kafka's ``ssl_*``
settings, with every mistake in them reported as INVALID_CONFIG naming the setting.

Only PEM keystores are read (Kafka's ``ssl.keystore.type=PEM``): ``ssl_keystore_location`` holds
the private key and the certificate chain, and ``ssl_truststore_location`` the CAs that client
certificates must chain to. The contexts are built before the listeners bind, so a broker with a
bad setting fails at once rather than at its first handshake. A key that needs a password is
never asked for one on a terminal: without ``ssl_key_password`` it fails to load.
"""

from __future__ import annotations

import ssl

from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.security_protocols import (
    ClientAuth,
    listener_protocols,
    tls_versions,
)
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.metadata import parse_listeners


def listener_ssl_contexts(config: BrokerConfig) -> dict[str, ssl.SSLContext | None]:
    """Each listener's TLS context by listener name (SSL and SASL_SSL ones), None for one without
    TLS; INVALID_CONFIG for a listener with no security protocol or SSL settings that do not
    load."""
    protocols = listener_protocols(
        parse_listeners(config.listeners), config.listener_security_protocol_map
    )
    ssl_listeners = [name for name, p in protocols.items() if p.uses_tls]
    context = server_ssl_context(config, ssl_listeners[0]) if ssl_listeners else None
    return {name: context if name in ssl_listeners else None for name in protocols}


def server_ssl_context(config: BrokerConfig, listener_name: str) -> ssl.SSLContext:
    """The server side of TLS as the ``ssl_*`` settings describe it, for ``listener_name`` (named
    in errors)."""
    if config.ssl_keystore_type != "PEM":
        raise _invalid("ssl_keystore_type", f"{config.ssl_keystore_type!r} is not PEM")
    if not config.ssl_keystore_location:
        raise _invalid(
            "ssl_keystore_location",
            f"the SSL listener {listener_name} needs a PEM file with its key and certificate chain",
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version, context.maximum_version = tls_versions(config.ssl_enabled_protocols)
    _readable(config.ssl_keystore_location, "ssl_keystore_location")
    password = config.ssl_key_password
    try:
        # A callable, so an encrypted key without a password fails instead of prompting.
        context.load_cert_chain(config.ssl_keystore_location, password=lambda: password)
    except ssl.SSLError as exc:
        raise _invalid(
            "ssl_keystore_location",
            f"{config.ssl_keystore_location} is not a PEM private key with its certificate chain, "
            f"or ssl_key_password does not decrypt the key ({exc.reason or exc})",
        ) from None
    client_auth = ClientAuth(config.ssl_client_auth)
    if config.ssl_truststore_location:
        _readable(config.ssl_truststore_location, "ssl_truststore_location")
        try:
            context.load_verify_locations(cafile=config.ssl_truststore_location)
        except ssl.SSLError as exc:
            raise _invalid(
                "ssl_truststore_location",
                f"{config.ssl_truststore_location} holds no PEM CA certificate "
                f"({exc.reason or exc})",
            ) from None
    elif client_auth is not ClientAuth.NONE:
        raise _invalid(
            "ssl_truststore_location",
            f"ssl_client_auth={client_auth.value} needs the PEM CA bundle client certificates "
            "are checked against",
        )
    context.verify_mode = client_auth.verify_mode
    return context


def _readable(path: str, setting: str) -> None:
    """INVALID_CONFIG naming ``setting`` unless ``path`` is a file this process can read."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise _invalid(setting, f"cannot read {path}: {exc.strerror or exc}") from None


def _invalid(setting: str, problem: str) -> RafkaError:
    return Errors.INVALID_CONFIG.exception(f"{setting}: {problem}")
