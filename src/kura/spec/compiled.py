"""The schemas of ``runs/<id>/compiled/steps.json`` and ``compiled/container.json``.

Written by ``kura run compile`` (from a backend's ``CompiledRun``), read by ``kura run
launch``; both files are bound by the approval.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kura.spec.machine import MachineFile

__all__ = ["ContainerFile", "MountEntry", "StepEntry", "StepsFile"]


class StepEntry(MachineFile):
    name: str
    kind: Literal["prepare", "cache", "train", "sample"]
    argv: list[str] = Field(min_length=1, description="The process, an argv list (no shell).")
    env: dict[str, str]
    cwd: str
    generated: bool = Field(description="False when a person's argv replaced Kura's.")


class StepsFile(MachineFile):
    version: Literal[1] = 1
    backend: str = Field(description="The backend that compiled the steps (backend.name).")
    release: str = Field(description="The trainer release the steps were compiled for.")
    steps: list[StepEntry]


class MountEntry(MachineFile):
    target: str
    read_only: bool
    purpose: str
    baked: bool = Field(description="Inside the image: never bound from the host.")
    source: str | None = Field(description="The host side (None for baked paths).")


class ContainerFile(MachineFile):
    image: str
    gpus: int | str
    workdir: str
    mounts: list[MountEntry]
    env: dict[str, str]
