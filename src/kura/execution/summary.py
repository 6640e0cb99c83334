"""One view of a run for ``kura run status`` / ``watch``: state, progress, scalars.

The loss comes from the run's backend (``Backend.loss_history``, the trainer's own files):
``scalars`` holds the last value of each series the current attempt logged, and the
progress's ``loss_ema`` is the EMA of that attempt's raw loss, the last point of the run
page's smoothed line."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kura.execution.runs import refresh_state
from kura.schema.state import RunState

if TYPE_CHECKING:
    from kura.backends.base import AttemptRef, LossHistory, StepProgress

LossReader = Callable[[Path, Sequence["AttemptRef"]], "LossHistory"]
"""A backend's ``loss_history`` verb."""

__all__ = ["RunSummary", "ema", "run_summary"]

EMA_ALPHA = 0.1


def ema(values: Iterable[float], alpha: float = EMA_ALPHA) -> float | None:
    """Exponential moving average of the finite values (None when there are none)."""
    smoothed: float | None = None
    for value in values:
        if not math.isfinite(value):
            return value
        smoothed = value if smoothed is None else alpha * value + (1 - alpha) * smoothed
    return smoothed


@dataclass(frozen=True)
class RunSummary:
    """A run's refreshed state, its current step's progress (None before a step logs) and
    the last ``(step, value)`` of every series the current attempt logged (None when not
    read)."""

    state: RunState
    progress: StepProgress | None = None
    scalars: Mapping[str, tuple[int, float]] | None = None

    def to_dict(self) -> dict[str, object]:
        """The JSON-ready view (``state``, ``progress`` with its ``fraction``, ``scalars``)."""
        return {
            "state": asdict(self.state),
            "progress": None if self.progress is None else self.progress.to_dict(),
            "scalars": None if self.scalars is None else dict(self.scalars),
        }


def run_summary(
    run_dir: Path,
    *,
    progress: Callable[[Path], StepProgress],
    loss_history: LossReader | None = None,
) -> RunSummary:
    """The refreshed state plus the current step's progress (read by the backend's
    ``progress``), and, when ``loss_history`` (the backend's verb) is given, the last value
    of every series the current attempt logged and the EMA of its raw loss."""
    from kura.execution.attempts import attempt_refs, run_attempts

    state = refresh_state(run_dir)
    current = progress(Path(state.log_path)) if state.log_path else None
    if loss_history is None:
        return RunSummary(state, current)
    history = loss_history(Path(run_dir), attempt_refs(run_attempts(Path(run_dir))))
    logged = history.of(state.attempt)
    scalars: dict[str, tuple[int, float]] = {}
    if logged is not None:
        if logged.points:
            step, value = logged.series[-1]
            scalars[history.metric] = (int(step), float(value))
        for name, points in (*logged.learning_rates.items(), *logged.others.items()):
            if points:
                step, value = points[-1]
                scalars[name] = (int(step), float(value))
    raw = [point.loss for point in logged.points] if logged is not None else []
    if raw and current is not None:
        current = replace(current, loss_ema=ema(raw))
    return RunSummary(state, current, scalars)
