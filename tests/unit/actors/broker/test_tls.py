"""TLS on the Kafka listener: SSL contexts from the ``ssl_*`` settings, every bad setting an
INVALID_CONFIG naming it, and a listener that serves Kafka's protocol over TLS, refuses plaintext
bytes and untrusted or missing client certificates, and tells its handler which listener a request
came in on."""

from __future__ import annotations

import asyncio
import ssl
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.listener import KafkaListener, connection_listener
from rafka.actors.broker.tls import listener_ssl_contexts
from rafka.cli.certs import CertFiles, make_certs
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.metadata import ListenerAddress
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY

pytestmark = pytest.mark.timeout(60)


def ssl_config(certs: CertFiles, **settings: Any) -> BrokerConfig:
    return BrokerConfig.from_dict(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl_keystore_location": str(certs.broker),
            **settings,
        }
    )


def invalid(config: BrokerConfig) -> str:
    with pytest.raises(RafkaError) as raised:
        listener_ssl_contexts(config)
    assert raised.value.error is Errors.INVALID_CONFIG
    return str(raised.value).removeprefix("INVALID_CONFIG (40): ")


def test_plaintext_listeners_need_no_tls_settings() -> None:
    assert listener_ssl_contexts(BrokerConfig(listeners="PLAINTEXT://:0")) == {"PLAINTEXT": None}


def test_ssl_and_renamed_listeners_share_one_context(certs: CertFiles) -> None:
    contexts = listener_ssl_contexts(
        ssl_config(
            certs,
            listeners="PLAINTEXT://:0,SSL://:0,CLIENTS://:0",
            listener_security_protocol_map="PLAINTEXT:PLAINTEXT,SSL:SSL,CLIENTS:SSL",
        )
    )
    assert contexts["PLAINTEXT"] is None
    assert contexts["SSL"] is contexts["CLIENTS"]
    assert isinstance(contexts["SSL"], ssl.SSLContext)
    assert contexts["SSL"].verify_mode is ssl.CERT_NONE


@pytest.mark.parametrize(
    ("auth", "mode"), [("requested", ssl.CERT_OPTIONAL), ("required", ssl.CERT_REQUIRED)]
)
def test_client_auth_checks_client_certificates_against_the_truststore(
    certs: CertFiles, auth: str, mode: ssl.VerifyMode
) -> None:
    config = ssl_config(certs, ssl_client_auth=auth, ssl_truststore_location=str(certs.ca))
    context = listener_ssl_contexts(config)["SSL"]
    assert context is not None and context.verify_mode is mode


def test_enabled_protocols_bound_the_tls_versions(certs: CertFiles) -> None:
    context = listener_ssl_contexts(ssl_config(certs, ssl_enabled_protocols="TLSv1.3"))["SSL"]
    assert context is not None
    assert (context.minimum_version, context.maximum_version) == (
        ssl.TLSVersion.TLSv1_3,
        ssl.TLSVersion.TLSv1_3,
    )


def test_an_ssl_listener_without_a_keystore_names_the_setting() -> None:
    message = invalid(BrokerConfig(listeners="SSL://:0"))
    assert "ssl_keystore_location" in message and "SSL" in message


def test_a_missing_or_unreadable_keystore_names_the_setting(tmp_path: Path) -> None:
    config = BrokerConfig(listeners="SSL://:0", ssl_keystore_location=str(tmp_path / "none.pem"))
    assert invalid(config).startswith("ssl_keystore_location: cannot read")
    config = BrokerConfig(listeners="SSL://:0", ssl_keystore_location=str(tmp_path))
    assert invalid(config).startswith("ssl_keystore_location: cannot read")


@pytest.mark.parametrize("content", [b"not pem at all", b""])
def test_a_keystore_that_is_not_pem_names_the_setting(tmp_path: Path, content: bytes) -> None:
    keystore = tmp_path / "bad.pem"
    keystore.write_bytes(content)
    config = BrokerConfig(listeners="SSL://:0", ssl_keystore_location=str(keystore))
    assert invalid(config).startswith("ssl_keystore_location:")


def test_a_keystore_without_its_private_key_names_the_setting(certs: CertFiles) -> None:
    config = BrokerConfig(listeners="SSL://:0", ssl_keystore_location=str(certs.ca))
    assert invalid(config).startswith("ssl_keystore_location:")


def test_an_encrypted_key_loads_with_its_password_and_fails_without(
    certs: CertFiles, tmp_path: Path
) -> None:
    pem = certs.broker.read_bytes()
    key = load_pem_private_key(pem, None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"s3cret"),
    )
    keystore = tmp_path / "encrypted.pem"
    keystore.write_bytes(encrypted + pem[pem.index(b"-----BEGIN CERTIFICATE") :])
    config = BrokerConfig(listeners="SSL://:0", ssl_keystore_location=str(keystore))
    assert "ssl_key_password" in invalid(config)
    with_password = BrokerConfig.from_dict({"ssl_key_password": "s3cret"}, config)
    assert listener_ssl_contexts(with_password)["SSL"] is not None


def test_a_bad_truststore_names_the_setting(certs: CertFiles, tmp_path: Path) -> None:
    garbage = tmp_path / "ca.pem"
    garbage.write_text("garbage")
    message = invalid(ssl_config(certs, ssl_truststore_location=str(garbage)))
    assert message.startswith("ssl_truststore_location:")
    message = invalid(ssl_config(certs, ssl_truststore_location=str(tmp_path / "none.pem")))
    assert message.startswith("ssl_truststore_location: cannot read")


def test_required_client_auth_without_a_truststore_names_it(certs: CertFiles) -> None:
    message = invalid(ssl_config(certs, ssl_client_auth="required"))
    assert message.startswith("ssl_truststore_location:") and "required" in message


# ------------------------------------------------------------------ the listener over TLS


def metadata_frame(correlation_id: int) -> bytes:
    return DEFAULT_REGISTRY.encode_request(
        RequestHeader(3, 1, correlation_id, "test"), {"topics": []}
    )


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    size = await reader.readexactly(4)
    return await reader.readexactly(struct.unpack(">i", size)[0])


def client_context(ca: Path, client: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    if client is not None:
        context.load_cert_chain(str(client))
    return context


class TlsServer:
    """A listener called SSL over the given broker config's TLS; its handler notes each request's
    listener name and answers Metadata."""

    def __init__(self, config: BrokerConfig) -> None:
        self.listeners_seen: list[str] = []
        self.listener = KafkaListener(
            ListenerAddress("SSL", "127.0.0.1", 0),
            "",
            DEFAULT_REGISTRY,
            self.handle,
            1024,
            ssl_context=listener_ssl_contexts(config)["SSL"],
        )

    async def handle(self, header: RequestHeader, _body: Mapping[str, Any]) -> dict[str, Any]:
        self.listeners_seen.append(connection_listener())
        return {"brokers": [], "controller_id": header.correlation_id, "topics": []}

    async def metadata(self, context: ssl.SSLContext, correlation_id: int) -> int:
        """Connect over TLS, ask once, return the controller id answered."""
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", self.listener.address.port, ssl=context, server_hostname="localhost"
        )
        try:
            writer.write(metadata_frame(correlation_id))
            _, body = DEFAULT_REGISTRY.decode_response(
                await read_frame(reader), RequestHeader(3, 1, 0)
            )
            return int(body["controller_id"])
        finally:
            writer.close()


def test_a_tls_listener_serves_kafkas_protocol_and_names_its_listener(certs: CertFiles) -> None:
    async def scenario() -> None:
        server = TlsServer(ssl_config(certs))
        await server.listener.start()
        assert await server.metadata(client_context(certs.ca), 7) == 7
        assert server.listeners_seen == ["SSL"]
        await server.listener.close()

    asyncio.run(scenario())


def test_plaintext_bytes_and_untrusting_clients_are_dropped_and_others_served(
    certs: CertFiles, stranger: CertFiles
) -> None:
    async def scenario() -> None:
        server = TlsServer(ssl_config(certs))
        await server.listener.start()
        port = server.listener.address.port
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(metadata_frame(1))
        assert await reader.read() == b""  # the handshake fails; nothing is answered
        writer.close()
        with pytest.raises(ssl.SSLCertVerificationError):
            await server.metadata(client_context(stranger.ca), 2)
        assert await server.metadata(client_context(certs.ca), 3) == 3
        assert server.listeners_seen == ["SSL"]
        await server.listener.close()

    asyncio.run(scenario())


def test_required_client_auth_serves_only_clients_with_a_ca_signed_certificate(
    certs: CertFiles, stranger: CertFiles
) -> None:
    async def scenario() -> None:
        config = ssl_config(
            certs, ssl_client_auth="required", ssl_truststore_location=str(certs.ca)
        )
        server = TlsServer(config)
        await server.listener.start()
        # With TLS 1.3 the client learns of its refusal at its first read, not in the handshake.
        for refused in (client_context(certs.ca), client_context(certs.ca, stranger.client)):
            with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
                await server.metadata(refused, 1)
        assert await server.metadata(client_context(certs.ca, certs.client), 2) == 2
        assert server.listeners_seen == ["SSL"]
        await server.listener.close()

    asyncio.run(scenario())


@pytest.fixture(scope="module")
def expired(tmp_path_factory: pytest.TempPathFactory) -> CertFiles:
    """A CA and its broker and client certificates valid for no days: expired once made."""
    return make_certs(tmp_path_factory.mktemp("expired"), ["localhost"], 0, client=True)


def test_a_broker_certificate_past_its_date_is_refused_by_the_client(expired: CertFiles) -> None:
    async def scenario() -> None:
        server = TlsServer(ssl_config(expired))
        await server.listener.start()
        with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
            await server.metadata(client_context(expired.ca), 1)
        assert server.listeners_seen == []
        await server.listener.close()

    asyncio.run(scenario())


def test_a_client_certificate_past_its_date_is_refused_with_required_client_auth(
    certs: CertFiles, expired: CertFiles
) -> None:
    assert expired.client is not None

    async def scenario() -> None:
        config = ssl_config(
            certs, ssl_client_auth="required", ssl_truststore_location=str(expired.ca)
        )
        server = TlsServer(config)
        await server.listener.start()
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
            await server.metadata(client_context(certs.ca, expired.client), 1)
        assert server.listeners_seen == []
        await server.listener.close()

    asyncio.run(scenario())
