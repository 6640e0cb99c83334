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

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kura.errors import CheckFailed, StateConflict
from kura.nextsteps import NextStep
from kura.runs.approval import approve_run, check_gate
from kura.runs.compile import COMPILED_DIR, compile_in_workspace
from kura.runs.context import RunContext, load_context
from kura.runs.plan import plan_again, record_applied
from kura.runs.results import LaunchResult, diagnosis_of
from kura.runs.store import load_run, run_file
from kura.workspace import Workspace
from kura.yamlio import write_yaml

if TYPE_CHECKING:
    from kura.execution import LaunchSpec
    from kura.spec.state import RunState

__all__ = ["launch_run", "relaunch_run", "resume_run", "ways_on"]

CONTAINER_RUN_DIR = "/kura/run"


def _launch_spec(
    workspace: Workspace, context: RunContext, *, skip: list[str], extra_train: tuple[str, ...]
) -> LaunchSpec:
    from kura.backends.base import ContainerSpec, Mount, Step
    from kura.execution import LaunchSpec
    from kura.runs.compile import CONTAINER_NAME, STEPS_NAME
    from kura.spec.compiled import ContainerFile, StepsFile
    from kura.spec.machine import read_machine_file

    spec = context.spec
    run_id = spec.id
    folder = workspace.run_dir(run_id) / COMPILED_DIR
    remedy = f"run `{plan_again(workspace, run_id)}` and approve again"
    steps_doc = read_machine_file(StepsFile, folder / STEPS_NAME, remedy=remedy)
    steps = [
        Step(
            name=step.name,
            argv=tuple(step.argv) + (extra_train if step.kind == "train" else ()),
            env=dict(step.env),
            cwd=step.cwd,
            kind=step.kind,
            generated=step.generated,
        )
        for step in steps_doc.steps
    ]
    container = None
    if (folder / CONTAINER_NAME).is_file():
        found = read_machine_file(ContainerFile, folder / CONTAINER_NAME, remedy=remedy)
        container = ContainerSpec(
            image=found.image,
            gpus=found.gpus,
            mounts=tuple(
                Mount(m.target, m.read_only, m.purpose, source=m.source)
                for m in found.mounts
                if not m.baked and m.source
            ),
            env=dict(found.env),
            workdir=found.workdir,
        )
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
) -> LaunchResult:
    """Start a run that never ran, exactly as approved (after :func:`check_gate`)."""
    check_gate(workspace, run_id)
    _refuse_ran_before(workspace, run_id)
    return _start(workspace, run_id, detach=detach, skip=skip, extra_train=extra_train)


def _start(
    workspace: Workspace,
    run_id: str,
    *,
    detach: bool,
    skip: list[str] | None = None,
    extra_train: tuple[str, ...] = (),
    keep_outputs: bool = False,
) -> LaunchResult:
    """Hand the approved steps to the executor (after :func:`check_gate`)."""
    from kura.execution import launch

    _archive_attempt(workspace.run_dir(run_id), keep_outputs=keep_outputs)
    context = load_context(workspace, run_id)
    spec = context.spec
    launch_spec = _launch_spec(workspace, context, skip=skip or [], extra_train=extra_train)
    if spec.execution.executor == "docker" and launch_spec.container is not None:
        _check_image(context, launch_spec.container.image)
    options: dict[str, object] = {}
    if spec.execution.executor == "skypilot":
        options = _sky_options(workspace, context)
    state = launch(
        launch_spec,
        foreground=not detach,
        backend=context.backend.name,
        backend_config=dict(context.backend.failure_config(spec, context.plan_inputs)),
        executor_options=options,
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
    """The SkyPilot executor's options: the approved plan's GPU class (and the run's GPU
    count) and the run's cloud settings, checked as the plan checked them."""
    from kura.runs.cloud import sky_launch_settings
    from kura.runs.plan import read_plan

    gpu_id = str(read_plan(workspace, context.spec.id).gpu["id"])
    found = sky_launch_settings(workspace, context.spec, gpu_id)
    return {
        "accelerator": found.accelerator,
        "output_bucket": found.outputs_url,
        "settings": found.settings,
    }


def relaunch_run(workspace: Workspace, run_id: str, *, detach: bool = True) -> LaunchResult:
    """After an out-of-memory: apply the approved contingency, re-approve, launch again."""
    record = check_gate(workspace, run_id)
    run_dir = workspace.run_dir(run_id)
    state = _ran_state(workspace, run_id, "relaunch")
    if not state.is_terminal:
        raise StateConflict(
            f"run {run_id} is still {state.status}", hint="wait, or `kura run cancel`"
        )
    diagnosis = diagnosis_of(state)
    suggestion: Mapping[str, object] = {} if diagnosis is None else diagnosis.next
    change = None if record.contingency is None else record.contingency.change
    covered = change is not None and suggestion.get("key") in change
    if diagnosis is None or diagnosis.code != "cuda_oom" or not covered or change is None:
        ended = state.status if diagnosis is None else diagnosis.code
        raise StateConflict(
            f"run {run_id} ended {ended} and its approval carries no contingency for it",
            hint=f"suggested change: {_describe(suggestion)}; use "
            + _options(ways_on(workspace, run_id, state)),
        )
    with workspace.lock():
        _, document = load_run(workspace, run_id)
        before = dict(document["backend"]["config"])
        for key, value in change.items():
            document["backend"]["config"][key] = value
            document["backend"]["reasons"][key] = (
                f"contingency of the approved plan: out-of-memory in attempt {state.attempt}"
            )
        write_yaml(run_file(workspace, run_id), document)
    compile_in_workspace(workspace, run_id)
    record_applied(
        workspace,
        run_id,
        attempt=state.attempt + 1,
        change={k: {"from": before.get(k), "to": v} for k, v in change.items()},
        why=f"the approved contingency, after an out-of-memory in attempt {state.attempt}",
    )
    approve_run(workspace, run_id, via="contingency")
    check_gate(workspace, run_id)
    return _start(workspace, run_id, detach=detach, skip=_cached_steps(run_dir))


def _describe(suggestion: Mapping[str, object]) -> str:
    if not suggestion:
        return "read `kura run logs`"
    action, key = suggestion.get("action", "change"), suggestion.get("key", "?")
    target = f" to {suggestion['to']}" if "to" in suggestion else ""
    return f"{action} backend.config.{key}{target}"


def resume_run(workspace: Workspace, run_id: str, *, detach: bool = True) -> LaunchResult:
    """Continue training from the newest state the trainer saved (outputs stay in place:
    the trainer continues them; the earlier attempt's logs move to ``attempts/<n>/``)."""
    check_gate(workspace, run_id)
    state = _ran_state(workspace, run_id, "resume")
    if not state.is_terminal:
        raise StateConflict(
            f"run {run_id} is still {state.status}", hint="wait, or `kura run cancel`"
        )
    context = load_context(workspace, run_id)
    run_dir = workspace.run_dir(run_id)
    seen = str(run_dir) if context.spec.execution.executor == "host" else CONTAINER_RUN_DIR
    try:
        extra = context.backend.resume_arguments(run_dir, trainer_run_dir=seen)
    except CheckFailed as error:
        raise StateConflict(
            error.message,
            hint="use " + _options(ways_on(workspace, run_id, state)),
        ) from None
    return _start(
        workspace,
        run_id,
        detach=detach,
        skip=_cached_steps(run_dir),
        extra_train=extra,
        keep_outputs=True,
    )


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
    from kura.spec.approval import ApprovalRecord
    from kura.spec.records import read_record

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
    except CheckFailed:
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
