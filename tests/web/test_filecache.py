"""The web layer's file-keyed cache: kept while files are unchanged, never for a live run."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

from kura.execution.state import RunState, write_state
from kura.fsutil import atomic_write_text
from kura.runs.new import create_run
from kura.web import views
from kura.web.filecache import FileCache, signature_of, tree_signature
from tests.builders import character_workspace

BUNDLE = "flux2-klein-base-4b"


def test_value_is_recomputed_when_a_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    atomic_write_text(path, "one")
    cache = FileCache()
    calls: list[str] = []

    def read() -> dict[str, list[str]]:
        calls.append("read")
        return {"text": [path.read_text()]}

    first = cache.get("a", [signature_of(path)], read)
    first["text"].append("edited by the caller")
    assert cache.get("a", [signature_of(path)], read) == {"text": ["one"]}
    atomic_write_text(path, "two")  # same size, same mtime tick possible: new inode
    assert cache.get("a", [signature_of(path)], read) == {"text": ["two"]}
    assert calls == ["read", "read"]
    assert (cache.hits, cache.misses) == (1, 2)


def test_tree_signature_sees_new_and_removed_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    before = tree_signature(tmp_path)
    (tmp_path / "sub" / "new.bin").write_bytes(b"x")
    after = tree_signature(tmp_path)
    assert before != after
    (tmp_path / "sub" / "new.bin").unlink()
    assert len(tree_signature(tmp_path)) == len(before)


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    workspace = character_workspace(tmp_path)
    run_id = create_run(
        workspace, datasets=["myaku"], base=BUNDLE, sets=[], now=datetime(2026, 11, 30, 9, 0)
    ).run_id
    calls: list[str] = []
    real_list, real_status = views.list_runs, views.run_status

    def list_runs(ws):  # type: ignore[no-untyped-def]
        calls.append("list")
        return real_list(ws)

    def run_status(ws, rid):  # type: ignore[no-untyped-def]
        calls.append("status")
        return real_status(ws, rid)

    monkeypatch.setattr(views, "list_runs", list_runs)
    monkeypatch.setattr(views, "run_status", run_status)
    return workspace, run_id, calls


def test_settled_run_is_parsed_once_until_run_yaml_changes(counted) -> None:
    workspace, run_id, calls = counted
    for _ in range(3):
        assert views.run_entry(workspace, run_id).status == "draft"
        views.live_view(workspace, run_id)
    assert calls == ["list", "status"]
    run_yaml = workspace.run_dir(run_id) / "run.yaml"
    atomic_write_text(run_yaml, run_yaml.read_text().replace("task: character", "task: style"))
    assert views.run_entry(workspace, run_id).task == "style"
    assert calls == ["list", "status", "list"]


def test_run_in_flight_is_read_on_every_request(counted) -> None:
    workspace, run_id, calls = counted
    now = "2026-11-30T09:00:00+00:00"
    state = RunState(run_id, "host", "localhost", now, now, status="training")
    state.supervisor_pid = os.getpid()  # alive, so refreshing leaves the state as it is
    state.supervisor_start = None
    write_state(workspace.run_dir(run_id), state)
    for _ in range(2):
        views.run_list(workspace)
    assert calls == ["list", "list"]
