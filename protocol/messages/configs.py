"""DescribeConfigs and AlterConfigs (legacy and incremental, KIP-339): what an admin client asks a
broker and what each resource gets back."""

from __future__ import annotations

from dataclasses import dataclass

from rafka.protocol.configs import ConfigEntry, ConfigResource
from rafka.protocol.errors import Errors


@dataclass(frozen=True)
class DescribeConfigsRequest:
    """Describe every config of each resource."""

    resources: tuple[ConfigResource, ...]


@dataclass(frozen=True)
class DescribeConfigsResult:
    """One resource's configs, or why they cannot be described."""

    resource: ConfigResource
    error: Errors
    message: str | None = None
    entries: tuple[ConfigEntry, ...] = ()


@dataclass(frozen=True)
class AlterConfigsRequest:
    """Change resources' overrides: replace each whole override set (legacy AlterConfigs) or apply
    ``AlterConfigOp``s to it (``incremental``)."""

    resources: tuple[ConfigResource, ...]
    incremental: bool = False
    # Check every change as if it were made, but write nothing (Kafka's ``validate_only``).
    validate_only: bool = False


@dataclass(frozen=True)
class AlterConfigsResult:
    """One resource's outcome; on an error nothing of it was written."""

    resource: ConfigResource
    error: Errors
    message: str | None = None
