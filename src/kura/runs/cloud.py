"""A SkyPilot run's launch settings: the planned GPU class and count, and the cloud settings
(kura.toml's ``[skypilot]`` under run.yaml's ``execution.skypilot``).

``kura run plan`` checks them (:func:`sky_plan_checks`) so a plan that cannot launch carries
a blocking problem with its fix before anyone approves it; ``kura run launch`` resolves the
same settings from the approved plan (:func:`sky_launch_settings`) and refuses with the same
words if they changed since.
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.errors import UsageError
from kura.spec.cloud import SkyPilotSettings
from kura.spec.plan import PlanCheck
from kura.spec.run import RunSpec
from kura.workspace import Workspace

__all__ = ["SKY_CHECK", "SkyLaunch", "run_settings", "sky_launch_settings", "sky_plan_checks"]

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


def sky_launch_settings(workspace: Workspace, spec: RunSpec, gpu_id: str) -> SkyLaunch:
    """The settings a launch uses; the plan's problems, if they came back since, refuse it."""
    accelerator, settings, problems = _problems(workspace, spec, gpu_id)
    if problems or accelerator is None:
        raise UsageError("; ".join(p.what for p in problems), hint=problems[0].fix)
    outputs = None if settings.bucket is None else f"{settings.bucket}/{spec.id}"
    return SkyLaunch(accelerator, spec.execution.gpus, settings, outputs)
