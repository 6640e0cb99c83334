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
    from kura.runs.summaries import RunSummary
    from kura.spec.state import RunState

__all__ = [
    "cancel",
    "damaged_run",
    "follow_logs",
    "list_entry",
    "list_runs",
    "run_status",
    "tail_logs",
]


def _before_launch(run_dir: Path) -> str:
    """Why to launch a run that never ran, as far as its files have come: an approved
    run is told to launch, not to plan and approve it first."""
    from kura.runs.approval import APPROVAL_NAME
    from kura.runs.plan import PLAN_JSON

    if (run_dir / APPROVAL_NAME).is_file():
        return "it is approved and was never launched"
    if (run_dir / PLAN_JSON).is_file():
        return "it was never launched (approve its plan first)"
    return "it was never launched (plan and approve it first)"


def run_status(workspace: Workspace, run_id: str) -> RunStatus:
    """State (re-attached if the run was detached), progress, last scalars, diagnosis."""
    from kura.backends.registry import get_backend
    from kura.execution.summary import run_summary

    spec = read_run(workspace, run_id)
    run_dir = workspace.run_dir(run_id)
    backend = get_backend(spec.backend.name)
    labels = backend.loss_labels()
    if not (run_dir / "state.json").exists():
        never = NextStep(f"kura run launch {run_id}", _before_launch(run_dir))
        return RunStatus(
            run_id, state=None, progress=None, scalars=None, next=(never,), labels=labels
        )
    cloud = _cloud_job(workspace, run_id)  # before the summary: it reads collected logs
    summary = run_summary(run_dir, progress=backend.progress, loss_history=backend.loss_history)
    return RunStatus(
        run_id,
        state=summary.state,
        progress=summary.progress,
        scalars=summary.scalars,
        next=_after_status(run_id, summary.state, cloud),
        labels=labels,
        cloud=cloud,
    )


def _cloud_job(workspace: Workspace, run_id: str) -> CloudStatus | None:
    """A cloud run's job (collected once it ended); None for a local run."""
    from kura.execution.runs import refresh_state
    from kura.runs.cloudfollow import follow_cloud_job

    return follow_cloud_job(workspace, run_id, refresh_state(workspace.run_dir(run_id)))


def _after_status(
    run_id: str, state: RunState, cloud: CloudStatus | None = None
) -> tuple[NextStep, ...]:
    """What follows a run's state: watch it, read why it failed, evaluate and export it
    (a cloud job that ended but whose outputs are not here yet: collect them)."""
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
        if diagnosis is not None and diagnosis.code == "cuda_oom":
            return (NextStep(f"kura run relaunch {run_id}", "apply the approved contingency"), logs)
        return (logs,)
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
    state = cancel_run(workspace.run_dir(run_id))
    steps = (
        NextStep(f"kura run resume {run_id}", "continue from its last saved state"),
        NextStep(f"kura run status {run_id}", "what it reached before it stopped"),
    )
    return CancelResult(run_id, state=state, next=steps)


def list_runs(workspace: Workspace) -> RunList:
    """Every run with its architecture, state, key settings and duration; a run whose
    run.yaml or state.json cannot be read is listed in ``damaged`` with its file and error.

    Each run.yaml is read only when it changed since the last listing
    (:mod:`kura.runs.summaries`); its state.json is read every time (a run moves on)."""
    from kura.runs.summaries import SummaryCache

    summaries = SummaryCache.for_workspace(workspace)
    runs: list[RunListEntry] = []
    damaged: list[DamagedRun] = []
    run_ids = list_run_ids(workspace)
    for run_id in run_ids:
        try:
            runs.append(list_entry(workspace, run_id, summaries.summary(workspace, run_id)))
        except (InvalidInput, NotFound) as error:
            damaged.append(damaged_run(workspace, run_id, error))
    summaries.keep_only(set(run_ids))
    summaries.save()
    return RunList(tuple(runs), tuple(damaged))


def damaged_run(workspace: Workspace, run_id: str, error: KuraError) -> DamagedRun:
    file = workspace.relative(Path(error.path)) if error.path else None
    return DamagedRun(id=run_id, file=file, error=error.message, hint=error.hint)


def list_entry(workspace: Workspace, run_id: str, summary: RunSummary) -> RunListEntry:
    """The run's row: ``summary`` (from its run.yaml) with where its state stands."""
    from kura.execution.runs import refresh_state
    from kura.models.bundles import get_bundle

    run_dir = workspace.run_dir(run_id)
    state = refresh_state(run_dir) if (run_dir / "state.json").exists() else None
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
        id=run_id,
        base=summary.base,
        architecture=get_bundle(summary.base).architecture,
        task=summary.task,
        status=status,
        datasets=summary.datasets,
        settings=summary.settings,
        started_at=state.started_at if state else None,
        finished_at=state.finished_at if state else None,
    )
