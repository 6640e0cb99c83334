"""`kura run status|logs|cancel|list`: what a run is doing, read from its files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kura.errors import InvalidInput, KuraError, NotFound
from kura.nextsteps import NextStep
from kura.runs.results import (
    CancelResult,
    DamagedRun,
    LogTail,
    RunList,
    RunListEntry,
    RunStatus,
    diagnosis_of,
)
from kura.runs.store import list_run_ids, read_run
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.runs.cloudfollow import CloudStatus
    from kura.runs.summaries import RunSummary, StateSummary
    from kura.schema.state import RunState

__all__ = [
    "cancel",
    "damaged_run",
    "follow_logs",
    "list_entry",
    "list_runs",
    "run_status",
    "tail_logs",
]


def run_status(workspace: Workspace, run_id: str) -> RunStatus:
    """State (re-attached if the run was detached), progress, last scalars, diagnosis."""
    from kura.backends.registry import get_backend
    from kura.execution.summary import run_summary

    spec = read_run(workspace, run_id)
    run_dir = workspace.run_dir(run_id)
    backend = get_backend(spec.backend.name)
    labels = backend.loss_labels()
    if not (run_dir / "state.json").exists():
        return RunStatus(
            run_id,
            state=None,
            progress=None,
            scalars=None,
            next=_before_launch(workspace, run_id),
            labels=labels,
        )
    cloud = _cloud_job(workspace, run_id)  # before the summary: it reads collected logs
    summary = run_summary(run_dir, progress=backend.progress, loss_history=backend.loss_history)
    return RunStatus(
        run_id,
        state=summary.state,
        progress=summary.progress,
        scalars=summary.scalars,
        next=_after_status(workspace, run_id, summary.state, cloud),
        labels=labels,
        cloud=cloud,
    )


def _cloud_job(workspace: Workspace, run_id: str) -> CloudStatus | None:
    """A cloud run's job (collected once it ended); None for a local run."""
    from kura.execution.runs import refresh_state
    from kura.runs.cloudfollow import follow_cloud_job

    return follow_cloud_job(workspace, run_id, refresh_state(workspace.run_dir(run_id)))


def _before_launch(workspace: Workspace, run_id: str) -> tuple[NextStep, ...]:
    """A run never launched: the step its files say comes next (approved: launch; planned:
    the plan's own next, approve or its ways round a misfit; drafted, or run.yaml changed
    since its plan: plan, for the plan's GPU class)."""
    from kura.runs.approval import approval_path
    from kura.runs.plan import PLAN_JSON, plan_again, read_plan
    from kura.runs.snapshot import read_run_text, text_digest

    again = plan_again(workspace, run_id)
    if not (workspace.run_dir(run_id) / PLAN_JSON).is_file():
        return (NextStep(again, "drafted: plan it, then approve it"),)
    text, _ = read_run_text(workspace, run_id)
    plan = read_plan(workspace, run_id)
    if plan.run_yaml_digest != text_digest(text):
        return (NextStep(again, "run.yaml changed since its plan: plan again, then approve"),)
    if approval_path(workspace, run_id).is_file():
        return (NextStep(f"kura run launch {run_id}", "approved and never launched: run it"),)
    return tuple(NextStep(s["command"], s["why"]) for s in plan.next)


def _after_status(
    workspace: Workspace, run_id: str, state: RunState, cloud: CloudStatus | None = None
) -> tuple[NextStep, ...]:
    """What follows a run's state: watch it; evaluate and export it; after a failure, why
    it failed and the ways on that work (:func:`kura.runs.launching.ways_on`); a cloud job
    that ended but whose outputs are not here yet: collect them."""
    from kura.runs.launching import ways_on

    if cloud is not None and cloud.collect_error is not None:
        return (NextStep(f"kura run collect {run_id}", cloud.collect_error),)

    if state.status in ("queued", "caching", "training"):
        return (NextStep(f"kura run watch {run_id}", "follow it until it ends"),)
    if state.status == "succeeded":
        return (
            NextStep(f'kura run evaluate {run_id} --rating N --notes "…"', "record the verdict"),
            NextStep(f"kura export {run_id}", "write the LoRA for ComfyUI"),
        )
    if state.status == "failed":
        diagnosis = diagnosis_of(state)
        logs = NextStep(
            f"kura run logs {run_id}", (diagnosis and diagnosis.message) or "read why it failed"
        )
        ways = ways_on(workspace, run_id, state)
        if ways[0].command.startswith("kura run relaunch "):  # the approved contingency first
            return (ways[0], logs, *ways[1:])
        return (logs, *ways)
    if state.status == "cancelled":
        return ways_on(workspace, run_id, state)
    return ()


def tail_logs(workspace: Workspace, run_id: str, *, step: str | None, lines: int) -> LogTail:
    from kura.execution import step_log
    from kura.execution.logs import read_log_tail

    read_run(workspace, run_id)
    path = step_log(workspace.run_dir(run_id), step)
    text = read_log_tail(path, lines=lines) if path.exists() else ""
    return LogTail(run_id, path=str(path), text=text)


def follow_logs(
    workspace: Workspace, run_id: str, *, step: str | None, poll: float = 1.0
) -> Iterator[str]:
    """Text as it is appended to the step's log, until the run ends (then the rest)."""
    import time

    from kura.execution import step_log
    from kura.execution.logs import read_log_since
    from kura.execution.runs import refresh_state

    read_run(workspace, run_id)
    run_dir = workspace.run_dir(run_id)
    offset = 0
    path = step_log(run_dir, step)
    while True:
        finished = refresh_state(run_dir).is_terminal
        current = step_log(run_dir, step)
        if current != path:
            path, offset = current, 0
        text, offset = read_log_since(path, offset)
        if text:
            yield text
        if finished and not text:
            return
        if not text:
            time.sleep(poll)


def cancel(workspace: Workspace, run_id: str) -> CancelResult:
    from kura.execution.executors import cancel_run

    read_run(workspace, run_id)
    from kura.runs.launching import ways_on

    state = cancel_run(workspace.run_dir(run_id))
    status = NextStep(f"kura run status {run_id}", "what it reached before it stopped")
    if state.status not in ("cancelled", "failed"):  # it had succeeded before the cancel
        return CancelResult(run_id, state=state, next=(status,))
    return CancelResult(run_id, state=state, next=(*ways_on(workspace, run_id, state), status))


def list_runs(workspace: Workspace) -> RunList:
    """Every run with its architecture, state, key settings and duration; a run whose
    run.yaml or state.json cannot be read is listed in ``damaged`` with its file and error.

    Each run.yaml and state.json is read only when it changed since the last listing, and a
    state that has not ended only while its processes still run (:mod:`kura.runs.summaries`):
    a warm listing costs a few stats a run and builds no run or state model."""
    from kura.runs.summaries import SummaryCache

    summaries = SummaryCache.for_workspace(workspace)
    runs: list[RunListEntry] = []
    damaged: list[DamagedRun] = []
    run_ids = list_run_ids(workspace)
    for run_id in run_ids:
        try:
            run_dir = workspace.run_dir(run_id)
            summary = summaries.summary(workspace, run_id)
            state = summaries.state(run_dir)
            architecture = summaries.architecture(summary.base)
            runs.append(_row(run_dir, summary, state, architecture))
        except (InvalidInput, NotFound) as error:
            damaged.append(damaged_run(workspace, run_id, error))
    summaries.keep_only(set(run_ids))
    summaries.save()
    return RunList(tuple(runs), tuple(damaged))


def damaged_run(workspace: Workspace, run_id: str, error: KuraError) -> DamagedRun:
    file = workspace.relative(Path(error.path)) if error.path else None
    return DamagedRun(id=run_id, file=file, error=error.message, hint=error.hint)


def list_entry(workspace: Workspace, run_id: str, summary: RunSummary) -> RunListEntry:
    """The run's row: ``summary`` (from its run.yaml) with where its state stands (read
    and refreshed now)."""
    from kura.execution.runs import refresh_state
    from kura.models.bundles import get_bundle
    from kura.runs.summaries import StateSummary

    run_dir = workspace.run_dir(run_id)
    state = refresh_state(run_dir) if (run_dir / "state.json").exists() else None
    return _row(
        run_dir,
        summary,
        None if state is None else StateSummary.of(state),
        get_bundle(summary.base).architecture,
    )


def _row(
    run_dir: Path, summary: RunSummary, state: StateSummary | None, architecture: str
) -> RunListEntry:
    """The row of the run in ``run_dir``: ``summary`` and ``state``; before a launch (no
    state) its status is ``approved``, ``planned`` or ``draft`` by the files the run has."""
    status: str
    if state is not None:
        status = state.status
    elif (run_dir / "approval.json").exists():
        status = "approved"
    elif (run_dir / "plan.md").exists():
        status = "planned"
    else:
        status = "draft"
    return RunListEntry(
        id=run_dir.name,
        base=summary.base,
        architecture=architecture,
        task=summary.task,
        status=status,
        datasets=summary.datasets,
        settings=summary.settings,
        started_at=state.started_at if state else None,
        finished_at=state.finished_at if state else None,
    )
