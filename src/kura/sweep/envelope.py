"""`kura sweep plan|approve`: one approval for the whole sweep.

The plan (``sweeps/<id>/plan.json`` and ``plan.md``) shows the space, the trial count, the
budget (time and cost from the backend's estimator over the warm-start configs and the
corners of the space, as a band; the caching steps counted once), and what every trial will
and will not change. ``approve`` binds the digests of plan.json, space.yaml and sweep.json,
and of every input a trial is made from (:mod:`kura.sweep.bindings`): the base run's
run.yaml (every value the plan lists as unchanged comes from it), the content of each dataset
a trial trains or validates on, and the model files its bundle resolves to.
A worker checks them before every trial, so an edited space, plan or base run stops the sweep
until it is planned and approved again. Each trial is still planned (and gated) on its
worker's GPU.
"""

from __future__ import annotations

import getpass
import hashlib
import socket
from datetime import UTC, datetime
from typing import Any, Literal

from kura.backends.base import StepCost
from kura.errors import CheckFailed, StateConflict, UsageError
from kura.fsutil import atomic_write_text
from kura.schema.base import validate_spec
from kura.schema.machine import MachineFile, machine_text, read_machine_file, write_machine_file
from kura.schema.run import RunSpec
from kura.sweep.bindings import bound_inputs, check_bound_inputs
from kura.sweep.new import SPACE_NAME
from kura.sweep.plan_file import (
    PLAN_JSON,
    ChoiceAxis,
    ConfigEstimate,
    PlanBudget,
    PlanChanges,
    PlanEstimate,
    PlanGpu,
    RangeAxis,
    SweepPlan,
    read_sweep_plan,
)
from kura.sweep.records import SWEEP_NAME, SweepRecord, load_sweep, sweep_dir
from kura.sweep.space import CheckedSpace, check_space, load_space
from kura.sweep.trials import trial_document
from kura.workspace import Workspace

__all__ = [
    "PLAN_JSON",
    "SweepApproval",
    "approve_sweep",
    "check_sweep_approval",
    "checked_space",
    "plan_sweep",
    "planned_gpu",
]

PLAN_MD = "plan.md"
APPROVAL = "approval.json"
_BOUND = (PLAN_JSON, SPACE_NAME, SWEEP_NAME)


def checked_space(workspace: Workspace, sweep: SweepRecord, backend: Any) -> CheckedSpace:
    path = sweep_dir(workspace, sweep.id) / SPACE_NAME
    spec, digest = load_space(path)
    if digest != sweep.space_digest:
        raise CheckFailed(
            f"{path} changed since sweep {sweep.id} started",
            hint="a changed space is a new sweep: `kura sweep new --from "
            f"{sweep.base_run} --space FILE`; restore the file to resume this one",
            path=path,
        )
    return check_space(
        spec,
        digest,
        backend.search_keys(sweep.architecture),
        backend=sweep.backend,
        source=path,
    )


def _corners(space: CheckedSpace, baseline: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for axis in space.axes:
        values = list(axis.choices) if axis.kind == "choice" else [axis.low, axis.high]
        for value in values:
            if axis.kind == "int":
                value = int(value)  # type: ignore[arg-type]
            out.append((f"{axis.key}={value}", {**baseline, axis.key: value}))
    return out


def plan_sweep(
    workspace: Workspace,
    sweep_id: str,
    *,
    gpu: str | None = None,
    trials: int | None = None,
    budget_hours: float | None = None,
    budget_usd: float | None = None,
) -> SweepPlan:
    from kura.dataset.registry import read_dataset
    from kura.runs.context import load_context
    from kura.runs.gpu_choice import choose_gpu
    from kura.runs.store import load_run
    from kura.schema.base import plain
    from kura.sweep.study import check_resumable, load_study
    from kura.sweep.warmstart import recipe_value

    sweep = load_sweep(workspace, sweep_id)
    context = load_context(workspace, sweep.base_run)
    backend = context.backend
    space = checked_space(workspace, sweep, backend)
    study = load_study(workspace, sweep)
    check_resumable(study, sweep, backend.release, space.spec.objective.mode)
    gpu_class, chosen_by = choose_gpu(gpu, context.spec.execution.gpu_class)
    _, base_doc = load_run(workspace, sweep.base_run)
    base_doc = plain(base_doc)
    baseline = {key: recipe_value(context.spec, key) for key in space.keys}
    from optuna.trial import TrialState

    waiting = [
        (str(t.user_attrs.get("kura.source", "enqueued")), dict(t.system_attrs["fixed_params"]))
        for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    ]
    configs = [*waiting, *_corners(space, baseline)]
    evaluated: list[ConfigEstimate] = []
    ladder_keys: set[str] = set()
    for name, params in configs:
        document = trial_document(
            base_doc,
            sweep,
            params,
            run_id=f"{sweep.id}-plan",
            gpu_class=gpu_class.id,
            source=name,
        )
        spec = validate_spec(RunSpec, document, source=f"sweep {sweep.id} config {name}")
        datasets = {u.name: read_dataset(workspace, u.name) for u in spec.datasets}
        from kura.backends.base import PlanInputs
        from kura.runs.compile import prepared_inputs

        # the backend's prepared compile inputs too (KohakuMoss plans from them)
        inputs = PlanInputs(
            bundle=context.bundle,
            datasets=datasets,
            compile=prepared_inputs(workspace, spec, backend),
        )
        fit = backend.fit(spec, inputs, gpu_class, host_ram_gib=None)
        if fit.fits:
            ladder_keys |= {k for k, v in fit.settings.items() if v not in (None, False, 0)}
            config = {
                **spec.backend.config,
                **{k: v for k, v in fit.settings.items() if v is not None},
            }
            spec = spec.model_copy(
                update={"backend": spec.backend.model_copy(update={"config": config})}
            )
        evaluation = backend.estimate(spec, inputs, gpu_class)
        cache_s = _known_seconds(evaluation.costs, ("cache",))
        train_s = _known_seconds(evaluation.costs, ("train", "sample"))
        evaluated.append(
            ConfigEstimate(
                config=name,
                params=params,
                fits=fit.fits and not fit.ask_first,
                aids=[r.aid for r in fit.rungs],
                peak_gib=evaluation.worst.peak_gib,
                upper_gib=evaluation.worst.upper_gib,
                cache_seconds=cache_s,
                train_seconds=train_s,
            )
        )
    feasible = [e for e in evaluated if e.fits] or evaluated
    count = trials or sweep.trials
    per_trial = _seconds_band([e.train_seconds for e in feasible])
    caches = [e.cache_seconds for e in feasible]
    known_caches = [c for c in caches if c is not None]
    cache_once = None if len(known_caches) < len(caches) else max(known_caches, default=0.0)
    offer = gpu_class.cheapest_offer()
    price = offer.usd_per_hour if offer else None
    hours = (
        None
        if per_trial is None or cache_once is None
        else [(cache_once + count * s) / 3600 for s in per_trial]
    )
    budget = PlanBudget(
        hours=budget_hours if budget_hours is not None else sweep.budget_hours,
        usd=budget_usd if budget_usd is not None else sweep.budget_usd,
    )
    if budget.usd is not None and price is None:
        raise UsageError(
            f"--budget-usd needs a price for {gpu_class.id}, and the GPU catalog has none",
            hint="use --budget-hours, or plan for a priced GPU class (`kura gpus`)",
        )
    recipe = _leaves(base_doc.get("training", {}), "training")
    plan = SweepPlan(
        sweep=sweep.id,
        base_run=sweep.base_run,
        backend=f"{backend.title} {backend.release}",
        gpu=PlanGpu(id=gpu_class.id, chosen_by=chosen_by, usd_per_hour=price),
        axes=[_plan_axis(axis.to_dict()) for axis in space.axes],
        objective=space.spec.objective,
        early_stop=space.spec.early_stop,
        trials=count,
        budget=budget,
        estimate=PlanEstimate(
            per_trial_seconds=None if per_trial is None else [_rounded(s) for s in per_trial],
            cache_seconds_once=None if cache_once is None else _rounded(cache_once),
            total_hours=None if hours is None else [_rounded(h, 3) for h in hours],
            total_usd=None
            if price is None or hours is None
            else [round(h * price, 2) for h in hours],
            band="lowest and highest per-trial estimate over the warm-start configs and "
            "the corners of the space; the caching steps counted once per machine",
            configs=evaluated,
        ),
        changes=PlanChanges(
            axes=list(space.keys),
            fit_ladder_keys=sorted(ladder_keys),
            datasets=sweep.split.train,
            validation=sweep.split.validation,
            execution_gpu_class="the worker's GPU",
        ),
        unchanged={k: v for k, v in recipe.items() if k not in space.keys},
        storage=sweep.storage,
    )
    folder = sweep_dir(workspace, sweep.id)
    with workspace.lock():
        write_machine_file(folder / PLAN_JSON, plan)
        atomic_write_text(folder / PLAN_MD, _render(plan))
    return plan


def _plan_axis(axis: dict[str, Any]) -> ChoiceAxis | RangeAxis:
    """A checked axis as plan.json records it (a choice axis has no ``kind``)."""
    return ChoiceAxis(**axis) if "choices" in axis else RangeAxis(**axis)


def _known_seconds(costs: tuple[StepCost, ...], kinds: tuple[str, ...]) -> float | None:
    """Seconds of the steps of ``kinds``, or None when the backend could not time one of
    them: an unknown time is shown as unknown, never as 0."""
    chosen = [c for c in costs if c.kind in kinds]
    if any(c.seconds is None for c in chosen):
        return None
    return sum(c.seconds or 0.0 for c in chosen)


def _rounded(value: float, digits: int = 1) -> float:
    """``value`` to ``digits`` decimals, or to two significant digits when that would show a
    non-zero time as 0 (a tiny DiT's fraction of a second)."""
    rounded = round(value, digits)
    return rounded if rounded or not value else float(f"{value:.2g}")


def _seconds_band(seconds: list[float | None]) -> tuple[float, float] | None:
    """Lowest and highest per-trial seconds, or None when any config's time is unknown."""
    known = [s for s in seconds if s is not None]
    if not known or len(known) < len(seconds):
        return None
    return min(known), max(known)


def _leaves(node: Any, prefix: str) -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_leaves(value, f"{prefix}.{key}"))
        return out
    return {prefix: node}


def _render(plan: SweepPlan) -> str:
    est = plan.estimate
    objective = plan.objective
    lines = [
        f"# Sweep {plan.sweep} over run {plan.base_run} ({plan.backend})",
        "",
        f"- trials: {plan.trials}; GPU: {plan.gpu.id} ({plan.gpu.chosen_by})",
        f"- objective: {objective.metric}"
        + (f" + judge {objective.judge}" if objective.judge else "")
        + (
            " (pareto: two objectives, loss down and judge up; no early stop)"
            if objective.mode == "pareto"
            else ""
        ),
        f"- per trial: {_band_text(est.per_trial_seconds, 's')}; "
        f"caching once: {_unknown_or(est.cache_seconds_once, 's')}",
        f"- total: {_band_text(est.total_hours, 'GPU-hours')}"
        + (f", ${est.total_usd[0]}–{est.total_usd[1]}" if est.total_usd else ""),
        f"- budget: {plan.budget.hours or '—'} h, ${plan.budget.usd or '—'}",
        "",
        "## Axes (what every trial may change)",
        *(f"- {a.key}: {_axis_values(a)}" for a in plan.axes),
        "- fit ladder, per trial on its worker's GPU: "
        + (", ".join(plan.changes.fit_ladder_keys) or "none needed here"),
        "",
        "## Unchanged in every trial",
        *(f"- {k}: {v}" for k, v in plan.unchanged.items()),
        "",
        "## Configs estimated",
        *(
            f"- {e.config}: {'fits' if e.fits else 'does not fit'}, peak "
            f"{e.peak_gib} GiB (≤ {e.upper_gib}), {_unknown_or(e.train_seconds, 's')}"
            for e in est.configs
        ),
        "",
    ]
    return "\n".join(lines)


def _axis_values(axis: ChoiceAxis | RangeAxis) -> list[Any]:
    return list(axis.choices) if isinstance(axis, ChoiceAxis) else [axis.low, axis.high]


def _band_text(band: list[float] | None, unit: str) -> str:
    if band is None:
        return f"unknown (the backend cannot time every step; {unit} not estimated)"
    return f"{band[0]}–{band[1]} {unit}"


def _unknown_or(value: float | None, unit: str) -> str:
    return "unknown" if value is None else f"{round(value, 1)} {unit}"


def _digests(workspace: Workspace, sweep_id: str) -> dict[str, str]:
    folder = sweep_dir(workspace, sweep_id)
    return {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
        for name in _BOUND
        if (folder / name).is_file()
    }


class SweepApproval(MachineFile):
    """``sweeps/<id>/approval.json``: what the person approved, by digest."""

    kind: Literal["sweep-approval"] = "sweep-approval"
    sweep: str
    files: dict[str, str]
    """Digests of the sweep's own files (:data:`_BOUND`)."""
    inputs: dict[str, Any] | None = None
    """What trials are made from (``kura.sweep.bindings``); None from an older Kura."""
    approved_at: str
    approved_by: str


def approve_sweep(workspace: Workspace, sweep_id: str) -> SweepApproval:
    sweep = load_sweep(workspace, sweep_id)
    folder = sweep_dir(workspace, sweep_id)
    if not (folder / PLAN_JSON).is_file():
        raise CheckFailed(
            f"sweep {sweep_id} has no plan to approve",
            hint=f"run `kura sweep plan {sweep_id}` and read plan.md first",
        )
    from kura.backends.registry import get_backend

    checked_space(workspace, sweep, get_backend(sweep.backend))
    record = SweepApproval(
        sweep=sweep_id,
        files=_digests(workspace, sweep_id),
        inputs=bound_inputs(workspace, sweep).model_dump(mode="json"),
        approved_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        approved_by=f"{getpass.getuser()}@{socket.gethostname()}",
    )
    with workspace.lock():
        atomic_write_text(folder / APPROVAL, machine_text(record))
    return record


def planned_gpu(workspace: Workspace, sweep_id: str) -> str | None:
    """The GPU class the sweep's plan was made for (its workers are priced on it)."""
    folder = sweep_dir(workspace, sweep_id)
    if not (folder / PLAN_JSON).is_file():
        return None
    return read_sweep_plan(folder, sweep_id).gpu.id


def check_sweep_approval(workspace: Workspace, sweep_id: str) -> SweepPlan:
    """The approved plan, after checking nothing it binds changed."""
    folder = sweep_dir(workspace, sweep_id)
    path = folder / APPROVAL
    if not path.is_file():
        raise StateConflict(
            f"sweep {sweep_id} is not approved",
            hint=f"`kura sweep plan {sweep_id}`, read plan.md, then "
            f"`kura sweep approve {sweep_id}`",
        )
    record = read_machine_file(
        SweepApproval, path, remedy=f"approve it again: `kura sweep approve {sweep_id}`"
    )
    current = _digests(workspace, sweep_id)
    changed = sorted(n for n in _BOUND if current.get(n) != record.files.get(n))
    if changed:
        raise CheckFailed(
            f"sweep {sweep_id} changed after approval: {', '.join(changed)}",
            hint=f"`kura sweep plan {sweep_id}` and `kura sweep approve {sweep_id}` again",
        )
    check_bound_inputs(workspace, load_sweep(workspace, sweep_id), record.inputs)
    return read_sweep_plan(folder, sweep_id)
