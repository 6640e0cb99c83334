"""What the runs layer hands an executor, and ``runs/<id>/launch.json``'s one writer and
reader.

The types are the file's schema (:mod:`kura.schema.launch`); the spec is saved as
``launch.json`` so a detached supervisor (and a later relaunch) can read it back. Secret
values never travel in a spec: ``pass_env`` holds only the names of variables read from
Kura's environment at the moment a step starts.
"""

from __future__ import annotations

from pathlib import Path

from kura.errors import StateConflict
from kura.schema.compiled import ContainerSpec, Mount, Step
from kura.schema.launch import ExecutorName, LaunchRecord, LaunchSpec

__all__ = [
    "CACHE_STEPS",
    "ContainerSpec",
    "ExecutorName",
    "LaunchRecord",
    "LaunchSpec",
    "Mount",
    "Step",
    "load_launch_record",
    "save_launch_record",
]

CACHE_STEPS = ("cache_latents", "cache_text_encoder")
LAUNCH_RECORD = "launch.json"


def save_launch_record(record: LaunchRecord) -> Path:
    """Write ``runs/<id>/launch.json`` atomically and return its path."""
    from kura.schema.machine import write_machine_file

    path = Path(record.spec.run_dir) / LAUNCH_RECORD
    write_machine_file(path, record)
    return path


def load_launch_record(run_dir: Path) -> LaunchRecord:
    """Read ``runs/<id>/launch.json`` back; a damaged file is :class:`InvalidInput`."""
    from kura.schema.machine import read_machine_file

    path = Path(run_dir) / LAUNCH_RECORD
    if not path.is_file():
        raise StateConflict(
            f"{path} does not exist",
            hint="the run was never launched from this folder; launch it with `kura run launch`",
            path=path,
        )
    return read_machine_file(
        LaunchRecord, path, remedy="relaunch the run with `kura run relaunch`, which writes it"
    )
