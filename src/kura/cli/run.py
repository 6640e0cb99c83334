"""`kura run new|compile|show`: draft a run, compile it for the trainer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kura.cli._output import and_next, new_table
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

    from kura.runs.cloudfollow import CloudStatus
    from kura.runs.collect import CollectReport
    from kura.runs.evidence import RunEvaluation
    from kura.runs.imported import RunImport
    from kura.runs.results import CancelResult, LaunchResult, LogTail, RunList, RunStatus

__all__ = ["run_group"]


@click.group("run")
def run_group() -> None:
    """Draft, compile, plan, approve and follow training runs."""


@run_group.command("new")
@click.option("--dataset", "datasets", multiple=True, help="Dataset name (repeatable).")
@click.option("--base", help="Model bundle id (`kura model bundles`).")
@click.option(
    "--task",
    type=click.Choice(["character", "style", "concept", "paired-edit", "video"]),
    help="What the LoRA learns (default: the datasets' intent or inspection).",
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Any run.yaml path.")
@click.option("--backend", default=None, help="Trainer (`kura model bundles` lists each bundle's).")
@click.option(
    "--from",
    "source",
    metavar="RUN",
    help="Draft from RUN's intent: its datasets, bundle, trainer, task and the values you set "
    "(the options given here override them). The way on after a run was cancelled or failed.",
)
@click.pass_obj
def new_command(
    state: AppState,
    datasets: tuple[str, ...],
    base: str | None,
    task: str | None,
    sets: tuple[str, ...],
    backend: str | None,
    source: str | None,
) -> None:
    """Draft runs/<id>/run.yaml; every drafted value says where it came from."""
    from kura.errors import UsageError
    from kura.runs.copy import intent_of
    from kura.runs.new import create_run

    workspace = state.workspace()
    copied: tuple[str, ...] = ()
    if source is not None:
        intent = intent_of(workspace, source)
        datasets = datasets or intent.datasets
        base = base or intent.base
        backend = backend or intent.backend
        task = task or intent.task
        copied = intent.sets
    if not datasets or base is None:
        raise UsageError(
            "a new run needs --dataset and --base (or --from RUN)",
            hint="e.g. `kura run new --dataset NAME --base BUNDLE`; `kura model bundles` lists "
            "the bundles",
        )
    created = create_run(
        workspace,
        datasets=list(datasets),
        base=base,
        task=task,
        sets=[*copied, *sets],
        backend=backend,
    )
    state.out.result(created.to_dict(), _render_new)


@and_next
def _render_new(console: Console, doc: dict[str, Any]) -> None:
    console.print(f"Run [bold]{doc['run']}[/] drafted at {doc['path']} ({doc['architecture']})")
    console.print(f"task: {doc['task'] or 'unset'} — {doc['task_evidence']}")
    console.print(f"[dim]{doc['provenance']}[/]")


@run_group.command("compile")
@click.argument("run_id")
@click.pass_obj
def compile_command(state: AppState, run_id: str) -> None:
    """Write runs/<id>/compiled/: dataset TOML, exact trainer commands, container, lock."""
    from kura.cli.nexts import after_compile, with_next
    from kura.runs.compile import compile_in_workspace

    doc = compile_in_workspace(state.workspace(), run_id).to_dict()
    state.out.result(with_next(doc, after_compile(doc)), and_next(render_compile))


def render_compile(console: Console, doc: dict[str, Any]) -> None:
    console.print(f"Run [bold]{doc['run']}[/] compiled: {', '.join(doc['files'])}")
    for step in doc["steps"]:
        console.print(f"[bold]{step['name']}[/]: {' '.join(step['argv'])}", soft_wrap=True)
    table = new_table("check", "status", "detail", box=None)
    for check in doc["validate"]:
        colour = {"ok": "green", "pending": "yellow"}.get(check["status"], "red")
        table.add_row(check["check"], f"[{colour}]{check['status']}[/]", check["detail"])
    console.print(table)
    for warning in doc["warnings"]:
        console.print(f"[yellow]warning:[/] {warning}")


@run_group.command("estimate")
@click.argument("run_id")
@click.option("--gpu", "gpu_id", help="GPU class to judge the fit against (`kura gpus`).")
@click.pass_obj
def estimate_command(state: AppState, run_id: str, gpu_id: str | None) -> None:
    """Peak memory, step time and fit for the run exactly as written."""
    from kura.cli.nexts import after_run_estimate, followed
    from kura.cli.planning import render_estimate
    from kura.runs.estimate import estimate_run

    estimate = followed(estimate_run(state.workspace(), run_id, gpu=gpu_id), after_run_estimate)
    state.out.result(estimate, and_next(render_estimate))


@run_group.command("plan")
@click.argument("run_id")
@click.option("--gpu", "gpu_id", help="GPU class to plan for (default: run.yaml, then local).")
@click.pass_obj
def plan_command(state: AppState, run_id: str, gpu_id: str | None) -> None:
    """Compile, estimate, fit and write plan.md: the one review before approval."""
    from kura.runs.plan import plan_run

    report = plan_run(state.workspace(), run_id, gpu=gpu_id)
    state.out.result(report.to_dict(), _render_plan)


def _render_plan(console: Console, doc: dict[str, Any]) -> None:
    from pathlib import Path

    from rich.markdown import Markdown

    plan = Path(doc["plan"])
    text = plan.read_text(encoding="utf-8") if plan.is_file() else ""
    console.print(Markdown(text) if text else f"plan written to {doc['plan']}")


@run_group.command("approve")
@click.argument("run_id")
@click.option(
    "--accept-risk",
    "accept_risk",
    metavar="REASON",
    help="Approve a plan that does not fit (or ran out of memory before); the reason is "
    "recorded in the approval.",
)
@click.pass_obj
def approve_command(state: AppState, run_id: str, accept_risk: str | None) -> None:
    """Approve the current plan: launch will run exactly this, and refuse anything else."""
    from kura.runs.approval import approve_run

    approval = approve_run(state.workspace(), run_id, accept_risk=accept_risk)
    state.out.result(approval.to_dict(), _render_approval)


def _render_approval(console: Console, doc: dict[str, Any]) -> None:
    console.print(f"Run [bold]{doc['run']}[/] approved ({doc['digest'][:19]}…)")
    risk = doc.get("accepted_risk")
    if risk:
        console.print(f"[yellow]risk accepted:[/] {risk['reason']} ({'; '.join(risk['problems'])})")
    for step in doc.get("next", []):
        console.print(f"next: `{step['command']}` — {step['why']}")


@run_group.command("launch")
@click.argument("run_id")
@click.option("--detach/--foreground", default=True, help="Return at once (default) or wait.")
@click.pass_obj
def launch_command(state: AppState, run_id: str, detach: bool) -> None:
    """Run exactly what was approved (refuses anything changed since)."""
    from kura.runs.launching import launch_run

    state.out.result(launch_run(state.workspace(), run_id, detach=detach), _render_state)


@run_group.command("relaunch")
@click.argument("run_id")
@click.option("--detach/--foreground", default=True)
@click.pass_obj
def relaunch_command(state: AppState, run_id: str, detach: bool) -> None:
    """After an out-of-memory: apply the approved contingency and launch again."""
    from kura.runs.launching import relaunch_run

    state.out.result(relaunch_run(state.workspace(), run_id, detach=detach), _render_state)


@run_group.command("resume")
@click.argument("run_id")
@click.option("--detach/--foreground", default=True)
@click.pass_obj
def resume_command(state: AppState, run_id: str, detach: bool) -> None:
    """Continue training from the last saved trainer state."""
    from kura.runs.launching import resume_run

    state.out.result(resume_run(state.workspace(), run_id, detach=detach), _render_state)


def _render_state(console: Console, result: LaunchResult | CancelResult) -> None:
    run_state = result.state
    console.print(
        f"Run [bold]{result.run}[/]: {run_state.status} (attempt {run_state.attempt}, "
        f"{run_state.executor}) — follow with `kura run watch {result.run}`"
    )
    from kura.runs.results import CancelResult

    if isinstance(result, CancelResult):
        for step in result.next:
            console.print(f"next: `{step.command}` — {step.why}", soft_wrap=True)


@run_group.command("status")
@click.argument("run_id")
@click.pass_obj
def status_command(state: AppState, run_id: str) -> None:
    """State, step / total, epoch, loss, seconds per step, ETA, diagnosis."""
    from kura.runs.following import run_status

    state.out.result(run_status(state.workspace(), run_id), and_next(render_status))


def render_status(console: Console, status: RunStatus) -> None:
    """The status as people read it (``kura.cli.human``); ``next:`` lines follow (and_next)."""
    from rich.markup import escape

    from kura.cli.human import status_lines

    for line in status_lines(status):
        console.print(escape(line), soft_wrap=True)
    if status.cloud is not None:
        _render_cloud(console, status.cloud)


def _render_cloud(console: Console, cloud: CloudStatus) -> None:
    """A cloud run's job: SkyPilot's state, recoveries, resumes, whether it is collected."""
    from rich.markup import escape

    job = cloud.job
    if job is not None:
        reason = f" ({job.failure_reason})" if job.failure_reason else ""
        console.print(escape(f"cloud job {job.name} #{job.job_id}: {job.status}{reason}"))
    if cloud.recoveries:
        console.print(f"recovered by SkyPilot {cloud.recoveries} time(s)")
    for attempt in cloud.attempts:
        where = f"resumed from {attempt.resumed_from}" if attempt.resumed_from else "from the start"
        console.print(escape(f"  job attempt {attempt.number} at {attempt.started_at}: {where}"))
    if cloud.collected_at:
        console.print(f"outputs collected from the bucket at {cloud.collected_at}")
    for problem in (cloud.error, cloud.collect_error):
        if problem:
            console.print(f"[yellow]{escape(problem)}[/]")


@run_group.command("watch")
@click.argument("run_id")
@click.option("--interval", type=float, default=2.0, show_default=True)
@click.pass_obj
def watch_command(state: AppState, run_id: str, interval: float) -> None:
    """Follow a run with a progress bar until it ends (with --json: JSON lines, one
    run-status document per line at every change, the final one last); exit 11 when the
    run failed."""
    import time

    from rich.progress import BarColumn, Progress, TextColumn

    from kura.backends.base import StepProgress
    from kura.cli.human import progress_line
    from kura.runs.following import run_status

    workspace = state.workspace()
    status = run_status(workspace, run_id)
    if state.out.json_mode:
        status = _watch_json_lines(state, run_id, status, interval)
        _exit_if_failed(status)
        return
    if status.state is not None:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[info]}"),
            console=state.out.err,
        ) as bar:
            task = bar.add_task(run_id, total=None, info="")
            while status.state is not None and not status.state.is_terminal:
                progress = status.progress or StepProgress()
                bar.update(
                    task,
                    completed=progress.step or 0,
                    total=progress.total,
                    description=f"{run_id} {status.state.status}",
                    info=progress_line(progress, live=True),
                )
                time.sleep(interval)
                status = run_status(workspace, run_id)
    state.out.result(status, and_next(render_status))
    _exit_if_failed(status)


def _exit_if_failed(status: RunStatus) -> None:
    """A watched run that ended failed exits with :class:`~kura.errors.RunFailed`'s code
    (its document is already printed), so a script sees the failure."""
    from kura.errors import RunFailed

    if status.state is not None and status.state.status == "failed":
        click.get_current_context().exit(RunFailed.exit_code)


def _watch_json_lines(
    state: AppState, run_id: str, status: RunStatus, interval: float
) -> RunStatus:
    """JSON lines: a ``run-status`` document (with its ``kind`` and ``contract``) whenever
    state or progress changes, until the run ends; returns the final status."""
    import json
    import time

    from kura.cli._output import contracted, finite_json
    from kura.runs.following import run_status

    stream = state.out.console.file
    last = None
    while True:
        doc = contracted(status.to_dict())
        line = json.dumps(finite_json(doc), ensure_ascii=False, allow_nan=False, default=str)
        run_state = status.state
        current = run_state and run_state.status, json.dumps(doc["progress"])
        ended = run_state is None or run_state.is_terminal
        if current != last or ended:
            stream.write(line + "\n")
            stream.flush()
            last = current
        if ended:
            return status
        time.sleep(interval)
        status = run_status(state.workspace(), run_id)


@run_group.command("logs")
@click.argument("run_id")
@click.option("--step", help="cache_latents, cache_text_encoder or train (default: current).")
@click.option("--lines", "-n", type=int, default=50, show_default=True)
@click.option("--follow", "-f", is_flag=True, help="Keep printing until the run ends.")
@click.pass_obj
def logs_command(state: AppState, run_id: str, step: str | None, lines: int, follow: bool) -> None:
    """The end of a step's log file (with --follow, the log as it grows, on stderr)."""
    from kura.runs.following import follow_logs, tail_logs

    workspace = state.workspace()
    if follow:
        # People read the stream itself; under --json it goes to stderr and stdout keeps
        # the one document (the tail) written at the end.
        sink = state.out.err.file if state.out.json_mode else state.out.console.file
        for text in follow_logs(workspace, run_id, step=step):
            sink.write(text)
            sink.flush()
        if not state.out.json_mode:
            return
    state.out.result(tail_logs(workspace, run_id, step=step, lines=lines), _render_logs)


def _render_logs(console: Console, tail: LogTail) -> None:
    console.print(tail.text)  # escaped by the output layer


@run_group.command("cancel")
@click.argument("run_id")
@click.pass_obj
def cancel_command(state: AppState, run_id: str) -> None:
    """Stop a run and every process it started."""
    from kura.runs.following import cancel

    state.out.result(cancel(state.workspace(), run_id), _render_state)


@run_group.command("collect")
@click.argument("run_id")
@click.option(
    "--only", multiple=True, metavar="FOLDER", help="Only this bucket folder (output, logs, …)."
)
@click.option(
    "--from-folder",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Read the bucket from where it is mounted here instead of the cloud's CLI.",
)
@click.pass_obj
def collect_command(
    state: AppState, run_id: str, only: tuple[str, ...], from_folder: Path | None
) -> None:
    """Copy a SkyPilot run's LoRA, samples, logs and metrics back from its bucket."""
    from kura.runs.collect import FolderTransport, collect_outputs

    transport = None if from_folder is None else FolderTransport(from_folder)
    report = collect_outputs(state.workspace(), run_id, transport=transport, only=only)
    state.out.result(report, _render_collect)


@and_next
def _render_collect(console: Console, report: CollectReport) -> None:
    for folder in report.folders:
        console.print(
            f"{folder.url} → {folder.local}: {folder.files} file(s), {folder.bytes} bytes"
        )


@run_group.command("list")
@click.pass_obj
def list_command(state: AppState) -> None:
    """Runs with architecture, state, key settings and duration."""
    from kura.runs.following import list_runs

    state.out.result(list_runs(state.workspace()), _render_list)


def _render_list(console: Console, listing: RunList) -> None:
    table = new_table("run", "base", "task", "status", "rank", "lr", "epochs", box=None)
    ids = [run.id for run in listing.runs] + [damaged.id for damaged in listing.damaged]
    # A run id is what the next command needs: never cut short, whatever the terminal width.
    table.columns[0].no_wrap = True
    table.columns[0].min_width = max(map(len, ids), default=3)
    for run in listing.runs:
        settings = run.settings
        table.add_row(
            run.id,
            run.base,
            run.task or "-",
            run.status,
            str(settings.rank),
            f"{settings.learning_rate:g}",
            str(settings.epochs),
        )
    for damaged in listing.damaged:
        table.add_row(damaged.id, "-", "-", "[red]damaged[/red]", "-", "-", "-")
    console.print(table if listing.runs or listing.damaged else "no runs yet; `kura run new`")
    for damaged in listing.damaged:
        where = f"{damaged.file}: " if damaged.file else ""
        console.print(f"[red]damaged[/red] {damaged.id}: {where}{damaged.error} ({damaged.hint})")


@run_group.command("evaluate")
@click.argument("run_id")
@click.option("--rating", type=int, help="1 (unusable) … 5 (excellent).")
@click.option("--notes", help="Your judgement, in your own words.")
@click.option("--epoch", type=int, help="The epoch whose checkpoint was best.")
@click.option("--step", type=int, help="The step whose checkpoint was best (instead).")
@click.pass_obj
def evaluate_command(
    state: AppState,
    run_id: str,
    rating: int | None,
    notes: str | None,
    epoch: int | None,
    step: int | None,
) -> None:
    """Append your judgement, with settings, hardware and measured speed, to notes.md."""
    from kura.runs.evidence import evaluate_run

    evaluation = evaluate_run(
        state.workspace(), run_id, rating=rating, notes=notes, epoch=epoch, step=step
    )
    state.out.result(evaluation, _render_evaluation)


def _render_evaluation(console: Console, evaluation: RunEvaluation) -> None:
    console.print(f"recorded in {evaluation.path}")


@run_group.command("import-aitk")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--gpu", "gpu_id", default=None, help="GPU class it ran on (for evidence).")
@click.pass_obj
def import_aitk_command(state: AppState, path: Path, gpu_id: str | None) -> None:
    """Read an AI-Toolkit job (its YAML and loss_log.db) into a Kura run record."""
    from kura.cli.nexts import after_import, followed
    from kura.runs.imported import import_run

    imported = import_run(state.workspace(), path, backend="ai-toolkit", gpu=gpu_id)
    state.out.result(followed(imported, after_import), and_next(_render_import))


def _render_import(console: Console, imported: RunImport) -> None:
    record = imported.record
    console.print(
        f"Imported [bold]{record.name}[/] as run {imported.id} ({record.status}; bundle "
        f"{record.bundle or 'unknown'}; {len(record.losses)} loss rows; "
        f"{record.seconds_per_step or '?'} s/step)"
    )
    for note in record.notes:
        console.print(f"- {note}")
