"""What a sweep's approval binds besides its own files: every input a trial is made from.

A trial is made from the base run's run.yaml, trains and validates on the sweep's datasets,
and reads the model files the base run's bundle resolves to. ``kura sweep approve`` records
all three (:func:`bound_inputs`); a worker checks them before every trial
(:func:`check_bound_inputs`), so an input changed after approval stops the sweep at the next
trial with the fix, instead of a trial training under an approval that did not see it.

- run.yaml: the digest of its bytes.
- datasets: each one's content digest (``kura dataset validate``; cheap when unchanged).
- models: the model lock of the base run's bundle as resolved at approval; checked as the
  launch gate checks a run's lock (:func:`kura.models.lockcheck.verify_locked_models`:
  size, then sha256 from the digest cache only while size, mtime, inode and ctime are
  unchanged), and the bundle must still resolve to the same paths.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from kura.errors import CheckFailed
from kura.schema.lock import LockedModels
from kura.sweep.records import SweepRecord
from kura.workspace import Workspace

__all__ = ["BoundInputs", "bound_inputs", "check_bound_inputs"]


class BoundInputs(BaseModel):
    """The ``inputs`` of a sweep's approval.json."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files: dict[str, str]
    """``runs/<base>/run.yaml`` and ``dataset <name>`` → digest."""
    models: LockedModels


def bound_inputs(workspace: Workspace, sweep: SweepRecord) -> BoundInputs:
    return BoundInputs(files=_file_digests(workspace, sweep), models=_model_lock(workspace, sweep))


def check_bound_inputs(workspace: Workspace, sweep: SweepRecord, approved: Any) -> None:
    """CheckFailed naming what changed since ``approved`` (approval.json's ``inputs``)."""
    hint = (
        f"no trial runs under the old approval: `kura sweep plan {sweep.id}`, read plan.md, "
        f"then `kura sweep approve {sweep.id}` (or put the approved files back)"
    )
    if not isinstance(approved, dict):
        raise CheckFailed(
            f"sweep {sweep.id}'s approval does not bind its base run and datasets (it was "
            "made by an older Kura)",
            hint=hint,
        )
    record = BoundInputs.model_validate(approved)
    current = _file_digests(workspace, sweep)
    moved = sorted(
        name
        for name in set(current) | set(record.files)
        if current.get(name) != record.files.get(name)
    )
    if moved:
        raise CheckFailed(
            f"sweep {sweep.id}: what its trials are made from changed after approval: "
            + ", ".join(moved),
            hint=hint,
        )
    _check_models(workspace, sweep, record.models, hint)


def _file_digests(workspace: Workspace, sweep: SweepRecord) -> dict[str, str]:
    from kura.dataset.registry import validate_dataset
    from kura.runs.store import read_run, run_file

    path = run_file(workspace, sweep.base_run)
    found = {f"runs/{sweep.base_run}/run.yaml": hashlib.sha256(path.read_bytes()).hexdigest()}
    if sweep.split.train:
        names = sorted({*sweep.split.train.values(), *sweep.split.validation.values()})
    else:
        spec = read_run(workspace, sweep.base_run)
        names = sorted({use.name for use in [*spec.datasets, *spec.validation]})
    for name in names:
        found[f"dataset {name}"] = validate_dataset(workspace, name).digest
    return found


def _model_lock(workspace: Workspace, sweep: SweepRecord) -> LockedModels:
    """The lock of the base run's bundle as it resolves now (as `kura run compile` makes it)."""
    from kura.models.bundles import get_bundle
    from kura.models.lockdoc import build_lock
    from kura.models.resolve import resolve_bundle
    from kura.runs.store import read_run

    spec = read_run(workspace, sweep.base_run)
    root = Path(spec.model.root).expanduser() if spec.model.root else None
    resolution = resolve_bundle(
        get_bundle(spec.model.base),
        models_dir=workspace.models_dir,
        paths={slot: Path(p).expanduser() for slot, p in spec.model.paths.items()},
        root=root,
    )
    return LockedModels.model_validate(build_lock(resolution))


def _check_models(
    workspace: Workspace, sweep: SweepRecord, approved: LockedModels, hint: str
) -> None:
    from kura.models.lockcheck import verify_locked_models

    try:
        verify_locked_models(approved, run_id=sweep.base_run)
    except CheckFailed as error:
        raise CheckFailed(
            f"sweep {sweep.id}: {error.message}", hint=hint, path=error.path
        ) from None
    now, then = _paths(_model_lock(workspace, sweep)), _paths(approved)
    moved = sorted(slot for slot in set(now) | set(then) if now.get(slot) != then.get(slot))
    if moved:
        raise CheckFailed(
            f"sweep {sweep.id}: the base run's bundle resolves to other model files since "
            f"approval ({', '.join(moved)})",
            hint=hint,
        )


def _paths(models: LockedModels) -> dict[str, str | None]:
    return {slot: role.path for slot, role in models.roles.items()}
