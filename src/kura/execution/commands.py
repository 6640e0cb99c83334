"""Turn a step into the process to start: argv, working folder, environment, container name.

Each executor says how (its ``command``; :func:`kura.execution.executors.step_command` picks
the run's): host steps run as compiled, docker steps through
``docker run`` (:mod:`kura.execution.executors.docker`), a SkyPilot run as one local step,
``sky jobs launch``, whose argv the SkyPilot executor prepared.
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.execution.launch_spec import LaunchRecord, Step
from kura.execution.procutil import step_environment

__all__ = ["StepCommand", "host_command"]


@dataclass(frozen=True)
class StepCommand:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    container: str | None = None


def host_command(record: LaunchRecord, step: Step) -> StepCommand:
    """A step as compiled, with the short environment Kura passes on (no secrets but the
    named ``pass_env`` variables, thread caps per GPU)."""
    env = step_environment(step.env, record.spec.pass_env, record.spec.gpus)
    return StepCommand(list(step.argv), step.cwd, env)
