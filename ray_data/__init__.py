"""Ray Data connectors: ``read_rafka`` and ``write_rafka`` (needs the ``ray[data]`` extra)."""

from __future__ import annotations

from rafka.ray_data.datasource import read_rafka, write_rafka

__all__ = ["read_rafka", "write_rafka"]
