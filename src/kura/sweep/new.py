"""`kura sweep new`: a sweep over a base run, its study, its warm start and its split."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kura.errors import UsageError
from kura.fsutil import atomic_write_text
from kura.sweep.records import SweepRecord, sweep_dir, sweeps_root, write_sweep
from kura.sweep.space import check_space, load_space
from kura.sweep.storage import JOURNAL, open_storage, redact
from kura.workspace import Workspace, id_stamp

__all__ = ["SPACE_NAME", "new_sweep"]

SPACE_NAME = "space.yaml"


def _new_id(workspace: Workspace, now: datetime | None) -> str:
    stamp = id_stamp(now)
    root = sweeps_root(workspace)
    candidate, n = f"sw-{stamp}", 1
    while (root / candidate).exists():
        n += 1
        candidate = f"sw-{stamp}-{n}"
    return candidate


def new_sweep(
    workspace: Workspace,
    *,
    base_run: str,
    space: Path,
    trials: int = 20,
    budget_hours: float | None = None,
    budget_usd: float | None = None,
    storage: str = JOURNAL,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Check the space against the backend, carve the split, create and warm-start the
    study. Nothing is trained: ``kura sweep plan`` and ``approve`` come next."""
    import optuna

    from kura.runs.context import load_context
    from kura.sweep.carve import carve_split
    from kura.sweep.study import quiet_optuna, study_directions
    from kura.sweep.warmstart import warm_start

    if trials < 1:
        raise UsageError(f"--trials {trials}: a sweep needs at least one trial", hint="--trials 20")
    for name, value in (("--budget-hours", budget_hours), ("--budget-usd", budget_usd)):
        if value is not None and value <= 0:
            raise UsageError(f"{name} {value} is not a budget", hint=f"{name} must be above 0")
    context = load_context(workspace, base_run)
    base = context.spec
    architecture = context.bundle.architecture
    spec, digest = load_space(space)
    checked = check_space(
        spec,
        digest,
        context.backend.search_keys(architecture),
        backend=context.backend.name,
        source=space,
    )
    quiet_optuna()
    if storage != JOURNAL:
        open_storage(storage, Path("."))  # unreachable → CheckFailed before anything is written
    with workspace.lock():
        sweep_id = _new_id(workspace, now)
        folder = sweep_dir(workspace, sweep_id)
        folder.mkdir(parents=True)
    try:
        atomic_write_text(folder / SPACE_NAME, space.read_text(encoding="utf-8"))
        split = None
        if checked.spec.objective.metric == "heldout_loss":
            split = carve_split(
                workspace,
                sweep_id,
                folder,
                [d.name for d in base.datasets],
                checked.spec.objective.validation_fraction,
            )
        study = optuna.create_study(
            study_name=sweep_id,
            storage=open_storage(storage, folder),
            directions=list(study_directions(checked.spec.objective.mode)),
        )
        attrs = {
            "kura.space_digest": digest,
            "kura.objective_mode": checked.spec.objective.mode,
            "kura.release": context.backend.release,
            "kura.backend": context.backend.name,
            "kura.base_run": base.id,
            "kura.architecture": architecture,
            "kura.task": base.task,
        }
        for key, attr in attrs.items():
            study.set_user_attr(key, attr)
        configs, notes = warm_start(
            workspace,
            checked,
            base,
            architecture=architecture,
            task=base.task,
            exclude_sweep=sweep_id,
        )
        for config in configs:
            study.enqueue_trial(
                config.params,
                user_attrs={"kura.source": f"{config.name}: {config.source}"},
                skip_if_exists=True,
            )
        record = SweepRecord(
            id=sweep_id,
            base_run=base.id,
            backend=context.backend.name,
            release=context.backend.release,
            architecture=architecture,
            task=base.task,
            space_digest=digest,
            storage=redact(storage),
            study=sweep_id,
            trials=trials,
            budget_hours=budget_hours,
            budget_usd=budget_usd,
            split=split or SweepRecord.model_fields["split"].default,
            created_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        )
        write_sweep(workspace, record)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return {
        "kind": "sweep",
        "sweep": sweep_id,
        "base_run": base.id,
        "backend": f"{context.backend.title} {context.backend.release}",
        "axes": [axis.to_dict() for axis in checked.axes],
        "objective": checked.spec.objective.model_dump(mode="json"),
        "early_stop": checked.spec.early_stop.model_dump(mode="json"),
        **(
            {"early_stop_note": "off: a multi-objective (pareto) study cannot prune"}
            if checked.spec.objective.mode == "pareto"
            else {}
        ),
        "warm_start": [c.to_dict() for c in configs],
        "warm_start_notes": notes,
        "split": record.split.model_dump(mode="json"),
        "storage": record.storage,
        "trials": trials,
        "next": [
            {
                "command": f"kura sweep plan {sweep_id} --gpu GPU",
                "why": "size the space, the trials and the budget for one approval",
            }
        ],
    }
