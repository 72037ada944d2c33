"""What a SASL listener lets through before, during and after a connection's login.

Until a connection has logged in, it may send ApiVersions, SaslHandshake and SaslAuthenticate
and nothing else (Kafka's SaslServerAuthenticator closes it on any other request); the SASL
requests are answered here, from the connection's ``SaslSession``, and never reach
``KafkaApis``. After the login every request goes on to the handler, except another handshake:
rafka offers no re-authentication (``session_lifetime_ms`` is 0), so one closes the connection. A
listener without SASL answers the SASL requests with ILLEGAL_SASL_STATE, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rafka.protocol.errors import Errors
from rafka.protocol.wire.headers import API_VERSIONS_KEY, RequestHeader
from rafka.protocol.wire.sasl_apis import SASL_AUTHENTICATE, SASL_HANDSHAKE
from rafka.security.sasl import SaslSession, SaslState

Body = Mapping[str, Any]
SASL_API_KEYS = frozenset({SASL_HANDSHAKE.key, SASL_AUTHENTICATE.key})


@dataclass(frozen=True)
class SaslSettings:
    """A SASL listener's settings: a new login per connection, the largest frame a connection
    may send before it has logged in (``sasl_server_max_receive_size``), and how long a refused
    connection is held before it is closed (``connection_failed_authentication_delay_ms``), which
    slows a password guesser down."""

    session: Callable[[], SaslSession]
    max_receive_bytes: int
    failure_delay_s: float


class AuthenticationRefused(Exception):
    """A request the connection may not send in its login's state: the connection is closed."""


def screen(session: SaslSession, header: RequestHeader, body: Body) -> Body | None:
    """The answer to a SASL request, or None for a request the handler answers; raises
    AuthenticationRefused for one the connection may not send now."""
    key = header.api_key
    if session.state is SaslState.COMPLETE:
        if key in SASL_API_KEYS:
            raise AuthenticationRefused(
                "a SASL request after the connection logged in (rafka does not re-authenticate)"
            )
        return None
    if key == API_VERSIONS_KEY:
        return None
    if key == SASL_HANDSHAKE.key:
        handshake = session.handshake(body["mechanism"])
        return {"error_code": handshake.error.value, "mechanisms": list(handshake.mechanisms)}
    if key == SASL_AUTHENTICATE.key:
        answer = session.authenticate(bytes(body["auth_bytes"]))
        return {
            "error_code": answer.error.value,
            "error_message": answer.message,
            "auth_bytes": answer.token,
            "session_lifetime_ms": 0,
        }
    raise AuthenticationRefused(
        f"request with api key {key} before the connection authenticated "
        f"(SASL state {session.state.value})"
    )


def refusing_handlers() -> dict[int, Callable[[RequestHeader, Body], Awaitable[Body]]]:
    """Handlers of the SASL requests for a listener without SASL: ILLEGAL_SASL_STATE."""

    async def handshake(_header: RequestHeader, _body: Body) -> Body:
        return {"error_code": Errors.ILLEGAL_SASL_STATE.value, "mechanisms": []}

    async def authenticate(_header: RequestHeader, _body: Body) -> Body:
        return {
            "error_code": Errors.ILLEGAL_SASL_STATE.value,
            "error_message": "this listener does not use SASL",
            "auth_bytes": b"",
            "session_lifetime_ms": 0,
        }

    return {SASL_HANDSHAKE.key: handshake, SASL_AUTHENTICATE.key: authenticate}
