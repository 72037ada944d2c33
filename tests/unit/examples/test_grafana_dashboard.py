"""The Grafana dashboard in examples/ queries only metrics rafka reports, and its core panels."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rafka.metrics import catalog

DASHBOARD = Path(__file__).resolve().parents[3] / "examples" / "grafana-dashboard.json"
_METRIC = re.compile(r"\$\{prefix\}(rafka_\w+)")


def _metric(series: str) -> str:
    """The metric a series belongs to: a histogram's ``_bucket`` series is the histogram's."""
    histograms = {spec.name for spec in catalog.ALL if spec.kind is catalog.HISTOGRAM}
    base = re.sub(r"_(bucket|sum|count)$", "", series)
    return base if base in histograms else series


def _queried() -> set[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return {
        _metric(name)
        for panel in panels
        for target in panel["targets"]
        for name in _METRIC.findall(target["expr"])
    }


def test_every_queried_metric_is_declared_in_the_catalog() -> None:
    declared = {spec.name for spec in catalog.ALL}
    assert _queried() <= declared


def test_the_core_broker_metrics_each_have_a_panel() -> None:
    core = {
        catalog.MESSAGES_IN,
        catalog.BYTES_IN,
        catalog.BYTES_OUT,
        catalog.REQUEST_TOTAL_TIME,
        catalog.UNDER_REPLICATED,
        catalog.OFFLINE_PARTITIONS,
        catalog.ACTIVE_CONTROLLER,
        catalog.CONSUMER_GROUP_LAG,
        catalog.ISR_SHRINKS,
    }
    assert {spec.name for spec in core} <= _queried()


def test_the_prefix_variable_offers_rafkas_endpoint_and_rays() -> None:
    variables = json.loads(DASHBOARD.read_text())["templating"]["list"]
    prefix = next(v for v in variables if v["name"] == "prefix")
    assert [option["value"] for option in prefix["options"]] == ["", "ray_"]
