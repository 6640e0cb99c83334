"""One JSON-ready view of a run for ``kura run status`` / ``watch``: state, progress, scalars.

The loss comes from the run's backend (``Backend.loss_history``, the trainer's own files):
``scalars`` holds the last value of each series the current attempt logged, and the
progress's ``loss_ema`` is the EMA of that attempt's raw loss, the last point of the run
page's smoothed line."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.execution.runs import refresh_state

if TYPE_CHECKING:
    from kura.backends.base import AttemptRef, LossHistory, StepProgress

LossReader = Callable[[Path, Sequence["AttemptRef"]], "LossHistory"]
"""A backend's ``loss_history`` verb."""

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
    loss_history: LossReader | None = None,
) -> dict[str, Any]:
    """The refreshed state plus the current step's progress (read by the backend's
    ``progress``), and, when ``loss_history`` (the backend's verb) is given, the last value
    of every series the current attempt logged and the EMA of its raw loss."""
    from kura.execution.attempts import attempt_refs, run_attempts

    state = refresh_state(run_dir)
    summary: dict[str, Any] = {"state": asdict(state), "progress": None, "scalars": None}
    if state.log_path:
        current = progress(Path(state.log_path))
        summary["progress"] = {**asdict(current), "fraction": current.fraction}
    if loss_history is not None:
        history = loss_history(Path(run_dir), attempt_refs(run_attempts(Path(run_dir))))
        logged = history.of(state.attempt)
        scalars: dict[str, list[float]] = {}
        if logged is not None:
            if logged.points:
                scalars[history.metric] = list(logged.series[-1])
            for name, points in (*logged.learning_rates.items(), *logged.others.items()):
                if points:
                    scalars[name] = list(points[-1])
        summary["scalars"] = scalars
        raw = [point.loss for point in logged.points] if logged is not None else []
        if raw and summary["progress"] is not None:
            summary["progress"]["loss_ema"] = ema(raw)
    return summary
