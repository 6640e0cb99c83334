"""`kura sweep new|plan|approve|worker|status|report|promote|collect`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kura.cli._output import and_next, new_table
from kura.cli.nexts import (
    after_sweep_approve,
    after_sweep_collect,
    after_sweep_plan,
    after_sweep_promote,
    after_sweep_report,
    after_sweep_status,
    after_sweep_worker,
    with_next,
)
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["sweep_group"]

_STORAGE_HELP = "Study storage: `journal` (a file in the sweep folder) or postgresql://…"


class _SweepCommand(click.Command):
    """A sweep command: it needs the sweep extra (Optuna), checked after its arguments are
    parsed (so ``--help`` works without it) and before anything runs."""

    def invoke(self, ctx: click.Context) -> Any:
        from kura.extras import SWEEP_MODULES, require_extra

        require_extra("sweep", SWEEP_MODULES, f"`kura sweep {self.name}`")
        return super().invoke(ctx)


class _SweepGroup(click.Group):
    command_class = _SweepCommand


@click.group("sweep", cls=_SweepGroup)
def sweep_group() -> None:
    """Hyperparameter sweeps over a base run: one approval, many trials, many machines."""


@sweep_group.command("new")
@click.option("--from", "base_run", required=True, help="The base run (its recipe: the baseline).")
@click.option(
    "--space",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="The space file (axes, objective, early stop).",
)
@click.option("--trials", type=int, default=20, show_default=True)
@click.option("--budget-hours", type=float, default=None, help="GPU-hours the sweep may use.")
@click.option("--budget-usd", type=float, default=None, help="Dollars the sweep may use.")
@click.option("--storage", default="journal", show_default=True, help=_STORAGE_HELP)
@click.pass_obj
def new_command(
    state: AppState,
    base_run: str,
    space: Path,
    trials: int,
    budget_hours: float | None,
    budget_usd: float | None,
    storage: str,
) -> None:
    """Create a sweep: check the space, carve the validation split, warm-start the study."""
    from kura.sweep.new import new_sweep

    doc = new_sweep(
        state.workspace(),
        base_run=base_run,
        space=space,
        trials=trials,
        budget_hours=budget_hours,
        budget_usd=budget_usd,
        storage=storage,
    )
    state.out.result(doc, _render_new)


def _render_new(console: Console, doc: dict[str, Any]) -> None:
    console.print(f"Sweep [bold]{doc['id']}[/] over run {doc['base_run']} ({doc['backend']})")
    for axis in doc["axes"]:
        console.print(f"  axis {axis['key']}: {axis.get('choices') or [axis['low'], axis['high']]}")
    for config in doc["warm_start"]:
        console.print(f"  warm start {config['name']}: {config['source']}")
    for note in doc["warm_start_notes"]:
        console.print(f"  [yellow]note:[/] {note}")
    for step in doc["next"]:
        console.print(f"next: `{step['command']}` ({step['why']})")


@sweep_group.command("plan")
@click.argument("sweep_id")
@click.option("--gpu", "gpu_id", help="GPU class to estimate on (default: base run, then local).")
@click.option("--trials", type=int, default=None)
@click.option("--budget-hours", type=float, default=None)
@click.option("--budget-usd", type=float, default=None)
@click.pass_obj
def plan_command(
    state: AppState,
    sweep_id: str,
    gpu_id: str | None,
    trials: int | None,
    budget_hours: float | None,
    budget_usd: float | None,
) -> None:
    """The one review: space, trial count, time and cost band, what trials change."""
    from kura.sweep.envelope import plan_sweep

    doc = plan_sweep(
        state.workspace(),
        sweep_id,
        gpu=gpu_id,
        trials=trials,
        budget_hours=budget_hours,
        budget_usd=budget_usd,
    ).model_dump(mode="json", by_alias=True)
    state.out.result(with_next(doc, after_sweep_plan(doc)), and_next(_render_plan))


def _render_plan(console: Console, doc: dict[str, Any]) -> None:
    from rich.markdown import Markdown

    hours = doc["estimate"]["total_hours"]
    total = "unknown GPU-hours" if hours is None else f"{hours[0]}–{hours[1]} GPU-hours"
    console.print(
        Markdown(
            f"**Sweep {doc['sweep']}**: {doc['trials']} trials on {doc['gpu']['id']}, "
            f"{total}; plan.md in the sweep folder"
        )
    )


@sweep_group.command("approve")
@click.argument("sweep_id")
@click.pass_obj
def approve_command(state: AppState, sweep_id: str) -> None:
    """Approve the sweep's plan: every trial then runs inside it without new approvals."""
    from kura.sweep.envelope import approve_sweep, planned_gpu

    workspace = state.workspace()
    approval = approve_sweep(workspace, sweep_id).model_dump(mode="json")
    doc = {**approval, "gpu": planned_gpu(workspace, sweep_id)}
    state.out.result(
        with_next(doc, after_sweep_approve(doc)),
        and_next(lambda c, d: c.print(f"Sweep [bold]{d['sweep']}[/] approved")),
    )


@sweep_group.command("worker")
@click.argument("sweep_id")
@click.option("--gpu", "gpu_id", help="This machine's GPU class (default: detected).")
@click.option("--storage", default=None, help=_STORAGE_HELP + " (default: the sweep's).")
@click.option("--seed", type=int, default=None, help="Sampler seed (default: distinct per worker).")
@click.option("--max-trials", type=int, default=None, help="Stop after this many trials.")
@click.option("--lease-seconds", type=float, default=None, help="Lease on a running trial.")
@click.option(
    "--approval",
    default=None,
    help="Run only under the sweep approval of this sha256 (set by `kura sweep launch`).",
)
@click.pass_obj
def worker_command(
    state: AppState,
    sweep_id: str,
    gpu_id: str | None,
    storage: str | None,
    seed: int | None,
    max_trials: int | None,
    lease_seconds: float | None,
    approval: str | None,
) -> None:
    """Ask for a trial, plan it on this GPU, run it, report; repeat until done."""
    from kura.sweep.worker import run_worker

    doc = run_worker(
        state.workspace(),
        sweep_id,
        gpu=gpu_id,
        storage_url=storage,
        seed=seed,
        max_trials=max_trials,
        lease_seconds=lease_seconds,
        approval=approval,
    )
    state.out.result(with_next(doc, after_sweep_worker(doc)), and_next(_render_worker))


@sweep_group.command("launch")
@click.argument("sweep_id")
@click.option("--workers", type=click.IntRange(1, 64), required=True, help="Managed jobs to start.")
@click.option("--gpu", "gpu_id", required=True, help="The GPU class each worker rents.")
@click.option(
    "--setup-script",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Shell script that installs Kura and the trainer on each worker's machine.",
)
@click.option(
    "--storage",
    default=None,
    help="The study's postgresql:// URL with its password (default: $KURA_SWEEP_STORAGE); "
    "handed to SkyPilot as a secret, never written to a file.",
)
@click.pass_obj
def launch_command(
    state: AppState,
    sweep_id: str,
    workers: int,
    gpu_id: str,
    setup_script: Path,
    storage: str | None,
) -> None:
    """Start N `kura sweep worker` SkyPilot managed jobs against the sweep's PostgreSQL study."""
    from kura.sweep.cloud import launch_sweep_workers

    doc = launch_sweep_workers(
        state.workspace(),
        sweep_id,
        workers=workers,
        gpu=gpu_id,
        setup_script=setup_script,
        storage_url=storage,
    ).to_dict()
    state.out.result(doc, and_next(_render_launch))


def _render_launch(console: Console, doc: dict[str, Any]) -> None:
    for job in doc["workers"]:
        console.print(f"worker {job['name']} (seed {job['seed']}): {job['task']}")


def _render_worker(console: Console, doc: dict[str, Any]) -> None:
    console.print(f"Worker {doc['worker']} ({doc['gpu_class']}, seed {doc['seed']})")
    for trial in doc["trials"]:
        console.print(
            f"  trial {trial['number']} ({trial['run']}): {trial['status']} "
            f"{'' if trial['objective'] is None else trial['objective']}"
        )
    console.print(f"stopped: {doc['stopped']}")


def _table(rows: list[dict[str, Any]]) -> Table:
    table = new_table("#", "status", "objective", "params", "gpu", "source", box=None)
    for row in rows:
        value, values = row["objective"], row.get("values")
        shown = (
            f"{value:.4f}"
            if value is not None
            else f"loss {values[0]:.4f}, judge {values[1]:.3f}"
            if values
            else ""
        )
        table.add_row(
            str(row["number"]),
            row["status"],
            shown,
            ", ".join(f"{k.removeprefix('training.')}={v}" for k, v in row["params"].items()),
            row["gpu_class"] or "",
            row["source"],
        )
    return table


@sweep_group.command("status")
@click.argument("sweep_id")
@click.option("--storage", default=None, help=_STORAGE_HELP + " (default: the sweep's).")
@click.pass_obj
def status_command(state: AppState, sweep_id: str, storage: str | None) -> None:
    """Trials so far (and any lost worker's trial, re-queued)."""
    from kura.sweep.report import sweep_status

    doc = sweep_status(state.workspace(), sweep_id, storage_url=storage)

    def render(console: Console, d: dict[str, Any]) -> None:
        from kura.cli.human import counts_text

        console.print(f"Sweep [bold]{d['sweep']}[/]: {counts_text(d['counts'])}")
        console.print(_table(d["rows"]))

    state.out.result(with_next(doc, after_sweep_status(doc)), and_next(render))


@sweep_group.command("report")
@click.argument("sweep_id")
@click.option("--storage", default=None, help=_STORAGE_HELP + " (default: the sweep's).")
@click.pass_obj
def report_command(state: AppState, sweep_id: str, storage: str | None) -> None:
    """Trials table, objective per trial, importance, best trial with its interval."""
    from kura.sweep.report import sweep_report

    doc = sweep_report(state.workspace(), sweep_id, storage_url=storage)

    def render(console: Console, d: dict[str, Any]) -> None:
        console.print(_table(d["rows"]))
        for row in d.get("pareto_front", []):
            loss, judge = row["values"]
            console.print(f"front: trial {row['number']} loss {loss:.4f} judge {judge:.3f}")
        if d.get("mode") == "pareto":
            console.print(d["pareto_front_note"] + "; " + d["best_interval_note"])
        best = d["best"]
        if best:
            console.print(
                f"best: trial {best['number']} objective {best['objective']:.4f} "
                f"({d['best_interval_note']})"
            )
        console.print(f"importance: {d['importance'] or d['importance_note']}")

    state.out.result(with_next(doc, after_sweep_report(doc)), and_next(render))


@sweep_group.command("promote")
@click.argument("sweep_id")
@click.option("--task", default=None, help="Card section (default: the base run's task).")
@click.option(
    "--trial",
    type=int,
    default=None,
    help="A pareto sweep: the trial of its front to promote (the report lists them).",
)
@click.pass_obj
def promote_command(state: AppState, sweep_id: str, task: str | None, trial: int | None) -> None:
    """Write the winner into the architecture's card (`source: sweep <id>`)."""
    from kura.sweep.report import promote_winner

    doc = promote_winner(state.workspace(), sweep_id, section=task, trial=trial)
    state.out.result(
        with_next(doc, after_sweep_promote(doc)),
        and_next(lambda c, d: c.print(f"{d['card']} ## {d['section']}: {d['added']}")),
    )


@sweep_group.command("collect")
@click.argument("sweep_id")
@click.option(
    "--from",
    "sources",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Another machine's workspace (mounted or synced); repeatable.",
)
@click.option("--storage", default=None, help=_STORAGE_HELP + " (default: the sweep's).")
@click.pass_obj
def collect_command(
    state: AppState, sweep_id: str, sources: tuple[Path, ...], storage: str | None
) -> None:
    """Gather every trial's artifacts into this machine's sweep folder (sha256 checked)."""
    from kura.sweep.collect import collect_sweep

    doc = collect_sweep(state.workspace(), sweep_id, sources=list(sources), storage_url=storage)
    state.out.result(
        with_next(doc, after_sweep_collect(doc)),
        and_next(lambda c, d: c.print(f"Sweep {d['sweep']}: {d['counts']}")),
    )
