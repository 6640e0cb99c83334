"""What a sweep keeps on disk, under ``sweeps/<id>/``.

``sweep.json`` defines the sweep (base run, backend and release, architecture × task, the
space's digest, the storage, the carved split); ``trials/t<NNNN>/trial.json`` is one trial
as the machine that ran it saw it. Both are written atomically; a trial's folder is never
rewritten by another trial (a re-queued trial gets a number of its own).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from kura.bounded import load_json
from kura.errors import InvalidInput, NotFound
from kura.fsutil import atomic_write_text
from kura.schema.base import StrictModel
from kura.sweep.values import Artifact, CacheNote, EarlyStop, RecordedScore, TrialEstimate
from kura.workspace import Workspace, check_name

__all__ = [
    "SWEEP_NAME",
    "SweepRecord",
    "TrialRecord",
    "list_sweeps",
    "load_sweep",
    "load_trials",
    "sweep_dir",
    "trial_dir",
    "write_sweep",
    "write_trial",
]

SWEEP_NAME = "sweep.json"
TrialStatus = Literal["running", "complete", "pruned", "infeasible", "failed", "lost", "unscored"]


class Split(StrictModel):
    """The validation split Kura carved: base dataset → (train, validation) datasets."""

    train: dict[str, str] = {}
    validation: dict[str, str] = {}
    held_out: dict[str, list[str]] = {}
    held_out_controls: dict[str, list[str]] = Field(
        {}, description="paired data: the control images held out with their targets"
    )
    fraction: float | None = None


class SweepRecord(StrictModel):
    id: str
    base_run: str
    backend: str
    release: str
    architecture: str
    task: str | None
    space_digest: str
    storage: str = Field(description="the study storage, without any password")
    study: str
    trials: int = Field(ge=1)
    budget_hours: float | None = None
    budget_usd: float | None = None
    split: Split = Split()
    created_at: str


class TrialRecord(StrictModel):
    sweep: str
    number: int
    run_id: str
    params: dict[str, Any]
    source: str
    status: TrialStatus
    worker: str
    host: str
    gpu_class: str
    seed: int
    requeued_from: int | None = None
    objective: RecordedScore | None = None
    estimate: TrialEstimate | None = None
    stopped: EarlyStop | None = None
    reason: str | None = None
    cache: CacheNote | None = None
    seconds: float | None = None
    seconds_per_step: float | None = None
    gpu_hours: float | None = None
    usd: float | None = None
    artifacts: list[Artifact] = []
    started_at: str
    finished_at: str | None = None

    def updated(self, **changes: object) -> TrialRecord:
        """This record with ``changes``, validated (plain values recorded by the worker
        become their types; ``model_copy`` would keep them as given)."""
        return TrialRecord.model_validate({**self.model_dump(), **changes})


def sweeps_root(workspace: Workspace) -> Path:
    return workspace.root / "sweeps"


def sweep_dir(workspace: Workspace, sweep_id: str) -> Path:
    return sweeps_root(workspace) / check_name(sweep_id, "sweep")


def trial_dir(workspace: Workspace, sweep_id: str, number: int) -> Path:
    return sweep_dir(workspace, sweep_id) / "trials" / f"t{number:04d}"


def load_sweep(workspace: Workspace, sweep_id: str) -> SweepRecord:
    path = sweep_dir(workspace, sweep_id) / SWEEP_NAME
    if not path.is_file():
        known = ", ".join(list_sweeps(workspace)) or "none"
        raise NotFound(
            f"no sweep {sweep_id!r} in this workspace",
            hint=f"sweeps here: {known}; start one with `kura sweep new --from RUN --space FILE`",
        )
    data = load_json(path)
    try:
        return SweepRecord.model_validate(data)
    except ValueError as exc:
        raise InvalidInput(
            f"{path} is damaged or was edited by hand: {exc}",
            hint="Kura alone writes this file; restore it from a backup",
            path=path,
        ) from None


def write_sweep(workspace: Workspace, record: SweepRecord) -> None:
    path = sweep_dir(workspace, record.id) / SWEEP_NAME
    atomic_write_text(path, json.dumps(record.model_dump(mode="json"), indent=2) + "\n")


def write_trial(workspace: Workspace, record: TrialRecord) -> Path:
    path = trial_dir(workspace, record.sweep, record.number) / "trial.json"
    atomic_write_text(path, json.dumps(record.model_dump(mode="json"), indent=2) + "\n")
    return path


def load_trials(workspace: Workspace, sweep_id: str) -> list[TrialRecord]:
    """The trials this machine ran (or collected), by number."""
    folder = sweep_dir(workspace, sweep_id) / "trials"
    records = []
    for path in sorted(folder.glob("t*/trial.json")):
        records.append(TrialRecord.model_validate(load_json(path)))
    return records


def list_sweeps(workspace: Workspace) -> list[str]:
    root = sweeps_root(workspace)
    if not root.is_dir():
        return []
    return sorted(p.parent.name for p in root.glob(f"*/{SWEEP_NAME}"))
