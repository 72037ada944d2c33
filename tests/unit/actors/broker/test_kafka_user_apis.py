"""KafkaUserApis against a broker that answers with its own decisions over an in-memory
``/config``: Kafka's DescribeUserScramCredentials and AlterUserScramCredentials bodies
(round-tripped through the wire codec) mapped onto rafka's requests, and the answers back."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.kafka_user_apis import KafkaUserApis
from rafka.actors.broker.user_scram_credentials import (
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from rafka.protocol.errors import Errors
from rafka.protocol.messages.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsRequest,
    UserScramCredentialsDescription,
)
from rafka.protocol.wire.admin_apis import (
    ALTER_USER_SCRAM_CREDENTIALS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
)
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY
from rafka.security.scram import ScramCredential, ScramMechanism

DESCRIBE, ALTER = DESCRIBE_USER_SCRAM_CREDENTIALS.key, ALTER_USER_SCRAM_CREDENTIALS.key


class UserBroker:
    """The broker's two user methods, over a FakeConfigStore; ``asked`` keeps each request."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.asked: list[Any] = []
        # No authorizer: every request is allowed (the test_acl_checks_* modules check ACLs).
        self.authorizer = BrokerAuthorizer(False, frozenset(), False)

    async def describe_user_scram_credentials(
        self, request: DescribeUserScramCredentialsRequest
    ) -> list[UserScramCredentialsDescription]:
        self.asked.append(request)
        return describe_user_scram_credentials(self.store, self.store.users, request)

    async def alter_user_scram_credentials(
        self, request: AlterUserScramCredentialsRequest
    ) -> list[AlterUserScramCredentialsResult]:
        self.asked.append(request)
        return alter_user_scram_credentials(self.store, request)


def handle(broker: UserBroker, api_key: int, body: dict[str, Any]) -> Any:
    """``body`` sent through the codec and KafkaUserApis at version 0; the answer must encode."""
    header = RequestHeader(api_key, 0, 1, "admin-client")
    frame = DEFAULT_REGISTRY.encode_request(header, body)
    request = DEFAULT_REGISTRY.decode_request(frame[4:])
    apis = KafkaUserApis(broker)

    async def call() -> Any:
        return await apis.handlers()[api_key](request.header, request.body)

    answer = asyncio.run(call())
    response = DEFAULT_REGISTRY.encode_response(header, answer)
    return DEFAULT_REGISTRY.decode_response(response[4:], header)[1]


def upsertion(name: str, mechanism: int, password: str, iterations: int = 4096) -> dict[str, Any]:
    """A wire upsertion salted as Kafka's AdminClient salts it."""
    hash_name = {1: "sha256", 2: "sha512"}.get(mechanism, "sha256")
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), b"salt", iterations)
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": b"salt",
        "salted_password": salted,
    }


def test_an_upsertion_stores_a_credential_its_password_matches(config_store) -> None:
    answer = handle(
        UserBroker(config_store),
        ALTER,
        {"upsertions": [upsertion("alice", 2, "alice-secret", 8192)]},
    )
    assert answer["results"] == [{"user": "alice", "error_code": 0, "error_message": None}]
    credential = ScramCredential.from_text(config_store.entities["users/alice"]["SCRAM-SHA-512"])
    assert credential.iterations == 8192
    assert credential.matches(ScramMechanism.SCRAM_SHA_512, "alice-secret")


def test_an_unknown_mechanism_fails_its_user_whole_and_the_others_are_altered(
    config_store,
) -> None:
    broker = UserBroker(config_store)
    answer = handle(
        broker,
        ALTER,
        {
            "deletions": [{"name": "mallory", "mechanism": 0}],
            "upsertions": [upsertion("mallory", 1, "x"), upsertion("alice", 1, "y")],
        },
    )
    assert [(r["user"], r["error_code"]) for r in answer["results"]] == [
        ("alice", 0),
        ("mallory", int(Errors.UNSUPPORTED_SASL_MECHANISM)),
    ]
    assert [a.user for a in broker.asked[0].alterations] == ["alice"]
    assert config_store.writes == ["users/alice"]


def test_a_request_of_unknown_mechanisms_only_does_not_reach_the_broker(config_store) -> None:
    broker = UserBroker(config_store)
    answer = handle(broker, ALTER, {"deletions": [{"name": "alice", "mechanism": 3}]})
    assert answer["results"][0]["error_code"] == int(Errors.UNSUPPORTED_SASL_MECHANISM)
    assert broker.asked == []


def test_a_deletion_of_a_missing_credential_answers_resource_not_found(config_store) -> None:
    answer = handle(
        UserBroker(config_store), ALTER, {"deletions": [{"name": "alice", "mechanism": 1}]}
    )
    [result] = answer["results"]
    assert result["error_code"] == int(Errors.RESOURCE_NOT_FOUND)
    assert "does not exist" in result["error_message"]


def test_describe_answers_mechanism_codes_and_iterations_for_every_user_when_null(
    config_store,
) -> None:
    broker = UserBroker(config_store)
    handle(
        broker,
        ALTER,
        {"upsertions": [upsertion("bob", 2, "b"), upsertion("alice", 1, "a", 8192)]},
    )
    answer = handle(broker, DESCRIBE, {"users": None})
    assert broker.asked[-1] == DescribeUserScramCredentialsRequest(None)
    assert answer["error_code"] == 0
    assert [(r["user"], r["error_code"], r["credential_infos"]) for r in answer["results"]] == [
        ("alice", 0, [{"mechanism": 1, "iterations": 8192}]),
        ("bob", 0, [{"mechanism": 2, "iterations": 4096}]),
    ]


def test_describe_of_a_user_without_credentials_answers_resource_not_found(
    config_store,
) -> None:
    answer = handle(UserBroker(config_store), DESCRIBE, {"users": [{"name": "nobody"}]})
    assert answer["results"] == [
        {
            "user": "nobody",
            "error_code": int(Errors.RESOURCE_NOT_FOUND),
            "error_message": "Attempt to describe a user credential that does not exist",
            "credential_infos": [],
        }
    ]
