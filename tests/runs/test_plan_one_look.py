"""A plan takes one look at its dataset folders: each listed once, each file's facts parsed
from the stat cache once, however many of its steps ask (issue 27)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from kura.dataset import scan as scan_module
from kura.dataset.onelook import current_look, one_look
from kura.dataset.statcache import FileKey, StatCache
from kura.runs.media import image_sizes
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace


def _listings(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    listed: list[Path] = []
    real = scan_module._scan_dataset

    def counting(root, caption_ext, skip):  # type: ignore[no-untyped-def]
        listed.append(Path(root))
        return real(root, caption_ext, skip)

    monkeypatch.setattr(scan_module, "_scan_dataset", counting)
    return listed


def _cache_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []
    real = StatCache.get_many

    def counting(self, keys):  # type: ignore[no-untyped-def]
        keys = list(keys)
        asked.extend(Path(key.path).name for key in keys)
        return real(self, keys)

    monkeypatch.setattr(StatCache, "get_many", counting)
    return asked


def _media(ws: Workspace) -> Path:
    from kura.dataset.registry import media_dir, read_dataset

    return media_dir(ws, read_dataset(ws, "myaku"))


def test_a_warm_plan_lists_the_folder_once_and_parses_each_file_once(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = create_run(
        ws, datasets=["myaku"], base="flux2-klein-base-4b", now=datetime(2026, 11, 30, 7, 0)
    ).run_id
    plan_run(ws, run_id, gpu="rtx-4090")  # cold: fills the stat cache
    listed, asked = _listings(monkeypatch), _cache_reads(monkeypatch)
    plan_run(ws, run_id, gpu="rtx-4090")
    assert len(listed) == 1
    assert asked, "the plan re-checks the dataset's files"
    assert len(asked) == len(set(asked)), "a file's cached facts were parsed more than once"
    assert current_look() is None, "nothing is kept after the plan"


def test_outside_a_look_each_call_reads_again(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _media(ws)
    listed = _listings(monkeypatch)
    first = image_sizes(folder, ".txt")
    assert image_sizes(folder, ".txt") == first
    assert len(listed) == 2
    with one_look():
        image_sizes(folder, ".txt")
        image_sizes(folder, ".txt")
    assert len(listed) == 3


def test_a_look_stats_each_file_once(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _media(ws)
    stats: list[str] = []
    real = FileKey.of.__func__  # type: ignore[attr-defined]

    def counting(cls, path):  # type: ignore[no-untyped-def]
        stats.append(Path(path).name)
        return real(cls, path)

    monkeypatch.setattr(FileKey, "of", classmethod(counting))
    from kura.dataset.facts import gather_facts
    from kura.dataset.scan import scan_dataset

    with one_look():
        jobs = [(e.path, "image") for e in scan_dataset(folder, ".txt").images]
        gather_facts(jobs, cache=None, progress=None)
        gather_facts(jobs, cache=None, progress=None)
    assert stats and len(stats) == len(set(stats))


def test_a_plan_inspects_with_the_collector_paused_and_resumes_it(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    run_id = create_run(
        ws, datasets=["myaku"], base="flux2-klein-base-4b", now=datetime(2026, 11, 30, 7, 0)
    ).run_id
    collecting: list[bool] = []
    real = scan_module._scan_dataset

    def noting(root, caption_ext, skip):  # type: ignore[no-untyped-def]
        collecting.append(gc.isenabled())
        return real(root, caption_ext, skip)

    monkeypatch.setattr(scan_module, "_scan_dataset", noting)
    assert gc.isenabled()
    plan_run(ws, run_id, gpu="rtx-4090")
    assert collecting == [False]
    assert gc.isenabled()


def _planned(ws: Workspace) -> str:
    run_id = create_run(
        ws,
        datasets=["myaku"],
        base="flux2-klein-base-4b",
        sets=["execution.executor=host"],
        now=datetime(2026, 11, 30, 7, 0),
    ).run_id
    plan_run(ws, run_id, gpu="rtx-4090")
    return run_id


def test_an_approval_lists_the_folder_once_for_its_check_and_its_compile(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kura.runs.approval import approve_run

    run_id = _planned(ws)
    listed = _listings(monkeypatch)
    approve_run(ws, run_id)
    assert listed == [_media(ws)]
    assert current_look() is None
