"""The one gate: `kura run approve` binds an approval to the digest of what will run.

The approval (``runs/<id>/approval.json``) holds the sha256 of every compiled file (the
dataset TOML, the commands, the container, the lock) and of plan.md, plus a copy of run.yaml
as data. :func:`check_approval` recomputes them; any difference refuses the launch and names
what changed, down to the run.yaml key.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kura.bounded import load_json
from kura.errors import CheckFailed, InvalidInput
from kura.fsutil import atomic_write_text
from kura.runs.compile import COMPILED_DIR, compile_in_workspace
from kura.runs.plan import PLAN_JSON, PLAN_NAME
from kura.runs.store import load_run
from kura.workspace import Workspace

__all__ = ["APPROVAL_NAME", "Approval", "approve_run", "check_approval", "diff_values"]

APPROVAL_NAME = "approval.json"


@dataclass(frozen=True)
class Approval:
    run_id: str
    digest: str
    files: dict[str, str]
    approved_at: str
    approved_by: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "run-approval",
            "run": self.run_id,
            "digest": self.digest,
            "files": self.files,
            "approved_at": self.approved_at,
            "approved_by": self.approved_by,
        }


def _file_digests(workspace: Workspace, run_id: str) -> dict[str, str]:
    folder = workspace.run_dir(run_id)
    paths = [*sorted((folder / COMPILED_DIR).glob("*")), folder / PLAN_NAME, folder / PLAN_JSON]
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in paths
        if p.is_file()
    }


def _combined(files: dict[str, str]) -> str:
    canonical = json.dumps(files, sort_keys=True).encode()
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def approve_run(workspace: Workspace, run_id: str, *, via: str = "plan") -> Approval:
    """Approve the current plan; refuse when there is none or it is stale.

    The plan's contingency (one rung up the ladder on an out-of-memory) is approved with it;
    ``via="contingency"`` records an approval made by relaunch applying that rung, which
    consumes it.
    """
    spec, _ = load_run(workspace, run_id)
    folder = workspace.run_dir(run_id)
    if not (folder / PLAN_NAME).is_file() or not (folder / PLAN_JSON).is_file():
        raise CheckFailed(
            f"run {run_id} has no plan to approve",
            hint=f"run `kura run plan {run_id}` and read plan.md first",
        )
    if compile_in_workspace(workspace, run_id).changed:
        raise CheckFailed(
            f"run {run_id} changed since its plan was made (the compiled commands differ)",
            hint=f"run `kura run plan {run_id}` again, read it, then approve",
        )
    files = _file_digests(workspace, run_id)
    approval = Approval(
        run_id=run_id,
        digest=_combined(files),
        files=files,
        approved_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        approved_by=f"{getpass.getuser()}@{socket.gethostname()}",
    )
    plan = json.loads((folder / PLAN_JSON).read_text(encoding="utf-8"))
    record = {
        **approval.to_dict(),
        "via": via,
        "contingency": plan.get("contingency") if via == "plan" else None,
        "run_yaml": spec.model_dump(mode="json"),
    }
    with workspace.lock():
        atomic_write_text(
            folder / APPROVAL_NAME, json.dumps(record, indent=2, sort_keys=True) + "\n"
        )
    return approval


def check_approval(workspace: Workspace, run_id: str) -> dict[str, Any]:
    """The stored approval, after checking that nothing changed since; else CheckFailed naming
    what changed and the way back (plan, then approve)."""
    spec, _ = load_run(workspace, run_id)
    path = workspace.run_dir(run_id) / APPROVAL_NAME
    if not path.exists():
        raise CheckFailed(
            f"run {run_id} is not approved",
            hint=f"run `kura run plan {run_id}`, read plan.md, then `kura run approve {run_id}`",
        )
    try:
        record = load_json(path)
        if not isinstance(record, dict):
            raise InvalidInput(f"{path} does not hold a JSON object", path=path)
    except InvalidInput as exc:
        raise CheckFailed(
            f"{path} cannot be read ({exc.message})",
            hint=f"approve again: `kura run plan {run_id}` then `kura run approve {run_id}`",
            path=path,
        ) from None
    changes = diff_values(record.get("run_yaml", {}), spec.model_dump(mode="json"))
    if changes:
        raise CheckFailed(
            "run.yaml changed after approval: " + "; ".join(changes[:5]),
            hint=f"run `kura run plan {run_id}` and approve again",
        )
    current = _file_digests(workspace, run_id)
    approved = record.get("files", {})
    changed = sorted(
        name for name in set(current) | set(approved) if current.get(name) != approved.get(name)
    )
    if changed or _combined(current) != record.get("digest"):
        raise CheckFailed(
            f"run {run_id} changed after approval: {', '.join(changed) or 'the approval record'}",
            hint=f"run `kura run plan {run_id}` and approve again",
        )
    return record


def diff_values(before: Any, after: Any, prefix: str = "") -> list[str]:
    """``backend.config.blocks_to_swap 16 → 20`` for every leaf that differs."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in sorted(set(before) | set(after)):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in before:
                out.append(f"{path} added ({after[key]!r})")
            elif key not in after:
                out.append(f"{path} removed (was {before[key]!r})")
            else:
                out += diff_values(before[key], after[key], path)
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        out = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            out += diff_values(old, new, f"{prefix}.{index}")
        return out
    if before != after:
        return [f"{prefix} {before!r} → {after!r}"]
    return []


def approval_path(workspace: Workspace, run_id: str) -> Path:
    return workspace.run_dir(run_id) / APPROVAL_NAME
