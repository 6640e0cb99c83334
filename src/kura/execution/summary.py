"""One JSON-ready view of a run for ``kura run status`` / ``watch``: state, progress, scalars."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.execution.runs import refresh_state
from kura.execution.tensorboard import read_scalars

if TYPE_CHECKING:
    from kura.backends.base import StepProgress

__all__ = ["ema", "run_summary"]

EMA_ALPHA = 0.1


def ema(values: Iterable[float], alpha: float = EMA_ALPHA) -> float | None:
    """Exponential moving average of the finite values (None when there are none)."""
    smoothed: float | None = None
    for value in values:
        if not math.isfinite(value):
            return value
        smoothed = value if smoothed is None else alpha * value + (1 - alpha) * smoothed
    return smoothed


def run_summary(
    run_dir: Path,
    *,
    progress: Callable[[Path], StepProgress],
    logging_dir: Path | None = None,
) -> dict[str, Any]:
    """The refreshed state plus the current step's progress (read by the backend's
    ``progress``), and, when ``logging_dir`` is given, the raw-loss EMA and last value of
    every TensorBoard scalar."""
    state = refresh_state(run_dir)
    summary: dict[str, Any] = {"state": asdict(state), "progress": None, "scalars": None}
    if state.log_path:
        current = progress(Path(state.log_path))
        summary["progress"] = {**asdict(current), "fraction": current.fraction}
    if logging_dir is not None:
        series = read_scalars(logging_dir)
        summary["scalars"] = {tag: points[-1] for tag, points in series.items() if points}
        raw = [value for _, value in series.get("loss/current", [])]
        if raw and summary["progress"] is not None:
            summary["progress"]["loss_ema"] = ema(raw)
    return summary
