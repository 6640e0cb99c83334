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
* A managed job SkyPilot recovers (a spot VM preempted) runs ``run`` again on a new
  machine, with the bucket folders as the last attempt left them. The script counts its
  attempts in ``<logs mount>/kura-attempts.tsv`` (one line each: number, start time, the
  state it resumed from), and from the second on gives the train step the trainer's own
  resume arguments (the backend's :class:`~kura.backends.base.ResumeRule`) when a saved
  state is there; a step that succeeded in an earlier attempt (``kura-done/<step>``) is
  not run again. ``kura run status`` reads the collected record (:mod:`.attempts`).
* When the job's steps end (succeeded or not: a shell ``EXIT`` trap) the job writes
  ``.kura-sha256`` into each writable mount, ``sha256sum`` lines of every file there, which
  ``kura run collect`` checks each copied file against (:mod:`kura.runs.collect`).
* ``resources`` carries the planned accelerator and count, and the cloud settings a person
  gave (:class:`kura.schema.cloud.SkyPilotSettings`): ``cloud``, ``region``, ``use_spot``,
  ``disk_size``. The task is checked by SkyPilot's own ``sky.Task.from_yaml`` in the tests.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

from ruamel.yaml.scalarstring import LiteralScalarString

from kura.backends.base import ResumeRule
from kura.errors import CheckFailed, Unsupported, UsageError
from kura.execution.attempts import JOB_ATTEMPTS
from kura.execution.cloudjob import CloudJob, read_queue
from kura.execution.commands import StepCommand
from kura.execution.executors.host import HostExecutor
from kura.execution.launch_spec import LaunchRecord, LaunchSpec, Step
from kura.execution.state import RunState
from kura.schema.cloud import SkyPilotSettings
from kura.yamlio import write_yaml

__all__ = [
    "ATTEMPTS_FILE",
    "MANIFEST",
    "SKY_STEP",
    "TASK_FILE",
    "SkyPilotExecutor",
    "bucket_folder",
    "manifest_command",
    "sky_job_name",
    "sky_launch_argv",
    "sky_task",
    "sky_worker_launch_argv",
    "sweep_worker_task",
]

SKY_STEP = "sky_job"
TASK_FILE = "sky-task.yaml"
MANIFEST = ".kura-sha256"
ATTEMPTS_FILE = JOB_ATTEMPTS
DONE_FOLDER = "kura-done"
_GLOB = re.compile(r"^/[A-Za-z0-9_./*-]+$")


def sky_job_name(run_id: str) -> str:
    return f"kura-{run_id}"


def sky_task(
    spec: LaunchSpec,
    *,
    accelerator: str,
    output_bucket: str | None = None,
    setup: str | None = None,
    settings: SkyPilotSettings | None = None,
    resume: ResumeRule | None = None,
) -> dict[str, Any]:
    """The SkyPilot task for ``spec`` as a mapping (written as YAML by the executor);
    ``output_bucket`` is this run's prefix (``<bucket>/<run id>``); ``resume`` the trainer's
    resume rule under the run folder as the step sees it (None: a recovered job starts
    every step over)."""
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
    task["run"] = LiteralScalarString(run_script(spec, resume))
    return task


def _resources(spec: LaunchSpec, accelerator: str, settings: SkyPilotSettings) -> dict[str, Any]:
    resources = _resources_of(accelerator, max(1, spec.gpus), settings)
    if spec.container is not None:
        resources["image_id"] = f"docker:{spec.container.image}"
    return resources


def _resources_of(accelerator: str, count: int, settings: SkyPilotSettings) -> dict[str, Any]:
    resources: dict[str, Any] = {"accelerators": f"{accelerator}:{count}"}
    if settings.cloud is not None:
        resources["cloud"] = settings.cloud
    if settings.region is not None:
        resources["region"] = settings.region
    if settings.use_spot is not None:
        resources["use_spot"] = settings.use_spot
    if settings.disk_size_gb is not None:
        resources["disk_size"] = settings.disk_size_gb
    return resources


def bucket_folder(target: str) -> str:
    """The folder of the run's bucket prefix a writable mount lives in: its last name."""
    return PurePosixPath(target).name


def run_script(spec: LaunchSpec, resume: ResumeRule | None = None) -> str:
    """``set -euo pipefail``, the manifest trap, the attempt record, then, per step not
    skipped, ``cd DIR`` and ``env K=V… argv`` (a train step with the resume arguments the
    attempt found; a step an earlier attempt finished, skipped)."""
    logs = _logs_mount(spec)
    lines = ["set -euo pipefail", *_manifest_trap(spec)]
    if logs is not None:
        lines += _attempt_record(logs, resume)
    for step in spec.steps:
        if step.name in spec.skip_steps:
            continue
        lines.append(f"echo {shlex.quote(f'[kura] step {step.name} starting')}")
        lines.append(f"cd {shlex.quote(_remote_cwd(spec, step))}")
        command = shlex.join(_env_prefix(step) + list(step.argv))
        if logs is None:
            lines.append(command)
            continue
        if step.kind == "train":
            command += ' "${kura_resume[@]+"${kura_resume[@]}"}"'
        lines += _once(step.name, command, logs)
    return "\n".join(lines) + "\n"


def _logs_mount(spec: LaunchSpec) -> str | None:
    """The writable mount the job's own records go to: the one named ``logs``."""
    if spec.container is None:
        return None
    found = [m.target for m in spec.container.mounts if not m.read_only]
    return next((t for t in found if bucket_folder(t) == "logs"), None)


def _attempt_record(logs: str, resume: ResumeRule | None) -> list[str]:
    """Shell: this attempt's number (1 + the lines of the record), the newest saved state
    when it is not the first (``kura_state``) and the train step's resume arguments
    (``kura_resume``), then one record line: ``N<TAB>START<TAB>STATE``."""
    record = shlex.quote(f"{logs}/{ATTEMPTS_FILE}")
    lines = [
        f"if [ -f {record} ]; then kura_attempt=$(( $(wc -l < {record}) + 1 )); "
        "else kura_attempt=1; fi",
        "kura_state=",
        "kura_resume=()",
    ]
    if resume is not None:
        lines += _resume_lines(resume)
    lines += [
        'printf \'%s\\t%s\\t%s\\n\' "$kura_attempt" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '
        f'"$kura_state" >> {record}',
        'echo "[kura] attempt $kura_attempt starting${kura_state:+, resuming from $kura_state}"',
    ]
    return lines


def _resume_lines(rule: ResumeRule) -> list[str]:
    if not _GLOB.match(rule.pattern):
        raise UsageError(
            f"the resume pattern {rule.pattern!r} holds characters other than letters, "
            "digits, '_', '.', '-', '/' and '*'",
            hint="rename the run folder, or launch with the host or docker executor",
        )
    order = "ls -1dt --" if rule.newest == "mtime" else "ls -1d --"
    pick = "head -n 1" if rule.newest == "mtime" else "LC_ALL=C sort | tail -n 1"
    argv = " ".join(
        '"$kura_state"' if part == "{state}" else shlex.quote(part) for part in rule.argv
    )
    return [
        'if [ "$kura_attempt" -gt 1 ]; then',
        f"  kura_state=$({order} {rule.pattern} 2>/dev/null | {pick} || true)",
        f'  if [ -n "$kura_state" ]; then kura_resume=({argv}); fi',
        "fi",
    ]


def _once(name: str, command: str, logs: str) -> list[str]:
    """Shell: run ``command`` unless an earlier attempt finished it; mark it finished."""
    marker = shlex.quote(f"{logs}/{DONE_FOLDER}/{name}")
    return [
        f"if [ -f {marker} ]; then echo {shlex.quote(f'[kura] step {name} done before')}; else",
        f"  {command}",
        f"  mkdir -p {shlex.quote(f'{logs}/{DONE_FOLDER}')} && touch {marker}",
        "fi",
    ]


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


def sweep_worker_task(
    *,
    name: str,
    accelerator: str,
    settings: SkyPilotSettings,
    uploads: list[str],
    setup: str,
    worker_argv: list[str],
    cwd: str,
    secrets: list[str],
) -> dict[str, Any]:
    """A managed job that runs one ``kura sweep worker``: each path of ``uploads`` (the
    workspace, the model files the sweep's approval binds) uploaded to the same path, so
    the approval's bound paths hold there; ``secrets`` declared with no value (their values
    are given at launch by ``--secret NAME``) and read by the worker's argv from the job's
    environment (an argv item ``$NAME`` is expanded by the job's shell, never written)."""
    task: dict[str, Any] = {"name": name}
    task["resources"] = _resources_of(accelerator, 1, settings)
    task["file_mounts"] = {path: path for path in uploads}
    task["secrets"] = dict.fromkeys(secrets)
    task["setup"] = LiteralScalarString(setup.rstrip("\n") + "\n")
    words = [
        f'"${{{word[1:]}}}"' if word[:1] == "$" and word[1:] in secrets else shlex.quote(word)
        for word in worker_argv
    ]
    task["run"] = LiteralScalarString(
        f"set -euo pipefail\ncd {shlex.quote(cwd)}\n{' '.join(words)}\n"
    )
    return task


def sky_worker_launch_argv(name: str, secrets: list[str], task_path: Path) -> list[str]:
    """``sky jobs launch -n NAME -y -d [--secret NAME]… <task.yaml>``: detached (``-d``),
    so starting N workers does not wait for the first to finish."""
    argv = ["sky", "jobs", "launch", "-n", name, "-y", "-d"]
    for secret in secrets:
        argv += ["--secret", secret]
    argv.append(str(task_path))
    return argv


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

    @staticmethod
    def cloud_job(state: RunState) -> CloudJob | None:
        """The run's managed job as SkyPilot reports it (``sky jobs queue --all --verbose
        -o json``: the verbose fields hold ``failure_reason``); None when SkyPilot knows no
        job of the run's name."""
        if not state.sky_job:
            return None
        argv = ["sky", "jobs", "queue", "--all", "--verbose", "-o", "json"]
        if shutil.which(argv[0]) is None:
            raise Unsupported(
                "SkyPilot's `sky` command is not on PATH: the job's state cannot be read",
                hint="install it with `pip install skypilot` in the environment Kura runs in",
            )
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        except subprocess.TimeoutExpired:
            raise CheckFailed(
                "`sky jobs queue` did not answer within 120 s",
                hint="check SkyPilot's API server (`sky api status`), then ask again",
            ) from None
        if done.returncode != 0:
            raise CheckFailed(
                f"`sky jobs queue` failed ({done.returncode}): {done.stderr.strip()[-400:]}",
                hint="run `sky jobs queue` by hand to see why",
            )
        return read_queue(done.stdout, state.sky_job)

    def __init__(
        self,
        *,
        accelerator: str,
        output_bucket: str | None = None,
        setup: str | None = None,
        settings: SkyPilotSettings | None = None,
        resume: ResumeRule | None = None,
    ) -> None:
        self.accelerator = accelerator
        self.output_bucket = output_bucket
        self.setup = setup
        self.settings = settings
        self.resume = resume

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
            resume=self.resume,
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
