"""The SkyPilot executor: the run becomes one managed job, ``sky jobs launch``.

Kura writes ``runs/<id>/sky-task.yaml`` and its supervisor runs
``sky jobs launch -n kura-<run_id> -y --secret NAME… sky-task.yaml`` as the run's only local
step (``sky_job``). That command streams the job's output, so the job's log lands in
``logs/sky_job.log`` where progress parsing and diagnosis read it as for a host run.

* ``run`` is a shell script: the one place Kura builds shell text, each command with
  ``shlex.join`` so every path and value stays a single quoted word.
* ``envs`` holds no secret: secrets are declared under ``secrets:`` with a null value and
  their values are given at launch by ``--secret NAME``, which SkyPilot reads from the
  launching environment.
* Inputs (read-only mounts) are uploaded from this machine with ``file_mounts``. Outputs
  (writable mounts) must go to a bucket mounted with ``mode: MOUNT``: writes to uploaded
  folders never come back. Each writable mount is its own folder of the run's bucket prefix,
  ``<bucket>/<run id>/<mount folder name>`` (``output``, ``logs``, ``cache``).
* When the job's steps end (succeeded or not: a shell ``EXIT`` trap) the job writes
  ``.kura-sha256`` into each writable mount, ``sha256sum`` lines of every file there, which
  ``kura run collect`` checks each copied file against (:mod:`kura.runs.collect`).
* ``resources`` carries the planned accelerator and count, and the cloud settings a person
  gave (:class:`kura.spec.cloud.SkyPilotSettings`): ``cloud``, ``region``, ``use_spot``,
  ``disk_size``. The task is checked by SkyPilot's own ``sky.Task.from_yaml`` in the tests.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from ruamel.yaml.scalarstring import LiteralScalarString

from kura.errors import Unsupported, UsageError
from kura.execution.commands import StepCommand
from kura.execution.executors.host import HostExecutor
from kura.execution.launch_spec import LaunchRecord, LaunchSpec, Step
from kura.execution.state import RunState
from kura.spec.cloud import SkyPilotSettings
from kura.yamlio import write_yaml

__all__ = [
    "MANIFEST",
    "SKY_STEP",
    "TASK_FILE",
    "SkyPilotExecutor",
    "bucket_folder",
    "manifest_command",
    "sky_job_name",
    "sky_launch_argv",
    "sky_task",
]

SKY_STEP = "sky_job"
TASK_FILE = "sky-task.yaml"
MANIFEST = ".kura-sha256"


def sky_job_name(run_id: str) -> str:
    return f"kura-{run_id}"


def sky_task(
    spec: LaunchSpec,
    *,
    accelerator: str,
    output_bucket: str | None = None,
    setup: str | None = None,
    settings: SkyPilotSettings | None = None,
) -> dict[str, Any]:
    """The SkyPilot task for ``spec`` as a mapping (written as YAML by the executor);
    ``output_bucket`` is this run's prefix (``<bucket>/<run id>``)."""
    task: dict[str, Any] = {"name": sky_job_name(spec.run_id)}
    task["resources"] = _resources(spec, accelerator, settings or SkyPilotSettings())
    mounts = _file_mounts(spec, output_bucket)
    if mounts:
        task["file_mounts"] = mounts
    envs = dict(spec.container.env) if spec.container is not None else {}
    if envs:
        task["envs"] = envs
    if spec.pass_env:
        task["secrets"] = dict.fromkeys(spec.pass_env)
    if setup:
        task["setup"] = LiteralScalarString(setup.rstrip("\n") + "\n")
    task["run"] = LiteralScalarString(run_script(spec))
    return task


def _resources(spec: LaunchSpec, accelerator: str, settings: SkyPilotSettings) -> dict[str, Any]:
    resources: dict[str, Any] = {"accelerators": f"{accelerator}:{max(1, spec.gpus)}"}
    if settings.cloud is not None:
        resources["cloud"] = settings.cloud
    if settings.region is not None:
        resources["region"] = settings.region
    if settings.use_spot is not None:
        resources["use_spot"] = settings.use_spot
    if settings.disk_size_gb is not None:
        resources["disk_size"] = settings.disk_size_gb
    if spec.container is not None:
        resources["image_id"] = f"docker:{spec.container.image}"
    return resources


def bucket_folder(target: str) -> str:
    """The folder of the run's bucket prefix a writable mount lives in: its last name."""
    return PurePosixPath(target).name


def run_script(spec: LaunchSpec) -> str:
    """``set -euo pipefail``, the manifest trap, then, per step not skipped, ``cd DIR`` and
    ``env K=V… argv``."""
    lines = ["set -euo pipefail", *_manifest_trap(spec)]
    for step in spec.steps:
        if step.name in spec.skip_steps:
            continue
        lines.append(f"echo {shlex.quote(f'[kura] step {step.name} starting')}")
        lines.append(f"cd {shlex.quote(_remote_cwd(spec, step))}")
        lines.append(shlex.join(_env_prefix(step) + list(step.argv)))
    return "\n".join(lines) + "\n"


def _manifest_trap(spec: LaunchSpec) -> list[str]:
    """On exit, ``sha256sum`` of every file of each writable mount into its ``.kura-sha256``
    (paths relative to the mount, sorted), without changing the script's exit status."""
    if spec.container is None:
        return []
    targets = [m.target for m in spec.container.mounts if not m.read_only]
    if not targets:
        return []
    each = (f"{manifest_command(t)} || true" for t in targets)
    return ["kura_manifest() {", *(f"  {line}" for line in each), "}", "trap kura_manifest EXIT"]


def manifest_command(folder: str) -> str:
    """Shell: write ``folder/.kura-sha256``, ``sha256sum`` lines (``HEX  ./name``, sorted)
    of every other file under ``folder``."""
    return (
        f"(cd {shlex.quote(folder)} && find . -type f ! -name {MANIFEST} -print0"
        f" | LC_ALL=C sort -z | xargs -0 -r sha256sum > {MANIFEST})"
    )


def _remote_cwd(spec: LaunchSpec, step: Step) -> str:
    return spec.container.workdir if spec.container is not None else step.cwd


def _env_prefix(step: Step) -> list[str]:
    if not step.env:
        return []
    return ["env", *(f"{name}={value}" for name, value in step.env.items())]


def _file_mounts(spec: LaunchSpec, output_bucket: str | None) -> dict[str, Any]:
    mounts: dict[str, Any] = {}
    if spec.container is None:
        return mounts
    folders: dict[str, str] = {}
    for mount in spec.container.mounts:
        for path in (mount.source or "", mount.target):
            if "$" in path:
                raise UsageError(
                    f"the path {path!r} holds a '$', which SkyPilot expands in file_mounts",
                    hint="rename the folder, or launch with the host or docker executor",
                )
        if mount.read_only:
            mounts[mount.target] = mount.source
        elif output_bucket is None:
            raise UsageError(
                f"run {spec.run_id} writes to {mount.target}, and a SkyPilot job's writes come "
                "back only through a bucket",
                hint="set `bucket` under [skypilot] in kura.toml (e.g. s3://my-bucket/kura), "
                "then plan and approve again",
            )
        else:
            folder = bucket_folder(mount.target)
            if folder in folders:
                raise UsageError(
                    f"writable mounts {folders[folder]} and {mount.target} would share the "
                    f"bucket folder {output_bucket}/{folder}",
                    hint="give the backend's writable mounts folder names of their own",
                )
            folders[folder] = mount.target
            mounts[mount.target] = {"source": f"{output_bucket}/{folder}", "mode": "MOUNT"}
    return mounts


def sky_launch_argv(spec: LaunchSpec, task_path: Path) -> list[str]:
    """``sky jobs launch -n kura-<id> -y [--secret NAME]… <task.yaml>``."""
    argv = ["sky", "jobs", "launch", "-n", sky_job_name(spec.run_id), "-y"]
    for name in spec.pass_env:
        argv += ["--secret", name]
    argv.append(str(task_path))
    return argv


class SkyPilotExecutor(HostExecutor):
    name = "skypilot"
    in_container = True
    remote = True

    @staticmethod
    def command(record: LaunchRecord, step: Step) -> StepCommand:
        """The one local step, ``sky jobs launch``: a client that needs the cloud
        credentials of Kura's environment and reads the ``--secret NAME`` values from it."""
        return StepCommand(list(step.argv), step.cwd, dict(os.environ))

    @staticmethod
    def remote_stop(state: RunState, grace: float) -> list[str] | None:
        """A cloud job outlives a killed client: cancel it by name."""
        if not state.sky_job:
            return None
        return ["sky", "jobs", "cancel", "--yes", "--name", state.sky_job]

    def __init__(
        self,
        *,
        accelerator: str,
        output_bucket: str | None = None,
        setup: str | None = None,
        settings: SkyPilotSettings | None = None,
    ) -> None:
        self.accelerator = accelerator
        self.output_bucket = output_bucket
        self.setup = setup
        self.settings = settings

    def check_spec(self, spec: LaunchSpec) -> None:
        super().check_spec(spec)
        if shutil.which("sky") is None:
            raise Unsupported(
                "SkyPilot's `sky` command is not on PATH",
                hint="install it with `pip install skypilot` (plus your cloud's extra, e.g. "
                "`pip install 'skypilot[aws]'`) and run `sky check`",
            )

    def write_task(self, spec: LaunchSpec) -> Path:
        path = Path(spec.run_dir) / TASK_FILE
        task = sky_task(
            spec,
            accelerator=self.accelerator,
            output_bucket=self.output_bucket,
            setup=self.setup,
            settings=self.settings,
        )
        write_yaml(path, task)
        return path

    def prepare(self, spec: LaunchSpec, backend_config: dict[str, Any]) -> LaunchRecord:
        """One local step, ``sky jobs launch``, run by the supervisor like a host step."""
        task_path = self.write_task(spec)
        local = LaunchSpec(
            run_id=spec.run_id,
            run_dir=spec.run_dir,
            steps=[Step(SKY_STEP, tuple(sky_launch_argv(spec, task_path)), {}, str(spec.run_dir))],
            executor="skypilot",
            container=spec.container,
            gpus=spec.gpus,
            pass_env=spec.pass_env,
            skip_steps=[],
        )
        return LaunchRecord(local, backend_config, {"sky_job": sky_job_name(spec.run_id)})
