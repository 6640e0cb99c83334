"""Turn a step into the process to start: argv, working folder, environment, container name.

Host steps run as compiled. Docker steps run through ``docker run`` (see
:mod:`kura.execution.executors.docker`). A SkyPilot run is one local step, ``sky jobs launch``,
whose argv the SkyPilot executor prepared; it runs like a host step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kura.execution.launch_spec import LaunchRecord, Step
from kura.execution.procutil import step_environment

__all__ = ["StepCommand", "step_command"]


@dataclass(frozen=True)
class StepCommand:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    container: str | None = None


def step_command(record: LaunchRecord, step: Step) -> StepCommand:
    spec = record.spec
    if spec.executor == "docker":
        from kura.execution.executors.docker import container_name, docker_run_argv

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
        env = dict(os.environ)
        return StepCommand(argv, str(spec.run_dir), env, container_name(spec.run_id, step.name))
    if spec.executor == "skypilot":
        # `sky` is a client: it needs the cloud credentials of Kura's environment, and reads
        # the values of `--secret NAME` from it.
        return StepCommand(list(step.argv), step.cwd, dict(os.environ))
    env = step_environment(step.env, spec.pass_env, spec.gpus)
    return StepCommand(list(step.argv), step.cwd, env)
