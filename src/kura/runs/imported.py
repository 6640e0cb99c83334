"""``kura run import-aitk PATH``: a run made with a trainer outside Kura, kept as evidence.

The backend reads its trainer's own job and logs (:class:`kura.backends.base.Importer`);
this module writes the record under ``runs/<id>/`` — ``import.json`` and the job text as it
was — with no ``run.yaml`` (it is not a Kura run and cannot be launched). Plans read the
records like past runs of the same bundle and GPU class: measured seconds per step, and
whether it finished.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kura.errors import UsageError
from kura.fsutil import atomic_write_text
from kura.nextsteps import NextStep, next_list
from kura.workspace import Workspace, new_run_id

if TYPE_CHECKING:
    from kura.backends.base import ImportedRun

__all__ = ["IMPORT_FILE", "RunImport", "import_run", "imported_runs"]

IMPORT_FILE = "import.json"


@dataclass(frozen=True)
class RunImport:
    """``kura run import-aitk``: the run record ``id`` written from the trainer's own job
    and logs (``record``), with the GPU class it ran on when named, and what to run next."""

    id: str
    record: ImportedRun
    gpu: str | None
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "imported-run"

    def record_document(self) -> dict[str, object]:
        """The ``import.json`` document (everything but the job text and ``next``)."""
        return {
            "kind": self.kind,
            **{k: v for k, v in asdict(self.record).items() if k != "job_text"},
            "losses": [list(pair) for pair in self.record.losses],
            "gpu": self.gpu,
            "id": self.id,
        }

    def to_dict(self) -> dict[str, object]:
        """The record as a document: the run is ``run`` here (import.json keeps ``id``)."""
        document = self.record_document()
        return {**document, "run": document.pop("id"), "next": next_list(*self.next)}


def import_run(
    workspace: Workspace,
    path: Path,
    *,
    backend: str,
    gpu: str | None = None,
    now: datetime | None = None,
) -> RunImport:
    from kura.backends.base import Importer
    from kura.backends.registry import get_backend

    trainer = get_backend(backend)
    if not isinstance(trainer, Importer):
        raise UsageError(f"backend {backend} cannot import runs made outside Kura")
    record = trainer.import_job(path.expanduser())
    if gpu is not None:
        from kura.planning.gpus import get_gpu_class

        gpu = get_gpu_class(gpu).id
    with workspace.lock():
        run_id = new_run_id(workspace.runs_dir, now)
        folder = workspace.run_dir(run_id)
        folder.mkdir(parents=True)
        imported = RunImport(id=run_id, record=record, gpu=gpu)
        suffix = Path(record.source).suffix or ".yaml"
        atomic_write_text(folder / f"imported-job{suffix}", record.job_text)
        atomic_write_text(
            folder / IMPORT_FILE,
            json.dumps(imported.record_document(), indent=2, sort_keys=True) + "\n",
        )
    return imported


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
