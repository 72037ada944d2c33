"""The broker's side of a SASL login on one connection, as Kafka's SaslServerAuthenticator runs
it: a SaslHandshake picks the mechanism, SaslAuthenticate requests carry its tokens, and the
connection serves nothing else until the login completes.

Mechanisms: PLAIN (one round: ``authzid NUL user NUL password``) and SCRAM-SHA-256/512 (two
rounds, ``rafka.security.scram``). Both check the users' SCRAM credentials: a PLAIN password is
salted with the stored salt and compared with the stored key, so one ``rafka configs --entity-type
users`` entry serves every mechanism and no password is kept in clear anywhere.

A session is a state machine over ``SaslState`` with its transitions as data; a step not allowed
in the current state is ILLEGAL_SASL_STATE, and every failure ends in FAILED, after which the
listener sends the answer and closes the connection.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rafka.protocol.errors import Errors
from rafka.security.principal import KafkaPrincipal
from rafka.security.scram import (
    CredentialLookup,
    ScramFailure,
    ScramMechanism,
    ScramServer,
)

PLAIN = "PLAIN"
MECHANISMS = (PLAIN, *(m.value for m in ScramMechanism))
"""The SASL mechanisms rafka's listeners can offer (``sasl_enabled_mechanisms``)."""


class SaslState(enum.Enum):
    """Where a connection's login stands."""

    HANDSHAKE = "handshake"
    """Waiting for SaslHandshake (ApiVersions may come first)."""
    AUTHENTICATE = "authenticate"
    """A mechanism is chosen; SaslAuthenticate requests carry its tokens."""
    COMPLETE = "complete"
    """Logged in: the connection serves every request."""
    FAILED = "failed"
    """Refused: the connection is closed once the answer is sent."""


TRANSITIONS: dict[SaslState, frozenset[SaslState]] = {
    SaslState.HANDSHAKE: frozenset({SaslState.AUTHENTICATE, SaslState.FAILED}),
    SaslState.AUTHENTICATE: frozenset(
        {SaslState.AUTHENTICATE, SaslState.COMPLETE, SaslState.FAILED}
    ),
    # A SASL request after the login ends the connection: rafka does not re-authenticate.
    SaslState.COMPLETE: frozenset({SaslState.FAILED}),
    SaslState.FAILED: frozenset(),
}


@dataclass(frozen=True)
class HandshakeAnswer:
    """SaslHandshake's answer: an error code and the mechanisms the listener offers."""

    error: Errors
    mechanisms: tuple[str, ...]


@dataclass(frozen=True)
class AuthenticateAnswer:
    """SaslAuthenticate's answer: an error code, its message, and the mechanism's next token."""

    error: Errors
    message: str | None
    token: bytes = b""


def check_mechanisms(names: list[str]) -> tuple[str, ...]:
    """``sasl_enabled_mechanisms`` checked: ValueError for an empty list or a mechanism rafka
    does not offer (GSSAPI and OAUTHBEARER among them)."""
    chosen = tuple(dict.fromkeys(n.strip().upper() for n in names if n.strip()))
    if not chosen:
        raise ValueError(f"name at least one of {', '.join(MECHANISMS)}")
    for name in chosen:
        if name not in MECHANISMS:
            raise ValueError(f"{name!r} is not offered by rafka; use {', '.join(MECHANISMS)}")
    return chosen


def sasl_mechanisms_text(value: str) -> str:
    """``sasl_enabled_mechanisms`` checked (ValueError if bad) and written back in upper case."""
    return ",".join(check_mechanisms(value.split(",")))


class SaslSession:
    """One connection's login: ``handshake`` then ``authenticate`` until ``state`` is COMPLETE
    (``principal`` set) or FAILED (``failure`` says why, for the log)."""

    def __init__(self, enabled: tuple[str, ...], lookup: CredentialLookup) -> None:
        self.enabled = enabled
        self._lookup = lookup
        self.state = SaslState.HANDSHAKE
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal | None = None
        self.failure: str | None = None
        self._scram: ScramServer | None = None
        self._scram_started = False

    def _move(self, state: SaslState) -> None:
        if state not in TRANSITIONS[self.state]:
            raise AssertionError(f"SASL login cannot go from {self.state.name} to {state.name}")
        self.state = state

    def _fail(self, why: str) -> None:
        if self.state is not SaslState.FAILED:
            self.failure = why
            self._move(SaslState.FAILED)

    def handshake(self, mechanism: str) -> HandshakeAnswer:
        """Choose ``mechanism``: UNSUPPORTED_SASL_MECHANISM if this listener does not offer it,
        ILLEGAL_SASL_STATE if a mechanism was chosen already."""
        if self.state is not SaslState.HANDSHAKE:
            self._fail(f"a SaslHandshake in the {self.state.value} state")
            return HandshakeAnswer(Errors.ILLEGAL_SASL_STATE, self.enabled)
        if mechanism not in self.enabled:
            self._fail(f"unsupported SASL mechanism {mechanism!r}")
            return HandshakeAnswer(Errors.UNSUPPORTED_SASL_MECHANISM, self.enabled)
        self.mechanism = mechanism
        if mechanism != PLAIN:
            self._scram = ScramServer(ScramMechanism(mechanism), self._lookup)
        self._move(SaslState.AUTHENTICATE)
        return HandshakeAnswer(Errors.NONE, self.enabled)

    def authenticate(self, token: bytes) -> AuthenticateAnswer:
        """The mechanism's answer to a client token; SASL_AUTHENTICATION_FAILED (the session
        FAILED) if the credentials do not hold."""
        if self.state is not SaslState.AUTHENTICATE:
            state = self.state.value  # before _fail moves it to FAILED
            self._fail(f"a SaslAuthenticate in the {state} state")
            return AuthenticateAnswer(
                Errors.ILLEGAL_SASL_STATE, f"SaslAuthenticate is not allowed in the {state} state"
            )
        try:
            if self._scram is None:
                reply, user = b"", self._plain(token)
            elif not self._scram_started:
                reply, user = self._scram.first(token), None
                self._scram_started = True
            else:
                reply = self._scram.final(token)
                user = self._scram.username
        except ScramFailure as exc:
            self._fail(str(exc))
            return AuthenticateAnswer(
                Errors.SASL_AUTHENTICATION_FAILED,
                "Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self.mechanism}",
            )
        if user is not None:
            self.principal = KafkaPrincipal.user(user)
            self._move(SaslState.COMPLETE)
        else:
            self._move(SaslState.AUTHENTICATE)
        return AuthenticateAnswer(Errors.NONE, None, reply)

    def _plain(self, token: bytes) -> str:
        """The user a PLAIN token logs in; ScramFailure if malformed or the password is wrong."""
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise ScramFailure("the PLAIN token is not authzid NUL user NUL password")
        try:
            authzid, user, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise ScramFailure("the PLAIN token is not UTF-8") from None
        if not user or not password:
            raise ScramFailure("the PLAIN token lacks its user name or password")
        if authzid and authzid != user:
            raise ScramFailure("an authorization id different from the user name")
        for mechanism in ScramMechanism:
            credential = self._lookup(user, mechanism)
            if credential is not None and credential.matches(mechanism, password):
                return user
        raise ScramFailure("Authentication failed: invalid user credentials")
