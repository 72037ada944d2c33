"""A connection's SASL login as a state machine: handshake, PLAIN and SCRAM (with kafka-python's
client), every refusal ending in FAILED, and the ``sasl_enabled_mechanisms`` setting."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka.net.sasl.scram import ScramClient

from rafka.protocol.errors import Errors
from rafka.security.principal import KafkaPrincipal
from rafka.security.sasl import (
    MECHANISMS,
    PLAIN,
    TRANSITIONS,
    SaslSession,
    SaslState,
    check_mechanisms,
    sasl_mechanisms_text,
)
from rafka.security.scram import CredentialCache, ScramCredential, ScramMechanism

ALL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SHA_512 = ScramMechanism.SCRAM_SHA_512


@pytest.fixture(scope="module")
def users() -> CredentialCache:
    cache = CredentialCache()
    cache.update(
        "alice", {m: ScramCredential.from_password(m, "alice-secret") for m in ScramMechanism}
    )
    # bob has only a SCRAM-SHA-512 credential, which a PLAIN login checks too.
    cache.update("bob", {SHA_512: ScramCredential.from_password(SHA_512, "bob-secret")})
    return cache


class RecordingSession(SaslSession):
    """A session that records every state change it makes."""

    def __init__(self, enabled: tuple[str, ...], users: CredentialCache) -> None:
        super().__init__(enabled, users)
        self.moves: list[tuple[SaslState, SaslState]] = []

    def _move(self, state: SaslState) -> None:
        before = self.state
        super()._move(state)
        self.moves.append((before, state))


@pytest.fixture
def sessions(users: CredentialCache) -> Iterator[list[RecordingSession]]:
    """Makes sessions; after the test, every state change each made is one TRANSITIONS allows."""
    made: list[RecordingSession] = []
    yield made
    for login in made:
        for before, after in login.moves:
            assert after in TRANSITIONS[before], f"{before.name} -> {after.name}"


def new_session(
    made: list[RecordingSession], users: CredentialCache, enabled: tuple[str, ...] = ALL
) -> RecordingSession:
    login = RecordingSession(enabled, users)
    made.append(login)
    return login


def plain_login(made: list[RecordingSession], users: CredentialCache) -> RecordingSession:
    """A session that has chosen PLAIN."""
    login = new_session(made, users)
    assert login.handshake(PLAIN).error is Errors.NONE
    assert login.state is SaslState.AUTHENTICATE
    return login


def test_the_transitions_cover_every_state_and_end_in_failed() -> None:
    assert set(TRANSITIONS) == set(SaslState)
    assert TRANSITIONS[SaslState.COMPLETE] == frozenset({SaslState.FAILED})
    assert TRANSITIONS[SaslState.FAILED] == frozenset()
    for state in (SaslState.HANDSHAKE, SaslState.AUTHENTICATE):
        assert SaslState.FAILED in TRANSITIONS[state]
    assert SaslState.COMPLETE not in TRANSITIONS[SaslState.HANDSHAKE]


def test_a_move_the_transitions_do_not_allow_is_refused(users: CredentialCache) -> None:
    login = SaslSession(ALL, users)
    with pytest.raises(AssertionError, match="HANDSHAKE to COMPLETE"):
        login._move(SaslState.COMPLETE)
    assert login.state is SaslState.HANDSHAKE


@pytest.mark.parametrize("mechanism", [m.value for m in ScramMechanism])
def test_a_scram_login_with_kafka_pythons_client_completes_as_the_user(
    sessions: list[RecordingSession], users: CredentialCache, mechanism: str
) -> None:
    login = new_session(sessions, users)
    client = ScramClient("alice", "alice-secret", mechanism)
    assert login.handshake(mechanism).error is Errors.NONE
    assert login.mechanism == mechanism
    first = login.authenticate(client.first_message())
    assert (first.error, first.message, login.state) == (
        Errors.NONE,
        None,
        SaslState.AUTHENTICATE,
    )
    assert login.principal is None
    client.process_server_first_message(first.token)
    final = login.authenticate(client.final_message())
    assert (final.error, login.state) == (Errors.NONE, SaslState.COMPLETE)
    client.process_server_final_message(final.token)  # raises if the signature is wrong
    assert login.principal == KafkaPrincipal.user("alice")
    assert str(login.principal) == "User:alice"
    assert login.moves == [
        (SaslState.HANDSHAKE, SaslState.AUTHENTICATE),
        (SaslState.AUTHENTICATE, SaslState.AUTHENTICATE),
        (SaslState.AUTHENTICATE, SaslState.COMPLETE),
    ]


def test_a_scram_login_with_a_wrong_password_fails(
    sessions: list[RecordingSession], users: CredentialCache
) -> None:
    login = new_session(sessions, users)
    client = ScramClient("alice", "guess", "SCRAM-SHA-256")
    login.handshake("SCRAM-SHA-256")
    client.process_server_first_message(login.authenticate(client.first_message()).token)
    answer = login.authenticate(client.final_message())
    assert answer.error is Errors.SASL_AUTHENTICATION_FAILED
    assert answer.message is not None and "SCRAM-SHA-256" in answer.message
    assert answer.token == b""
    assert login.state is SaslState.FAILED
    assert login.principal is None
    assert login.failure is not None and "invalid user credentials" in login.failure


def test_a_scram_login_of_an_unknown_user_fails_at_its_first_message(
    sessions: list[RecordingSession], users: CredentialCache
) -> None:
    login = new_session(sessions, users)
    login.handshake("SCRAM-SHA-512")
    answer = login.authenticate(ScramClient("mallory", "x", "SCRAM-SHA-512").first_message())
    assert (answer.error, login.state) == (Errors.SASL_AUTHENTICATION_FAILED, SaslState.FAILED)


def test_a_second_handshake_is_an_illegal_sasl_state_and_fails_the_login(
    sessions: list[RecordingSession], users: CredentialCache
) -> None:
    login = new_session(sessions, users)
    assert login.handshake(PLAIN).error is Errors.NONE
    again = login.handshake(PLAIN)
    assert again.error is Errors.ILLEGAL_SASL_STATE
    assert again.mechanisms == ALL
    assert login.state is SaslState.FAILED
    assert login.failure is not None and "SaslHandshake" in login.failure


def test_an_authenticate_before_the_handshake_is_an_illegal_sasl_state_and_fails(
    sessions: list[RecordingSession], users: CredentialCache
) -> None:
    login = new_session(sessions, users)
    answer = login.authenticate(b"\0alice\0alice-secret")
    assert answer.error is Errors.ILLEGAL_SASL_STATE
    assert answer.message is not None and "handshake" in answer.message
    assert login.state is SaslState.FAILED
    assert login.principal is None


@pytest.mark.parametrize("mechanism", ["GSSAPI", "OAUTHBEARER", "plain", "SCRAM-SHA-512"])
def test_a_mechanism_the_listener_does_not_offer_is_unsupported_with_the_offered_list(
    sessions: list[RecordingSession], users: CredentialCache, mechanism: str
) -> None:
    enabled = ("PLAIN", "SCRAM-SHA-256")
    login = new_session(sessions, users, enabled)
    answer = login.handshake(mechanism)
    assert answer.error is Errors.UNSUPPORTED_SASL_MECHANISM
    assert answer.mechanisms == enabled
    assert login.state is SaslState.FAILED
    assert login.failure is not None and mechanism in login.failure


def test_a_successful_handshake_lists_the_offered_mechanisms(
    sessions: list[RecordingSession], users: CredentialCache
) -> None:
    answer = new_session(sessions, users, ("SCRAM-SHA-512",)).handshake("SCRAM-SHA-512")
    assert (answer.error, answer.mechanisms) == (Errors.NONE, ("SCRAM-SHA-512",))


@pytest.mark.parametrize(
    ("token", "user"),
    [
        (b"\0alice\0alice-secret", "alice"),
        (b"alice\0alice\0alice-secret", "alice"),  # an authzid that is the user
        (b"\0bob\0bob-secret", "bob"),  # a SCRAM-SHA-512 credential only
    ],
)
def test_a_plain_login_with_the_right_password_completes_in_one_round(
    sessions: list[RecordingSession], users: CredentialCache, token: bytes, user: str
) -> None:
    login = plain_login(sessions, users)
    answer = login.authenticate(token)
    assert (answer.error, answer.message, answer.token) == (Errors.NONE, None, b"")
    assert login.state is SaslState.COMPLETE
    assert login.principal == KafkaPrincipal.user(user)


@pytest.mark.parametrize(
    ("token", "why"),
    [
        (b"\0alice\0guess", "invalid user credentials"),
        (b"\0alice\0alice-secret ", "invalid user credentials"),
        (b"\0bob\0alice-secret", "invalid user credentials"),
        (b"\0mallory\0alice-secret", "invalid user credentials"),
        (b"", "not authzid NUL user NUL password"),
        (b"alice\0alice-secret", "not authzid NUL user NUL password"),
        (b"\0alice\0alice-secret\0", "not authzid NUL user NUL password"),
        (b"\0\0alice-secret", "lacks its user name or password"),
        (b"\0alice\0", "lacks its user name or password"),
        (b"bob\0alice\0alice-secret", "authorization id"),
        (b"\0al\xffice\0alice-secret", "not UTF-8"),
        (b"\0alice\0\xfe\xff", "not UTF-8"),
    ],
)
def test_a_plain_login_that_does_not_hold_fails(
    sessions: list[RecordingSession], users: CredentialCache, token: bytes, why: str
) -> None:
    login = plain_login(sessions, users)
    answer = login.authenticate(token)
    assert answer.error is Errors.SASL_AUTHENTICATION_FAILED
    assert answer.message is not None and "PLAIN" in answer.message
    assert login.state is SaslState.FAILED
    assert login.principal is None
    assert login.failure is not None and why in login.failure


def test_the_failure_message_sent_to_the_client_does_not_say_which_check_failed(
    sessions: list[RecordingSession], users: CredentialCache
) -> None:
    wrong_password = plain_login(sessions, users).authenticate(b"\0alice\0guess")
    unknown_user = plain_login(sessions, users).authenticate(b"\0mallory\0guess")
    assert wrong_password.message == unknown_user.message


def test_check_mechanisms_normalises_case_and_spaces_and_drops_duplicates() -> None:
    assert check_mechanisms([" plain", "scram-sha-256", "PLAIN", "", "SCRAM-SHA-256 "]) == (
        "PLAIN",
        "SCRAM-SHA-256",
    )
    assert check_mechanisms(list(MECHANISMS)) == ALL


@pytest.mark.parametrize("mechanism", ["GSSAPI", "OAUTHBEARER", "SCRAM-SHA-1"])
def test_check_mechanisms_refuses_one_rafka_does_not_offer_naming_it(mechanism: str) -> None:
    with pytest.raises(ValueError, match=mechanism):
        check_mechanisms(["PLAIN", mechanism])


@pytest.mark.parametrize("names", [[], [""], [" ", ""]])
def test_check_mechanisms_refuses_an_empty_list(names: list[str]) -> None:
    with pytest.raises(ValueError, match="at least one"):
        check_mechanisms(names)


def test_sasl_mechanisms_text_writes_the_setting_back_checked_in_upper_case() -> None:
    assert sasl_mechanisms_text("scram-sha-512, plain,SCRAM-SHA-512") == "SCRAM-SHA-512,PLAIN"
    with pytest.raises(ValueError, match="GSSAPI"):
        sasl_mechanisms_text("PLAIN,gssapi")
    with pytest.raises(ValueError):
        sasl_mechanisms_text(" , ")


def test_a_handshake_after_the_login_fails_the_session_with_illegal_sasl_state(
    users: CredentialCache,
) -> None:
    login = SaslSession(ALL, users)
    login.handshake("PLAIN")
    login.authenticate(b"\0alice\0alice-secret")
    assert login.state is SaslState.COMPLETE
    assert login.handshake("PLAIN").error is Errors.ILLEGAL_SASL_STATE
    assert login.state is SaslState.FAILED
    assert login.authenticate(b"").error is Errors.ILLEGAL_SASL_STATE
    assert login.state is SaslState.FAILED
