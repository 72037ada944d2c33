"""The admin client's log directory operation (Kafka's DescribeLogDirs): ``describe_log_dirs``.

Each broker describes its own log directories: every replica it hosts, with its size on disk and
how far its end offset is behind the leader's high watermark. A reassignment's progress is the
bytes its new replicas hold.
"""

from __future__ import annotations

from collections.abc import Collection

from rafka.actors import names
from rafka.clients.cluster import ClusterConnection
from rafka.clients.transport import TransportError
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import LogDirDescription


class LogDirAdminMixin:
    """Log directory operations of ``Admin``."""

    _cluster: ClusterConnection
    _timeout_s: float

    def describe_log_dirs(
        self, brokers: Collection[int] | None = None
    ) -> dict[int, tuple[LogDirDescription, ...]]:
        """Each broker's log directories and the replicas in them (every live broker by
        default), by broker id; BROKER_NOT_AVAILABLE names a broker asked for that does not exist
        or does not answer."""
        live = self._cluster.broker_ids()
        wanted = sorted(live if brokers is None else set(brokers))
        missing = [b for b in wanted if b not in live]
        if missing:
            raise Errors.BROKER_NOT_AVAILABLE.exception(
                f"brokers {missing} do not exist; live brokers are {live}"
            )
        return {broker_id: self._log_dirs(broker_id) for broker_id in wanted}

    def _log_dirs(self, broker_id: int) -> tuple[LogDirDescription, ...]:
        """One broker's answer, asked again through a fresh handle if the cached one fails (the
        broker may have restarted since)."""
        name = names.broker_actor_name(broker_id)
        try:
            return self._ask_log_dirs(broker_id)
        except TransportError:
            self._cluster.forget(name)
        try:
            return self._ask_log_dirs(broker_id)
        except TransportError as exc:
            self._cluster.forget(name)
            raise Errors.BROKER_NOT_AVAILABLE.exception(
                f"broker {broker_id} did not describe its log directories: {exc}"
            ) from exc

    def _ask_log_dirs(self, broker_id: int) -> tuple[LogDirDescription, ...]:
        return tuple(
            self._cluster.request(
                self._cluster.broker(broker_id), "describe_log_dirs", timeout_s=self._timeout_s
            )
        )
