"""docs/metrics.md lists every metric the catalog declares, with its type."""

from __future__ import annotations

from pathlib import Path

from rafka.metrics import catalog

DOC = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"


def test_every_declared_metric_is_documented_with_its_type() -> None:
    text = DOC.read_text()
    missing = [
        spec.name for spec in catalog.ALL if f"| `{spec.name}` | {spec.kind.value} |" not in text
    ]
    assert missing == []
