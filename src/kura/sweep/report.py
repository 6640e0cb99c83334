"""`kura sweep status|report|promote`: the trials table, the objective per trial, parameter
importance, the best trial with a bootstrap interval, and the winner into a card.

The objective is recomputed from each trial's recorded parts, so human ratings given after a
trial finished (``kura run evaluate``) count; the value the sampler was told is shown beside
it. Step times are summarised per GPU class and never compared across classes. The interval
is a bootstrap over the repeated measurements of the best config (trials with the same
params, i.e. seeds; else its objective as each judged sample alone would make it, so the
interval is on the objective's scale); with one measurement the report says so.
:func:`analyse_sweep` computes it all as typed values and writes nothing (the web page
uses it); :func:`sweep_report` adds ``winner.json`` and returns the JSON document.

A ``pareto`` sweep has no single best: its report carries the same keys (``best`` and its
interval empty, ``objective`` None per row) and adds ``mode``, ``directions``, each row's
``values`` (loss, judge score) and ``judge_score``, ``pareto_front`` (Optuna's
``study.best_trials``, feasible trials only, by loss), the ``unscored`` trials, and parameter
importance per objective. ``promote`` then takes the trial a person chose from the front
(no ``winner.json`` before that).
"""

from __future__ import annotations

import json
import random
import statistics
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kura.errors import CheckFailed, UsageError
from kura.fsutil import atomic_write_text
from kura.sweep.values import (
    EarlyStop,
    ParamValue,
    RecordedScore,
    StepTimes,
    TrialEstimate,
    Winner,
    read_attr,
)
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.sweep.records import SweepRecord
    from kura.sweep.space import CheckedSpace

__all__ = [
    "IMPORTANCE_METHOD",
    "PARETO_DIRECTIONS",
    "Importance",
    "SweepAnalysis",
    "TrialRow",
    "analyse_sweep",
    "bootstrap_ci",
    "promote_winner",
    "sweep_report",
    "sweep_status",
]

IMPORTANCE_METHOD = "PED-ANOVA (Optuna), normalised"
MIN_COMPLETE_FOR_IMPORTANCE = 3
PARETO = "pareto"
PARETO_DIRECTIONS = {"loss": "minimize", "judge_score": "maximize"}
"""A pareto study's two objectives, in the order Optuna is told them."""


def bootstrap_ci(
    values: list[float], *, rounds: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile interval of the mean; None with fewer than two values."""
    if len(values) < 2:
        return None
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(rounds))
    low = means[int((1 - level) / 2 * rounds)]
    high = means[min(rounds - 1, int((1 + level) / 2 * rounds))]
    return (low, high)


@dataclass(frozen=True)
class TrialRow:
    """One trial as the report shows it: the objective recomputed from its recorded parts
    (``objective``) beside the value the sampler was told (``told``). A pareto sweep's row
    (``pareto``) has neither (there is no single objective) but the two values the study
    was told, ``values`` = (loss, judge score) when complete, and the ``judge_score``."""

    number: int
    state: str
    status: str
    params: dict[str, ParamValue]
    source: str
    objective: float | None
    told: float | None
    loss: float | None
    judge_scores: tuple[float, ...]
    gpu_class: str | None
    host: str | None
    worker: str | None
    run: str | None
    estimate: TrialEstimate | None
    stopped: EarlyStop | None
    reason: str | None
    requeued_from: int | None
    gpu_hours: float | None
    pareto: bool = False
    values: tuple[float, float] | None = None
    judge_score: float | None = None

    @property
    def complete(self) -> bool:
        return self.state == "COMPLETE"

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "number": self.number,
            "state": self.state,
            "status": self.status,
            "params": dict(self.params),
            "source": self.source,
            "objective": self.objective,
            "told": self.told,
            "loss": self.loss,
            "judge_scores": list(self.judge_scores),
            "gpu_class": self.gpu_class,
            "host": self.host,
            "worker": self.worker,
            "run": self.run,
            "estimate": None if self.estimate is None else self.estimate.to_dict(),
            "stopped": None if self.stopped is None else self.stopped.to_dict(),
            "reason": self.reason,
            "requeued_from": self.requeued_from,
            "gpu_hours": self.gpu_hours,
        }
        if self.pareto:
            document["values"] = None if self.values is None else list(self.values)
            document["judge_score"] = self.judge_score
        return document


def _rows(workspace: Workspace, study: Any, objective: Any) -> list[TrialRow]:
    from kura.sweep.objective import judge_scores

    pareto = objective.mode == PARETO
    rows = []
    for trial in study.get_trials(deepcopy=False):
        attrs = trial.user_attrs
        complete = trial.state.name == "COMPLETE"
        told = None if pareto or not complete else trial.value
        recorded = read_attr(attrs, "kura.objective", RecordedScore, trial=trial.number)
        value = None if pareto or recorded is None else recorded.value
        run_id = attrs.get("kura.run_id")
        if objective.judge == "ratings" and run_id and recorded and recorded.loss is not None:
            scores = judge_scores("ratings", workspace.run_dir(run_id), ())
            if scores:
                w = objective.judge_weight
                value = (1 - w) * recorded.loss + w * (1 - scores[-1])
        status = attrs.get("kura.status") or trial.state.name.lower()
        if attrs.get("kura.lost"):
            status = "lost"
        rows.append(
            TrialRow(
                number=trial.number,
                state=trial.state.name,
                status=status,
                params=dict(trial.params),
                source=attrs.get("kura.source", "sampler (TPE)"),
                objective=value,
                told=told,
                loss=None if recorded is None else recorded.loss,
                judge_scores=() if recorded is None else recorded.judge_scores,
                gpu_class=attrs.get("kura.gpu_class"),
                host=attrs.get("kura.host"),
                worker=attrs.get("kura.worker"),
                run=run_id,
                estimate=read_attr(attrs, "kura.estimate", TrialEstimate, trial=trial.number),
                stopped=read_attr(attrs, "kura.stopped", EarlyStop, trial=trial.number),
                reason=attrs.get("kura.reason") or attrs.get("kura.lost"),
                requeued_from=attrs.get("kura.requeued_from"),
                gpu_hours=attrs.get("kura.gpu_hours"),
                pareto=pareto,
                values=(float(trial.values[0]), float(trial.values[1]))
                if pareto and complete
                else None,
                judge_score=recorded.judge_score if pareto and recorded else None,
            )
        )
    return rows


def _counts(rows: list[TrialRow]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    return counts


def _open(
    workspace: Workspace, sweep_id: str, storage_url: str | None, *, read_only: bool = False
) -> tuple[SweepRecord, CheckedSpace, Any]:
    """The sweep, its checked space and its study. ``read_only`` (the web page) refuses a
    journal file that is not there rather than letting Optuna create an empty one."""
    from kura.backends.registry import get_backend
    from kura.sweep.envelope import checked_space
    from kura.sweep.records import load_sweep, sweep_dir
    from kura.sweep.storage import JOURNAL, JOURNAL_NAME
    from kura.sweep.study import check_mode, load_study

    sweep = load_sweep(workspace, sweep_id)
    space = checked_space(workspace, sweep, get_backend(sweep.backend))
    journal = sweep_dir(workspace, sweep_id) / JOURNAL_NAME
    if read_only and (storage_url or sweep.storage) == JOURNAL and not journal.is_file():
        raise CheckFailed(
            f"sweep {sweep_id} has no study file {workspace.relative(journal)}",
            hint="it was moved or deleted; restore it from the machine that ran the sweep "
            "(`kura sweep collect` copies artifacts, not the study)",
            path=journal,
        )
    study = load_study(workspace, sweep, storage_url=storage_url)
    check_mode(study, sweep, space.spec.objective.mode)
    return sweep, space, study


def sweep_status(
    workspace: Workspace,
    sweep_id: str,
    *,
    storage_url: str | None = None,
    reap: bool = True,
    lease_seconds: float | None = None,
) -> dict[str, Any]:
    from kura.sweep.lease import DEFAULT_LEASE_SECONDS, reap_stale

    sweep, space, study = _open(workspace, sweep_id, storage_url)
    reaped = (
        [
            r.to_dict()
            for r in reap_stale(study, lease_seconds=lease_seconds or DEFAULT_LEASE_SECONDS)
        ]
        if reap
        else []
    )
    rows = _rows(workspace, study, space.spec.objective)
    counts = _counts(rows)
    approved = (workspace.root / "sweeps" / sweep_id / "approval.json").is_file()
    return {
        "kind": "sweep-status",
        "sweep": sweep_id,
        "base_run": sweep.base_run,
        "approved": approved,
        "trials": sweep.trials,
        "counts": counts,
        "rows": [row.to_dict() for row in rows],
        "reaped": reaped,
    }


def _step_times(workspace: Workspace, sweep_id: str) -> dict[str, StepTimes]:
    from kura.sweep.records import load_trials

    by_class: dict[str, list[float]] = {}
    for record in load_trials(workspace, sweep_id):
        if record.seconds_per_step:
            by_class.setdefault(record.gpu_class, []).append(record.seconds_per_step)
    return {gpu: StepTimes.of(seconds) for gpu, seconds in by_class.items()}


@dataclass(frozen=True)
class Importance:
    """Parameter importance by ``method``, or empty with ``note`` saying why not."""

    values: dict[str, float]
    note: str

    @property
    def computed(self) -> bool:
        return bool(self.values)


@dataclass(frozen=True)
class SweepAnalysis:
    """Everything `kura sweep report` and the sweep page show, computed once and writing
    nothing (:func:`sweep_report` adds ``winner.json``). A pareto sweep has no ``best``
    but its ``pareto_front`` (by loss) and ``importance_by_objective``."""

    sweep: SweepRecord
    space: CheckedSpace
    rows: list[TrialRow]
    best: TrialRow | None
    best_interval: tuple[float, float] | None
    repeats: int
    importance: Importance
    step_times_by_gpu_class: dict[str, StepTimes]
    pareto_front: tuple[TrialRow, ...] = ()
    importance_by_objective: dict[str, Importance] | None = None

    @property
    def mode(self) -> str:
        return str(self.space.spec.objective.mode)

    @property
    def pareto(self) -> bool:
        return self.mode == PARETO

    @property
    def counts(self) -> dict[str, int]:
        return _counts(self.rows)

    @property
    def scored(self) -> list[TrialRow]:
        """Trials with a value to compare: the objective, or a pareto trial's two values."""
        if self.pareto:
            return [r for r in self.rows if r.values is not None]
        return [r for r in self.rows if r.objective is not None]

    @property
    def unscored(self) -> list[TrialRow]:
        """Pareto trials the judge did not score (told failed; their loss is kept)."""
        return [r for r in self.rows if r.status == "unscored"]

    @property
    def pareto_front_note(self) -> str:
        if not self.pareto_front:
            return "no completed trial yet"
        return (
            f"{len(self.pareto_front)} trial(s) no other completed, feasible trial beats on "
            "both loss and judge score (Optuna's study.best_trials), by loss"
        )

    @property
    def best_interval_note(self) -> str:
        if self.pareto:
            return (
                "objective.mode pareto: no single best trial; choose one of pareto_front and "
                f"promote it (`kura sweep promote {self.sweep.id} --trial N`)"
            )
        if self.best_interval is not None:
            return f"95 % bootstrap interval over {self.repeats} measurements"
        return (
            "one measurement of the best config: no interval (repeat it with other "
            "seeds to get one)"
        )

    def to_dict(self) -> dict[str, Any]:
        """The `kura sweep report --json` document."""
        document: dict[str, Any] = {
            "kind": "sweep-report",
            "sweep": self.sweep.id,
            "base_run": self.sweep.base_run,
            "objective": self.space.spec.objective.model_dump(mode="json"),
            "rows": [row.to_dict() for row in self.rows],
            "best": None if self.best is None else self.best.to_dict(),
            "best_interval": None if self.best_interval is None else list(self.best_interval),
            "best_interval_note": self.best_interval_note,
            "importance": dict(self.importance.values),
            "importance_note": self.importance.note
            + (" (to reach the Pareto front)" if self.pareto and self.importance.computed else ""),
            "step_times_by_gpu_class": {
                gpu: times.to_dict() for gpu, times in self.step_times_by_gpu_class.items()
            },
            "parallel_coordinates": [self._coordinates(r) for r in self.scored],
        }
        if self.pareto:
            document.update(
                mode=PARETO,
                directions=dict(PARETO_DIRECTIONS),
                pareto_front=[r.to_dict() for r in self.pareto_front],
                pareto_front_note=self.pareto_front_note,
                unscored=[r.number for r in self.unscored],
                importance_by_objective={
                    name: dict(i.values) for name, i in (self.importance_by_objective or {}).items()
                },
            )
        return document

    def _coordinates(self, row: TrialRow) -> dict[str, Any]:
        if row.values is not None:
            return {**row.params, "loss": row.values[0], "judge_score": row.values[1]}
        return {**row.params, "objective": row.objective}


def analyse_sweep(
    workspace: Workspace,
    sweep_id: str,
    *,
    storage_url: str | None = None,
    read_only: bool = False,
) -> SweepAnalysis:
    """The trials, the best one with its bootstrap interval, and parameter importance."""
    sweep, space, study = _open(workspace, sweep_id, storage_url, read_only=read_only)
    rows = _rows(workspace, study, space.spec.objective)
    if space.spec.objective.mode == PARETO:
        return _analyse_pareto(workspace, sweep, space, study, rows)
    scored = [r for r in rows if r.objective is not None]
    best = min(scored, key=lambda r: float(r.objective or 0.0)) if scored else None
    interval = None
    repeats: list[float] = []
    if best is not None:
        same = [r for r in scored if r.params == best.params]
        repeats = [float(r.objective or 0.0) for r in same]
        if len(repeats) < 2 and best.judge_scores and best.loss is not None:
            repeats = _per_sample_objectives(best, space.spec.objective.judge_weight)
        interval = bootstrap_ci(repeats)
    importance = _importance(study, len([r for r in rows if r.complete]))
    return SweepAnalysis(
        sweep=sweep,
        space=space,
        rows=rows,
        best=best,
        best_interval=interval,
        repeats=len(repeats),
        importance=importance,
        step_times_by_gpu_class=_step_times(workspace, sweep_id),
    )


def _analyse_pareto(
    workspace: Workspace,
    sweep: SweepRecord,
    space: CheckedSpace,
    study: Any,
    rows: list[TrialRow],
) -> SweepAnalysis:
    """A two-objective sweep: the front instead of one best (no interval, no winner.json:
    a person chooses, and ``promote --trial N`` writes it)."""
    by_number = {r.number: r for r in rows}
    front = sorted((by_number[t.number] for t in study.best_trials), key=lambda r: r.values or ())
    complete = len([r for r in rows if r.values is not None])
    targets: tuple[tuple[str, Callable[[Any], float]], ...] = (
        ("loss", lambda t: float(t.values[0])),
        ("judge_score", lambda t: -float(t.values[1])),  # PED-ANOVA ranks lower as better
    )
    return SweepAnalysis(
        sweep=sweep,
        space=space,
        rows=rows,
        best=None,
        best_interval=None,
        repeats=0,
        importance=_importance(study, complete),
        step_times_by_gpu_class=_step_times(workspace, sweep.id),
        pareto_front=tuple(front),
        importance_by_objective={
            name: _importance(study, complete, target=target) for name, target in targets
        },
    )


def _per_sample_objectives(row: TrialRow, weight: float) -> list[float]:
    """The objective as each judged sample alone would make it, ``(1 − w)·loss + w·(1 − s)``:
    their mean is the trial's objective, so their bootstrap is an interval of the objective
    (not of the judge score, which lives on another scale)."""
    assert row.loss is not None
    return [(1 - weight) * row.loss + weight * (1 - float(s)) for s in row.judge_scores]


def sweep_report(
    workspace: Workspace, sweep_id: str, *, storage_url: str | None = None
) -> dict[str, Any]:
    analysis = analyse_sweep(workspace, sweep_id, storage_url=storage_url)
    _write_best(workspace, analysis)
    return analysis.to_dict()


def _write_best(workspace: Workspace, analysis: SweepAnalysis) -> None:
    """A weighted sweep's best trial into ``winner.json`` (a pareto sweep has none)."""
    best = analysis.best
    if best is not None:
        _write_winner(workspace, analysis.sweep, best, objective=best.objective)


def _write_winner(
    workspace: Workspace,
    sweep: SweepRecord,
    row: TrialRow,
    *,
    objective: float | None = None,
    values: tuple[float, ...] | None = None,
) -> None:
    """``winner.json``: what later sweeps on this architecture × task start from."""
    winner = Winner(
        sweep=sweep.id,
        number=row.number,
        params=row.params,
        objective=objective,
        values=values,
        backend=sweep.backend,
        architecture=sweep.architecture,
        task=sweep.task,
    )
    atomic_write_text(
        workspace.root / "sweeps" / sweep.id / "winner.json",
        json.dumps(winner.to_dict(), indent=2) + "\n",
    )


def _importance(
    study: Any, complete: int, *, target: Callable[[Any], float] | None = None
) -> Importance:
    if complete < MIN_COMPLETE_FOR_IMPORTANCE:
        return Importance(
            {},
            f"{complete} completed trial(s): parameter importance needs at least "
            f"{MIN_COMPLETE_FOR_IMPORTANCE}",
        )
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

    try:
        with warnings.catch_warnings():
            # with a target Optuna reminds that lower is better: the judge's is negated
            warnings.filterwarnings("ignore", message="PedAnovaImportanceEvaluator computes")
            values = get_param_importances(
                study, evaluator=PedAnovaImportanceEvaluator(), target=target
            )
    except (ValueError, RuntimeError) as exc:
        return Importance({}, f"not computed: {exc}")
    return Importance({k: float(v) for k, v in values.items()}, IMPORTANCE_METHOD)


def _chosen(analysis: SweepAnalysis, trial: int | None) -> tuple[TrialRow, str]:
    """The trial to promote and how the card's source line describes it."""
    sweep_id = analysis.sweep.id
    if not analysis.pareto:
        best = analysis.best
        if best is None:
            raise CheckFailed(
                f"sweep {sweep_id} has no scored trial to promote",
                hint=f"run `kura sweep worker {sweep_id}` first",
            )
        if trial is not None and trial != best.number:
            raise UsageError(
                f"sweep {sweep_id} is weighted: it promotes its best trial "
                f"({best.number}), not trial {trial}",
                hint=f"`kura sweep promote {sweep_id}` without --trial",
            )
        return best, (
            f"sweep {sweep_id} (trial {best.number}, objective {float(best.objective or 0.0):.4g})"
        )
    front = analysis.pareto_front
    if not front:
        raise CheckFailed(
            f"sweep {sweep_id} has no completed trial on its Pareto front yet",
            hint=f"run `kura sweep worker {sweep_id}` first",
        )
    listed = "; ".join(
        f"{r.number} (loss {r.values[0]:.4g}, judge {r.values[1]:.3g})"
        for r in front
        if r.values is not None
    )
    chosen = next((r for r in front if r.number == trial), None)
    if chosen is None or chosen.values is None:
        said = "no --trial given" if trial is None else f"trial {trial} is not on the front"
        raise UsageError(
            f"sweep {sweep_id} is a Pareto sweep ({said}): choose one trial of its front: {listed}",
            hint=f"`kura sweep promote {sweep_id} --trial N` (`kura sweep report {sweep_id}` "
            "shows each trial's samples and values)",
        )
    loss, judge = chosen.values
    return chosen, (
        f"sweep {sweep_id} (trial {chosen.number} of the Pareto front, chosen: loss "
        f"{loss:.4g}, judge {judge:.3g})"
    )


def promote_winner(
    workspace: Workspace,
    sweep_id: str,
    *,
    section: str | None = None,
    storage_url: str | None = None,
    trial: int | None = None,
) -> dict[str, Any]:
    """Write the best trial's values (a pareto sweep: the trial of its front a person chose,
    ``trial``) into the architecture's card as ``source: sweep <id>`` lines, plus one
    ``sweep.curated.<id>`` line so later sweeps start from it; ``winner.json`` too."""
    from kura.knowledge.baselines import card_path
    from kura.knowledge.cards import SECTIONS, entry_line, insert_entry, parse_card, read_card
    from kura.sweep.warmstart import CURATED_PREFIX

    analysis = analyse_sweep(workspace, sweep_id, storage_url=storage_url)
    _write_best(workspace, analysis)
    best, source = _chosen(analysis, trial)
    sweep = analysis.sweep
    target = section or sweep.task or "all"
    if target not in SECTIONS:
        raise UsageError(f"--task {target!r} is not a card section", hint=", ".join(SECTIONS))
    if analysis.pareto and best.values is not None:
        _write_winner(workspace, sweep, best, values=best.values)
    added = {}
    with workspace.lock():
        path = card_path(workspace, sweep.backend, sweep.architecture)
        text = read_card(path) or (f"# {sweep.architecture} on {sweep.backend} — knowledge card\n")
        entries, _ = parse_card(text)
        for key, value in best.params.items():
            if any(e.key == key and e.section == target and e.value == value for e in entries):
                continue
            text = insert_entry(text, target, entry_line(key, value, source))
            added[key] = value
        curated_key = CURATED_PREFIX + sweep_id.replace("-", "_")
        if not any(e.key == curated_key for e in entries):
            line = entry_line(curated_key, dict(best.params), source)
            text = insert_entry(text, target, line)
        atomic_write_text(path, text)
    return {
        "kind": "sweep-promote",
        "sweep": sweep_id,
        "card": workspace.relative(path),
        "section": target,
        "added": added,
        "source": source,
    }
