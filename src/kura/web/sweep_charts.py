"""A sweep's charts as inline SVG drawn on the server: the objective per trial (with the
best so far), parameter importance as bars, and parallel coordinates (params → objective).
A pareto sweep's objective chart is loss against judge score with its Pareto front drawn,
and its parallel coordinates end in both objectives.

Like :mod:`kura.web.charts`: no script and no external asset, CSS classes for colour, a
``<title>`` for screen readers, every text and attribute escaped (parameter values and
names come from files a user or a trainer wrote). Log-distributed axes are drawn on a log
scale, choice axes as evenly spaced categories.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from kura.sweep.report import Importance, TrialRow
from kura.sweep.space import CheckedAxis
from kura.web.charts import value_range

__all__ = [
    "PcAxis",
    "importance_bars",
    "objective_chart",
    "parallel_coordinates",
    "pareto_chart",
    "pc_axes",
]

HEIGHT = 260
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 28, 44
PC_WIDTH = 1100
PC_RIGHT = 72
MIN_AXIS_GAP = 140
PARETO_AXES = ("loss", "judge_score")
"""A pareto row's two values, in the study's order (loss down, judge score up)."""


def _number(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) < 1e-3 or abs(value) >= 1e5:
        return f"{value:.2e}"
    return f"{value:.4g}"


def _label(value: Any) -> str:
    return _number(value) if isinstance(value, float) else str(value)


def _open_svg(width: int, height: int, title: str, kind: str) -> list[str]:
    return [
        f'<svg class="chart {kind}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]


def objective_chart(rows: Sequence[TrialRow], *, width: int = 640) -> str:
    """Each scored trial's objective against its number (dots), and the best so far (a
    step line); lower is better."""
    scored = sorted((r for r in rows if r.objective is not None), key=lambda r: r.number)
    if not scored:
        return '<p class="empty">No trial has an objective yet.</p>'
    values = [float(r.objective or 0.0) for r in scored]
    numbers = [r.number for r in scored]
    x_low, x_high = min(numbers), max(numbers)
    y_low, y_high = value_range(values)
    plot_w, plot_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(number: float) -> float:
        span = x_high - x_low
        return LEFT + (plot_w * (number - x_low) / span if span else plot_w / 2)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - (value - y_low) / (y_high - y_low))

    parts = _open_svg(width, HEIGHT, "Objective per trial (lower is better)", "objective")
    parts.append(f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}"/>')
    for i in range(5):
        tick = y_low + (y_high - y_low) * i / 4
        ty = y(tick)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">'
            f"{escape(_number(tick))}</text>"
        )
    for number in sorted(set(numbers)):
        parts.append(
            f'<text class="tick" x="{x(number):.1f}" y="{TOP + plot_h + 16}" '
            f'text-anchor="middle">{number}</text>'
        )
    parts.append(
        f'<text class="axis" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" '
        'text-anchor="middle">trial</text>'
    )
    best = math.inf
    steps: list[str] = []
    for row, value in zip(scored, values, strict=True):
        if value < best:
            if steps:
                steps.append(f"{x(row.number):.1f},{y(best):.1f}")
            best = value
        steps.append(f"{x(row.number):.1f},{y(best):.1f}")
    parts.append(f'<polyline class="series series-1 best-so-far" points="{" ".join(steps)}"/>')
    for row, value in zip(scored, values, strict=True):
        parts.append(
            f'<circle class="series-dot series-0 trial-dot" data-trial="{row.number}" '
            f'cx="{x(row.number):.1f}" cy="{y(value):.1f}" r="4">'
            f"<title>trial {row.number}: {escape(_number(value))}</title></circle>"
        )
    parts.extend(_legend(("objective", "best so far")))
    parts.append("</svg>")
    return "".join(parts)


def pareto_chart(rows: Sequence[TrialRow], front: Sequence[int], *, width: int = 640) -> str:
    """A pareto sweep's trials as points, loss (x, lower is better) against judge score (y,
    higher is better), the trials of the Pareto front highlighted and joined in loss order.
    Only trials the study was told both values of are drawn."""
    scored = sorted((r for r in rows if r.values is not None), key=lambda r: r.number)
    if not scored:
        return '<p class="empty">No trial has both a loss and a judge score yet.</p>'
    points = {r.number: r.values for r in scored if r.values is not None}
    on_front = set(front)
    x_low, x_high = _span([v[0] for v in points.values()])
    y_low, y_high = _span([v[1] for v in points.values()])
    plot_w, plot_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(value: float) -> float:
        return LEFT + plot_w * (value - x_low) / (x_high - x_low)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - (value - y_low) / (y_high - y_low))

    title = "Loss against judge score per trial (the Pareto front highlighted)"
    parts = _open_svg(width, HEIGHT, title, "pareto")
    parts.append(f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}"/>')
    for i in range(5):
        fraction = i / 4
        tick_y, tick_x = y_low + (y_high - y_low) * fraction, x_low + (x_high - x_low) * fraction
        ty, tx = y(tick_y), x(tick_x)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">'
            f"{escape(_number(tick_y))}</text>"
            f'<text class="tick" x="{tx:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
            f"{escape(_number(tick_x))}</text>"
        )
    parts.append(
        f'<text class="axis" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" '
        'text-anchor="middle">loss (lower is better)</text>'
        f'<text class="axis" x="14" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">judge score (higher is better)'
        "</text>"
    )
    line = sorted((points[n] for n in on_front if n in points), key=lambda v: v)
    if line:
        coords = " ".join(f"{x(v[0]):.1f},{y(v[1]):.1f}" for v in line)
        parts.append(f'<polyline class="series series-1 pareto-front" points="{coords}"/>')
    for number, (loss, judge) in sorted(points.items(), key=lambda kv: kv[0] in on_front):
        kind = "front-dot series-1" if number in on_front else "trial-dot series-0"
        parts.append(
            f'<circle class="series-dot {kind}" data-trial="{number}" cx="{x(loss):.1f}" '
            f'cy="{y(judge):.1f}" r="{5 if number in on_front else 4}">'
            f"<title>trial {number}: loss {escape(_number(loss))}, judge score "
            f"{escape(_number(judge))}{' (on the front)' if number in on_front else ''}"
            "</title></circle>"
        )
    parts.extend(_legend(("trial", "Pareto front")))
    parts.append("</svg>")
    return "".join(parts)


def _legend(names: Sequence[str]) -> list[str]:
    """A swatch and a label per series, in a row above the plot."""
    parts = []
    for index, name in enumerate(names):
        lx = LEFT + 8 + 130 * index
        parts.append(
            f'<rect class="swatch series-{index}" x="{lx}" y="{TOP - 18}" width="12" height="4"/>'
            f'<text class="legend" x="{lx + 16}" y="{TOP - 12}">{escape(name)}</text>'
        )
    return parts


def _span(values: list[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    if low == high:
        pad = abs(low) * 0.1 or 1.0
        return low - pad, high + pad
    pad = (high - low) * 0.05
    return low - pad, high + pad


def importance_bars(importance: Importance, *, width: int = 640, title: str = "") -> str:
    """One bar per parameter (share of the importance, largest first), or the report's
    note as text when it was not computed. ``title`` names what the importance is of
    (a pareto sweep's per-objective charts)."""
    if not importance.computed:
        return f'<p class="empty">{escape(importance.note)}</p>'
    items = sorted(importance.values.items(), key=lambda kv: -kv[1])
    label_w, bar_h, gap = 220, 18, 8
    height = TOP + len(items) * (bar_h + gap) + 8
    plot_w = width - label_w - RIGHT - 56
    top = max(v for _, v in items) or 1.0
    heading = f"Parameter importance{' for ' + title if title else ''} ({importance.note})"
    parts = _open_svg(width, height, heading, "importance")
    for index, (key, value) in enumerate(items):
        by = TOP + index * (bar_h + gap)
        bar = plot_w * value / top
        parts.append(
            f'<text class="legend" x="{label_w - 8}" y="{by + bar_h - 4}" text-anchor="end">'
            f"{escape(key)}</text>"
            f'<rect class="bar series-{index % 4}" data-param="{escape(key)}" '
            f'data-value="{value:.6g}" x="{label_w}" y="{by}" width="{bar:.1f}" '
            f'height="{bar_h}"/>'
            f'<text class="tick" x="{label_w + bar + 6:.1f}" y="{by + bar_h - 4}">'
            f"{value:.1%}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class PcAxis:
    """One vertical axis of the parallel-coordinates plot: a parameter (or the objective)
    with its scale and where each value lands (0 bottom … 1 top)."""

    key: str
    scale: str  # "linear", "log" or "categorical"
    low: float = 0.0
    high: float = 1.0
    categories: tuple[Any, ...] = ()

    def position(self, value: Any) -> float | None:
        if self.scale == "categorical":
            if value not in self.categories:
                return None
            return (self.categories.index(value) + 0.5) / len(self.categories)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if self.scale == "log":
            if value <= 0:
                return None
            low, high, v = math.log10(self.low), math.log10(self.high), math.log10(value)
        else:
            low, high, v = self.low, self.high, float(value)
        return 0.5 if high == low else (v - low) / (high - low)

    def ticks(self) -> list[tuple[float, str]]:
        if self.scale == "categorical":
            return [(self.position(c) or 0.0, _label(c)) for c in self.categories]
        if self.scale == "log":
            first, last = math.ceil(math.log10(self.low)), math.floor(math.log10(self.high))
            marks = [10.0**p for p in range(first, last + 1)]
            if len(marks) < 2:
                marks = [self.low, self.high]
            return [(self.position(m) or 0.0, _number(m)) for m in marks]
        if self.low == self.high:
            return [(0.5, _number(self.low))]
        return [(i / 4, _number(self.low + (self.high - self.low) * i / 4)) for i in range(5)]


def _numeric_axis(
    key: str, values: list[float], log: bool, low: float | None, high: float | None
) -> PcAxis:
    span = [v for v in (low, high, *values) if v is not None and (v > 0 or not log)]
    lo, hi = (min(span), max(span)) if span else (0.0, 1.0)
    return PcAxis(key, "log" if log else "linear", float(lo), float(hi))


def _objectives(row: TrialRow) -> dict[str, float] | None:
    """What a trial was scored: its objective, or a pareto trial's loss and judge score."""
    if row.pareto:
        return None if row.values is None else dict(zip(PARETO_AXES, row.values, strict=True))
    return None if row.objective is None else {"objective": float(row.objective)}


def pc_axes(axes: Sequence[CheckedAxis], rows: Sequence[TrialRow]) -> list[PcAxis]:
    """An axis per space axis (its range widened to any value a trial took, e.g. a warm
    start), then the objective (a pareto sweep: the loss, then the judge score)."""
    out = []
    for axis in axes:
        taken = [r.params[axis.key] for r in rows if axis.key in r.params]
        if axis.kind == "choice":
            extra = [v for v in taken if v not in axis.choices]
            unique = list(dict.fromkeys(extra))
            out.append(PcAxis(axis.key, "categorical", categories=(*axis.choices, *unique)))
        else:
            numbers = [float(v) for v in taken if isinstance(v, int | float)]
            out.append(_numeric_axis(axis.key, numbers, axis.log, axis.low, axis.high))
    names = PARETO_AXES if any(r.pareto for r in rows) else ("objective",)
    scored = [values for r in rows if (values := _objectives(r)) is not None]
    for name in names:
        out.append(_numeric_axis(name, [v[name] for v in scored], False, None, None))
    return out


def parallel_coordinates(
    axes: Sequence[CheckedAxis],
    rows: Sequence[TrialRow],
    *,
    best: int | None = None,
    front: Sequence[int] = (),
) -> str:
    """One polyline per complete trial across the space's axes to its objective (a pareto
    sweep: to its loss and judge score); the best trial (the front's) drawn on top in its
    own colour."""
    complete = [r for r in rows if r.complete and _objectives(r) is not None]
    if not complete:
        return '<p class="empty">No complete trial yet.</p>'
    pcs = pc_axes(axes, complete)
    highlighted = {best, *front} - {None}
    pareto = any(r.pareto for r in complete)
    gap = max(MIN_AXIS_GAP, (PC_WIDTH - LEFT - 20 - PC_RIGHT) // (len(pcs) - 1))
    width = LEFT + 20 + gap * (len(pcs) - 1) + PC_RIGHT
    plot_h = HEIGHT - TOP - BOTTOM

    def ax(index: int) -> float:
        return LEFT + 20 + gap * index

    def ay(fraction: float) -> float:
        return TOP + plot_h * (1 - fraction)

    target = "loss, judge score" if pareto else "objective"
    parts = _open_svg(width, HEIGHT, f"Parallel coordinates: parameters → {target}", "parallel")
    first_objective = len(axes)

    def order(row: TrialRow) -> tuple[bool, float]:
        values = _objectives(row) or {}
        return row.number in highlighted, -next(iter(values.values()), 0.0)

    for row in sorted(complete, key=order):
        scored = _objectives(row) or {}
        points = []
        for index, pc in enumerate(pcs):
            value = scored.get(pc.key) if index >= first_objective else row.params.get(pc.key)
            fraction = pc.position(value)
            if fraction is not None:
                points.append(f"{ax(index):.1f},{ay(fraction):.1f}")
        kind = "pc-trial pc-best" if row.number in highlighted else "pc-trial"
        said = ", ".join(
            f"{name.replace('_', ' ')} {_number(value)}" for name, value in scored.items()
        )
        parts.append(
            f'<polyline class="{kind}" data-trial="{row.number}" points="{" ".join(points)}">'
            f"<title>trial {row.number}: {escape(said)}</title></polyline>"
        )
    for index, pc in enumerate(pcs):
        x = ax(index)
        parts.append(f'<g class="pc-axis" data-axis="{escape(pc.key)}" data-scale="{pc.scale}">')
        parts.append(
            f'<line class="axis-line" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + plot_h}"/>'
        )
        for fraction, text in pc.ticks():
            ty = ay(fraction)
            parts.append(
                f'<line class="axis-line" x1="{x - 3:.1f}" x2="{x + 3:.1f}" y1="{ty:.1f}" '
                f'y2="{ty:.1f}"/><text class="tick" x="{x + 6:.1f}" y="{ty + 4:.1f}">'
                f"{escape(text)}</text>"
            )
        name = pc.key.removeprefix("training.")
        if index >= first_objective:
            name = name.replace("_", " ")
        suffix = " (log)" if pc.scale == "log" else ""
        parts.append(
            f'<text class="axis" x="{x:.1f}" y="{HEIGHT - 18}" text-anchor="middle">'
            f"{escape(name + suffix)}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)
