"""Which runs are sweep trials, and how their trial ended, for the run list and run pages.

A trial the pruner stopped is cancelled as a run (``kura run cancel``'s path), so its run's
own state says ``cancelled``; its ``trials/t<NNNN>/trial.json`` says ``pruned``, with the
step and loss. The pages show the trial's word for such a run. A trial's run id names its
trial (``<sweep>-t<NNNN>``, :func:`kura.sweep.trials.trial_run_id`), so a page reads only the
trial files of the runs it shows, never every sweep's (no Optuna study is opened); a trial
file that cannot be read leaves its run shown by its own state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kura.errors import KuraError
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.sweep.values import EarlyStop

__all__ = ["SweptRun", "shown_status", "trial_of"]


@dataclass(frozen=True)
class SweptRun:
    """The trial a run was: its sweep, number, status and why it stopped (if it did)."""

    sweep: str
    number: int
    status: str
    stopped: EarlyStop | None

    @property
    def why(self) -> str:
        if not self.stopped:
            return ""
        parts = [self.stopped.by]
        if self.stopped.step is not None:
            parts.append(f"at step {self.stopped.step}")
        return " ".join(parts)


def trial_of(workspace: Workspace, run_id: str) -> SweptRun | None:
    """The trial run ``run_id`` was, from its own trial file; None for a run no sweep made."""
    from kura.bounded import load_json
    from kura.sweep.records import TrialRecord, trial_dir
    from kura.sweep.trials import trial_of_run

    named = trial_of_run(run_id)
    if named is None:
        return None
    sweep, number = named
    try:
        path = trial_dir(workspace, sweep, number) / "trial.json"
        if not path.is_file():
            return None
        trial = TrialRecord.model_validate(load_json(path))
    except (KuraError, ValueError):
        return None  # a damaged trial file: the run keeps its own state on the page
    if trial.run_id != run_id:
        return None
    return SweptRun(sweep, trial.number, trial.status, trial.stopped)


def shown_status(status: str, trial: SweptRun | None) -> str:
    """``pruned`` for a cancelled run its sweep's pruner stopped; else the run's status."""
    if trial is not None and trial.status == "pruned" and status == "cancelled":
        return "pruned"
    return status
