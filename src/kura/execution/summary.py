"""One view of a run for ``kura run status`` / ``watch``: state, progress, scalars."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kura.execution.runs import refresh_state
from kura.execution.tensorboard import read_scalars
from kura.spec.state import RunState

if TYPE_CHECKING:
    from kura.backends.base import StepProgress

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
    the last ``(step, value)`` of every TensorBoard scalar (None when not read)."""

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
    logging_dir: Path | None = None,
) -> RunSummary:
    """The refreshed state plus the current step's progress (read by the backend's
    ``progress``), and, when ``logging_dir`` is given, the raw-loss EMA and last value of
    every TensorBoard scalar."""
    state = refresh_state(run_dir)
    current = progress(Path(state.log_path)) if state.log_path else None
    if logging_dir is None:
        return RunSummary(state, current)
    series = read_scalars(logging_dir)
    scalars = {tag: points[-1] for tag, points in series.items() if points}
    raw = [value for _, value in series.get("loss/current", [])]
    if raw and current is not None:
        current = replace(current, loss_ema=ema(raw))
    return RunSummary(state, current, scalars)
