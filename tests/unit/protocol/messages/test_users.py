"""Tests for rafka.protocol.messages.users: an upsertion is salted on the client, and what travels
(to the broker, over Ray) holds no password."""

from __future__ import annotations

import hashlib
import pickle

import pytest

from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.users import UserScramCredentialUpsertion
from rafka.security.scram import SALT_BYTES, ScramCredential, ScramMechanism

SHA512 = ScramMechanism.SCRAM_SHA_512


def test_from_password_sends_the_password_salted_with_the_mechanisms_hash() -> None:
    upsertion = UserScramCredentialUpsertion.from_password(
        "alice", SHA512, "alice-secret", 8192, salt=b"fixed salt"
    )
    assert (upsertion.user, upsertion.mechanism, upsertion.iterations, upsertion.salt) == (
        "alice",
        SHA512,
        8192,
        b"fixed salt",
    )
    assert upsertion.salted_password == hashlib.pbkdf2_hmac(
        "sha512", b"alice-secret", b"fixed salt", 8192
    )
    credential = ScramCredential.from_salted_password(
        SHA512, upsertion.salted_password, upsertion.salt, upsertion.iterations
    )
    assert credential.matches(SHA512, "alice-secret")


def test_each_upsertion_gets_a_fresh_random_salt_and_kafkas_default_iterations() -> None:
    first = UserScramCredentialUpsertion.from_password("alice", SHA512, "same")
    second = UserScramCredentialUpsertion.from_password("alice", SHA512, "same")
    assert len(first.salt) == SALT_BYTES
    assert first.salt != second.salt
    assert first.salted_password != second.salted_password
    assert first.iterations == 4096


def test_what_travels_holds_no_password_and_its_repr_shows_no_secret() -> None:
    upsertion = UserScramCredentialUpsertion.from_password("alice", SHA512, "alice-secret")
    shipped = pickle.dumps(upsertion)
    assert b"alice-secret" not in shipped
    assert pickle.loads(shipped) == upsertion
    assert "alice-secret" not in repr(upsertion)
    assert repr(upsertion.salted_password) not in repr(upsertion)


@pytest.mark.parametrize("iterations", [4095, 16385])
def test_an_iteration_count_kafka_refuses_is_refused_before_salting(iterations: int) -> None:
    with pytest.raises(RafkaError, match=str(iterations)) as raised:
        UserScramCredentialUpsertion.from_password("alice", SHA512, "x", iterations)
    assert raised.value.error is Errors.UNACCEPTABLE_CREDENTIAL
