"""`kura run launch|relaunch|resume`: run exactly what was approved.

Each command passes the gate first (:func:`kura.runs.approval.check_gate`): the approval
record (its own digest, run.yaml, every bound file), every locked model file and every
dataset the trainer reads — before an executor, an image or the trainer's environment is
looked at. Launch starts a run that never ran; a run that already ran (succeeded, failed,
cancelled) is refused with the commands that do apply. Relaunch after an out-of-memory
applies the approved plan's contingency (and only that) without a new approval; resume
continues training from the last saved trainer state. A new attempt never overwrites an
earlier one: its logs and outputs move to ``attempts/<n>/`` first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from kura.errors import CheckFailed, StateConflict, Unsupported
from kura.nextsteps import NextStep
from kura.runs.approval import approve_run, check_gate
from kura.runs.compile import COMPILED_DIR, compile_in_workspace
from kura.runs.context import RunContext, context_of, load_context
from kura.runs.plan import plan_again, record_applied
from kura.runs.results import LaunchResult, diagnosis_of
from kura.runs.snapshot import RunSnapshot, take_snapshot
from kura.runs.store import run_file
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.backends.base import ResumeRule
    from kura.execution import LaunchSpec
    from kura.execution.supervisors import SupervisorStarter
    from kura.schema.plan import ContingencyRecord
    from kura.schema.state import RunState

__all__ = ["launch_run", "relaunch_run", "resume_run", "ways_on"]

CONTAINER_RUN_DIR = "/kura/run"
_M = TypeVar("_M")


def _compiled_file(model: type[_M], path: Path, workspace: Workspace, run_id: str) -> _M:
    """A compiled file the gate has just bound; the way back from damage (which the gate's
    digests make all but impossible) is worked out only when it is needed, since it reads
    plan.json for the plan's GPU class."""
    from kura.errors import InvalidInput
    from kura.schema.machine import read_machine_file

    try:
        return read_machine_file(model, path, remedy="plan and approve the run again")
    except InvalidInput as damaged:
        remedy = f"run `{plan_again(workspace, run_id)}` and approve again"
        raise InvalidInput(damaged.message, hint=remedy, path=path) from None


def _launch_spec(
    workspace: Workspace, context: RunContext, *, skip: list[str], extra_train: tuple[str, ...]
) -> LaunchSpec:
    from dataclasses import replace

    from kura.execution import LaunchSpec
    from kura.runs.compile import CONTAINER_NAME, STEPS_NAME
    from kura.schema.compiled import ContainerSpec, StepsFile

    spec = context.spec
    run_id = spec.id
    folder = workspace.run_dir(run_id) / COMPILED_DIR
    steps_doc = _compiled_file(StepsFile, folder / STEPS_NAME, workspace, run_id)
    steps = [
        replace(step, argv=step.argv + extra_train) if step.kind == "train" else step
        for step in steps_doc.steps
    ]
    container = None
    if (folder / CONTAINER_NAME).is_file():
        found = _compiled_file(ContainerSpec, folder / CONTAINER_NAME, workspace, run_id)
        bound = tuple(m for m in found.mounts if not m.baked and m.source)
        container = replace(found, mounts=bound)
    run_dir = workspace.run_dir(run_id)
    for sub in ("cache", "output", "logs"):
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    return LaunchSpec(
        run_id=run_id,
        run_dir=run_dir,
        steps=steps,
        executor=spec.execution.executor,
        container=container,
        gpus=spec.execution.gpus,
        pass_env=[],
        skip_steps=skip,
    )


def _cached_steps(run_dir: Path) -> list[str]:
    """Cache steps that succeeded in an earlier attempt of this run (same approved inputs)."""
    from kura.execution.state import read_state

    if not (run_dir / "state.json").exists():
        return []
    state = read_state(run_dir)
    return [
        s.name for s in state.steps if s.name != "train" and s.status in ("succeeded", "skipped")
    ]


def launch_run(
    workspace: Workspace,
    run_id: str,
    *,
    detach: bool = True,
    skip: list[str] | None = None,
    extra_train: tuple[str, ...] = (),
    supervisors: SupervisorStarter | None = None,
) -> LaunchResult:
    """Start a run that never ran, exactly as approved (after :func:`check_gate`).

    One hold of the workspace lock covers the snapshot (run.yaml and its datasets, each read
    once), the gate on it and the launch spec made from it; the executor starts after it is
    released (a foreground run does not hold every other command for its whole length).
    ``supervisors`` starts the run's supervisor (a sweep worker passes its fork server)."""
    with _one_view(workspace):
        snapshot = take_snapshot(workspace, run_id)
        check_gate(workspace, run_id, snapshot)
        _refuse_ran_before(workspace, run_id)
        ready = _ready(workspace, snapshot, skip=skip or [], extra_train=extra_train)
    return _start(ready, detach=detach, supervisors=supervisors)


@contextmanager
def _one_view(workspace: Workspace) -> Iterator[None]:
    """The workspace lock and one look at the dataset folders (:mod:`kura.dataset.onelook`):
    the gate, a recompile and the launch spec see the same files, each folder listed once.
    Both end before the executor starts."""
    from kura.dataset.onelook import one_look

    with workspace.lock(), one_look():
        yield


@dataclass(frozen=True)
class _Ready:
    """A run past the gate, ready for its executor: what the snapshot compiled to."""

    context: RunContext
    spec: LaunchSpec
    options: dict[str, object]


def _ready(
    workspace: Workspace,
    snapshot: RunSnapshot,
    *,
    skip: list[str],
    extra_train: tuple[str, ...] = (),
    keep_outputs: bool = False,
) -> _Ready:
    """The launch spec of the snapshot's run (after :func:`check_gate` on that snapshot):
    the earlier attempt archived, the image checked, the executor's options read."""
    from kura.execution.executors import executor_class

    run_id = snapshot.run_id
    _archive_attempt(workspace.run_dir(run_id), keep_outputs=keep_outputs)
    context = context_of(snapshot)
    launch_spec = _launch_spec(workspace, context, skip=skip, extra_train=extra_train)
    executor = executor_class(context.spec.execution.executor)
    if executor.local_image and launch_spec.container is not None:
        _check_image(context, launch_spec.container.image)
    options: dict[str, object] = {}
    if executor.remote:
        options = _sky_options(workspace, context)
    return _Ready(context, launch_spec, options)


def _start(
    ready: _Ready, *, detach: bool, supervisors: SupervisorStarter | None = None
) -> LaunchResult:
    """Hand the approved steps to the executor."""
    from kura.execution import launch

    context, run_id = ready.context, ready.context.spec.id
    state = launch(
        ready.spec,
        foreground=not detach,
        backend=context.backend.name,
        backend_config=dict(context.backend.failure_config(context.spec, context.plan_inputs)),
        executor_options=ready.options,
        supervisors=supervisors,
    )
    follow = NextStep(f"kura run watch {run_id}", "follow progress, loss and time left")
    result = NextStep(f"kura run status {run_id}", "the outcome and what to do next")
    return LaunchResult(run_id, detached=detach, state=state, next=(follow if detach else result,))


def _check_image(context: RunContext, image: str) -> None:
    """The trainer release inside the image must be the one Kura compiled for."""
    from kura.images import image_release

    backend = context.backend
    found = image_release(image)
    if found != backend.release:
        state = "is not built" if found is None else f"holds {backend.title} {found}"
        raise CheckFailed(
            f"image {image} {state}; this run was compiled for {backend.title} {backend.release}",
            hint=f"run `kura image build {backend.name} --run`, then launch again",
        )


def _sky_options(workspace: Workspace, context: RunContext) -> dict[str, object]:
    """The SkyPilot executor's options: the approved launch settings (the gate checked they
    are still what kura.toml and run.yaml resolve to)."""
    from kura.runs.cloud import approved_launch

    found = approved_launch(workspace, context.spec)
    return {
        "accelerator": found.accelerator,
        "output_bucket": found.outputs_url,
        "settings": found.settings,
        "resume": _sky_resume(context),
    }


def _sky_resume(context: RunContext) -> ResumeRule | None:
    """The trainer's resume rule for a recovered job (None: it cannot resume, so a
    recovered job starts over, as the plan's trainer says)."""
    try:
        return context.backend.resume_rule(context.spec.id).under(CONTAINER_RUN_DIR)
    except Unsupported:
        return None


def relaunch_run(workspace: Workspace, run_id: str, *, detach: bool = True) -> LaunchResult:
    """After an out-of-memory: apply the approved contingency, re-approve, launch again.

    One hold of the workspace lock and one snapshot from the gate to the launch spec:
    run.yaml is read once, written once (the contingency), and every later stage (compile,
    plan.json's record, the approval, the gate again) takes the snapshot of the text written."""
    with _one_view(workspace):
        snapshot = take_snapshot(workspace, run_id)
        record = check_gate(workspace, run_id, snapshot)
        run_dir = workspace.run_dir(run_id)
        state = _ran_state(workspace, run_id, "relaunch")
        if not state.is_terminal:
            raise StateConflict(
                f"run {run_id} is still {state.status}", hint="wait, or `kura run cancel`"
            )
        change = _covered_contingency(workspace, run_id, state, record.contingency)
        snapshot, before = _apply_contingency(workspace, snapshot, change, state.attempt)
        compile_in_workspace(workspace, run_id, snapshot)
        record_applied(
            workspace,
            run_id,
            attempt=state.attempt + 1,
            change={k: {"from": before.get(k), "to": v} for k, v in change.items()},
            why=f"the approved contingency, after an out-of-memory in attempt {state.attempt}",
            run_yaml_digest=snapshot.digest,
        )
        approve_run(workspace, run_id, via="contingency", snapshot=snapshot)
        check_gate(workspace, run_id, snapshot)
        ready = _ready(workspace, snapshot, skip=_cached_steps(run_dir))
    return _start(ready, detach=detach)


def _covered_contingency(
    workspace: Workspace, run_id: str, state: RunState, contingency: ContingencyRecord | None
) -> Mapping[str, object]:
    """The approved contingency's change, when it covers the failure's suggested fix (an
    out-of-memory whose next rung the approval carries); else CheckFailed with that fix."""
    diagnosis = diagnosis_of(state)
    suggestion: Mapping[str, object] = {} if diagnosis is None else diagnosis.next
    change = None if contingency is None else contingency.change
    covered = change is not None and suggestion.get("key") in change
    if diagnosis is None or diagnosis.code != "cuda_oom" or not covered or change is None:
        ended = state.status if diagnosis is None else diagnosis.code
        raise StateConflict(
            f"run {run_id} ended {ended} and its approval carries no contingency for it",
            hint=f"suggested change: {_describe(suggestion)}; use "
            + _options(ways_on(workspace, run_id, state)),
        )
    return change


def _apply_contingency(
    workspace: Workspace, snapshot: RunSnapshot, change: Mapping[str, object], attempt: int
) -> tuple[RunSnapshot, dict[str, object]]:
    """Write the contingency's values into the snapshot's run.yaml (comments kept); the
    snapshot of the text written, and backend.config as it was."""
    from kura.fsutil import atomic_write_text
    from kura.yamlio import dump_yaml

    document = snapshot.document()
    before = dict(document["backend"]["config"])
    for key, value in change.items():
        document["backend"]["config"][key] = value
        document["backend"]["reasons"][key] = (
            f"contingency of the approved plan: out-of-memory in attempt {attempt}"
        )
    text = dump_yaml(document)
    atomic_write_text(run_file(workspace, snapshot.run_id), text)
    return snapshot.with_run_text(text), before


def _in_container(executor: str) -> bool:
    from kura.execution.executors import executor_class

    return executor_class(executor).in_container


def _describe(suggestion: Mapping[str, object]) -> str:
    if not suggestion:
        return "read `kura run logs`"
    action, key = suggestion.get("action", "change"), suggestion.get("key", "?")
    target = f" to {suggestion['to']}" if "to" in suggestion else ""
    return f"{action} backend.config.{key}{target}"


def resume_run(workspace: Workspace, run_id: str, *, detach: bool = True) -> LaunchResult:
    """Continue training from the newest state the trainer saved (outputs stay in place:
    the trainer continues them; the earlier attempt's logs move to ``attempts/<n>/``).
    Under one hold of the lock, on one snapshot, as :func:`launch_run`."""
    with _one_view(workspace):
        snapshot = take_snapshot(workspace, run_id)
        check_gate(workspace, run_id, snapshot)
        state = _ran_state(workspace, run_id, "resume")
        if not state.is_terminal:
            raise StateConflict(
                f"run {run_id} is still {state.status}", hint="wait, or `kura run cancel`"
            )
        run_dir = workspace.run_dir(run_id)
        in_container = _in_container(snapshot.spec.execution.executor)
        seen = CONTAINER_RUN_DIR if in_container else str(run_dir)
        try:
            extra = context_of(snapshot).backend.resume_arguments(run_dir, trainer_run_dir=seen)
        except (CheckFailed, Unsupported) as error:
            raise StateConflict(
                error.message, hint="use " + _options(ways_on(workspace, run_id, state))
            ) from None
        ready = _ready(
            workspace, snapshot, skip=_cached_steps(run_dir), extra_train=extra, keep_outputs=True
        )
    return _start(ready, detach=detach)


def _ran_state(workspace: Workspace, run_id: str, verb: str) -> RunState:
    from kura.execution.state import read_state, state_path

    run_dir = workspace.run_dir(run_id)
    if not state_path(run_dir).exists():
        raise StateConflict(
            f"run {run_id} has never been launched: there is nothing to {verb}",
            hint=f"start it with `kura run launch {run_id}`",
        )
    return read_state(run_dir)


def _refuse_ran_before(workspace: Workspace, run_id: str) -> None:
    """A run launches once; after that the commands that apply are relaunch and resume."""
    from kura.execution.runs import refresh_state
    from kura.execution.state import state_path

    run_dir = workspace.run_dir(run_id)
    if not state_path(run_dir).exists():
        return
    state = refresh_state(run_dir)
    if not state.is_terminal:
        raise StateConflict(
            f"run {run_id} is already {state.status} (attempt {state.attempt})",
            hint=f"follow it with `kura run watch {run_id}`, or stop it with "
            f"`kura run cancel {run_id}`",
        )
    raise StateConflict(
        f"run {run_id} already ran (attempt {state.attempt} {state.status}); launching it "
        "again would overwrite that attempt",
        hint="use " + _options(ways_on(workspace, run_id, state)),
    )


def ways_on(workspace: Workspace, run_id: str, state: RunState) -> tuple[NextStep, ...]:
    """What works after a run ended, each a command that will not be refused for the state
    the run is in: relaunch where the approval holds a contingency for its out-of-memory,
    resume where the trainer saved a state, and always a new run with this run's intent
    (``kura run new --from RUN``, then plan and approve it)."""
    steps: list[NextStep] = []
    if _contingency_covers(workspace, run_id, state):
        steps.append(NextStep(f"kura run relaunch {run_id}", "apply the approved contingency"))
    if state.status != "succeeded" and _saved_state(workspace, run_id):
        steps.append(NextStep(f"kura run resume {run_id}", "continue from its last saved state"))
    steps.append(
        NextStep(
            f"kura run new --from {run_id}",
            "a new run with this run's datasets, bundle, task and your --set values; "
            "plan and approve it next",
        )
    )
    return tuple(steps)


def _options(steps: tuple[NextStep, ...]) -> str:
    return ", or ".join(f"`{s.command}` ({s.why})" for s in steps)


def _contingency_covers(workspace: Workspace, run_id: str, state: RunState) -> bool:
    """Whether relaunch would apply the approval's contingency to this attempt's failure."""
    from kura.runs.approval import approval_path
    from kura.schema.approval import ApprovalRecord
    from kura.schema.records import read_record

    diagnosis = diagnosis_of(state)
    path = approval_path(workspace, run_id)
    if diagnosis is None or diagnosis.code != "cuda_oom" or not path.is_file():
        return False
    record = read_record(ApprovalRecord, path, fix=f"approve again: `kura run approve {run_id}`")
    change = None if record.contingency is None else record.contingency.change
    return change is not None and diagnosis.next.get("key") in change


def _saved_state(workspace: Workspace, run_id: str) -> bool:
    """Whether the trainer saved a state that resume can continue from (the backend's
    ``resume_arguments`` finds one)."""
    context = load_context(workspace, run_id)
    run_dir = workspace.run_dir(run_id)
    try:
        context.backend.resume_arguments(run_dir, trainer_run_dir=str(run_dir))
    except (CheckFailed, Unsupported):
        return False
    return True


def _archive_attempt(run_dir: Path, *, keep_outputs: bool) -> None:
    """Move the finished attempt's logs (and outputs, unless the trainer continues them) to
    ``attempts/<n>/``, so a new attempt overwrites nothing; the archived state records
    itself there too (``attempts/<n>.json``, by the executor)."""
    import shutil

    from kura.execution.state import read_state, state_path

    if not state_path(run_dir).exists():
        return
    state = read_state(run_dir)
    if not state.is_terminal:
        return
    target = run_dir / "attempts" / str(state.attempt)
    target.mkdir(parents=True, exist_ok=True)
    logs = run_dir / "logs"
    if logs.is_dir():
        (target / "logs").mkdir(exist_ok=True)
        for path in sorted(logs.glob("*.log")):
            shutil.move(str(path), target / "logs" / path.name)
    output = run_dir / "output"
    if not keep_outputs and output.is_dir() and any(output.iterdir()):
        shutil.move(str(output), target / "output")
