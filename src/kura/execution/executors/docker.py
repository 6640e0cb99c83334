"""The Docker executor: each step runs in ``docker run`` under the same supervisor as a
host run, with the client's output appended to the step's log file.

Secrets are passed as ``-e NAME`` with no value: the docker client copies the value from its
own environment when it starts the container, so the value never appears in an argv, in
``ps`` output, or in any file Kura writes.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

from kura.errors import Unsupported, UsageError
from kura.execution.commands import StepCommand
from kura.execution.executors.host import HostExecutor
from kura.execution.launch_spec import ContainerSpec, LaunchRecord, LaunchSpec, Step
from kura.execution.state import RunState

__all__ = ["DockerExecutor", "container_name", "docker_run_argv", "gpus_argument"]

_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]")


def container_name(run_id: str, step: str) -> str:
    """``kura-<run_id>-<step>``, reduced to the characters Docker allows in a name."""
    return _NAME_UNSAFE.sub("-", f"kura-{run_id}-{step}")


def gpus_argument(gpus: str) -> str:
    """The value of ``--gpus``: ``all``, a count, or ``"device=0,1"`` for device ids.

    Docker parses ``--gpus`` as CSV, so a list of ids must itself be wrapped in double
    quotes inside the single argv element.
    """
    value = gpus.strip()
    if value == "all" or value.isdigit():
        return value
    if re.fullmatch(r"\d+(,\d+)*", value):
        return f'"device={value}"'
    if value.startswith(("device=", '"device=')):
        return value if value.startswith('"') else f'"{value}"'
    raise UsageError(
        f"cannot read the GPU selection {gpus!r}",
        hint='use "all", a count such as "2", or device ids such as "0,1"',
    )


def docker_run_argv(
    container: ContainerSpec,
    step: Step,
    *,
    run_id: str,
    pass_env: list[str],
    user: str | None = None,
) -> list[str]:
    """The exact ``docker run`` argv for one step."""
    argv = [
        "docker",
        "run",
        "--rm",
        "--name",
        container_name(run_id, step.name),
        "--gpus",
        gpus_argument(str(container.gpus)),
        # PyTorch data loader workers hand batches over through /dev/shm; Docker's default
        # 64 MiB shm is too small for video latents, so share the host's IPC namespace.
        "--ipc=host",
    ]
    for mount in container.mounts:
        mode = "ro" if mount.read_only else "rw"
        argv += ["-v", f"{mount.source}:{mount.target}:{mode}"]
    for name, value in {**container.env, **step.env}.items():
        argv += ["-e", f"{name}={value}"]
    for name in pass_env:
        argv += ["-e", name]
    # Step.cwd is a host path; inside the container the working folder is the image's.
    argv += ["-w", container.workdir]
    if user:
        argv += ["--user", user]
    argv.append(container.image)
    argv += step.argv
    return argv


class DockerExecutor(HostExecutor):
    name = "docker"
    in_container = True
    local_image = True

    @staticmethod
    def command(record: LaunchRecord, step: Step) -> StepCommand:
        """``docker run`` of the step in the run's container."""
        spec = record.spec
        if spec.container is None:
            raise ValueError("a docker launch needs a container spec")
        argv = docker_run_argv(
            spec.container,
            step,
            run_id=spec.run_id,
            pass_env=spec.pass_env,
            user=record.options.get("docker_user"),
        )
        # The docker client needs its own configuration (DOCKER_HOST, DOCKER_CONFIG…) and
        # reads the secret values named by `-e NAME` from this environment.
        return StepCommand(
            argv, str(spec.run_dir), dict(os.environ), container_name(spec.run_id, step.name)
        )

    @staticmethod
    def remote_stop(state: RunState, grace: float) -> list[str] | None:
        """A container outlives a killed client: stop it by name."""
        if not state.container:
            return None
        return ["docker", "stop", "--time", str(int(grace)), state.container]

    def __init__(self, *, user: str | None = None) -> None:
        self.user = user

    def check_spec(self, spec: LaunchSpec) -> None:
        super().check_spec(spec)
        if spec.container is None:
            raise UsageError(f"run {spec.run_id} uses the docker executor but has no container")
        if shutil.which("docker") is None:
            raise Unsupported(
                "the docker command is not on PATH",
                hint="install Docker with the NVIDIA Container Toolkit, or launch with the host "
                "executor",
            )

    def prepare(self, spec: LaunchSpec, backend_config: dict[str, Any]) -> LaunchRecord:
        return LaunchRecord(spec, backend_config, {"docker_user": self.user})
