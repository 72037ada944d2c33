"""Set-up shared by every actor process: its log records go to its broker's ``server.log``."""

from __future__ import annotations

import logging
import os

import ray

from rafka.actors.server_log import open_server_log
from rafka.protocol.log_layout import KafkaLayout


def configure_actor_logging(log_dir: str | os.PathLike[str] | None = None) -> None:
    """Log INFO and above in this actor's process, in Kafka's layout: to its broker's
    ``log_dir/server.log``, or to stderr (Ray's worker log) for an actor of no broker.

    Only in an actor's own process (a Ray worker): a unit test that builds an actor class in its own
    process keeps that process's logging as it is.
    """
    # Asking a process without Ray for its runtime context would set Ray's worker up in it.
    if not ray.is_initialized() or ray.get_runtime_context().get_actor_id() is None:
        return
    if log_dir is not None:
        open_server_log(log_dir)
    elif not logging.getLogger().handlers:
        stderr = logging.StreamHandler()
        stderr.setFormatter(KafkaLayout())
        logging.basicConfig(level=logging.INFO, handlers=[stderr])
