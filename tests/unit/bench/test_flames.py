"""The flame-graph benchmark's reading of py-spy's SVG: frames and each function's own samples."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from flames import Frame, frames_of, machine_busy_seconds, self_samples, top_table


def _rect(title: str, samples: int, y: int, x: int) -> str:
    return (
        f'<g><title>{title} ({samples} samples, 1.0%)</title><rect x="0%" y="{y}" width="1%" '
        f'height="15" fill="rgb(1,2,3)" fg:x="{x}" fg:w="{samples}"/></g>'
    )


# main (10 samples) calls send twice at different lines (4 + 3 samples), and send calls
# append (2 samples) once: main keeps 3 samples, send 5, append 2.
SVG = "".join(
    [
        _rect("all", 10, 52, 0),
        _rect("main (app.py:1)", 10, 68, 0),
        _rect("send (producer.py:10)", 4, 84, 0),
        _rect("send (producer.py:12)", 3, 84, 5),
        _rect("append (acc.py:7)", 2, 100, 5),
    ]
)


def test_frames_are_named_without_line_numbers_or_counts() -> None:
    frames = frames_of(SVG)
    assert Frame("send (producer.py)", 84.0, 5, 3) in frames
    assert [f.function for f in frames] == [
        "all",
        "main (app.py)",
        "send (producer.py)",
        "send (producer.py)",
        "append (acc.py)",
    ]


def test_own_samples_leave_out_callees_and_merge_lines() -> None:
    total, own = self_samples(frames_of(SVG))
    assert total == 10
    assert own["main (app.py)"] == 3
    assert own["send (producer.py)"] == 5
    assert own["append (acc.py)"] == 2
    assert own["all"] == 0


def test_callee_outside_a_frames_span_is_not_its_own() -> None:
    # append at x=8 lies outside send's span 5..7, so send keeps all 3 samples.
    svg = (
        _rect("all", 10, 52, 0)
        + _rect("send (p.py:1)", 3, 68, 5)
        + _rect("append (a.py:1)", 2, 84, 8)
    )
    _, own = self_samples(frames_of(svg))
    assert own["send (p.py)"] == 3


def test_top_table_orders_by_own_samples_with_shares() -> None:
    assert top_table(SVG, rows=2) == [
        ("send (producer.py)", "5", "50.0%"),
        ("main (app.py)", "3", "30.0%"),
    ]


def test_an_svg_without_frames_gives_an_empty_table() -> None:
    assert top_table("<svg></svg>") == []


def test_machine_busy_seconds_grow_while_this_process_works() -> None:
    before = machine_busy_seconds()
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    assert machine_busy_seconds() - before >= 0.15
