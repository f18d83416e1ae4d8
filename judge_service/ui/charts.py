"""Line charts over steps as inline SVG, drawn on the server: no chart library, no script.

A chart is a polyline through every point with a small circle per point (data-step and data-value on
each, so a reader or a test can find them), an optional band (mean +- spread), and light axes labelled
with the first and last step and the value range. Gaps (None) break the line. Every text in the SVG is
escaped: the values are numbers, but titles and labels go through the same path as everything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 560, 160
LEFT, RIGHT, TOP, BOTTOM = 44, 10, 10, 22


@dataclass(frozen=True)
class Series:
    title: str
    steps: Sequence[int]
    values: Sequence[float | None]
    spread: Sequence[float | None] | None = None  # drawn as a band of value +- spread
    lower: float | None = None  # fixed axis range (scores: 0-1); None: from the data
    upper: float | None = None
    unit: str = ""
    marker: tuple[int, str] | None = None  # (step, label): a vertical line there, e.g. where a change began


def line_chart(series: Series) -> str:
    points = [(s, v) for s, v in zip(series.steps, series.values, strict=True) if v is not None]
    label = escape(series.title)
    if not points:
        return f'<p class="empty-chart">{label}: no values in this range</p>'
    low, high = _range(series, [v for _, v in points])
    first, last = min(series.steps), max(series.steps)

    def x(step: int) -> float:
        return LEFT + (step - first) / ((last - first) or 1) * (WIDTH - LEFT - RIGHT)

    def y(value: float) -> float:
        return TOP + (1 - (value - low) / ((high - low) or 1)) * (HEIGHT - TOP - BOTTOM)

    parts = [
        f'<svg class="chart" role="img" aria-label="{label}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{label}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" '
        f'y2="{HEIGHT - BOTTOM}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>',
        f'<text class="tick" x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">{_fmt(high)}</text>',
        f'<text class="tick" x="{LEFT - 4}" y="{HEIGHT - BOTTOM}" text-anchor="end">{_fmt(low)}</text>',
        f'<text class="tick" x="{LEFT}" y="{HEIGHT - 6}">step {first}</text>',
        f'<text class="tick" x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">step {last}</text>',
    ]
    if series.spread is not None:
        band = [
            (s, v, d)
            for s, v, d in zip(series.steps, series.values, series.spread, strict=True)
            if v is not None and d is not None
        ]
        if band:
            upper = " ".join(f"{x(s):.1f},{y(min(high, v + d)):.1f}" for s, v, d in band)
            lower = " ".join(f"{x(s):.1f},{y(max(low, v - d)):.1f}" for s, v, d in reversed(band))
            parts.append(f'<polygon class="band" points="{upper} {lower}"/>')
    if series.marker is not None and first <= series.marker[0] <= last:
        at, label_text = x(series.marker[0]), escape(series.marker[1])
        parts.append(
            f'<line class="marker" x1="{at:.1f}" y1="{TOP}" x2="{at:.1f}" y2="{HEIGHT - BOTTOM}" '
            f'data-step="{series.marker[0]}"/>'
            f'<text class="tick marker-label" x="{at + 3:.1f}" y="{TOP + 8}">{label_text}</text>'
        )
    for run in _runs(series.steps, series.values):
        coords = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in run)
        parts.append(f'<polyline class="line" points="{coords}"/>')
    for step, value in points:
        parts.append(
            f'<circle class="point" cx="{x(step):.1f}" cy="{y(value):.1f}" r="2" '
            f'data-step="{step}" data-value="{value:.6g}"><title>step {step}: {_fmt(value)}'
            f"{escape(series.unit)}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _range(series: Series, values: list[float]) -> tuple[float, float]:
    low = series.lower if series.lower is not None else min(values)
    high = series.upper if series.upper is not None else max(values)
    if high <= low:
        high = low + 1
    return low, high


def _runs(steps: Sequence[int], values: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    """Consecutive stretches without a gap."""
    runs: list[list[tuple[int, float]]] = [[]]
    for step, value in zip(steps, values, strict=True):
        if value is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((step, value))
    return [r for r in runs if r]


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
