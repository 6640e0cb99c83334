"""The step, mount and container of a compiled run: one type each, from the backend that
compiles them to the supervisor that runs them.

A backend's ``compile`` returns them (:mod:`kura.backends.base` re-exports them as the seam's
vocabulary), ``kura run compile`` writes them to ``runs/<id>/compiled/steps.json`` and
``compiled/container.json``, ``kura run launch`` reads them back and hands them to the
executor, which writes them into ``launch.json`` for the supervisor. They are pydantic
dataclasses: positional construction, ``dataclasses.replace`` and frozen equality as plain
dataclasses have, and validation (unknown keys refused, no coercion of a scalar) both when
a backend builds one and when a file is read back, so no converter sits between the seam
and the files. Both compiled files are bound by the approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic.dataclasses import dataclass

from kura.schema.machine import MachineFile

__all__ = ["ContainerSpec", "Mount", "Step", "StepKind", "StepsFile"]

StepKind = Literal["prepare", "cache", "train", "sample"]
"""What a step is for, as the planner sizes it: data preparation, a caching pass, training
(which may sample along the way), or a sampling-only pass."""

_VALUE = ConfigDict(extra="forbid")
"""Unknown keys are errors; each field is strict itself (``StrictStr`` …). The dataclass is
not strict as a whole, so a file's JSON object validates into it and a list into a tuple."""


@dataclass(frozen=True, config=_VALUE)
class Step:
    """One process of a run: an argv list (never a shell string), its env and working
    folder. Env values never hold secrets: the launch names the variables to pass through."""

    name: StrictStr
    argv: Annotated[
        tuple[StrictStr, ...], Field(min_length=1, description="The process, an argv list.")
    ]
    env: Mapping[StrictStr, StrictStr]
    cwd: StrictStr
    kind: StepKind = "train"
    generated: StrictBool = True
    """False when a person's argv replaced the generated one (an escape hatch)."""


@dataclass(frozen=True, config=_VALUE)
class Mount:
    """A path a container needs. ``source`` is the host side (None until the caller maps
    it); ``baked`` paths live inside the image and are never bound."""

    target: StrictStr
    read_only: StrictBool
    purpose: StrictStr
    source: StrictStr | None = None
    baked: StrictBool = False


@dataclass(frozen=True, config=_VALUE)
class ContainerSpec:
    """The image, GPU request, mounts and environment a container executor needs (the
    schema of ``compiled/container.json``)."""

    image: StrictStr
    gpus: StrictInt | StrictStr
    """A GPU count, ``all``, or device ids (``0,1``), as docker's ``--gpus`` takes them."""
    workdir: StrictStr
    mounts: tuple[Mount, ...]
    env: Mapping[StrictStr, StrictStr]


class StepsFile(MachineFile):
    version: Literal[1] = 1
    backend: str = Field(description="The backend that compiled the steps (backend.name).")
    release: str = Field(description="The trainer release the steps were compiled for.")
    steps: list[Step]
