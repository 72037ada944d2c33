"""KafkaConfigApis: Kafka's DescribeConfigs, AlterConfigs and IncrementalAlterConfigs answered
with this broker's config requests, as rafka's own Admin sends them.

A resource of a type rafka keeps no configs of is INVALID_REQUEST. With an authorizer each
resource is checked as Kafka's KafkaApis checks it: DescribeConfigs needs DESCRIBE_CONFIGS and the
two AlterConfigs ALTER_CONFIGS on the topic, or on the cluster for a broker's configs; a refused
resource is TOPIC_AUTHORIZATION_FAILED or CLUSTER_AUTHORIZATION_FAILED and is neither read nor
written. ``KafkaAdminApis`` serves these handlers beside its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from rafka.actors.broker.request_authorization import (
    AuthorizingSide,
    authorized,
    cluster_authorized,
)
from rafka.protocol.configs import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.configs import (
    AlterConfigsRequest,
    AlterConfigsResult,
    DescribeConfigsRequest,
    DescribeConfigsResult,
)
from rafka.protocol.wire.admin_apis import (
    ALTER_CONFIGS,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
)
from rafka.protocol.wire.headers import RequestHeader
from rafka.security.acl import ACLOperation, ResourceType

Body = Mapping[str, Any]
Handler = Callable[[RequestHeader, Body], Awaitable[Body]]


class ConfigSide(AuthorizingSide, Protocol):
    """What the config APIs need of their broker (the broker actor, or a fake in unit tests)."""

    async def describe_configs(
        self, request: DescribeConfigsRequest
    ) -> list[DescribeConfigsResult]:
        """Every config of each resource, with its value and source."""

    async def alter_configs(self, request: AlterConfigsRequest) -> list[AlterConfigsResult]:
        """Validate and write each resource's overrides."""


class KafkaConfigApis:
    """Handles the config requests of the Kafka listener for one broker."""

    def __init__(self, broker: ConfigSide) -> None:
        self._broker = broker

    def handlers(self) -> dict[int, Handler]:
        """The handler of each config API, by api key."""
        return {
            DESCRIBE_CONFIGS.key: self._describe_configs,
            ALTER_CONFIGS.key: self._alter_configs,
            INCREMENTAL_ALTER_CONFIGS.key: self._incremental_alter_configs,
        }

    async def _describe_configs(self, header: RequestHeader, body: Body) -> Body:
        requested = body["resources"]
        resources = [
            self._authorized_resource(
                r["resource_type"], r["resource_name"], ACLOperation.DESCRIBE_CONFIGS
            )
            for r in requested
        ]
        valid = tuple(r for r in resources if isinstance(r, ConfigResource))
        described = iter(
            await self._broker.describe_configs(DescribeConfigsRequest(valid)) if valid else ()
        )
        synonyms = body["include_synonyms"]
        results = []
        for asked, resource in zip(requested, resources, strict=True):
            found = next(described) if isinstance(resource, ConfigResource) else resource
            keys = asked["configuration_keys"]
            entries = found.entries if isinstance(found, DescribeConfigsResult) else ()
            results.append(
                {
                    "error_code": int(found.error),
                    "error_message": found.message,
                    "resource_type": asked["resource_type"],
                    "resource_name": asked["resource_name"],
                    "configs": [
                        _described_entry(e, synonyms and header.api_version >= 1)
                        for e in entries
                        if keys is None or e.name in keys
                    ],
                }
            )
        return {"results": results}

    def _authorized_resource(
        self, resource_type: int, name: str, operation: ACLOperation
    ) -> ConfigResource | _Refusal:
        """The ConfigResource a wire resource names, or its refusal: a type rafka has no configs
        of, or, as Kafka refuses, no ``operation`` on the topic (TOPIC_AUTHORIZATION_FAILED) or,
        for a broker's configs, on the cluster (CLUSTER_AUTHORIZATION_FAILED)."""
        resource = _resource(resource_type, name)
        if not isinstance(resource, ConfigResource):
            return resource
        if resource.resource_type is ConfigResourceType.TOPIC:
            if authorized(self._broker, operation, ResourceType.TOPIC, name):
                return resource
            error = Errors.TOPIC_AUTHORIZATION_FAILED
        elif cluster_authorized(self._broker, operation):
            return resource
        else:
            error = Errors.CLUSTER_AUTHORIZATION_FAILED
        return _Refusal(error, error.message)

    async def _alter_configs(self, _header: RequestHeader, body: Body) -> Body:
        def changes(configs: list[Body]) -> dict[str, object]:
            # The legacy AlterConfigs replaces the whole override set; a null value sets nothing.
            return {c["name"]: c["value"] for c in configs if c["value"] is not None}

        return await self._alter(body, changes, incremental=False)

    async def _incremental_alter_configs(self, _header: RequestHeader, body: Body) -> Body:
        def changes(configs: list[Body]) -> dict[str, object]:
            repeated = [n for n, count in Counter(c["name"] for c in configs).items() if count > 1]
            if repeated:
                raise Errors.INVALID_REQUEST.exception(
                    f"configs {sorted(repeated)} are changed more than once"
                )
            try:
                return {
                    c["name"]: AlterConfigOp(AlterConfigOpType(c["config_operation"]), c["value"])
                    for c in configs
                }
            except ValueError as exc:
                raise Errors.INVALID_REQUEST.exception(f"unknown config operation: {exc}") from None

        return await self._alter(body, changes, incremental=True)

    async def _alter(
        self,
        body: Body,
        changes: Callable[[list[Body]], dict[str, object]],
        incremental: bool,
    ) -> Body:
        """AlterConfigs or IncrementalAlterConfigs: each resource's ``changes`` sent to this
        broker's config manager in one request, each answered with its own error."""
        requested = body["resources"]
        prepared: list[ConfigResource | _Refusal] = []
        for r in requested:
            resource = self._authorized_resource(
                r["resource_type"], r["resource_name"], ACLOperation.ALTER_CONFIGS
            )
            if isinstance(resource, ConfigResource):
                try:
                    resource = ConfigResource(
                        resource.resource_type, resource.name, changes(r["configs"])
                    )
                except RafkaError as exc:
                    resource = _Refusal(exc.error, exc.message)
            prepared.append(resource)
        valid = tuple(r for r in prepared if isinstance(r, ConfigResource))
        altered = iter(
            await self._broker.alter_configs(
                AlterConfigsRequest(valid, incremental, body["validate_only"])
            )
            if valid
            else ()
        )
        outcomes = [next(altered) if isinstance(r, ConfigResource) else r for r in prepared]
        return {
            "responses": [
                {
                    "error_code": int(outcome.error),
                    "error_message": outcome.message,
                    "resource_type": r["resource_type"],
                    "resource_name": r["resource_name"],
                }
                for r, outcome in zip(requested, outcomes, strict=True)
            ]
        }


class _Refusal:
    """A resource refused before reaching the config manager."""

    def __init__(self, error: Errors, message: str | None) -> None:
        self.error = error
        self.message = message


def _resource(resource_type: int, name: str) -> ConfigResource | _Refusal:
    """The ConfigResource a wire resource names; a refusal for types rafka has no configs of."""
    try:
        return ConfigResource(ConfigResourceType(resource_type), name)
    except ValueError:
        return _Refusal(
            Errors.INVALID_REQUEST, f"rafka has no configs of resource type {resource_type}"
        )


def _described_entry(entry: ConfigEntry, synonyms: bool) -> dict[str, Any]:
    return {
        "name": entry.name,
        "value": entry.value,
        "read_only": entry.read_only,
        "config_source": int(entry.source),
        "is_default": entry.source is ConfigSource.DEFAULT_CONFIG,
        "is_sensitive": entry.is_sensitive,
        "synonyms": [
            {"name": s.name, "value": s.value, "source": int(s.source)} for s in entry.synonyms
        ]
        if synonyms
        else [],
    }
