"""Charts of seed 000's benchmark tables: rafka's measured lines with the seed's stated figures.

The seed article's charts are lost; only the figures and shapes its text states are known, so each
chart draws rafka's series as lines, marks the seed's stated figures as crosses on the same axes,
and prints the shape the seed states where it gives no figures. Drawn with matplotlib's
object-oriented API (a ``Figure`` saved as PNG through the Agg canvas), so no pyplot state and no
display are involved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

Series = Sequence[tuple[float, float]]
"""(x, y) pairs of one line."""

SEED_STYLE: dict[str, Any] = {
    "marker": "x",
    "markersize": 10,
    "linestyle": "none",
    "color": "black",
}


@dataclass(frozen=True)
class Chart:
    """What one chart shows: rafka's lines, the seed's stated points and the seed's stated shape.

    ``right`` is an optional second line on its own y axis (the message-size chart's MB/s).
    """

    title: str
    x_label: str
    y_label: str
    lines: Mapping[str, Series]
    seed_points: Series = ()
    seed_label: str = "seed 000 (stated)"
    note: str = ""
    log_x: bool = False
    right: tuple[str, str, Series] | None = None
    x_ticks: Sequence[float] = field(default_factory=tuple)


def _thousands(value: float, _position: int) -> str:
    """Tick label with thousands separators (records/s reach millions)."""
    return f"{value:,.0f}"


def _plot_lines(axes: Axes, lines: Mapping[str, Series], style: str) -> None:
    for label, series in lines.items():
        xs = [x for x, _ in series]
        ys = [y for _, y in series]
        axes.plot(xs, ys, style, label=label)


def draw(chart: Chart, path: Path) -> Path:
    """Write ``chart`` as a PNG at ``path`` (folders created) and return the path."""
    figure = Figure(figsize=(7.5, 4.5), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    _plot_lines(axes, chart.lines, "o-")
    if chart.seed_points:
        axes.plot(
            [x for x, _ in chart.seed_points],
            [y for _, y in chart.seed_points],
            label=chart.seed_label,
            **SEED_STYLE,
        )
        for x, y in chart.seed_points:
            axes.annotate(
                f"{y:,.0f}", (x, y), textcoords="offset points", xytext=(0, -18), ha="center"
            )
    # The title on the figure, the seed's stated shape under it, so neither meets the axes' labels.
    figure.suptitle(chart.title)
    axes.set_title(chart.note, fontsize="small", style="italic")
    axes.margins(x=0.08)
    axes.set_xlabel(chart.x_label)
    axes.set_ylabel(chart.y_label)
    axes.yaxis.set_major_formatter(FuncFormatter(_thousands))
    axes.set_ylim(bottom=0)
    if chart.log_x:
        axes.set_xscale("log")
    if chart.x_ticks:
        axes.set_xticks(list(chart.x_ticks), [f"{x:g}" for x in chart.x_ticks])
    axes.grid(True, alpha=0.3)
    handles, labels = axes.get_legend_handles_labels()
    if chart.right is not None:
        label, y_label, series = chart.right
        twin = axes.twinx()
        _plot_lines(twin, {label: series}, "s--")
        twin.set_ylabel(y_label)
        twin.set_ylim(bottom=0)
        more_handles, more_labels = twin.get_legend_handles_labels()
        handles, labels = handles + more_handles, labels + more_labels
    # "best" weighs only the first axes' lines, so with a second axis the legend goes top centre,
    # where records/s (falling) and MB/s (rising) cross lowest.
    location: Literal["best", "upper center"] = "best" if chart.right is None else "upper center"
    axes.legend(handles, labels, loc=location, fontsize="small")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path
