"""Line charts as inline SVG, drawn on the server from the series a backend's
``loss_history`` reads (the trainer's own loss and learning-rate files).

No script and no external asset: the markup is plain SVG with CSS classes (the site's
stylesheet colours them), a ``<title>`` for screen readers, and every text escaped.
Series longer than :data:`MAX_POINTS` are thinned to the mean of equal step buckets, so a
long run still draws quickly; the last point is always kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from kura.backends.base import AttemptLoss, LossHistory
from kura.execution.summary import EMA_ALPHA

__all__ = [
    "MAX_POINTS",
    "attempt_loss_series",
    "ema_series",
    "gpu_memory_series",
    "line_chart",
    "lr_series",
    "value_range",
]

MAX_POINTS = 400
WIDTH, HEIGHT = 640, 240
WIDE = (1120, 320)
"""The drawing size of a chart that spans the page's row (the run page's loss)."""
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 32, 40

Series = list[tuple[int, float]]


def ema_series(points: Series, alpha: float = EMA_ALPHA) -> Series:
    """The running exponential moving average of the finite points, as
    :func:`kura.execution.summary.ema` computes it (its last value is that EMA)."""
    smoothed: float | None = None
    out: Series = []
    for step, value in points:
        if not math.isfinite(value):
            continue
        smoothed = value if smoothed is None else alpha * value + (1 - alpha) * smoothed
        out.append((step, smoothed))
    return out


def attempt_loss_series(history: LossHistory) -> tuple[dict[str, Series], dict[str, Series]]:
    """One smoothed (EMA) series per attempt that logged a loss, and the raw loss behind
    each under the same name (drawn faintly)."""
    logged = [attempt for attempt in history.attempts if attempt.points]
    smoothed = {f"attempt {a.attempt} (EMA)": ema_series(list(a.series)) for a in logged}
    raw = {f"attempt {a.attempt} (EMA)": list(a.series) for a in logged}
    return smoothed, raw


def gpu_memory_series(samples: list[dict[str, object]]) -> dict[str, Series]:
    """GPU memory (GiB) against seconds since the first reading, from state.json's
    ``gpu_samples`` (``{t, step, used_gib, process_gib}``): the whole GPU and the step's
    own processes where the reading had them."""
    from datetime import datetime

    def seconds(stamp: object) -> float | None:
        try:
            return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None

    timed = [(seconds(sample.get("t")), sample) for sample in samples]
    timed = [(t, sample) for t, sample in timed if t is not None]
    if not timed:
        return {}
    start = min(t for t, _ in timed if t is not None)
    series: dict[str, Series] = {}
    for key, name in (("used_gib", "GPU in use"), ("process_gib", "training process")):
        points = [
            (round(t - start), float(value))
            for t, sample in timed
            if t is not None and isinstance(value := sample.get(key), int | float)
        ]
        if points:
            series[name] = points
    return series


def lr_series(attempt: AttemptLoss | None) -> dict[str, Series]:
    """Every learning-rate series the trainer logged in ``attempt`` (its own names:
    Musubi's ``lr/unet``, AI-Toolkit's ``learning_rate``, KohakuMoss's ``lr``)."""
    if attempt is None:
        return {}
    return {name: list(points) for name, points in attempt.learning_rates.items() if points}


def _thin(points: Series) -> Series:
    finite = [(step, value) for step, value in points if math.isfinite(value)]
    if len(finite) <= MAX_POINTS:
        return finite
    size = math.ceil(len(finite) / MAX_POINTS)
    out: Series = []
    for start in range(0, len(finite), size):
        bucket = finite[start : start + size]
        out.append((bucket[-1][0], sum(v for _, v in bucket) / len(bucket)))
    out[-1] = finite[-1]
    return out


def _ticks(low: float, high: float, count: int = 4) -> list[float]:
    if high == low:
        return [low]
    return [low + (high - low) * i / count for i in range(count + 1)]


def _number(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) < 1e-3 or abs(value) >= 1e5:
        return f"{value:.2e}"
    return f"{value:.4g}"


def value_range(values: Sequence[float]) -> tuple[float, float]:
    """The y-axis of a chart: min to max, widened by 10 % around a single value (or by 1
    around zero) so a flat series is drawn mid-chart, not on an edge."""
    low, high = min(values), max(values)
    if low == high:
        pad = abs(low) * 0.1 or 1.0
        return low - pad, high + pad
    return low, high


def line_chart(
    series: dict[str, Series],
    *,
    title: str,
    empty: str,
    x_label: str = "step",
    backdrop: dict[str, Series] | None = None,
    size: tuple[int, int] = (WIDTH, HEIGHT),
) -> str:
    """An SVG chart of each series (``x_label`` on x, value on y), or a paragraph saying
    ``empty``. A ``backdrop`` series (same name as a series) is drawn faintly behind it in
    its colour: the raw values behind a smoothed line. ``size`` is the drawing's own
    width and height: a chart shown wide gets a wide drawing, so its text keeps its size."""
    width, height = size
    drawn = {name: _thin(points) for name, points in series.items()}
    drawn = {name: points for name, points in drawn.items() if points}
    if not drawn:
        return f'<p class="empty">{escape(empty)}</p>'
    behind = {name: _thin((backdrop or {}).get(name, [])) for name in drawn}
    steps = [step for points in [*drawn.values(), *behind.values()] for step, _ in points]
    values = [value for points in [*drawn.values(), *behind.values()] for _, value in points]
    x_low, x_high = min(steps), max(steps)
    y_low, y_high = value_range(values)
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM

    def x(step: int) -> float:
        return LEFT + (plot_w * (step - x_low) / (x_high - x_low) if x_high > x_low else plot_w)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - (value - y_low) / (y_high - y_low))

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}"/>',
    ]
    for tick in _ticks(y_low, y_high):
        ty = y(tick)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}"/>'
        )
        parts.append(
            f'<text class="tick" x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">'
            f"{escape(_number(tick))}</text>"
        )
    for tick in sorted({round(t) for t in _ticks(x_low, x_high)}):
        tx = x(tick)
        parts.append(
            f'<text class="tick" x="{tx:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
            f"{tick}</text>"
        )
    parts.append(
        f'<text class="axis" x="{LEFT + plot_w / 2:.1f}" y="{height - 4}" '
        f'text-anchor="middle">{escape(x_label)}</text>'
    )
    for index, name in enumerate(drawn):
        if len(behind[name]) > 1:
            faint = " ".join(f"{x(step):.1f},{y(value):.1f}" for step, value in behind[name])
            parts.append(f'<polyline class="raw series-{index % 4}" points="{faint}"/>')
    for index, (name, points) in enumerate(drawn.items()):
        coords = " ".join(f"{x(step):.1f},{y(value):.1f}" for step, value in points)
        parts.append(f'<polyline class="series series-{index % 4}" points="{coords}"/>')
        if len(points) == 1:
            cx, cy = x(points[0][0]), y(points[0][1])
            parts.append(
                f'<circle class="series-dot series-{index % 4}" cx="{cx:.1f}" cy="{cy:.1f}" r="3"/>'
            )
        legend_x = LEFT + 8 + 150 * index
        parts.append(
            f'<rect class="swatch series-{index % 4}" x="{legend_x}" y="{TOP - 18}" '
            'width="12" height="4"/>'
        )
        parts.append(
            f'<text class="legend" x="{legend_x + 16}" y="{TOP - 12}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
