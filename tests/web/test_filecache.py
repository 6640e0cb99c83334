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
    real_entry, real_status = views.list_entry, views.run_status

    def list_entry(ws, rid, summary):  # type: ignore[no-untyped-def]
        calls.append(f"row {rid}")
        return real_entry(ws, rid, summary)

    def run_status(ws, rid):  # type: ignore[no-untyped-def]
        calls.append(f"status {rid}")
        return real_status(ws, rid)

    monkeypatch.setattr(views, "list_entry", list_entry)
    monkeypatch.setattr(views, "run_status", run_status)
    return workspace, run_id, calls


def test_settled_run_is_parsed_once_until_run_yaml_changes(counted) -> None:
    workspace, run_id, calls = counted
    for _ in range(3):
        assert views.run_entry(workspace, run_id).status == "draft"
        views.live_view(workspace, run_id)
    assert calls == [f"row {run_id}", f"status {run_id}"]
    run_yaml = workspace.run_dir(run_id) / "run.yaml"
    atomic_write_text(run_yaml, run_yaml.read_text().replace("task: character", "task: style"))
    assert views.run_entry(workspace, run_id).task == "style"
    assert calls == [f"row {run_id}", f"status {run_id}", f"row {run_id}"]


def _live(workspace, run_id: str) -> None:  # type: ignore[no-untyped-def]
    now = "2026-11-30T09:00:00+00:00"
    state = RunState(run_id, "host", "localhost", now, now, status="training")
    state.supervisor_pid = os.getpid()  # alive, so refreshing leaves the state as it is
    state.supervisor_start = None
    write_state(workspace.run_dir(run_id), state)


def test_run_in_flight_is_read_on_every_request(counted) -> None:
    workspace, run_id, calls = counted
    _live(workspace, run_id)
    for _ in range(2):
        assert views.run_list(workspace).runs[0].status == "training"
    assert calls == [f"row {run_id}", f"row {run_id}"]


def test_a_live_run_makes_no_other_run_be_read_again(counted) -> None:
    """With one run training, the list refreshes that run alone, and another run's page
    reads only that run (issue 27: every page re-read all 500 runs)."""
    workspace, live, calls = counted
    others = [
        create_run(
            workspace, datasets=["myaku"], base=BUNDLE, now=datetime(2026, 11, 30, 10, m)
        ).run_id
        for m in range(3)
    ]
    _live(workspace, live)
    views.run_list(workspace)
    assert sorted(calls) == sorted(f"row {r}" for r in [live, *others])
    calls.clear()
    for _ in range(3):
        listing = views.run_list(workspace)
        assert [run.id for run in listing.runs] == [live, *others]
        assert views.run_entry(workspace, others[0]).status == "draft"
    assert calls == [f"row {live}"] * 3
    path = workspace.run_dir(others[1]) / "run.yaml"
    atomic_write_text(path, path.read_text().replace("task: character", "task: style"))
    calls.clear()
    assert [run.task for run in views.run_list(workspace).runs][2] == "style"
    assert sorted(calls) == sorted([f"row {live}", f"row {others[1]}"])


def test_the_run_list_page_reads_only_the_runs_it_shows(
    counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page's cost grows with the runs it shows, not with the workspace."""
    from fastapi.testclient import TestClient

    from kura.web.app import create_app

    workspace, first, calls = counted
    later = [
        create_run(
            workspace, datasets=["myaku"], base=BUNDLE, now=datetime(2026, 11, 30, 10, m)
        ).run_id
        for m in range(4)
    ]
    monkeypatch.setattr(views, "RUNS_PER_PAGE", 2)
    client = TestClient(create_app(workspace), base_url="http://127.0.0.1")
    newest = client.get("/")
    assert newest.status_code == 200
    assert sorted(calls) == sorted(f"row {r}" for r in later[2:])
    assert "page 1 of 3 (5 runs)" in newest.text and 'href="/?page=2"' in newest.text
    calls.clear()
    oldest = client.get("/?page=3")
    assert calls == [f"row {first}"]
    assert f"/runs/{first}" in oldest.text and f"/runs/{later[0]}" not in oldest.text
    assert client.get("/?page=99").text.count("page 3 of 3") == 1
