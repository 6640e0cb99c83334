"""What the sweep pages show: the list of sweeps and one sweep's report.

Every number comes from :func:`kura.sweep.report.analyse_sweep`, the computation behind
`kura sweep report` (nothing is recomputed here), opened read-only: no lease is reaped, no
``winner.json`` written, no journal file created. Optuna and the sweep modules load only
when a sweep page is asked for (imported inside the functions), as in the CLI.

A pareto sweep (``objective.mode: pareto``) has no best trial: its page shows the Pareto front
(the report's ``pareto_front``) with a ``kura sweep promote SWEEP --trial N`` per trial,
loss against judge score, and importance per objective.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kura.errors import KuraError
from kura.workspace import Workspace, check_name

if TYPE_CHECKING:
    from kura.sweep.report import SweepAnalysis, TrialRow
    from kura.sweep.space import CheckedAxis, Objective

__all__ = [
    "ObjectiveImportance",
    "SweepPage",
    "SweepSummary",
    "TrialLine",
    "sweep_list",
    "sweep_page",
]

COUNTED = ("complete", "running", "pruned", "infeasible", "failed")


@dataclass(frozen=True)
class SweepSummary:
    """One line of ``/sweeps``; ``error`` when its study could not be read."""

    id: str
    base_run: str
    backend: str
    storage: str
    storage_kind: str
    trials: int
    counts: dict[str, int]
    other: str
    best: float | None
    created_at: str
    error: str | None
    front: int | None = None
    """A pareto sweep: how many trials are on its Pareto front (it has no best)."""


@dataclass(frozen=True)
class TrialLine:
    """A trials-table row: the report's row with its params spelled for the page."""

    row: TrialRow
    params: tuple[tuple[str, str], ...]
    run_exists: bool
    best: bool
    front: bool = False
    promote_command: str = ""
    """A trial of a pareto sweep's front: the command that promotes it."""


@dataclass(frozen=True)
class ObjectiveImportance:
    """A pareto sweep's importance chart for one objective."""

    name: str
    label: str
    svg: str


@dataclass(frozen=True)
class SweepPage:
    analysis: SweepAnalysis
    objective: Objective
    storage_kind: str
    axes: tuple[CheckedAxis, ...]
    lines: tuple[TrialLine, ...]
    objective_svg: str
    importance_svg: str
    parallel_svg: str
    promote_command: str
    promote_section: str
    front: tuple[TrialLine, ...] = ()
    """A pareto sweep: its Pareto front's trials, by loss (the report's ``pareto_front``)."""
    importance_by_objective: tuple[ObjectiveImportance, ...] = ()

    @property
    def pareto(self) -> bool:
        return self.analysis.pareto


def _storage_kind(storage: str) -> str:
    from kura.sweep.storage import JOURNAL

    return "journal file" if storage == JOURNAL else storage.partition(":")[0]


def _other(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k not in COUNTED)


def sweep_list(workspace: Workspace) -> list[SweepSummary]:
    """Every sweep in the workspace, newest first."""
    from kura.sweep.records import list_sweeps, load_sweep
    from kura.sweep.report import analyse_sweep

    out = []
    for sweep_id in list_sweeps(workspace):
        try:
            record = load_sweep(workspace, sweep_id)
        except KuraError as exc:  # a damaged sweep.json: listed with its error, not hidden
            out.append(SweepSummary(sweep_id, "", "", "", "", 0, {}, "", None, "", exc.message))
            continue
        counts: dict[str, int] = {}
        best: float | None = None
        front: int | None = None
        error = None
        try:
            analysis = analyse_sweep(workspace, sweep_id, read_only=True)
        except KuraError as exc:
            error = exc.message
        else:
            counts = analysis.counts
            best = None if analysis.best is None else analysis.best.objective
            front = len(analysis.pareto_front) if analysis.pareto else None
        out.append(
            SweepSummary(
                id=record.id,
                base_run=record.base_run,
                backend=record.backend,
                storage=record.storage,
                storage_kind=_storage_kind(record.storage),
                trials=record.trials,
                counts=counts,
                other=_other(counts),
                best=best,
                created_at=record.created_at,
                error=error,
                front=front,
            )
        )
    return sorted(out, key=lambda s: s.created_at, reverse=True)


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def sweep_page(workspace: Workspace, sweep_id: str) -> SweepPage:
    """One sweep: its space and objective, its trials, charts, best trial and promotion."""
    from kura.sweep.report import analyse_sweep
    from kura.web.sweep_charts import (
        importance_bars,
        objective_chart,
        parallel_coordinates,
        pareto_chart,
    )

    check_name(sweep_id, "sweep")
    analysis = analyse_sweep(workspace, sweep_id, read_only=True)
    axes = analysis.space.axes
    best = analysis.best
    front = [r.number for r in analysis.pareto_front]
    promote = f"kura sweep promote {analysis.sweep.id}"

    def line(row: TrialRow) -> TrialLine:
        return TrialLine(
            row=row,
            params=tuple((key, _value(value)) for key, value in row.params.items()),
            run_exists=bool(row.run) and _is_run(workspace, row.run),
            best=best is not None and row.number == best.number,
            front=row.number in front,
            promote_command=f"{promote} --trial {row.number}" if row.number in front else "",
        )

    lines = tuple(line(row) for row in analysis.rows)
    section = analysis.sweep.task or "all"
    if analysis.pareto:
        labels = {"loss": "loss (lower is better)", "judge_score": "judge score (higher is better)"}
        return SweepPage(
            analysis=analysis,
            objective=analysis.space.spec.objective,
            storage_kind=_storage_kind(analysis.sweep.storage),
            axes=axes,
            lines=lines,
            objective_svg=pareto_chart(analysis.rows, front),
            importance_svg=importance_bars(analysis.importance, title="reaching the front"),
            parallel_svg=parallel_coordinates(axes, analysis.rows, front=front),
            promote_command=f"{promote} --trial N",
            promote_section=section,
            front=tuple(line(row) for row in analysis.pareto_front),
            importance_by_objective=tuple(
                ObjectiveImportance(
                    name,
                    labels.get(name, name),
                    importance_bars(values, title=labels.get(name, name)),
                )
                for name, values in (analysis.importance_by_objective or {}).items()
            ),
        )
    return SweepPage(
        analysis=analysis,
        objective=analysis.space.spec.objective,
        storage_kind=_storage_kind(analysis.sweep.storage),
        axes=axes,
        lines=lines,
        objective_svg=objective_chart(analysis.rows),
        importance_svg=importance_bars(analysis.importance),
        parallel_svg=parallel_coordinates(
            axes, analysis.rows, best=None if best is None else best.number
        ),
        promote_command=promote,
        promote_section=section,
    )


def _is_run(workspace: Workspace, run_id: str | None) -> bool:
    """Whether ``run_id`` is a valid run name with a folder here (only then is it linked)."""
    if not run_id:
        return False
    try:
        check_name(run_id, "run")
    except KuraError:
        return False
    return workspace.run_dir(run_id).is_dir()
