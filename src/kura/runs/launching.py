"""`kura run launch|relaunch|resume`: run exactly what was approved.

Launch re-checks the approval (any change since refuses, naming it), that every model file
is present and still the file that was locked, and that each dataset still has the digest the
lock recorded. It then hands the compiled steps to an executor. Relaunch after an
out-of-memory applies the approved plan's contingency (and only that) without a new
approval; resume continues training from the last saved trainer state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kura.errors import CheckFailed, UsageError
from kura.runs.approval import approval_path, approve_run, check_approval
from kura.runs.compile import COMPILED_DIR, compile_in_workspace
from kura.runs.context import RunContext, load_context
from kura.runs.store import load_run, run_file
from kura.workspace import Workspace
from kura.yamlio import write_yaml

__all__ = ["launch_run", "relaunch_run", "resume_run"]

CONTAINER_RUN_DIR = "/kura/run"


def _compiled(workspace: Workspace, run_id: str, name: str) -> Any:
    path = workspace.run_dir(run_id) / COMPILED_DIR / name
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def _check_inputs(workspace: Workspace, run_id: str) -> None:
    """Models present and unchanged since the lock; datasets still at their locked digest."""
    from kura.dataset.registry import validate_dataset

    lock = _compiled(workspace, run_id, "run.lock")
    pending = [slot for slot, r in lock["models"]["roles"].items() if r["sha256"] == "pending"]
    if pending:
        raise CheckFailed(
            f"model files not downloaded yet: {', '.join(sorted(pending))}",
            hint=f"`kura model fetch {lock['models']['bundle']}`, then plan and approve again",
        )
    for entry in lock["datasets"]:
        checked = validate_dataset(workspace, entry["name"])
        if checked.digest != entry["digest"]:
            raise CheckFailed(
                f"dataset {entry['name']} changed after approval (digest {checked.digest[:19]}…)",
                hint=f"run `kura run plan {run_id}` and approve again",
            )
        if not checked.ok:
            raise CheckFailed(
                f"dataset {entry['name']} has blocking problems",
                hint=f"`kura dataset validate {entry['name']}` lists the fixes",
            )


def _launch_spec(
    workspace: Workspace, context: RunContext, *, skip: list[str], extra_train: tuple[str, ...]
) -> Any:
    from kura.backends.base import ContainerSpec, Mount, Step
    from kura.execution import LaunchSpec
    from kura.runs.compile import CONTAINER_NAME, STEPS_NAME
    from kura.spec.compiled import ContainerFile, StepsFile
    from kura.spec.machine import read_machine_file

    spec = context.spec
    run_id = spec.id
    folder = workspace.run_dir(run_id) / COMPILED_DIR
    remedy = f"run `kura run plan {run_id}` and approve again"
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
) -> dict[str, Any]:
    from kura.execution import launch

    check_approval(workspace, run_id)
    _check_inputs(workspace, run_id)
    context = load_context(workspace, run_id)
    spec = context.spec
    launch_spec = _launch_spec(workspace, context, skip=skip or [], extra_train=extra_train)
    if spec.execution.executor == "docker" and launch_spec.container is not None:
        _check_image(context, launch_spec.container.image)
    options: dict[str, Any] = {}
    if spec.execution.executor == "skypilot":
        options["accelerator"] = _sky_accelerator(spec.execution.gpu_class)
    state = launch(
        launch_spec,
        foreground=not detach,
        backend=context.backend.name,
        backend_config=dict(context.backend.failure_config(spec, context.plan_inputs)),
        executor_options=options,
    )
    from dataclasses import asdict

    return {"kind": "run-launch", "run": run_id, "detached": detach, "state": asdict(state)}


def _check_image(context: RunContext, image: str) -> None:
    """The trainer release inside the image must be the one Kura compiled for."""
    from kura.images import image_release

    backend = context.backend
    found = image_release(image)
    if found != backend.release:
        state = "is not built" if found is None else f"holds {backend.title} {found}"
        raise CheckFailed(
            f"image {image} {state}; this run was compiled for {backend.title} "
            f"{backend.release}",
            hint="run `kura image build musubi --run`, then launch again",
        )


def _sky_accelerator(gpu_class: str | None) -> str:
    from kura.planning.gpus import SKYPILOT_ACCELERATORS

    if gpu_class is None or gpu_class not in SKYPILOT_ACCELERATORS:
        raise UsageError(
            f"execution.gpu_class {gpu_class!r} has no SkyPilot accelerator name",
            hint="set execution.gpu_class to one of "
            + ", ".join(sorted(SKYPILOT_ACCELERATORS))
            + " (then plan and approve again)",
        )
    return SKYPILOT_ACCELERATORS[gpu_class]


def relaunch_run(workspace: Workspace, run_id: str, *, detach: bool = True) -> dict[str, Any]:
    """After an out-of-memory: apply the approved contingency, re-approve, launch again."""
    from kura.execution.state import read_state

    run_dir = workspace.run_dir(run_id)
    state = read_state(run_dir)
    if not state.is_terminal:
        raise UsageError(f"run {run_id} is still {state.status}", hint="wait, or `kura run cancel`")
    diagnosis = state.diagnosis or {}
    record = json.loads(approval_path(workspace, run_id).read_text(encoding="utf-8"))
    contingency = record.get("contingency")
    suggested = (diagnosis.get("next") or {}).get("key")
    covered = contingency is not None and suggested in contingency["change"]
    if diagnosis.get("code") != "cuda_oom" or not covered:
        suggestion = diagnosis.get("next") or {}
        raise CheckFailed(
            f"run {run_id} failed ({diagnosis.get('code', state.status)}) and its approval "
            "carries no contingency for it",
            hint=f"suggested next step: {_describe(suggestion)}; change run.yaml, then "
            f"`kura run plan {run_id}` and approve again",
        )
    with workspace.lock():
        _, document = load_run(workspace, run_id)
        for key, value in contingency["change"].items():
            document["backend"]["config"][key] = value
            document["backend"]["reasons"][key] = (
                f"contingency of the approved plan: out-of-memory in attempt {state.attempt}"
            )
        write_yaml(run_file(workspace, run_id), document)
    compile_in_workspace(workspace, run_id)
    approve_run(workspace, run_id, via="contingency")
    return launch_run(workspace, run_id, detach=detach, skip=_cached_steps(run_dir))


def _describe(suggestion: dict[str, Any]) -> str:
    if not suggestion:
        return "read `kura run logs`"
    action, key = suggestion.get("action", "change"), suggestion.get("key", "?")
    target = f" to {suggestion['to']}" if "to" in suggestion else ""
    return f"{action} backend.config.{key}{target}"


def resume_run(workspace: Workspace, run_id: str, *, detach: bool = True) -> dict[str, Any]:
    """Continue training from the newest state the trainer saved."""
    context = load_context(workspace, run_id)
    run_dir = workspace.run_dir(run_id)
    seen = str(run_dir) if context.spec.execution.executor == "host" else CONTAINER_RUN_DIR
    extra = context.backend.resume_arguments(run_dir, trainer_run_dir=seen)
    return launch_run(
        workspace, run_id, detach=detach, skip=_cached_steps(run_dir), extra_train=extra
    )
