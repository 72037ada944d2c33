"""A broker's dynamic configs over ZooKeeper: the overrides it applies, the change notifications
it follows, and the config requests it answers: DescribeConfigs, AlterConfigs,
Describe/AlterUserScramCredentials and Describe/AlterClientQuotas (the config part of Kafka's
DynamicConfigManager and AdminManager).

Validation happens here, on the server, before anything is written: a bad name or value is
INVALID_CONFIG and leaves ZooKeeper untouched. The decisions (definitions, validation, precedence)
are ``dynamic_config``'s, ``user_scram_credentials``'s for users' SCRAM credentials and
``client_quota_configs``'s for client quotas; this class
only reads and writes znodes. Calls block on ZooKeeper, so an
asyncio actor runs them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from rafka.actors.broker.client_quota_configs import (
    alter_client_quotas,
    describe_client_quotas,
    path_entity,
    quota_entity_path,
    quota_entity_paths,
    quota_values,
)
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.dynamic_config import (
    DynamicOverrides,
    apply_ops,
    describe_broker_configs,
    describe_topic_configs,
    effective_broker_config,
    effective_log_config,
    validate_broker_config,
    validate_topic_config,
)
from rafka.actors.broker.user_scram_credentials import (
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from rafka.actors.zk import data as zd
from rafka.actors.zk.client import ZkClient
from rafka.actors.zk.config_store import ConfigStore, entity_path, entity_user, user_entity
from rafka.log.config import LogConfig
from rafka.protocol.configs import AlterConfigOp, ConfigEntry, ConfigResource, ConfigResourceType
from rafka.protocol.errors import (
    Errors,
    InvalidConfigError,
    InvalidRequestError,
    RafkaError,
    UnknownTopicOrPartitionError,
)
from rafka.protocol.messages.configs import AlterConfigsResult, DescribeConfigsResult
from rafka.protocol.messages.quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResult,
    ClientQuotaEntity,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from rafka.protocol.messages.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsRequest,
    UserScramCredentialsDescription,
)
from rafka.security.scram import ScramCredential, ScramMechanism, user_credentials


@dataclass(frozen=True)
class ConfigChanges:
    """What the notifications since the last look changed, as far as one broker cares."""

    topics: frozenset[str] = frozenset()
    broker_defaults: bool = False
    """This broker's own or the cluster-wide overrides changed: every topic's defaults may have."""
    users: frozenset[str] = frozenset()
    """Users whose ``/config/users/<user>`` entry (SCRAM credentials, quotas) changed."""
    client_quotas: frozenset[ClientQuotaEntity] = frozenset()
    """Client quota entities whose entry (``users/<user>``, ``clients/<client-id>``,
    ``users/<user>/clients/<client-id>``) changed."""


def config_changes(entities: Collection[str], own: Collection[str]) -> ConfigChanges:
    """What notifications naming ``entities`` (``/config`` entity paths) changed for a broker
    whose own and cluster-default override entities are ``own``."""
    topics: set[str] = set()
    users: set[str] = set()
    quotas: set[ClientQuotaEntity] = set()
    for entity in entities:
        kind, _, name = entity.partition("/")
        if kind == "topics":
            topics.add(name)
        elif kind == "users" and "/" not in name:
            users.add(entity_user(name))
        if (quota_entity := path_entity(entity)) is not None:
            quotas.add(quota_entity)
    defaults = any(entity in own for entity in entities)
    return ConfigChanges(frozenset(topics), defaults, frozenset(users), frozenset(quotas))


class ConfigManager:
    """Dynamic configs as one broker sees them."""

    def __init__(self, client: ZkClient, static: BrokerConfig) -> None:
        self.client = client
        self.store = ConfigStore(client)
        self.static = static
        self.last_change = self.store.latest_change()
        self.overrides = self._overrides(str(static.broker_id))

    def _overrides(self, broker: str) -> DynamicOverrides:
        return DynamicOverrides(
            self.store.read(f"brokers/{broker}"),
            self.store.read(f"brokers/{zd.DEFAULT_BROKER_ENTITY}"),
        )

    def topic_overrides(self, topic: str) -> dict[str, str]:
        """A topic's own overrides."""
        return self.store.read(f"topics/{topic}")

    def log_config(self, topic: str) -> LogConfig:
        """A topic's effective config on this broker, read fresh from ZooKeeper."""
        return effective_log_config(self.static, self.overrides, self.topic_overrides(topic))

    def broker_config(self) -> BrokerConfig:
        """This broker's effective config: its static config with the dynamic overrides."""
        return effective_broker_config(self.static, self.overrides)

    def default_log_config(self) -> LogConfig:
        """The topic defaults of this broker: its static config with the dynamic overrides."""
        return self.broker_config().log_config()

    def take_changes(self, watch: Callable[[object], None] | None = None) -> ConfigChanges:
        """Follow the notifications written since the last call (re-reading this broker's
        overrides if they changed), leaving ``watch`` on the next one."""
        changes = self.store.changes_after(self.last_change, watch)
        self.last_change = max([self.last_change, *(sequence for sequence, _ in changes)])
        own = {f"brokers/{self.static.broker_id}", f"brokers/{zd.DEFAULT_BROKER_ENTITY}"}
        found = config_changes([entity for _, entity in changes], own)
        if found.broker_defaults:
            self.overrides = self._overrides(str(self.static.broker_id))
        return found

    def scram_credentials(self, user: str) -> dict[ScramMechanism, ScramCredential]:
        """A user's SCRAM credentials, read fresh from ``/config/users/<user>``."""
        return user_credentials(self.store.read(user_entity(user)))

    def client_quotas(self, entity: ClientQuotaEntity) -> dict[str, float]:
        """A client quota entity's quotas, read fresh."""
        path = quota_entity_path(entity)
        return quota_values(self.store.read(path), path)

    def all_client_quotas(self) -> dict[ClientQuotaEntity, dict[str, float]]:
        """Every client quota entity with quotas, and its quotas."""
        found = {}
        for path in quota_entity_paths(self.store.children):
            entity = path_entity(path)
            quotas = quota_values(self.store.read(path), path)
            if quotas and entity is not None:
                found[entity] = quotas
        return found

    def alter_client_quotas(
        self, request: AlterClientQuotasRequest
    ) -> list[AlterClientQuotasResult]:
        """AlterClientQuotas: check each entity's changes and write its entity with its change
        notification, keeping the entity's other configs; one result per entity."""
        return alter_client_quotas(self.store, request)

    def describe_client_quotas(
        self, request: DescribeClientQuotasRequest
    ) -> DescribeClientQuotasResponse:
        """DescribeClientQuotas: the quotas of the entities the filter matches, read fresh."""
        return describe_client_quotas(
            self.store, lambda: quota_entity_paths(self.store.children), request
        )

    def users(self) -> list[str]:
        """Every user with a ``/config/users`` entry."""
        return sorted(entity_user(name) for name in self.client.zk.get_children(zd.CONFIG_USERS))

    def alter_scram_credentials(
        self, request: AlterUserScramCredentialsRequest
    ) -> list[AlterUserScramCredentialsResult]:
        """AlterUserScramCredentials: check each user's alterations and write their entry with
        its change notification; one result per user."""
        return alter_user_scram_credentials(self.store, request)

    def describe_scram_credentials(
        self, request: DescribeUserScramCredentialsRequest
    ) -> list[UserScramCredentialsDescription]:
        """DescribeUserScramCredentials: the mechanisms and iteration counts of the users named,
        or of every user with a credential."""
        return describe_user_scram_credentials(self.store, self.users, request)

    # ------------------------------------------------------------------ admin requests

    def describe(self, resource: ConfigResource) -> DescribeConfigsResult:
        """Every config of a topic or broker with its value and source."""
        try:
            entries = self._entries(resource)
        except RafkaError as exc:
            return DescribeConfigsResult(resource, exc.error, exc.message)
        return DescribeConfigsResult(resource, Errors.NONE, None, entries)

    def _entries(self, resource: ConfigResource) -> tuple[ConfigEntry, ...]:
        # Read fresh, not the applied overrides: a change just written shows at once.
        if resource.resource_type is ConfigResourceType.TOPIC:
            if not self.client.assignment(resource.name):
                raise UnknownTopicOrPartitionError(f"topic {resource.name!r} does not exist")
            return describe_topic_configs(
                self.static,
                self._overrides(str(self.static.broker_id)),
                self.topic_overrides(resource.name),
            )
        if resource.is_default_broker:
            return describe_broker_configs(
                self.static,
                DynamicOverrides(
                    cluster_default=self.store.read(f"brokers/{zd.DEFAULT_BROKER_ENTITY}")
                ),
            )
        broker = _broker_id(resource.name)
        return describe_broker_configs(
            self.static.with_broker_id(broker), self._overrides(str(broker))
        )

    def alter(
        self, resource: ConfigResource, incremental: bool, validate_only: bool = False
    ) -> AlterConfigsResult:
        """Validate the new override set of a resource and write it with its notification (not
        with ``validate_only``); on an error nothing is written."""
        try:
            entity = entity_path(resource)
            if resource.resource_type is ConfigResourceType.BROKER and not (
                resource.is_default_broker
            ):
                _broker_id(resource.name)
            wanted: Mapping[str, object] = resource.configs or {}
            if incremental:
                ops = {k: _op(k, v) for k, v in wanted.items()}
                effective = {e.name: e.value or "" for e in self._entries(resource)}
                wanted = apply_ops(self.store.read(entity), ops, effective)
            validate = (
                validate_topic_config
                if resource.resource_type is ConfigResourceType.TOPIC
                else validate_broker_config
            )
            checked = validate(wanted)
            if not validate_only:
                self.store.write(entity, checked)
        except RafkaError as exc:
            return AlterConfigsResult(resource, exc.error, exc.message)
        return AlterConfigsResult(resource, Errors.NONE)


def _broker_id(name: str) -> int:
    """A broker resource's id; INVALID_REQUEST if the name is not one."""
    if not name.isdigit():
        raise InvalidRequestError(f"broker resource name {name!r} is not a broker id")
    return int(name)


def _op(name: str, value: object) -> AlterConfigOp:
    if not isinstance(value, AlterConfigOp):
        raise InvalidConfigError(
            f"incremental change of {name} must be an AlterConfigOp, not {value!r}"
        )
    return value
