"""The broker actor's administrative side: dynamic configs, users' SCRAM credentials, client
quotas and ACLs, as the admin clients and the Kafka listener ask for them, and the ZooKeeper
change notifications through which every broker takes what another one wrote.

``Broker`` mixes this in; it holds the state these methods use (set in ``Broker.__init__``). The
ZooKeeper reads and writes block, so each runs in a worker thread; a notification's watch fires
on kazoo's thread and hands the work to the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import ray

from rafka.actors.broker.acl_manager import AclManager
from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.client_quotas import ClientQuotaManager
from rafka.actors.broker.config_manager import ConfigManager
from rafka.actors.broker.replication_quota import ReplicationQuotas
from rafka.protocol.messages.acls import (
    AclCreationResult,
    AclDeletionResult,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeAclsResult,
)
from rafka.protocol.messages.configs import (
    AlterConfigsRequest,
    AlterConfigsResult,
    DescribeConfigsRequest,
    DescribeConfigsResult,
)
from rafka.protocol.messages.quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResult,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from rafka.protocol.messages.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsRequest,
    UserScramCredentialsDescription,
)
from rafka.security.scram import CredentialCache

logger = logging.getLogger("rafka.actors.broker.broker")


class BrokerAdmin:
    """Config, user, quota and ACL requests of the broker actor, and the notifications that keep
    its copies of them current."""

    configs: ConfigManager
    acls: AclManager
    credentials: CredentialCache
    client_quotas: ClientQuotaManager
    replication_quotas: ReplicationQuotas
    replicas: dict[tuple[str, int], Any]
    _config_changes: asyncio.Lock
    _stopped: asyncio.Event
    _loop: asyncio.AbstractEventLoop
    _state_change: Callable[..., None]
    """Writes a line in the broker's state-change log (``Broker``'s method)."""

    def _on_config_change(self, _event: object) -> None:
        # Kazoo's thread: a config change notification was written; apply it on the event loop.
        if not self._stopped.is_set():
            self._loop.call_soon_threadsafe(
                lambda: self._loop.create_task(self._apply_config_changes())
            )

    def _on_acl_change(self, _event: object) -> None:
        # Kazoo's thread: an ACL change notification was written; apply it on the event loop.
        if not self._stopped.is_set():
            self._loop.call_soon_threadsafe(
                lambda: self._loop.create_task(self._apply_acl_changes())
            )

    async def _apply_acl_changes(self) -> None:
        """Re-read the ACLs the new change notifications name into the authorizer's cache."""
        async with self._config_changes:
            patterns = await self._loop.run_in_executor(
                None, self.acls.take_changes, self._on_acl_change
            )
        for pattern in patterns:
            logger.info("Processed ACL change notification for %s", pattern)

    async def _apply_config_changes(self) -> None:
        """Follow new config change notifications: take new replication rates, users'
        credentials and client quotas, and hand every hosted replica whose config they changed
        its new ``LogConfig``, so it applies from its next append, roll, fetch or retention
        pass."""
        loop = asyncio.get_running_loop()
        async with self._config_changes:
            changes = await loop.run_in_executor(
                None, self.configs.take_changes, self._on_config_change
            )
            if changes.broker_defaults:
                self.replication_quotas.update(self.configs.broker_config())
            for user in changes.users:
                credentials = await loop.run_in_executor(None, self.configs.scram_credentials, user)
                self.credentials.update(user, credentials)
            for entity in changes.client_quotas:
                quotas = await loop.run_in_executor(None, self.configs.client_quotas, entity)
                self.client_quotas.update(entity, quotas)
            for (topic, partition), replica in list(self.replicas.items()):
                if changes.broker_defaults or topic in changes.topics:
                    log_config = await loop.run_in_executor(None, self.configs.log_config, topic)
                    try:
                        await replica.update_config.remote(log_config)
                    except ray.exceptions.RayActorError:
                        continue  # supervision restarts it, reading the new config
                    self._state_change("%s-%d config is now %s", topic, partition, log_config)

    async def topic_config(self, topic: str) -> dict[str, str]:
        """A topic's config overrides, read fresh from ZooKeeper as DescribeConfigs reads them, so
        a change that was just acknowledged shows at once."""
        return await asyncio.get_running_loop().run_in_executor(
            None, self.configs.topic_overrides, topic
        )

    async def describe_configs(
        self, request: DescribeConfigsRequest
    ) -> list[DescribeConfigsResult]:
        """DescribeConfigs: every config of each resource, with its value and source."""
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: [self.configs.describe(r) for r in request.resources]
        )

    async def alter_configs(self, request: AlterConfigsRequest) -> list[AlterConfigsResult]:
        """AlterConfigs (legacy or incremental): validate, then write each resource's overrides and
        its change notification (unless only validating); every broker applies it when the
        notification reaches it."""
        return await asyncio.get_running_loop().run_in_executor(
            None,
            lambda: [
                self.configs.alter(r, request.incremental, request.validate_only)
                for r in request.resources
            ],
        )

    async def alter_user_scram_credentials(
        self, request: AlterUserScramCredentialsRequest
    ) -> list[AlterUserScramCredentialsResult]:
        """AlterUserScramCredentials: check each user's alterations, then write the user's
        ``/config/users`` entry and its change notification; one result per user."""
        return await asyncio.get_running_loop().run_in_executor(
            None, self.configs.alter_scram_credentials, request
        )

    async def describe_user_scram_credentials(
        self, request: DescribeUserScramCredentialsRequest
    ) -> list[UserScramCredentialsDescription]:
        """DescribeUserScramCredentials: each user's mechanisms and iteration counts, read fresh
        from ZooKeeper."""
        return await asyncio.get_running_loop().run_in_executor(
            None, self.configs.describe_scram_credentials, request
        )

    async def alter_client_quotas(
        self, request: AlterClientQuotasRequest
    ) -> list[AlterClientQuotasResult]:
        """AlterClientQuotas: check each entity's changes, then write its ``/config`` entry and
        its change notification; every broker applies the quotas when the notification reaches
        it."""
        return await asyncio.get_running_loop().run_in_executor(
            None, self.configs.alter_client_quotas, request
        )

    async def describe_client_quotas(
        self, request: DescribeClientQuotasRequest
    ) -> DescribeClientQuotasResponse:
        """DescribeClientQuotas: the quotas of the entities the filter matches, read fresh from
        ZooKeeper."""
        return await asyncio.get_running_loop().run_in_executor(
            None, self.configs.describe_client_quotas, request
        )

    @property
    def authorizer(self) -> BrokerAuthorizer:
        """The ACLs this broker holds and the decision over them, for the Kafka API handlers."""
        return self.acls.authorizer

    async def create_acls(self, request: CreateAclsRequest) -> list[AclCreationResult]:
        """CreateAcls: store each valid ACL and announce it; every broker's authorizer takes it
        from the change notification."""
        return await asyncio.get_running_loop().run_in_executor(None, self.acls.create, request)

    async def describe_acls(self, request: DescribeAclsRequest) -> DescribeAclsResult:
        """DescribeAcls: the stored ACLs a filter selects, read fresh from ZooKeeper."""
        return await asyncio.get_running_loop().run_in_executor(None, self.acls.describe, request)

    async def delete_acls(self, request: DeleteAclsRequest) -> list[AclDeletionResult]:
        """DeleteAcls: remove what each filter selects and announce it."""
        return await asyncio.get_running_loop().run_in_executor(None, self.acls.delete, request)
