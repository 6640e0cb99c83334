"""The schema of ``runs/<id>/launch.json``: what a detached supervisor carries out.

Written by the executor at submit, read by the supervisor and by ``kura run status`` (for
the backend whose diagnosis reads a failure). Values are plain JSON, secrets never: the
environment variables a step needs are named in ``pass_env`` and read at start. The steps
and the container are the compiled run's own types (:mod:`kura.schema.compiled`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kura.schema.compiled import ContainerSpec, Step
from kura.schema.machine import MachineFile

__all__ = ["LaunchFile", "LaunchSpecEntry"]


class LaunchSpecEntry(MachineFile):
    run_id: str
    run_dir: str
    steps: list[Step]
    executor: Literal["host", "docker", "skypilot"]
    container: ContainerSpec | None
    gpus: int = Field(ge=1)
    pass_env: list[str]
    skip_steps: list[str]


class LaunchFile(MachineFile):
    spec: LaunchSpecEntry
    backend: str = "musubi-tuner"
    backend_config: dict[str, Any] = Field(
        default_factory=dict, description="What the backend's diagnosis reads of the run."
    )
    options: dict[str, Any] = Field(default_factory=dict, description="Executor options.")
