"""The admin client's config operations (kafka-python's and Kafka's names): ``describe_configs``,
``alter_configs`` (replaces a resource's whole override set, as the legacy AlterConfigs does) and
``incremental_alter_configs`` (``AlterConfigOp`` per config, KIP-339).

A broker validates and writes the overrides to ZooKeeper; every broker then applies them when the
change notification reaches it. A broker's own configs are described by that broker (it alone knows
its static config); any live broker serves topics and the cluster-wide default. A failed resource
raises its Kafka error (INVALID_CONFIG names the config and value) and leaves nothing written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rafka.actors import names
from rafka.clients.cluster import ClusterConnection
from rafka.clients.transport import TransportError
from rafka.protocol.configs import ConfigResource, ConfigResourceType
from rafka.protocol.errors import Errors, KafkaTimeoutError
from rafka.protocol.messages.configs import (
    AlterConfigsRequest,
    AlterConfigsResult,
    DescribeConfigsRequest,
    DescribeConfigsResult,
)


class ConfigAdminMixin:
    """Dynamic config operations of ``Admin``."""

    _cluster: ClusterConnection
    _timeout_s: float

    def describe_configs(
        self, config_resources: Sequence[ConfigResource]
    ) -> list[DescribeConfigsResult]:
        """Every config of each topic or broker with its effective value and source."""
        results: list[DescribeConfigsResult] = self._ask_brokers(
            config_resources, "describe_configs", DescribeConfigsRequest
        )
        return results

    def alter_configs(self, config_resources: Sequence[ConfigResource]) -> list[AlterConfigsResult]:
        """Replace each resource's overrides with its ``configs`` (name -> value); configs left out
        return to their defaults."""
        results: list[AlterConfigsResult] = self._ask_brokers(
            config_resources, "alter_configs", lambda r: AlterConfigsRequest(r, incremental=False)
        )
        return results

    def incremental_alter_configs(
        self, config_resources: Sequence[ConfigResource]
    ) -> list[AlterConfigsResult]:
        """Apply each resource's ``configs`` (name -> ``AlterConfigOp``) to its overrides."""
        results: list[AlterConfigsResult] = self._ask_brokers(
            config_resources, "alter_configs", lambda r: AlterConfigsRequest(r, incremental=True)
        )
        return results

    def _ask_brokers(
        self,
        resources: Sequence[ConfigResource],
        method: str,
        make: Callable[[tuple[ConfigResource, ...]], Any],
    ) -> list[Any]:
        """Send each broker's share of ``resources`` in one request; results in the given order.
        The first failed resource raises its error."""
        shares: dict[int | None, list[int]] = {}
        for index, resource in enumerate(resources):
            shares.setdefault(_owner(resource), []).append(index)
        results: list[Any] = [None] * len(resources)
        for owner, indexes in shares.items():
            answer = self._ask(owner, method, make(tuple(resources[i] for i in indexes)))
            for index, result in zip(indexes, answer, strict=True):
                results[index] = result
        for result in results:
            if result.error is not Errors.NONE:
                raise result.error.exception(
                    f"{result.resource.describe()}: {result.message or result.error.message}"
                )
        return results

    def _ask(self, owner: int | None, method: str, request: Any) -> Any:
        """The answer of ``owner`` (a broker id), else of the first live broker that answers."""
        brokers = self._cluster.broker_ids()
        ordered = ([owner] if owner in brokers else []) + [b for b in brokers if b != owner]
        for broker_id in ordered:
            try:
                return self._cluster.request(self._cluster.broker(broker_id), method, request)
            except TransportError:
                self._cluster.forget(names.broker_actor_name(broker_id))
        raise KafkaTimeoutError(f"no rafka broker answered {method}")


def _owner(resource: ConfigResource) -> int | None:
    """The broker that describes a broker resource best (its own), None for any broker."""
    if resource.resource_type is ConfigResourceType.BROKER and resource.name.isdigit():
        return int(resource.name)
    return None
