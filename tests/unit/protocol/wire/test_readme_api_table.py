"""The README's table of Kafka APIs is the one the brokers' ApiVersions answer derives from."""

from __future__ import annotations

import re
from pathlib import Path

from rafka.protocol.wire.registry import DEFAULT_REGISTRY

README = Path(__file__).resolve().parents[4] / "README.md"
ROW = re.compile(r"^\| (\w+) \| (\d+) \| (\d+)[–-](\d+) \|$")


def readme_rows() -> list[tuple[str, int, int, int]]:
    """(name, key, min, max) of each row of the table after ``<!-- api-versions -->``."""
    text = README.read_text(encoding="utf-8")
    table = text.split("<!-- api-versions -->", 1)[1].strip().split("\n\n", 1)[0]
    rows = [ROW.match(line) for line in table.splitlines()[2:]]
    assert all(rows), f"a row of the README's API table does not parse: {table}"
    return [(m[1], int(m[2]), int(m[3]), int(m[4])) for m in rows if m is not None]


def test_the_readme_lists_every_served_api_with_its_versions() -> None:
    registry = DEFAULT_REGISTRY
    served = [
        (registry.api(r.api_key, r.max_version).name, r.api_key, r.min_version, r.max_version)
        for r in registry.supported_versions()
    ]
    assert sorted(readme_rows(), key=lambda row: row[1]) == served
