"""``kura run import-aitk PATH``: a run made with a trainer outside Kura, kept as evidence.

The backend reads its trainer's own job and logs (:class:`kura.backends.base.Importer`);
this module writes the record under ``runs/<id>/`` — ``import.json`` and the job text as it
was — with no ``run.yaml`` (it is not a Kura run and cannot be launched). Plans read the
records like past runs of the same bundle and GPU class: measured seconds per step, and
whether it finished.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from kura.errors import UsageError
from kura.fsutil import atomic_write_text
from kura.workspace import Workspace, new_run_id

__all__ = ["IMPORT_FILE", "import_run", "imported_runs"]

IMPORT_FILE = "import.json"


def import_run(
    workspace: Workspace,
    path: Path,
    *,
    backend: str,
    gpu: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    from kura.backends.base import Importer
    from kura.backends.registry import get_backend

    trainer = get_backend(backend)
    if not isinstance(trainer, Importer):
        raise UsageError(f"backend {backend} cannot import runs made outside Kura")
    record = trainer.import_job(path.expanduser())
    if gpu is not None:
        from kura.planning.gpus import get_gpu_class

        gpu = get_gpu_class(gpu).id
    document = {
        "kind": "imported-run",
        **{k: v for k, v in asdict(record).items() if k != "job_text"},
        "losses": [list(pair) for pair in record.losses],
        "gpu": gpu,
    }
    with workspace.lock():
        run_id = new_run_id(workspace.runs_dir, now)
        folder = workspace.run_dir(run_id)
        folder.mkdir(parents=True)
        document["id"] = run_id
        suffix = Path(record.source).suffix or ".yaml"
        atomic_write_text(folder / f"imported-job{suffix}", record.job_text)
        atomic_write_text(
            folder / IMPORT_FILE, json.dumps(document, indent=2, sort_keys=True) + "\n"
        )
    return document


def imported_runs(workspace: Workspace) -> list[dict[str, Any]]:
    """Every import record, oldest first; a damaged one is skipped (it is no evidence)."""
    found: list[dict[str, Any]] = []
    if not workspace.runs_dir.is_dir():
        return found
    for path in sorted(workspace.runs_dir.glob(f"*/{IMPORT_FILE}")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("kind") == "imported-run":
            found.append(data)
    return found
