"""What a SASL listener lets through before and after a connection's login, the SASL answers it
gives (checked against the wire declarations), and a listener without SASL refusing them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rafka.actors.broker.authentication import (
    SASL_API_KEYS,
    AuthenticationRefused,
    refusing_handlers,
    screen,
)
from rafka.protocol.errors import Errors
from rafka.protocol.wire.headers import API_VERSIONS_KEY, RequestHeader
from rafka.protocol.wire.sasl_apis import SASL_AUTHENTICATE, SASL_HANDSHAKE
from rafka.security.sasl import SaslSession, SaslState
from rafka.security.scram import CredentialCache, ScramCredential, ScramMechanism

METADATA_KEY = 3
PRODUCE_KEY = 0
MECHANISMS = ("PLAIN", "SCRAM-SHA-256")


@pytest.fixture(scope="module")
def users() -> CredentialCache:
    cache = CredentialCache()
    mechanism = ScramMechanism.SCRAM_SHA_256
    cache.update("alice", {mechanism: ScramCredential.from_password(mechanism, "alice-secret")})
    return cache


def header(api_key: int, version: int = 1) -> RequestHeader:
    return RequestHeader(api_key, version, 7, "test")


def handshake(session: SaslSession, mechanism: str = "PLAIN") -> Any:
    return screen(session, header(SASL_HANDSHAKE.key), {"mechanism": mechanism})


def authenticate(session: SaslSession, token: bytes, version: int = 2) -> Any:
    return screen(session, header(SASL_AUTHENTICATE.key, version), {"auth_bytes": token})


def logged_in(users: CredentialCache) -> SaslSession:
    session = SaslSession(MECHANISMS, users)
    handshake(session)
    answer = authenticate(session, b"\0alice\0alice-secret")
    assert answer["error_code"] == 0
    assert session.state is SaslState.COMPLETE
    return session


def assert_fits_the_wire(answer: Any, api_key: int) -> None:
    """The answer encodes at every version its API declares, and decodes to itself."""
    api = {SASL_HANDSHAKE.key: SASL_HANDSHAKE, SASL_AUTHENTICATE.key: SASL_AUTHENTICATE}[api_key]
    versions = range(api.min_version, api.max_version + 1)
    assert list(versions)
    for version in versions:
        decoded = api.response.decode(api.response.encode(answer, version), version)
        for field in api.response.fields:
            if field.present_in(version):
                assert decoded[field.name] == answer[field.name], (field.name, version)


def test_the_sasl_api_keys_are_kafkas() -> None:
    assert SASL_API_KEYS == {17, 36}
    assert (SASL_HANDSHAKE.key, SASL_AUTHENTICATE.key) == (17, 36)


def test_api_versions_passes_to_the_handler_before_login(users: CredentialCache) -> None:
    session = SaslSession(MECHANISMS, users)
    assert screen(session, header(API_VERSIONS_KEY, 3), {}) is None
    handshake(session)
    assert screen(session, header(API_VERSIONS_KEY, 3), {}) is None
    assert session.state is SaslState.AUTHENTICATE


@pytest.mark.parametrize("api_key", [METADATA_KEY, PRODUCE_KEY])
def test_any_other_request_before_login_is_refused(users: CredentialCache, api_key: int) -> None:
    session = SaslSession(MECHANISMS, users)
    with pytest.raises(AuthenticationRefused, match=f"api key {api_key} before"):
        screen(session, header(api_key), {"topics": []})
    handshake(session)
    with pytest.raises(AuthenticationRefused, match="SASL state authenticate"):
        screen(session, header(api_key), {"topics": []})


def test_the_handshake_answer_has_the_wire_fields_and_fits_the_schema(
    users: CredentialCache,
) -> None:
    answer = handshake(SaslSession(MECHANISMS, users), "SCRAM-SHA-256")
    assert answer == {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]}
    assert_fits_the_wire(answer, SASL_HANDSHAKE.key)


def test_an_unsupported_mechanism_is_answered_with_the_offered_list(
    users: CredentialCache,
) -> None:
    session = SaslSession(MECHANISMS, users)
    answer = handshake(session, "GSSAPI")
    assert answer == {
        "error_code": Errors.UNSUPPORTED_SASL_MECHANISM.value,
        "mechanisms": ["PLAIN", "SCRAM-SHA-256"],
    }
    assert session.state is SaslState.FAILED
    assert_fits_the_wire(answer, SASL_HANDSHAKE.key)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_plain_login_is_answered_with_the_wire_fields_and_fits_the_schema(
    users: CredentialCache, version: int
) -> None:
    session = SaslSession(MECHANISMS, users)
    handshake(session)
    answer = authenticate(session, b"\0alice\0alice-secret", version)
    assert answer == {
        "error_code": 0,
        "error_message": None,
        "auth_bytes": b"",
        "session_lifetime_ms": 0,
    }
    assert session.principal is not None and str(session.principal) == "User:alice"
    assert_fits_the_wire(answer, SASL_AUTHENTICATE.key)


def test_a_scram_first_round_answers_the_server_first_message(users: CredentialCache) -> None:
    session = SaslSession(MECHANISMS, users)
    handshake(session, "SCRAM-SHA-256")
    answer = authenticate(session, b"n,,n=alice,r=clientnonce")
    assert answer["error_code"] == 0
    assert answer["auth_bytes"].startswith(b"r=clientnonce")
    assert session.state is SaslState.AUTHENTICATE
    assert_fits_the_wire(answer, SASL_AUTHENTICATE.key)


def test_a_failed_login_is_answered_with_its_error_and_message(users: CredentialCache) -> None:
    session = SaslSession(MECHANISMS, users)
    handshake(session)
    answer = authenticate(session, b"\0alice\0guess")
    assert answer["error_code"] == Errors.SASL_AUTHENTICATION_FAILED.value
    assert "PLAIN" in answer["error_message"]
    assert (answer["auth_bytes"], answer["session_lifetime_ms"]) == (b"", 0)
    assert session.state is SaslState.FAILED
    assert_fits_the_wire(answer, SASL_AUTHENTICATE.key)


def test_an_authenticate_before_the_handshake_is_an_illegal_sasl_state(
    users: CredentialCache,
) -> None:
    session = SaslSession(MECHANISMS, users)
    answer = authenticate(session, b"\0alice\0alice-secret")
    assert answer["error_code"] == Errors.ILLEGAL_SASL_STATE.value
    assert session.state is SaslState.FAILED
    assert_fits_the_wire(answer, SASL_AUTHENTICATE.key)


def test_after_login_every_request_but_the_sasl_ones_passes(users: CredentialCache) -> None:
    session = logged_in(users)
    for api_key in (METADATA_KEY, PRODUCE_KEY, API_VERSIONS_KEY):
        assert screen(session, header(api_key), {"topics": []}) is None
    with pytest.raises(AuthenticationRefused, match="re-authenticate"):
        handshake(session)
    with pytest.raises(AuthenticationRefused, match="re-authenticate"):
        authenticate(session, b"\0alice\0alice-secret")
    assert session.state is SaslState.COMPLETE


def test_a_listener_without_sasl_answers_the_sasl_requests_with_illegal_sasl_state() -> None:
    handlers = refusing_handlers()
    assert set(handlers) == {SASL_HANDSHAKE.key, SASL_AUTHENTICATE.key}

    async def answers() -> tuple[Any, Any]:
        return (
            await handlers[SASL_HANDSHAKE.key](header(17), {"mechanism": "PLAIN"}),
            await handlers[SASL_AUTHENTICATE.key](header(36, 2), {"auth_bytes": b"x"}),
        )

    handshake_answer, authenticate_answer = asyncio.run(answers())
    assert handshake_answer == {"error_code": Errors.ILLEGAL_SASL_STATE.value, "mechanisms": []}
    assert authenticate_answer["error_code"] == Errors.ILLEGAL_SASL_STATE.value
    assert authenticate_answer["error_message"] == "this listener does not use SASL"
    assert_fits_the_wire(handshake_answer, SASL_HANDSHAKE.key)
    assert_fits_the_wire(authenticate_answer, SASL_AUTHENTICATE.key)
