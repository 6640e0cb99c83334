"""The schema of ``runs/<id>/launch.json``: what a detached supervisor carries out.

:class:`LaunchSpec` is what the runs layer hands an executor (the steps of one run, ready to
run) and :class:`LaunchRecord` is that spec plus what the executor needs to carry it out
later. The record *is* the file: the executor writes it at submit, and the supervisor and
``kura run status`` (for the backend whose diagnosis reads a failure) read it back, so no
converter sits between the value and the file. Values are plain JSON, secrets never: the
environment variables a step needs are named in ``pass_env`` and read at start. The steps and
the container are the compiled run's own types (:mod:`kura.schema.compiled`). Like those, these
are pydantic dataclasses: positional construction and ``dataclasses.replace`` as plain
dataclasses, validation (unknown keys refused, no coercion of a scalar) both when an executor
builds one and when the file is read back.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictInt, StrictStr
from pydantic.dataclasses import dataclass

from kura.schema.compiled import ContainerSpec, Step

__all__ = ["ExecutorName", "LaunchRecord", "LaunchSpec"]

ExecutorName = Literal["host", "docker", "skypilot"]

_VALUE = ConfigDict(extra="forbid")
"""Unknown keys are errors; scalar fields are strict themselves (as in ``schema.compiled``)."""


@dataclass(frozen=True, config=_VALUE)
class LaunchSpec:
    """The steps of one run and where and how they run. Every command is an argv list."""

    run_id: StrictStr
    run_dir: Path
    steps: list[Step]
    executor: ExecutorName
    container: ContainerSpec | None
    gpus: Annotated[StrictInt, Field(ge=1)]
    pass_env: list[StrictStr]
    """Names of the variables read from Kura's environment when a step starts (no values)."""
    skip_steps: list[StrictStr]


@dataclass(frozen=True, config=_VALUE)
class LaunchRecord:
    """A spec plus what the executor needs to carry it out later: the schema of launch.json."""

    spec: LaunchSpec
    backend_config: dict[StrictStr, Any] = field(default_factory=dict)
    """What the backend's diagnosis reads of the run."""
    options: dict[StrictStr, Any] = field(default_factory=dict)
    """Executor options (a docker user, a SkyPilot job name)."""
    backend: StrictStr = "musubi-tuner"
    """The backend whose diagnosis reads this run's failures (``backend.name``)."""
