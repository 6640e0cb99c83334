"""`kura sweep status|report|promote`: the trials table, the objective per trial, parameter
importance, the best trial with a bootstrap interval, and the winner into a card.

The objective is recomputed from each trial's recorded parts, so human ratings given after a
trial finished (``kura run evaluate``) count; the value the sampler was told is shown beside
it. Step times are summarised per GPU class and never compared across classes. The interval
is a bootstrap over the repeated measurements of the best config (trials with the same
params, i.e. seeds, and per-sample judge scores); with one measurement the report says so.

A ``pareto`` sweep has no single best: its report carries the same keys (``best`` and its
interval empty, ``objective`` None per row) and adds ``mode``, ``directions``, each row's
``values`` (loss, judge score) and ``judge_score``, ``pareto_front`` (Optuna's
``study.best_trials``, feasible trials only, by loss), the ``unscored`` trials, and parameter
importance per objective. ``promote`` then takes the trial a person chose from the front.
"""

from __future__ import annotations

import json
import random
import statistics
import warnings
from typing import Any

from kura.errors import CheckFailed, UsageError
from kura.fsutil import atomic_write_text
from kura.workspace import Workspace

__all__ = ["bootstrap_ci", "promote_winner", "sweep_report", "sweep_status"]


def bootstrap_ci(
    values: list[float], *, rounds: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile interval of the mean; None with fewer than two values."""
    if len(values) < 2:
        return None
    rng = random.Random(seed)
    means = sorted(
        statistics.fmean(rng.choices(values, k=len(values))) for _ in range(rounds)
    )
    low = means[int((1 - level) / 2 * rounds)]
    high = means[min(rounds - 1, int((1 + level) / 2 * rounds))]
    return (low, high)


def _rows(workspace: Workspace, sweep: Any, study: Any, objective: Any) -> list[dict[str, Any]]:
    from kura.sweep.objective import judge_scores

    pareto = objective.mode == "pareto"
    rows = []
    for trial in study.get_trials(deepcopy=False):
        attrs = trial.user_attrs
        complete = trial.state.name == "COMPLETE"
        told = None if pareto or not complete else trial.value
        recorded = attrs.get("kura.objective") or {}
        value = None if pareto else recorded.get("value")
        run_id = attrs.get("kura.run_id")
        if objective.judge == "ratings" and run_id and recorded:
            scores = judge_scores("ratings", workspace.run_dir(run_id), ())
            if scores:
                w = objective.judge_weight
                value = (1 - w) * recorded["loss"] + w * (1 - scores[-1])
        status = attrs.get("kura.status") or trial.state.name.lower()
        if attrs.get("kura.lost"):
            status = "lost"
        row = {
            "number": trial.number,
            "state": trial.state.name,
            "status": status,
            "params": dict(trial.params),
            "source": attrs.get("kura.source", "sampler (TPE)"),
            "objective": value,
            "told": told,
            "loss": recorded.get("loss"),
            "judge_scores": recorded.get("judge_scores", []),
            "gpu_class": attrs.get("kura.gpu_class"),
            "host": attrs.get("kura.host"),
            "worker": attrs.get("kura.worker"),
            "run": run_id,
            "estimate": attrs.get("kura.estimate"),
            "stopped": attrs.get("kura.stopped"),
            "reason": attrs.get("kura.reason") or attrs.get("kura.lost"),
            "requeued_from": attrs.get("kura.requeued_from"),
            "gpu_hours": attrs.get("kura.gpu_hours"),
        }
        if pareto:
            row["values"] = list(trial.values) if complete else None
            row["judge_score"] = recorded.get("judge_score")
        rows.append(row)
    return rows


def _open(workspace: Workspace, sweep_id: str, storage_url: str | None) -> tuple[Any, Any, Any]:
    from kura.backends.registry import get_backend
    from kura.sweep.envelope import checked_space
    from kura.sweep.records import load_sweep
    from kura.sweep.study import check_mode, load_study

    sweep = load_sweep(workspace, sweep_id)
    space = checked_space(workspace, sweep, get_backend(sweep.backend))
    study = load_study(workspace, sweep, storage_url=storage_url)
    check_mode(study, sweep, space.spec.objective.mode)
    return sweep, space, study


def sweep_status(
    workspace: Workspace, sweep_id: str, *, storage_url: str | None = None, reap: bool = True,
    lease_seconds: float | None = None,
) -> dict[str, Any]:
    from kura.sweep.lease import DEFAULT_LEASE_SECONDS, reap_stale

    sweep, space, study = _open(workspace, sweep_id, storage_url)
    reaped = (
        [r.to_dict() for r in reap_stale(study, lease_seconds=lease_seconds or
                                         DEFAULT_LEASE_SECONDS)]
        if reap else []
    )
    rows = _rows(workspace, sweep, study, space.spec.objective)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    approved = (workspace.root / "sweeps" / sweep_id / "approval.json").is_file()
    return {
        "kind": "sweep-status",
        "sweep": sweep_id,
        "base_run": sweep.base_run,
        "approved": approved,
        "trials": sweep.trials,
        "counts": counts,
        "rows": rows,
        "reaped": reaped,
    }


def _step_times(workspace: Workspace, sweep_id: str) -> dict[str, dict[str, Any]]:
    from kura.sweep.records import load_trials

    by_class: dict[str, list[float]] = {}
    for record in load_trials(workspace, sweep_id):
        if record.seconds_per_step:
            by_class.setdefault(record.gpu_class, []).append(record.seconds_per_step)
    return {
        gpu: {"trials": len(v), "median_seconds_per_step": statistics.median(v)}
        for gpu, v in by_class.items()
    }


def sweep_report(
    workspace: Workspace, sweep_id: str, *, storage_url: str | None = None
) -> dict[str, Any]:
    sweep, space, study = _open(workspace, sweep_id, storage_url)
    rows = _rows(workspace, sweep, study, space.spec.objective)
    if space.spec.objective.mode == "pareto":
        return _pareto_report(workspace, sweep, space, study, rows)
    scored = [r for r in rows if r["objective"] is not None]
    best = min(scored, key=lambda r: r["objective"]) if scored else None
    interval = None
    repeats: list[float] = []
    if best is not None:
        same = [r for r in scored if r["params"] == best["params"]]
        repeats = [float(r["objective"]) for r in same]
        if len(repeats) < 2 and best["judge_scores"]:
            repeats = [float(s) for s in best["judge_scores"]]
        interval = bootstrap_ci(repeats)
    importance, why = _importance(study, len([r for r in rows if r["state"] == "COMPLETE"]))
    document = {
        "kind": "sweep-report",
        "sweep": sweep_id,
        "base_run": sweep.base_run,
        "objective": space.spec.objective.model_dump(mode="json"),
        "rows": rows,
        "best": best,
        "best_interval": None if interval is None else list(interval),
        "best_interval_note": (
            f"95 % bootstrap interval over {len(repeats)} measurements"
            if interval is not None
            else "one measurement of the best config: no interval (repeat it with other "
            "seeds to get one)"
        ),
        "importance": importance,
        "importance_note": why,
        "step_times_by_gpu_class": _step_times(workspace, sweep_id),
        "parallel_coordinates": [
            {**r["params"], "objective": r["objective"]} for r in scored
        ],
    }
    if best is not None:
        _write_winner(workspace, sweep, best, {"objective": best["objective"]})
    return document


def _write_winner(
    workspace: Workspace, sweep: Any, row: dict[str, Any], scored: dict[str, Any]
) -> None:
    """``winner.json``: what later sweeps on this architecture × task start from."""
    winner = {
        "sweep": sweep.id,
        "number": row["number"],
        "params": row["params"],
        **scored,
        "architecture": sweep.architecture,
        "task": sweep.task,
    }
    atomic_write_text(
        workspace.root / "sweeps" / sweep.id / "winner.json",
        json.dumps(winner, indent=2) + "\n",
    )


PARETO_DIRECTIONS = {"loss": "minimize", "judge_score": "maximize"}


def _pareto_report(
    workspace: Workspace, sweep: Any, space: Any, study: Any, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """The report of a two-objective sweep: the front instead of one best (no winner.json:
    a person chooses, and ``promote --trial N`` writes it)."""
    by_number = {r["number"]: r for r in rows}
    front = sorted(
        (by_number[t.number] for t in study.best_trials), key=lambda r: tuple(r["values"])
    )
    complete = [r for r in rows if r["values"] is not None]
    importance, why = _importance(study, len(complete))
    per_objective = {
        name: _importance(study, len(complete), target=target)[0]
        for name, target in (
            ("loss", lambda t: t.values[0]),
            ("judge_score", lambda t: -t.values[1]),
        )
    }
    return {
        "kind": "sweep-report",
        "sweep": sweep.id,
        "base_run": sweep.base_run,
        "objective": space.spec.objective.model_dump(mode="json"),
        "rows": rows,
        "best": None,
        "best_interval": None,
        "best_interval_note": "objective.mode pareto: no single best trial; choose one of "
        "pareto_front and promote it (`kura sweep promote "
        f"{sweep.id} --trial N`)",
        "importance": importance,
        "importance_note": why + (" (to reach the Pareto front)" if importance else ""),
        "step_times_by_gpu_class": _step_times(workspace, sweep.id),
        "parallel_coordinates": [
            {**r["params"], "loss": r["values"][0], "judge_score": r["values"][1]}
            for r in complete
        ],
        "mode": "pareto",
        "directions": dict(PARETO_DIRECTIONS),
        "pareto_front": front,
        "pareto_front_note": (
            f"{len(front)} trial(s) no other completed, feasible trial beats on both loss "
            "and judge score (Optuna's study.best_trials), by loss"
            if front
            else "no completed trial yet"
        ),
        "unscored": [r["number"] for r in rows if r["status"] == "unscored"],
        "importance_by_objective": per_objective,
    }


def _importance(
    study: Any, complete: int, *, target: Any = None
) -> tuple[dict[str, float], str]:
    if complete < 3:
        return {}, f"{complete} completed trial(s): parameter importance needs at least 3"
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

    try:
        with warnings.catch_warnings():
            # with a target Optuna reminds that lower is better: the judge's is negated
            warnings.filterwarnings("ignore", message="PedAnovaImportanceEvaluator computes")
            values = get_param_importances(
                study, evaluator=PedAnovaImportanceEvaluator(), target=target
            )
    except (ValueError, RuntimeError) as exc:
        return {}, f"not computed: {exc}"
    return {k: float(v) for k, v in values.items()}, "PED-ANOVA (Optuna), normalised"


def _chosen(report: dict[str, Any], sweep_id: str, trial: int | None) -> tuple[Any, str]:
    """The trial to promote and how the card's source line describes it."""
    if report.get("mode") != "pareto":
        best = report["best"]
        if best is None:
            raise CheckFailed(
                f"sweep {sweep_id} has no scored trial to promote",
                hint=f"run `kura sweep worker {sweep_id}` first",
            )
        if trial is not None and trial != best["number"]:
            raise UsageError(
                f"sweep {sweep_id} is weighted: it promotes its best trial "
                f"({best['number']}), not trial {trial}",
                hint=f"`kura sweep promote {sweep_id}` without --trial",
            )
        return best, f"sweep {sweep_id} (trial {best['number']}, objective {best['objective']:.4g})"
    front = report["pareto_front"]
    if not front:
        raise CheckFailed(
            f"sweep {sweep_id} has no completed trial on its Pareto front yet",
            hint=f"run `kura sweep worker {sweep_id}` first",
        )
    listed = "; ".join(
        f"{r['number']} (loss {r['values'][0]:.4g}, judge {r['values'][1]:.3g})" for r in front
    )
    chosen = next((r for r in front if r["number"] == trial), None)
    if chosen is None:
        said = "no --trial given" if trial is None else f"trial {trial} is not on the front"
        raise UsageError(
            f"sweep {sweep_id} is a Pareto sweep ({said}): choose one trial of its front: "
            f"{listed}",
            hint=f"`kura sweep promote {sweep_id} --trial N` (`kura sweep report {sweep_id}` "
            "shows each trial's samples and values)",
        )
    loss, judge = chosen["values"]
    return chosen, (
        f"sweep {sweep_id} (trial {chosen['number']} of the Pareto front, chosen: loss "
        f"{loss:.4g}, judge {judge:.3g})"
    )


def promote_winner(
    workspace: Workspace, sweep_id: str, *, section: str | None = None,
    storage_url: str | None = None, trial: int | None = None,
) -> dict[str, Any]:
    """Write the best trial's values (a pareto sweep: the trial of its front a person chose,
    ``trial``) into the architecture's card as ``source: sweep <id>`` lines, plus one
    ``sweep.curated.<id>`` line so later sweeps start from it."""
    from kura.knowledge.baselines import card_path
    from kura.knowledge.cards import SECTIONS, entry_line, insert_entry, parse_card, read_card
    from kura.sweep.warmstart import CURATED_PREFIX

    report = sweep_report(workspace, sweep_id, storage_url=storage_url)
    best, source = _chosen(report, sweep_id, trial)
    from kura.sweep.records import load_sweep

    sweep = load_sweep(workspace, sweep_id)
    target = section or sweep.task or "all"
    if target not in SECTIONS:
        raise UsageError(f"--task {target!r} is not a card section", hint=", ".join(SECTIONS))
    if report.get("mode") == "pareto":
        _write_winner(workspace, sweep, best, {"values": best["values"]})
    added = {}
    with workspace.lock():
        path = card_path(workspace, sweep.architecture)
        text = read_card(path) or f"# {sweep.architecture} — knowledge card\n"
        entries, _ = parse_card(text)
        for key, value in best["params"].items():
            if any(e.key == key and e.section == target and e.value == value for e in entries):
                continue
            text = insert_entry(text, target, entry_line(key, value, source))
            added[key] = value
        curated_key = CURATED_PREFIX + sweep_id.replace("-", "_")
        if not any(e.key == curated_key for e in entries):
            line = entry_line(curated_key, dict(best["params"]), source)
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
