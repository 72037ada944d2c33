"""Tests for rafka.actors.broker.client_quota_configs (where quota entities live in ZooKeeper,
AlterClientQuotas and DescribeClientQuotas over an in-memory store) and for the config change
notifications a broker follows for them (``config_manager.config_changes``)."""

from __future__ import annotations

from typing import Any

import pytest

from rafka.actors.broker.client_quota_configs import (
    alter_client_quotas,
    describe_client_quotas,
    path_entity,
    quota_entity_path,
    quota_entity_paths,
    quota_values,
)
from rafka.actors.broker.config_manager import config_changes
from rafka.actors.broker.user_scram_credentials import alter_user_scram_credentials
from rafka.protocol.errors import Errors
from rafka.protocol.messages.quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    USER,
    AlterClientQuotasRequest,
    ClientQuotaAlteration,
    ClientQuotaAlterationOp,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    DescribeClientQuotasRequest,
)
from rafka.protocol.messages.users import (
    AlterUserScramCredentialsRequest,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from rafka.security.scram import ScramMechanism

ALICE = ClientQuotaEntity.of({USER: "alice"})
APP = ClientQuotaEntity.of({CLIENT_ID: "app-1"})
ALICE_APP = ClientQuotaEntity.of({USER: "alice", CLIENT_ID: "app-1"})
DEFAULT_USER = ClientQuotaEntity.of({USER: None})


def alter(
    store: Any, entity: ClientQuotaEntity, validate_only: bool = False, **ops: Any
) -> tuple[Errors, str | None]:
    """Alter one entity's quotas (a None value removes one); its error and message."""
    alteration = ClientQuotaAlteration(
        entity, tuple(ClientQuotaAlterationOp(k, v) for k, v in ops.items())
    )
    (result,) = alter_client_quotas(store, AlterClientQuotasRequest((alteration,), validate_only))
    assert result.entity == entity
    return result.error, result.message


@pytest.mark.parametrize(
    ("names", "path"),
    [
        ({USER: "alice"}, "users/alice"),
        ({USER: None}, "users/<default>"),
        ({CLIENT_ID: "app-1"}, "clients/app-1"),
        ({CLIENT_ID: None}, "clients/<default>"),
        ({USER: "alice", CLIENT_ID: "app-1"}, "users/alice/clients/app-1"),
        ({USER: None, CLIENT_ID: None}, "users/<default>/clients/<default>"),
        # Names are sanitized as Kafka's Sanitizer does: one znode each, "/" and all.
        ({USER: "CN=a/b", CLIENT_ID: "my app*"}, "users/CN%3Da%2Fb/clients/my%20app%2A"),
        ({USER: "<default>"}, "users/%3Cdefault%3E"),
    ],
)
def test_a_quota_entity_lives_where_kafka_keeps_it_and_its_path_reads_back(
    names: dict[str, str | None], path: str
) -> None:
    entity = ClientQuotaEntity.of(names)
    assert quota_entity_path(entity) == path
    assert path_entity(path) == entity


def test_a_topic_or_broker_path_is_no_quota_entity() -> None:
    assert path_entity("topics/users") is None
    assert path_entity("brokers/<default>") is None
    assert path_entity("users/alice/other/x") is None


@pytest.mark.parametrize(
    "names", [{}, {"ip": "10.0.0.1"}, {USER: "alice", "ip": None}, {USER: ""}, {CLIENT_ID: ""}]
)
def test_an_entity_naming_no_user_or_client_id_or_an_empty_name_is_invalid_request(
    names: dict[str, str | None], config_store: Any
) -> None:
    error, _ = alter(config_store, ClientQuotaEntity.of(names), producer_byte_rate=1024.0)
    assert error is Errors.INVALID_REQUEST
    assert config_store.writes == []


def test_quotas_are_written_as_kafka_writes_them_and_removed_one_by_one(config_store: Any) -> None:
    assert alter(config_store, ALICE_APP, producer_byte_rate=1048576.0, consumer_byte_rate=2e6) == (
        Errors.NONE,
        None,
    )
    assert config_store.entities["users/alice/clients/app-1"] == {
        PRODUCER_BYTE_RATE: "1048576",
        CONSUMER_BYTE_RATE: "2000000",
    }
    assert alter(config_store, ALICE_APP, consumer_byte_rate=None)[0] is Errors.NONE
    assert config_store.entities["users/alice/clients/app-1"] == {PRODUCER_BYTE_RATE: "1048576"}


@pytest.mark.parametrize(
    ("ops", "error", "message"),
    [
        ({PRODUCER_BYTE_RATE: -5.0}, Errors.INVALID_CONFIG, "producer_byte_rate must be greater"),
        ({CONSUMER_BYTE_RATE: 0.0}, Errors.INVALID_CONFIG, "consumer_byte_rate must be greater"),
        ({PRODUCER_BYTE_RATE: "fast"}, Errors.INVALID_CONFIG, "producer_byte_rate must be a num"),
        ({PRODUCER_BYTE_RATE: float("nan")}, Errors.INVALID_CONFIG, "must be a number"),
        ({PRODUCER_BYTE_RATE: 1.5}, Errors.INVALID_CONFIG, "producer_byte_rate must be a Long"),
        ({"request_percentage": 50.0}, Errors.INVALID_CONFIG, "unknown quota config request_"),
        ({"request_percentage": None}, Errors.INVALID_CONFIG, "unknown quota config request_"),
    ],
)
def test_a_bad_quota_is_refused_naming_it_and_nothing_is_written(
    ops: dict[str, Any], error: Errors, message: str, config_store: Any
) -> None:
    config_store.entities["users/alice"] = {PRODUCER_BYTE_RATE: "1000"}
    assert alter(config_store, ALICE, **ops)[0] is error
    assert message in str(alter(config_store, ALICE, **ops)[1])
    assert config_store.writes == []
    assert config_store.entities["users/alice"] == {PRODUCER_BYTE_RATE: "1000"}


def test_validate_only_checks_the_changes_and_writes_nothing(config_store: Any) -> None:
    assert alter(config_store, APP, validate_only=True, producer_byte_rate=1024.0)[0] is Errors.NONE
    assert alter(config_store, APP, validate_only=True, producer_byte_rate=-1.0)[0] is (
        Errors.INVALID_CONFIG
    )
    assert config_store.writes == []


def test_each_entity_gets_its_own_result_and_a_refused_one_leaves_the_others_written(
    config_store: Any,
) -> None:
    request = AlterClientQuotasRequest(
        (
            ClientQuotaAlteration(APP, (ClientQuotaAlterationOp(PRODUCER_BYTE_RATE, -1.0),)),
            ClientQuotaAlteration(ALICE, (ClientQuotaAlterationOp(PRODUCER_BYTE_RATE, 10.0),)),
        )
    )
    results = alter_client_quotas(config_store, request)
    assert [(r.entity, r.error) for r in results] == [
        (APP, Errors.INVALID_CONFIG),
        (ALICE, Errors.NONE),
    ]
    assert config_store.writes == ["users/alice"]


def test_altering_quotas_keeps_a_users_scram_credentials_and_altering_credentials_its_quotas(
    config_store: Any,
) -> None:
    upsert = UserScramCredentialUpsertion.from_password(
        "alice", ScramMechanism.SCRAM_SHA_256, "secret"
    )
    alter_user_scram_credentials(config_store, AlterUserScramCredentialsRequest((upsert,)))
    credential = config_store.entities["users/alice"]["SCRAM-SHA-256"]
    assert alter(config_store, ALICE, producer_byte_rate=2048.0)[0] is Errors.NONE
    assert config_store.entities["users/alice"] == {
        "SCRAM-SHA-256": credential,
        PRODUCER_BYTE_RATE: "2048",
    }
    deletion = UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_256)
    alter_user_scram_credentials(config_store, AlterUserScramCredentialsRequest((deletion,)))
    assert config_store.entities["users/alice"] == {PRODUCER_BYTE_RATE: "2048"}


def test_an_entitys_quotas_are_its_quota_keys_and_a_bad_value_is_left_out() -> None:
    config = {
        "SCRAM-SHA-256": "salt=...,iterations=4096",
        PRODUCER_BYTE_RATE: "1024",
        CONSUMER_BYTE_RATE: "lots",
        "request_percentage": "50",
    }
    assert quota_values(config, "users/alice") == {PRODUCER_BYTE_RATE: 1024.0}


@pytest.fixture
def configured(config_store: Any) -> Any:
    """The ``config_store`` with quotas at several levels, and a user with credentials only."""
    config_store.entities = {
        "users/alice": {PRODUCER_BYTE_RATE: "100"},
        "users/alice/clients/app-1": {PRODUCER_BYTE_RATE: "200"},
        "users/alice/clients/<default>": {CONSUMER_BYTE_RATE: "300"},
        "users/<default>": {PRODUCER_BYTE_RATE: "400"},
        "users/bob": {"SCRAM-SHA-512": "salt=...,iterations=4096"},
        "clients/app-1": {CONSUMER_BYTE_RATE: "500"},
        "clients/<default>": {PRODUCER_BYTE_RATE: "600"},
        "topics/events": {"retention.ms": "1000"},
    }
    return config_store


def describe(
    store: Any, *components: ClientQuotaFilterComponent, strict: bool = True
) -> dict[str, dict[str, float]]:
    """The described quotas as {entity path: {key: value}}."""
    answer = describe_client_quotas(
        store,
        lambda: quota_entity_paths(store.children),
        DescribeClientQuotasRequest(components, strict),
    )
    assert answer.error is Errors.NONE, answer.message
    return {quota_entity_path(e.entity): dict(e.values) for e in answer.entries}


def test_every_entity_that_may_hold_quotas_is_listed(configured: Any) -> None:
    assert quota_entity_paths(configured.children) == [
        "clients/<default>",
        "clients/app-1",
        "users/<default>",
        "users/alice",
        "users/alice/clients/<default>",
        "users/alice/clients/app-1",
        "users/bob",
    ]


def test_describe_matches_an_exact_name_the_default_or_any_name_of_a_type(
    configured: Any,
) -> None:
    of = ClientQuotaFilterComponent
    assert describe(configured, of.of_entity(USER, "alice")) == {
        "users/alice": {PRODUCER_BYTE_RATE: 100.0}
    }
    assert describe(configured, of.of_default_entity(USER)) == {
        "users/<default>": {PRODUCER_BYTE_RATE: 400.0}
    }
    # Any user: bob has credentials but no quota, so he is not listed.
    assert describe(configured, of.of_entity_type(USER)) == {
        "users/<default>": {PRODUCER_BYTE_RATE: 400.0},
        "users/alice": {PRODUCER_BYTE_RATE: 100.0},
    }
    assert describe(configured, of.of_entity(USER, "alice"), of.of_entity_type(CLIENT_ID)) == {
        "users/alice/clients/<default>": {CONSUMER_BYTE_RATE: 300.0},
        "users/alice/clients/app-1": {PRODUCER_BYTE_RATE: 200.0},
    }


def test_describe_without_strict_also_matches_entities_naming_other_types(
    configured: Any,
) -> None:
    component = ClientQuotaFilterComponent.of_entity(CLIENT_ID, "app-1")
    assert describe(configured, component, strict=False) == {
        "clients/app-1": {CONSUMER_BYTE_RATE: 500.0},
        "users/alice/clients/app-1": {PRODUCER_BYTE_RATE: 200.0},
    }
    assert describe(configured, component) == {"clients/app-1": {CONSUMER_BYTE_RATE: 500.0}}


@pytest.mark.parametrize(
    "components",
    [
        (ClientQuotaFilterComponent.of_entity_type("ip"),),
        (ClientQuotaFilterComponent.of_entity(USER, ""),),
        (ClientQuotaFilterComponent.of_entity_type(USER),) * 2,
    ],
)
def test_a_filter_on_an_unknown_type_without_a_name_or_twice_on_one_is_invalid_request(
    configured: Any, components: tuple[ClientQuotaFilterComponent, ...]
) -> None:
    answer = describe_client_quotas(
        configured,
        lambda: quota_entity_paths(configured.children),
        DescribeClientQuotasRequest(components),
    )
    assert answer.error is Errors.INVALID_REQUEST


def test_a_notification_for_a_users_entry_is_a_credential_and_a_quota_change() -> None:
    changes = config_changes(
        ["users/alice", "users/ops%20team/clients/app-1", "clients/<default>", "topics/t"],
        {"brokers/0", "brokers/<default>"},
    )
    assert changes.users == {"alice"}
    assert changes.topics == {"t"}
    assert changes.client_quotas == {
        ALICE,
        ClientQuotaEntity.of({USER: "ops team", CLIENT_ID: "app-1"}),
        ClientQuotaEntity.of({CLIENT_ID: None}),
    }
    assert not changes.broker_defaults
    assert config_changes(["brokers/<default>"], {"brokers/<default>"}).broker_defaults
    assert DEFAULT_USER in config_changes(["users/<default>"], set()).client_quotas
