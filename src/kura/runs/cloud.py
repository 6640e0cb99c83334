"""A SkyPilot run's launch settings: the planned GPU class and count, and the cloud settings
(kura.toml's ``[skypilot]`` under run.yaml's ``execution.skypilot``).

``kura run plan`` checks them (:func:`sky_plan_checks`) so a plan that cannot launch carries
a blocking problem with its fix before anyone approves it, and records them resolved
(:func:`sky_planned_launch`, plan.json's ``cloud``, copied into approval.json). The launch
gate resolves them again and refuses when they differ from the approved ones, naming each
change (:func:`check_cloud_binding`); launch then runs the approved ones (:func:`approved_launch`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.errors import CheckFailed, UsageError
from kura.schema.cloud import SkyPilotLaunch, SkyPilotSettings
from kura.schema.plan import PlanCheck
from kura.schema.run import RunSpec
from kura.workspace import Workspace

__all__ = [
    "SKY_CHECK",
    "SkyLaunch",
    "approved_launch",
    "check_cloud_binding",
    "run_settings",
    "sky_accelerator",
    "sky_plan_checks",
    "sky_planned_launch",
]

SKY_CHECK = "skypilot launch"


@dataclass(frozen=True)
class SkyLaunch:
    """What the SkyPilot executor needs for one run."""

    accelerator: str
    count: int
    settings: SkyPilotSettings
    outputs_url: str | None
    """``<bucket>/<run id>``: the prefix every writable mount of this run lives under."""


@dataclass(frozen=True)
class _Problem:
    what: str
    fix: str


def run_settings(workspace: Workspace, spec: RunSpec) -> SkyPilotSettings:
    """The run's own ``execution.skypilot`` over the workspace's ``[skypilot]``."""
    defaults = workspace.config().skypilot
    own = spec.execution.skypilot
    return defaults if own is None else own.over(defaults)


def _accelerator(gpu_id: str) -> str | _Problem:
    from kura.planning.gpus import SKYPILOT_ACCELERATORS

    if gpu_id in SKYPILOT_ACCELERATORS:
        return SKYPILOT_ACCELERATORS[gpu_id]
    return _Problem(
        f"GPU class {gpu_id} has no SkyPilot accelerator name",
        "plan for one that has: `kura run plan RUN --gpu G` with G one of "
        + ", ".join(sorted(SKYPILOT_ACCELERATORS)),
    )


def sky_accelerator(gpu_id: str) -> str:
    """SkyPilot's accelerator name of a GPU class; UsageError naming the ones that have one."""
    found = _accelerator(gpu_id)
    if isinstance(found, _Problem):
        raise UsageError(found.what, hint=found.fix)
    return found


def _problems(
    workspace: Workspace, spec: RunSpec, gpu_id: str
) -> tuple[str | None, SkyPilotSettings, list[_Problem]]:
    settings = run_settings(workspace, spec)
    found = _accelerator(gpu_id)
    problems = [found] if isinstance(found, _Problem) else []
    if settings.bucket is None:  # every run writes its LoRA
        problems.append(
            _Problem(
                f"run {spec.id} writes its LoRA, samples and logs, and a SkyPilot job's "
                "writes come back only through a bucket; none is set",
                'set `bucket = "s3://NAME/kura"` under [skypilot] in kura.toml (or '
                f"execution.skypilot.bucket in runs/{spec.id}/run.yaml), then plan again",
            )
        )
    return (None if isinstance(found, _Problem) else found), settings, problems


def sky_plan_checks(workspace: Workspace, spec: RunSpec, gpu_id: str) -> list[PlanCheck]:
    """The plan's check of a SkyPilot launch (none for other executors); each problem is
    blocking, with its fix in the detail."""
    from kura.execution.executors import executor_class

    if not executor_class(spec.execution.executor).remote:
        return []
    accelerator, settings, problems = _problems(workspace, spec, gpu_id)
    if problems:
        return [
            PlanCheck(check=SKY_CHECK, status="failed", detail=f"{p.what} (fix: {p.fix})",
                      blocking=True)
            for p in problems
        ]  # fmt: skip
    where = ", ".join(
        f"{key} {value}" for key, value in settings.model_dump(exclude_none=True).items()
    )
    detail = f"{accelerator}:{spec.execution.gpus}" + (f"; {where}" if where else "")
    return [PlanCheck(check=SKY_CHECK, status="ok", detail=detail)]


def sky_planned_launch(workspace: Workspace, spec: RunSpec, gpu_id: str) -> SkyPilotLaunch | None:
    """What plan.json records of a SkyPilot run (none for other executors, or while the
    plan's own SkyPilot check fails: such a plan cannot be approved)."""
    from kura.execution.executors import executor_class

    if not executor_class(spec.execution.executor).remote:
        return None
    accelerator, settings, problems = _problems(workspace, spec, gpu_id)
    if problems or accelerator is None:
        return None
    return SkyPilotLaunch(accelerator=accelerator, count=spec.execution.gpus, settings=settings)


def check_cloud_binding(
    workspace: Workspace, spec: RunSpec, gpu_id: str, approved: SkyPilotLaunch | None
) -> SkyPilotLaunch:
    """The approved launch settings, after checking they are still what the run's settings
    resolve to: a kura.toml ``[skypilot]`` (or run.yaml ``execution.skypilot``) edited since
    approval refuses, naming each change."""
    from kura.runs.diffs import diff_values

    again = f"run `kura run plan {spec.id}`, read plan.md, then `kura run approve {spec.id}`"
    accelerator, settings, problems = _problems(workspace, spec, gpu_id)
    if problems or accelerator is None:
        raise CheckFailed(
            "the SkyPilot settings no longer launch: " + "; ".join(p.what for p in problems),
            hint=f"{problems[0].fix}; then approve again",
        )
    if approved is None:
        raise CheckFailed(
            f"run {spec.id}'s approved plan records no SkyPilot launch settings (it was made "
            "by an earlier Kura, or for another executor)",
            hint=again,
        )
    now = SkyPilotLaunch(accelerator=accelerator, count=spec.execution.gpus, settings=settings)
    changes = diff_values(approved.model_dump(mode="json"), now.model_dump(mode="json"))
    if changes:
        raise CheckFailed(
            "the cloud settings changed since approval (kura.toml [skypilot] or run.yaml "
            "execution.skypilot): " + "; ".join(changes),
            hint=f"put the approved settings back, or {again}",
        )
    return approved


def approved_launch(workspace: Workspace, spec: RunSpec) -> SkyLaunch:
    """The executor's settings for the approved launch of ``spec`` (after the gate)."""
    from kura.schema.approval import APPROVAL_NAME, ApprovalRecord
    from kura.schema.records import read_record

    fix = f"run `kura run plan {spec.id}` and `kura run approve {spec.id}`"
    record = read_record(ApprovalRecord, workspace.run_dir(spec.id) / APPROVAL_NAME, fix=fix)
    if record.cloud is None:
        raise CheckFailed(f"run {spec.id}'s approval records no SkyPilot settings", hint=fix)
    bucket = record.cloud.settings.bucket
    outputs = None if bucket is None else f"{bucket}/{spec.id}"
    return SkyLaunch(record.cloud.accelerator, record.cloud.count, record.cloud.settings, outputs)
