"""Prometheus' text exposition format (version 0.0.4) for metric families.

Each family is written once with its ``# HELP`` and ``# TYPE`` lines, then its samples; a
histogram as cumulative ``_bucket`` lines ending at ``le="+Inf"``, then ``_sum`` and ``_count``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from rafka.metrics.registry import Labels, MetricFamily

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The Content-Type a Prometheus endpoint answers with."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels, extra: tuple[tuple[str, str], ...] = ()) -> str:
    pairs = (*labels, *extra)
    if not pairs:
        return ""
    return "{" + ",".join(f'{name}="{_escape(value)}"' for name, value in pairs) + "}"


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return repr(float(value)) if value != int(value) else str(int(value))


def render(families: Iterable[MetricFamily]) -> str:
    """The families as one Prometheus text page."""
    lines: list[str] = []
    for item in families:
        spec = item.spec
        lines.append(f"# HELP {spec.name} {spec.help.replace(chr(10), ' ')}")
        lines.append(f"# TYPE {spec.name} {spec.kind.value}")
        for sample in item.samples:
            lines.append(f"{spec.name}{_labels(sample.labels)} {_number(sample.value)}")
        for histogram in item.histograms:
            cumulative = 0
            for bound, count in zip((*histogram.bounds, math.inf), histogram.counts, strict=True):
                cumulative += count
                le = (("le", _number(bound)),)
                lines.append(f"{spec.name}_bucket{_labels(histogram.labels, le)} {cumulative}")
            lines.append(f"{spec.name}_sum{_labels(histogram.labels)} {_number(histogram.sum)}")
            lines.append(f"{spec.name}_count{_labels(histogram.labels)} {cumulative}")
    return "\n".join(lines) + "\n"
