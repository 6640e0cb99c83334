"""One JSON-ready view of a run for ``kura run status`` / ``watch``: state, progress, scalars."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from kura.execution.progress import ema, tail_progress
from kura.execution.runs import refresh_state
from kura.execution.tensorboard import read_scalars

__all__ = ["run_summary"]


def run_summary(run_dir: Path, *, logging_dir: Path | None = None) -> dict[str, Any]:
    """The refreshed state plus the current step's progress, and, when ``logging_dir`` is
    given, the raw-loss EMA and last value of every TensorBoard scalar."""
    state = refresh_state(run_dir)
    summary: dict[str, Any] = {"state": asdict(state), "progress": None, "scalars": None}
    if state.log_path:
        progress = tail_progress(Path(state.log_path))
        summary["progress"] = {**asdict(progress), "fraction": progress.fraction}
    if logging_dir is not None:
        series = read_scalars(logging_dir)
        summary["scalars"] = {tag: points[-1] for tag, points in series.items() if points}
        raw = [value for _, value in series.get("loss/current", [])]
        if raw and summary["progress"] is not None:
            summary["progress"]["loss_ema"] = ema(raw)
    return summary
