"""Where a run's files live and how run.yaml is read back.

The run model and the YAML loaders are imported by the functions that read run.yaml: a
listing answered from its cache (:mod:`kura.runs.summaries`) finds the runs here without
building them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.errors import NotFound
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.schema.run import RunSpec

__all__ = [
    "RUN_FILE",
    "check_run_id",
    "existing_run_file",
    "list_run_ids",
    "load_run",
    "read_run",
    "run_file",
]

RUN_FILE = "run.yaml"


def run_file(workspace: Workspace, run_id: str) -> Path:
    return workspace.run_dir(run_id) / RUN_FILE


def list_run_ids(workspace: Workspace) -> list[str]:
    """Run ids, oldest first (ids sort by time): the folders of ``runs/`` holding a
    run.yaml (one ``stat`` each, not a listing of each folder)."""
    try:
        entries = list(os.scandir(workspace.runs_dir))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(
        entry.name
        for entry in entries
        if not entry.name.startswith(".") and os.path.isfile(os.path.join(entry.path, RUN_FILE))
    )


def load_run(workspace: Workspace, run_id: str) -> tuple[RunSpec, Any]:
    """The validated run spec and its round-trip document (for a command that edits it)."""
    from kura.schema.base import load_spec
    from kura.schema.run import RunSpec

    path = existing_run_file(workspace, run_id)
    spec, document = load_spec(RunSpec, path)
    check_run_id(spec, run_id, path)
    return spec, document


def read_run(workspace: Workspace, run_id: str) -> RunSpec:
    """The validated run spec, for a command that only reads it (the fast YAML reader)."""
    from kura.schema.base import read_spec
    from kura.schema.run import RunSpec

    path = existing_run_file(workspace, run_id)
    spec = read_spec(RunSpec, path)
    check_run_id(spec, run_id, path)
    return spec


def existing_run_file(workspace: Workspace, run_id: str) -> Path:
    path = run_file(workspace, run_id)
    if not path.is_file():
        known = list_run_ids(workspace)
        raise NotFound(
            f"no run {run_id!r} in {workspace.root}",
            hint=(f"latest runs: {', '.join(known[-5:])}" if known else "no runs yet")
            + "; create one with `kura run new`",
        )
    return path


def check_run_id(spec: RunSpec, run_id: str, path: Path | str) -> None:
    if spec.id != run_id:
        from kura.errors import InvalidInput

        raise InvalidInput(
            f"{path} says id: {spec.id!r} but lives in the folder of run {run_id!r}",
            hint=f"set `id: {run_id}` in that file",
            path=path,
        )
