"""Client configuration: kafka-python's config names, checked against each client's defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rafka.protocol.errors import InvalidConfigError

CONNECT_TIMEOUT_MS = 30_000
"""Default ``connect_timeout_ms``: how long a client waits for the cluster's address to answer."""


def merge_config(
    kind: str, defaults: Mapping[str, Any], configs: Mapping[str, Any]
) -> dict[str, Any]:
    """The client's defaults overridden by ``configs``; an unknown name raises INVALID_CONFIG naming
    it and listing the known ones (``kind`` names the client, e.g. "producer")."""
    unknown = set(configs) - set(defaults)
    if unknown:
        raise InvalidConfigError(
            f"unknown {kind} config {sorted(unknown)}; known: {', '.join(sorted(defaults))}"
        )
    return {**defaults, **configs}
