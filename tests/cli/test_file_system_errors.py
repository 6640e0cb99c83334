"""Full disks and read-only workspaces: every refused write is one error document naming
the path, the cause and the fix (exit 8); the commands that only read work read-only."""

from __future__ import annotations

import errno
import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.builders import character_workspace, mark_trained
from tests.readonly import kernel_enforces_chmod, refused_writes

from kura.cli.main import main
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace


@pytest.fixture
def planned(tmp_path: Path) -> tuple[Workspace, str]:
    ws = character_workspace(tmp_path)
    run_id = create_run(
        ws, datasets=["myaku"], base="flux2-klein-base-4b", now=datetime(2026, 12, 1, 9, 0)
    ).run_id
    plan_run(ws, run_id, gpu="rtx-4090")
    return ws, run_id


def _json(ws: Workspace, *argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(["-w", str(ws.root), "--json", *argv], stdout=out)
    return code, json.loads(out.getvalue())


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


READ_ONLY = ["dataset validate myaku", "dataset inspect myaku", "run plan {run} --gpu rtx-4090"]


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only_commands_work_on_a_read_only_workspace(
    planned: tuple[Workspace, str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Nothing changed since the last inspection and plan: validate, inspect and plan
    answer as on a writable disk and write nothing (not even the lock)."""
    ws, run_id = planned
    argv = command.format(run=run_id).split()
    writable_code, writable = _json(ws, *argv)
    before = _tree(ws.root)
    with refused_writes(ws.root, monkeypatch, errno.EROFS):
        code, document = _json(ws, *argv)
    assert code == writable_code, document
    assert "error" not in document and document["kind"] == writable["kind"]
    assert _tree(ws.root) == before


@pytest.mark.parametrize(
    ("command", "written"),
    [
        ("run approve {run}", "runs/{run}/approval.json"),
        ("run evaluate {run} --rating 4", "runs/{run}/notes.md"),
        ("dataset set myaku intent.trigger=myaku", "datasets/myaku/dataset.yaml"),
        ("run new --dataset myaku --base flux2-klein-base-4b", "runs/"),
    ],
)
@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
def test_a_refused_write_is_one_error_document_naming_path_cause_and_fix(
    planned: tuple[Workspace, str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    written: str,
    code: int,
) -> None:
    ws, run_id = planned
    if command.startswith("run evaluate"):
        mark_trained(ws, run_id)  # only a run that ran is judged
    before = _tree(ws.root)
    with refused_writes(ws.root, monkeypatch, code):
        exit_code, document = _json(ws, *command.format(run=run_id).split())
    assert exit_code == 8, document
    error = document["error"]
    assert error["type"] == "file-system-error"
    assert written.format(run=run_id) in error["path"]
    if code == errno.ENOSPC:
        assert error["message"].startswith("no space left on the disk that holds")
        assert "free space" in error["hint"]
    elif kernel_enforces_chmod():
        assert error["message"].startswith("permission denied on")
    else:
        assert error["message"].endswith("is on a read-only file system")
        assert "remount it read-write" in error["hint"]
    assert _tree(ws.root) == before, "a refused write changes nothing already written"
