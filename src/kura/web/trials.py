"""Which runs are sweep trials, and how their trial ended, for the run list and run pages.

A trial the pruner stopped is cancelled as a run (``kura run cancel``'s path), so its run's
own state says ``cancelled``; its ``trials/t<NNNN>/trial.json`` says ``pruned``, with the
step and loss. The pages show the trial's word for such a run. Only the trial files this
workspace holds are read (no Optuna study is opened); a sweep whose trial files cannot be
read leaves its runs shown by their own state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kura.errors import KuraError
from kura.workspace import Workspace

__all__ = ["SweptRun", "shown_status", "swept_runs"]


@dataclass(frozen=True)
class SweptRun:
    """The trial a run was: its sweep, number, status and why it stopped (if it did)."""

    sweep: str
    number: int
    status: str
    stopped: dict[str, Any] | None

    @property
    def why(self) -> str:
        if not self.stopped:
            return ""
        parts = [str(self.stopped.get("by", "stopped"))]
        if self.stopped.get("step") is not None:
            parts.append(f"at step {self.stopped['step']}")
        return " ".join(parts)


def swept_runs(workspace: Workspace) -> dict[str, SweptRun]:
    """Run id → the trial it was, over every sweep in the workspace."""
    from kura.sweep.records import list_sweeps, load_trials

    found: dict[str, SweptRun] = {}
    for sweep in list_sweeps(workspace):
        try:
            trials = load_trials(workspace, sweep)
        except (KuraError, ValueError):
            continue  # a damaged trial file: its runs keep their own state on the page
        for trial in trials:
            found[trial.run_id] = SweptRun(sweep, trial.number, trial.status, trial.stopped)
    return found


def shown_status(status: str, trial: SweptRun | None) -> str:
    """``pruned`` for a cancelled run its sweep's pruner stopped; else the run's status."""
    if trial is not None and trial.status == "pruned" and status == "cancelled":
        return "pruned"
    return status
