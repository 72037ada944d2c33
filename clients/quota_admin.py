"""The admin client's client quota operations (KIP-546; Kafka's Admin names):
``alter_client_quotas`` and ``describe_client_quotas``.

A quota is a config of its entity (``/config/users/<user>``, ``/config/clients/<client-id>``,
``/config/users/<user>/clients/<client-id>``), so any live broker checks and writes it, as it does
topic configs, and every broker applies it when the change notification reaches it. A failed
entity raises its Kafka error (INVALID_CONFIG names the bad key or value), and none of that
entity's changes is made.
"""

from __future__ import annotations

from collections.abc import Sequence

from rafka.clients.config_admin import ConfigAdminMixin
from rafka.protocol.errors import Errors
from rafka.protocol.messages.quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResult,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)


class QuotaAdminMixin(ConfigAdminMixin):
    """Client quota operations of ``Admin``, asked of any live broker as config operations
    are."""

    def alter_client_quotas(
        self, entries: Sequence[ClientQuotaAlteration], validate_only: bool = False
    ) -> list[AlterClientQuotasResult]:
        """Set and remove the quotas of each entity (or, with ``validate_only``, only check the
        changes); one result per entity, in the given order."""
        results: list[AlterClientQuotasResult] = self._ask(
            None, "alter_client_quotas", AlterClientQuotasRequest(tuple(entries), validate_only)
        )
        for result in results:
            if result.error is not Errors.NONE:
                raise result.error.exception(
                    f"{result.entity}: {result.message or result.error.message}"
                )
        return results

    def describe_client_quotas(
        self, components: Sequence[ClientQuotaFilterComponent], strict: bool = False
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """The quotas of every entity matching all ``components`` (with ``strict``, naming no
        other entity type), by entity and config key."""
        answer: DescribeClientQuotasResponse = self._ask(
            None, "describe_client_quotas", DescribeClientQuotasRequest(tuple(components), strict)
        )
        if answer.error is not Errors.NONE:
            raise answer.error.exception(answer.message)
        return {entry.entity: dict(entry.values) for entry in answer.entries}
