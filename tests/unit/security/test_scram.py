"""SCRAM as Kafka uses it: RFC 7677's test vector, full exchanges with kafka-python's client, every
way a login is refused, and the credentials' ZooKeeper text."""

from __future__ import annotations

import base64

import pytest
from kafka.net.sasl.scram import ScramClient

from rafka.protocol.errors import Errors, RafkaError
from rafka.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    CredentialCache,
    ScramCredential,
    ScramFailure,
    ScramMechanism,
    ScramServer,
    user_credentials,
)

SHA_256 = ScramMechanism.SCRAM_SHA_256
SHA_512 = ScramMechanism.SCRAM_SHA_512

# RFC 7677 section 3.
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_server() -> ScramServer:
    credential = ScramCredential.from_password(SHA_256, "pencil", 4096, RFC_SALT)
    cache = CredentialCache()
    cache.update("user", {SHA_256: credential})
    return ScramServer(SHA_256, cache, nonce=RFC_SERVER_NONCE)


def cache_with(user: str, password: str, *mechanisms: ScramMechanism) -> CredentialCache:
    cache = CredentialCache()
    chosen = mechanisms or tuple(ScramMechanism)
    cache.update(user, {m: ScramCredential.from_password(m, password) for m in chosen})
    return cache


def test_rfc_7677_vector_gives_the_server_first_and_final_messages() -> None:
    server = rfc_server()
    assert server.first(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert server.username is None
    assert server.final(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.username == "user"


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_kafka_python_scram_client_logs_in_and_accepts_the_server_signature(
    mechanism: ScramMechanism,
) -> None:
    server = ScramServer(mechanism, cache_with("alice", "alice-secret"))
    client = ScramClient("alice", "alice-secret", mechanism.value)
    client.process_server_first_message(server.first(client.first_message()))
    server_final = server.final(client.final_message())
    client.process_server_final_message(server_final)  # raises if the signature is wrong
    assert server.username == "alice"
    assert server_final.startswith(b"v=")


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_a_wrong_password_is_refused_at_the_final_message(mechanism: ScramMechanism) -> None:
    server = ScramServer(mechanism, cache_with("alice", "alice-secret"))
    client = ScramClient("alice", "guess", mechanism.value)
    client.process_server_first_message(server.first(client.first_message()))
    with pytest.raises(ScramFailure, match="invalid user credentials"):
        server.final(client.final_message())
    assert server.username is None


def test_an_unknown_user_is_refused_at_the_first_message() -> None:
    server = ScramServer(SHA_256, cache_with("alice", "alice-secret"))
    with pytest.raises(ScramFailure, match="invalid user credentials"):
        server.first(ScramClient("mallory", "x", SHA_256.value).first_message())


def test_a_user_without_a_credential_for_the_mechanism_is_refused() -> None:
    server = ScramServer(SHA_256, cache_with("alice", "alice-secret", SHA_512))
    with pytest.raises(ScramFailure):
        server.first(ScramClient("alice", "alice-secret", SHA_256.value).first_message())


def first_done(server: ScramServer) -> None:
    assert server.first(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST


def test_a_tampered_nonce_in_the_final_message_is_refused() -> None:
    server = rfc_server()
    first_done(server)
    tampered = RFC_CLIENT_FINAL.replace(b"hNlF$k0", b"hNlF$k1")
    with pytest.raises(ScramFailure, match="nonce"):
        server.final(tampered)
    assert server.username is None


@pytest.mark.parametrize("binding", [b"c=eSws", b"c=cCx0bHMtdW5pcXVlLCw=", b"c=", b""])
def test_a_channel_binding_other_than_the_gs2_header_is_refused(binding: bytes) -> None:
    server = rfc_server()
    first_done(server)
    message = RFC_CLIENT_FINAL.replace(b"c=biws", binding)
    with pytest.raises(ScramFailure):
        server.final(message)
    assert server.username is None


def test_the_channel_binding_must_repeat_a_y_header() -> None:
    server = rfc_server()
    assert server.first(b"y,,n=user,r=abc").startswith(b"r=abc")
    nonce = b"r=abc" + RFC_SERVER_NONCE.encode()
    with pytest.raises(ScramFailure, match="channel binding"):
        server.final(b"c=biws," + nonce + b",p=AAAA")
    server = rfc_server()
    server.first(b"y,,n=user,r=abc")
    # base64("y,,") passes the binding check and fails only at the (short) proof.
    with pytest.raises(ScramFailure, match="invalid user credentials"):
        server.final(b"c=eSws," + nonce + b",p=AAAA")


@pytest.mark.parametrize(
    "message",
    [
        b"",
        b"n=user,r=abc",  # no GS2 header
        b"x,,n=user,r=abc",  # not n, y or p= in the header
        b"n,,",  # no client-first-bare
        b"n,,n=user",  # no nonce
        b"n,,r=abc",  # no user
        b"n,,n=,r=abc",
        b"n,,n=user,r=",
        b"n,,n=user,r=abc,garbage",
        b"n,,n=a,b,r=abc",  # an unescaped comma in the name
        b"n,,m=ext,n=user,r=abc",  # a mandatory extension
        b"p=tls-unique,,n=user,r=abc",  # channel binding asked for
        b"n,,n=us\xffer,r=abc",  # not UTF-8
    ],
)
def test_a_malformed_client_first_message_is_refused(message: bytes) -> None:
    with pytest.raises(ScramFailure):
        rfc_server().first(message)


@pytest.mark.parametrize(
    "message",
    [
        b"",
        b"garbage",
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",  # no proof
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=not base64!",
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA",  # short proof
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=\xff",
    ],
)
def test_a_malformed_client_final_message_is_refused(message: bytes) -> None:
    server = rfc_server()
    first_done(server)
    with pytest.raises(ScramFailure):
        server.final(message)
    assert server.username is None


def test_a_final_message_before_the_first_is_refused() -> None:
    with pytest.raises(ScramFailure, match="before the client-first"):
        rfc_server().final(RFC_CLIENT_FINAL)


def test_an_authzid_other_than_the_user_is_refused_and_the_same_one_accepted() -> None:
    with pytest.raises(ScramFailure, match="authorization id"):
        rfc_server().first(b"n,a=admin,n=user,r=" + RFC_CLIENT_NONCE.encode())
    server = rfc_server()
    assert server.first(b"n,a=user,n=user,r=" + RFC_CLIENT_NONCE.encode()) == RFC_SERVER_FIRST


def test_an_escaped_saslname_names_the_user_with_its_comma_and_equals_sign() -> None:
    cache = cache_with("a,b=c", "pw", SHA_256)
    server = ScramServer(SHA_256, cache)
    assert server.first(b"n,,n=a=2Cb=3Dc,r=abc").startswith(b"r=abc")
    # The authzid is a saslname too.
    server = ScramServer(SHA_256, cache)
    assert server.first(b"n,a=a=2Cb=3Dc,n=a=2Cb=3Dc,r=abc").startswith(b"r=abc")


@pytest.mark.parametrize("name", [b"a=2Cb=3Dc", b"a,b=c", b"a=2cb=3dc", b"a=2Cb=c"])
def test_a_saslname_that_is_not_the_escaped_user_is_refused(name: bytes) -> None:
    # Only n=a=3D2Cb=3D3Dc names the user whose name is literally "a=2Cb=3Dc".
    cache = cache_with("a=2Cb=3Dc", "pw", SHA_256)
    with pytest.raises(ScramFailure):
        ScramServer(SHA_256, cache).first(b"n,,n=" + name + b",r=abc")


def test_a_literal_escape_sequence_in_a_user_name_is_itself_escaped() -> None:
    cache = cache_with("a=2Cb=3Dc", "pw", SHA_256)
    assert ScramServer(SHA_256, cache).first(b"n,,n=a=3D2Cb=3D3Dc,r=abc").startswith(b"r=abc")


def test_the_server_nonce_extends_the_clients_and_is_fresh_per_login() -> None:
    cache = cache_with("alice", "pw", SHA_256)
    nonces = set()
    for _ in range(2):
        server_first = ScramServer(SHA_256, cache).first(b"n,,n=alice,r=client")
        nonce = server_first.decode().split(",")[0].removeprefix("r=")
        assert nonce.startswith("client") and len(nonce) > len("client")
        nonces.add(nonce)
    assert len(nonces) == 2


def test_credential_text_uses_kafkas_field_names_and_round_trips() -> None:
    credential = ScramCredential.from_password(SHA_512, "pencil", 8192)
    text = credential.to_text()
    assert [part.split("=", 1)[0] for part in text.split(",")] == [
        "salt",
        "stored_key",
        "server_key",
        "iterations",
    ]
    assert text.endswith(",iterations=8192")
    assert ScramCredential.from_text(text) == credential
    assert len(credential.salt) == 32
    assert len(credential.stored_key) == len(credential.server_key) == 64


def test_the_rfc_credential_text_is_what_kafka_stores() -> None:
    credential = ScramCredential.from_password(SHA_256, "pencil", 4096, RFC_SALT)
    assert credential.to_text() == (
        "salt=W22ZaJ0SNY7soEsUEjb6gQ==,"
        "stored_key=WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=,"
        "server_key=wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=,"
        "iterations=4096"
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "salt=AAAA,stored_key=AAAA,server_key=AAAA",  # no iterations
        "salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=many",
        "salt=!!!!,stored_key=AAAA,server_key=AAAA,iterations=4096",
        "stored_key=AAAA,server_key=AAAA,iterations=4096",
    ],
)
def test_text_that_is_not_a_credential_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="not a SCRAM credential"):
        ScramCredential.from_text(text)


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_matches_checks_a_plain_password_against_the_stored_key(
    mechanism: ScramMechanism,
) -> None:
    credential = ScramCredential.from_password(mechanism, "s3cret")
    assert credential.matches(mechanism, "s3cret")
    assert not credential.matches(mechanism, "s3cret ")
    assert not credential.matches(mechanism, "")
    other = SHA_512 if mechanism is SHA_256 else SHA_256
    assert not credential.matches(other, "s3cret")


@pytest.mark.parametrize("iterations", [0, MIN_ITERATIONS - 1, MAX_ITERATIONS + 1])
def test_an_iteration_count_outside_kafkas_bounds_is_an_unacceptable_credential(
    iterations: int,
) -> None:
    with pytest.raises(RafkaError) as raised:
        ScramCredential.from_password(SHA_256, "pw", iterations)
    assert raised.value.error is Errors.UNACCEPTABLE_CREDENTIAL
    assert str(iterations) in str(raised.value)


@pytest.mark.parametrize("iterations", [MIN_ITERATIONS, MAX_ITERATIONS])
def test_the_iteration_bounds_themselves_are_accepted(iterations: int) -> None:
    credential = ScramCredential.from_password(SHA_256, "pw", iterations)
    assert credential.iterations == iterations
    assert credential.matches(SHA_256, "pw")


def test_mechanisms_know_their_hash_and_kafkas_wire_code_and_are_named_in_any_case() -> None:
    assert (SHA_256.hash_name, SHA_256.code) == ("sha256", 1)
    assert (SHA_512.hash_name, SHA_512.code) == ("sha512", 2)
    assert ScramMechanism.named("scram-sha-512") is SHA_512
    with pytest.raises(RafkaError) as raised:
        ScramMechanism.named("PLAIN")
    assert raised.value.error is Errors.UNSUPPORTED_SASL_MECHANISM


def test_user_credentials_reads_only_the_scram_keys_of_a_users_config() -> None:
    credential = ScramCredential.from_password(SHA_256, "pw")
    config = {
        "SCRAM-SHA-256": credential.to_text(),
        "producer_byte_rate": "1048576",
        "consumer_byte_rate": "2097152",
    }
    assert user_credentials(config) == {SHA_256: credential}
    assert user_credentials({"producer_byte_rate": "1"}) == {}


def test_the_credential_cache_is_updated_and_forgets_a_user_without_credentials() -> None:
    cache = CredentialCache()
    first = ScramCredential.from_password(SHA_256, "one")
    second = ScramCredential.from_password(SHA_256, "two")
    given = {SHA_256: first}
    cache.update("alice", given)
    given[SHA_512] = second  # the cache keeps its own copy
    assert cache("alice", SHA_256) == first
    assert cache("alice", SHA_512) is None
    assert cache("bob", SHA_256) is None
    assert len(cache) == 1
    cache.update("alice", {SHA_256: second})
    assert cache("alice", SHA_256) == second
    cache.update("alice", {})
    assert cache("alice", SHA_256) is None
    assert len(cache) == 0
    cache.update("nobody", {})
    assert len(cache) == 0
