"""What the runs layer hands an executor: the steps of one run, ready to run.

Every command is an argv list, never a shell string. Secret values never travel in a
spec: ``pass_env`` holds only the names of variables read from Kura's environment at the
moment a step starts. The spec is saved as ``runs/<id>/launch.json`` so a detached
supervisor (and a later relaunch) can read it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kura.backends.base import ContainerSpec, Mount, Step
from kura.errors import StateConflict

__all__ = [
    "CACHE_STEPS",
    "ContainerSpec",
    "ExecutorName",
    "LaunchSpec",
    "Mount",
    "Step",
    "load_launch_record",
    "save_launch_record",
]

ExecutorName = Literal["host", "docker", "skypilot"]
CACHE_STEPS = ("cache_latents", "cache_text_encoder")
LAUNCH_RECORD = "launch.json"


@dataclass(frozen=True)
class LaunchSpec:
    run_id: str
    run_dir: Path
    steps: list[Step]
    executor: ExecutorName
    container: ContainerSpec | None
    gpus: int
    pass_env: list[str]
    skip_steps: list[str]


@dataclass(frozen=True)
class LaunchRecord:
    """A spec plus what the executor needs to carry it out later (written to launch.json)."""

    spec: LaunchSpec
    backend_config: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    backend: str = "musubi-tuner"
    """The backend whose diagnosis reads this run's failures (``backend.name``)."""


def save_launch_record(record: LaunchRecord) -> Path:
    """Write ``runs/<id>/launch.json`` atomically and return its path."""
    from kura.schema.launch import LaunchFile, LaunchSpecEntry
    from kura.schema.machine import write_machine_file

    spec = record.spec
    entry = LaunchSpecEntry(
        run_id=spec.run_id,
        run_dir=str(spec.run_dir),
        steps=list(spec.steps),
        executor=spec.executor,
        container=spec.container,
        gpus=spec.gpus,
        pass_env=list(spec.pass_env),
        skip_steps=list(spec.skip_steps),
    )
    document = LaunchFile(
        spec=entry,
        backend=record.backend,
        backend_config=record.backend_config,
        options=record.options,
    )
    path = Path(spec.run_dir) / LAUNCH_RECORD
    write_machine_file(path, document)
    return path


def load_launch_record(run_dir: Path) -> LaunchRecord:
    """Read ``runs/<id>/launch.json`` back; a damaged file is :class:`InvalidInput`."""
    from kura.schema.launch import LaunchFile
    from kura.schema.machine import read_machine_file

    path = Path(run_dir) / LAUNCH_RECORD
    if not path.is_file():
        raise StateConflict(
            f"{path} does not exist",
            hint="the run was never launched from this folder; launch it with `kura run launch`",
            path=path,
        )
    found = read_machine_file(
        LaunchFile, path, remedy="relaunch the run with `kura run relaunch`, which writes it"
    )
    raw = found.spec
    spec = LaunchSpec(
        run_id=raw.run_id,
        run_dir=Path(raw.run_dir),
        steps=list(raw.steps),
        executor=raw.executor,
        container=raw.container,
        gpus=raw.gpus,
        pass_env=list(raw.pass_env),
        skip_steps=list(raw.skip_steps),
    )
    return LaunchRecord(
        spec, dict(found.backend_config), dict(found.options), backend=found.backend
    )
