"""SCRAM (RFC 5802, RFC 7677) as Kafka uses it: credentials, their ZooKeeper text, and the
server's side of the two-round exchange.

A user's credential for one mechanism is what Kafka stores under ``/config/users/<name>``: a
random salt, the iteration count, ``StoredKey = H(HMAC(SaltedPassword, "Client Key"))`` and
``ServerKey = HMAC(SaltedPassword, "Server Key")``. The password itself is never stored, and
never sent to a broker: the admin client salts it and sends the salted password, from which the
broker derives the two keys. The exchange proves the client knows the password without it
crossing the wire, and proves the broker holds the credential (the server signature).

No socket and no ZooKeeper here: ``ScramServer`` answers byte strings with byte strings.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from rafka.protocol.errors import Errors

MIN_ITERATIONS = 4096
"""Kafka refuses fewer: the salted password must cost a guesser real work."""
MAX_ITERATIONS = 16384
"""Kafka's ceiling, which keeps a PLAIN login (one salting per attempt) cheap for the broker."""
DEFAULT_ITERATIONS = 4096
SALT_BYTES = 32


class ScramMechanism(enum.Enum):
    """A SCRAM mechanism, by its SASL name, with its hash and Kafka's wire code."""

    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"

    @property
    def hash_name(self) -> str:
        """The ``hashlib`` name of its hash."""
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @property
    def code(self) -> int:
        """Kafka's ScramMechanism byte (AlterUserScramCredentials, DescribeUserScramCredentials)."""
        return 1 if self is ScramMechanism.SCRAM_SHA_256 else 2

    def digest(self, data: bytes) -> bytes:
        """H(data)."""
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        """HMAC(key, data)."""
        return hmac.new(key, data, self.hash_name).digest()

    @staticmethod
    def named(name: str) -> ScramMechanism:
        """The mechanism of a SASL name; UNSUPPORTED_SASL_MECHANISM for any other."""
        try:
            return ScramMechanism(name.upper())
        except ValueError:
            known = ", ".join(m.value for m in ScramMechanism)
            raise Errors.UNSUPPORTED_SASL_MECHANISM.exception(
                f"{name!r} is not a SCRAM mechanism ({known})"
            ) from None


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    """Hi(password, salt, i): PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def check_iterations(mechanism: ScramMechanism, iterations: int) -> None:
    """UNACCEPTABLE_CREDENTIAL for an iteration count outside Kafka's bounds."""
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise Errors.UNACCEPTABLE_CREDENTIAL.exception(
            f"{mechanism.value} iterations must be between {MIN_ITERATIONS} and "
            f"{MAX_ITERATIONS}, not {iterations}"
        )


@dataclass(frozen=True)
class ScramCredential:
    """What a broker keeps to check one user's SCRAM logins for one mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @staticmethod
    def from_salted_password(
        mechanism: ScramMechanism, salted: bytes, salt: bytes, iterations: int
    ) -> ScramCredential:
        """The credential of a salted password."""
        client_key = mechanism.hmac(salted, b"Client Key")
        return ScramCredential(
            salt,
            mechanism.digest(client_key),
            mechanism.hmac(salted, b"Server Key"),
            iterations,
        )

    @staticmethod
    def from_password(
        mechanism: ScramMechanism,
        password: str,
        iterations: int = DEFAULT_ITERATIONS,
        salt: bytes | None = None,
    ) -> ScramCredential:
        """A new credential for ``password`` with a random salt (or ``salt``)."""
        check_iterations(mechanism, iterations)
        salt = os.urandom(SALT_BYTES) if salt is None else salt
        salted = salted_password(mechanism, password, salt, iterations)
        return ScramCredential.from_salted_password(mechanism, salted, salt, iterations)

    def matches(self, mechanism: ScramMechanism, password: str) -> bool:
        """Whether ``password`` is the one this credential was made from (a PLAIN login)."""
        salted = salted_password(mechanism, password, self.salt, self.iterations)
        key = mechanism.digest(mechanism.hmac(salted, b"Client Key"))
        return hmac.compare_digest(key, self.stored_key)

    def to_text(self) -> str:
        """Kafka's text for it in ``/config/users/<name>``."""
        return ",".join(
            (
                f"salt={_b64(self.salt)}",
                f"stored_key={_b64(self.stored_key)}",
                f"server_key={_b64(self.server_key)}",
                f"iterations={self.iterations}",
            )
        )

    @staticmethod
    def from_text(text: str) -> ScramCredential:
        """Parse Kafka's text of a credential; ValueError if it is not one."""
        fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        try:
            return ScramCredential(
                base64.b64decode(fields["salt"], validate=True),
                base64.b64decode(fields["stored_key"], validate=True),
                base64.b64decode(fields["server_key"], validate=True),
                int(fields["iterations"]),
            )
        except (KeyError, ValueError) as exc:
            raise ValueError(f"not a SCRAM credential: {exc}") from None


def user_credentials(config: dict[str, str]) -> dict[ScramMechanism, ScramCredential]:
    """The SCRAM credentials in a user's ``/config/users`` entry (its other keys, quotas among
    them, are not credentials)."""
    found = {}
    for mechanism in ScramMechanism:
        if mechanism.value in config:
            found[mechanism] = ScramCredential.from_text(config[mechanism.value])
    return found


CredentialLookup = Callable[[str, ScramMechanism], "ScramCredential | None"]
"""A user's credential for a mechanism, None when the user has none."""


class ScramFailure(Exception):
    """A SCRAM exchange that cannot succeed; its text is safe to send to the client."""


class ScramServer:
    """One SCRAM login on the broker's side: ``first`` answers the client-first message,
    ``final`` checks the client's proof and answers with the server's signature."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: CredentialLookup,
        nonce: str | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._server_nonce = nonce or secrets.token_urlsafe(24)
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._gs2_header = ""
        self._pending_user = ""
        self.username: str | None = None
        """The user, once ``final`` has checked the proof."""

    def first(self, message: bytes) -> bytes:
        """The server-first message for a client-first message; ScramFailure if malformed or the
        user has no credential for this mechanism."""
        text = _text(message)
        header, comma, rest = _split_gs2_header(text)
        if not comma:
            raise ScramFailure("the client-first message has no GS2 header")
        if header.startswith("p="):
            raise ScramFailure("channel binding is not supported")
        attributes = _attributes(rest)
        if "m" in attributes:
            raise ScramFailure("mandatory SCRAM extensions are not supported")
        name, nonce = attributes.get("n"), attributes.get("r")
        if not name or not nonce:
            raise ScramFailure("the client-first message lacks its user name or nonce")
        user = _unescape_name(name)
        authzid = header.split(",")[1]
        if authzid and _unescape_name(authzid.removeprefix("a=")) != user:
            raise ScramFailure("an authorization id different from the user name")
        credential = self._lookup(user, self.mechanism)
        if credential is None:
            raise ScramFailure("Authentication failed: invalid user credentials")
        self._credential = credential
        self._gs2_header = header
        self._client_first_bare = rest
        self._nonce = nonce + self._server_nonce
        self._pending_user = user
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        """The server-final message for a client-final message whose proof holds; ScramFailure
        otherwise."""
        credential = self._credential
        if credential is None:
            raise ScramFailure("the client-final message came before the client-first")
        text = _text(message)
        without_proof, _, proof_part = text.rpartition(",p=")
        attributes = _attributes(without_proof)
        binding = base64.b64encode(self._gs2_header.encode()).decode()
        if attributes.get("c") != binding:
            raise ScramFailure("the channel binding does not match the GS2 header")
        if attributes.get("r") != self._nonce:
            raise ScramFailure("the nonce does not match")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise ScramFailure("the client proof is not base64") from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = self.mechanism.hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramFailure("Authentication failed: invalid user credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(self.mechanism.digest(client_key), credential.stored_key):
            raise ScramFailure("Authentication failed: invalid user credentials")
        self.username = self._pending_user
        server_signature = self.mechanism.hmac(credential.server_key, auth_message)
        return f"v={_b64(server_signature)}".encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _text(message: bytes) -> str:
    try:
        return message.decode()
    except UnicodeDecodeError:
        raise ScramFailure("the SCRAM message is not UTF-8") from None


def _split_gs2_header(text: str) -> tuple[str, str, str]:
    """("n,," or "y,,", ",", client-first-bare) -- the header is two comma-ended fields."""
    first, comma, rest = text.partition(",")
    authzid, comma2, bare = rest.partition(",")
    if not comma or not comma2 or (first not in ("n", "y") and not first.startswith("p=")):
        return text, "", ""
    return f"{first},{authzid},", ",", bare


def _attributes(text: str) -> dict[str, str]:
    """``a=x,b=y`` as a dict; ScramFailure for a part that is not ``k=v``."""
    found = {}
    for part in text.split(","):
        key, equals, value = part.partition("=")
        if not equals or len(key) != 1:
            raise ScramFailure(f"{part!r} is not a SCRAM attribute")
        found[key] = value
    return found


def _unescape_name(name: str) -> str:
    """RFC 5802's saslname: ``=2C`` is a comma and ``=3D`` an equals sign; any other ``=`` is
    malformed (ScramFailure)."""
    if re.search("=(?!2C|3D)", name):
        raise ScramFailure(f"{name!r} is not a SCRAM user name (an = must start =2C or =3D)")
    return name.replace("=2C", ",").replace("=3D", "=")


class CredentialCache:
    """A broker's copy of the users' SCRAM credentials, kept current from ZooKeeper's change
    notifications, so a login reads memory and never waits on ZooKeeper. Called as a
    ``CredentialLookup``."""

    def __init__(self) -> None:
        self._users: dict[str, dict[ScramMechanism, ScramCredential]] = {}

    def update(self, user: str, credentials: dict[ScramMechanism, ScramCredential]) -> None:
        """Replace a user's credentials (none: forget the user)."""
        if credentials:
            self._users[user] = dict(credentials)
        else:
            self._users.pop(user, None)

    def __call__(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def __len__(self) -> int:
        return len(self._users)
