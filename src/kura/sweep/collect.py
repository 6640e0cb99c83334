"""Trial artifacts: linked under the sweep folder by the machine that ran the trial, listed
in the study, and gathered onto one machine by `kura sweep collect`.

A worker links (or copies, across file systems) a finished trial's LoRA files, samples, logs,
state, plan and compiled commands into ``sweeps/<id>/trials/t<NNNN>/artifacts/`` and lists
them (path under the sweep folder, size, sha256) in the trial's ``kura.artifacts``.
``collect`` reads that list from the study and copies every file it does not have yet from
the other machines' workspaces (mounted or synced folders given with ``--from``), checking
each file's sha256; a file already here with other bytes is never overwritten (it is reported).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

from kura.backends.base import OutputLayout
from kura.errors import UsageError
from kura.sweep.values import Artifact, read_attr_list
from kura.workspace import Workspace

__all__ = ["collect_sweep", "gather_run"]

_RUN_FILES = (
    "run.yaml",
    "plan.md",
    "plan.json",
    "state.json",
    "sweep-stop.json",
    "compiled/steps.json",
    "compiled/run.lock",
)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        target.unlink()
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def gather_run(
    run_dir: Path, target: Path, outputs: OutputLayout, *, relative_to: Path
) -> list[Artifact]:
    """Link the run's files under ``target``; each as the ``kura.artifacts`` item the worker
    records."""
    chosen: list[Path] = [run_dir / name for name in _RUN_FILES]
    chosen += sorted((run_dir / "logs").glob("*.log"))
    chosen += [*outputs.lora_files, *outputs.samples]
    listed: list[Artifact] = []
    for path in chosen:
        if not path.is_file():
            continue
        relative = path.relative_to(run_dir)
        dest = target / relative
        _place(path, dest)
        artifact = Artifact(
            path=str(dest.relative_to(relative_to)), size=dest.stat().st_size, sha256=_sha256(dest)
        )
        listed.append(artifact)
    return listed


def collect_sweep(
    workspace: Workspace, sweep_id: str, *, sources: list[Path], storage_url: str | None = None
) -> dict[str, Any]:
    from kura.sweep.records import load_sweep, sweep_dir
    from kura.sweep.study import load_study

    sweep = load_sweep(workspace, sweep_id)
    folder = sweep_dir(workspace, sweep_id)
    roots = []
    for source in sources:
        root = source.expanduser().resolve()
        if not root.is_dir():
            raise UsageError(
                f"--from {source} is not a folder",
                hint="name another machine's workspace (mounted or synced)",
            )
        roots.append(root / "sweeps" / sweep_id)
    study = load_study(workspace, sweep, storage_url=storage_url)
    report: dict[str, list[Any]] = {"present": [], "copied": [], "missing": [], "conflicts": []}
    for trial in study.get_trials(deepcopy=False):
        artifacts = read_attr_list(trial.user_attrs, "kura.artifacts", Artifact, trial=trial.number)
        for item in artifacts:
            relative = Path(item.path)
            if relative.is_absolute() or ".." in relative.parts:
                report["conflicts"].append({"path": item.path, "why": "not inside the sweep"})
                continue
            here = folder / relative
            entry = {
                "trial": trial.number,
                "path": item.path,
                "host": trial.user_attrs.get("kura.host"),
            }
            if here.is_file():
                if _sha256(here) == item.sha256:
                    report["present"].append(entry)
                else:
                    report["conflicts"].append({**entry, "why": "a different file is here; kept"})
                continue
            found = next(
                (
                    root / relative
                    for root in roots
                    if (root / relative).is_file() and _sha256(root / relative) == item.sha256
                ),
                None,
            )
            if found is None:
                report["missing"].append(entry)
                continue
            here.parent.mkdir(parents=True, exist_ok=True)
            partial = here.with_name(here.name + ".partial")
            shutil.copy2(found, partial)
            os.replace(partial, here)
            report["copied"].append({**entry, "from": str(found)})
    return {
        "kind": "sweep-collect",
        "sweep": sweep_id,
        **report,
        "counts": {k: len(v) for k, v in report.items()},
    }
