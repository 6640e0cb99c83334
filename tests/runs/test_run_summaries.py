"""`kura run list` reads each run.yaml once, with the read-only loader, and not again while
it is unchanged (kura.runs.summaries): the listing's cost per run is a stat and its state."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

import kura.yamlio as yamlio
from kura.runs.following import list_runs
from kura.runs.new import create_run
from kura.runs.summaries import SummaryCache
from kura.workspace import Workspace


def _runs(ws: Workspace, count: int) -> list[str]:
    return [
        create_run(
            ws, datasets=["myaku"], base="flux2-klein-base-4b", now=datetime(2026, 12, 1, 9, m)
        ).run_id
        for m in range(count)
    ]


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often each YAML reader parsed a document."""
    counts = {"plain": 0, "round-trip": 0}
    plain, round_trip = yamlio.parse_plain_yaml, yamlio.parse_yaml

    def counted_plain(text: str, *, source: str) -> dict[str, object]:
        counts["plain"] += 1
        return plain(text, source=source)

    def counted_round_trip(text: str, *, source: str = "<text>") -> object:
        counts["round-trip"] += 1
        return round_trip(text, source=source)

    monkeypatch.setattr(yamlio, "parse_plain_yaml", counted_plain)
    monkeypatch.setattr(yamlio, "parse_yaml", counted_round_trip)
    return counts


def test_run_list_parses_each_run_yaml_once_with_the_read_only_loader(
    ws: Workspace, parses: dict[str, int]
) -> None:
    ids = _runs(ws, 3)
    parses.update({"plain": 0, "round-trip": 0})
    assert [run.id for run in list_runs(ws).runs] == ids
    assert parses == {"plain": 3, "round-trip": 0}


def test_an_unchanged_run_yaml_is_not_read_again(ws: Workspace, parses: dict[str, int]) -> None:
    ids = _runs(ws, 3)
    first = list_runs(ws)
    parses.update({"plain": 0, "round-trip": 0})
    assert list_runs(ws) == first
    assert parses == {"plain": 0, "round-trip": 0}
    path = ws.run_dir(ids[1]) / "run.yaml"
    path.write_text(path.read_text().replace("rank: 32", "rank: 16"))
    again = list_runs(ws)
    assert parses == {"plain": 1, "round-trip": 0}
    assert [run.settings.rank for run in again.runs] == [32, 16, 32]


def test_a_run_yaml_rewritten_with_its_size_and_mtime_kept_is_read_again(ws: Workspace) -> None:
    """Only the ctime tells such a rewrite (an editor, ``touch -d``) from the old file."""
    (run_id,) = _runs(ws, 1)
    assert list_runs(ws).runs[0].settings.rank == 32
    path = ws.run_dir(run_id) / "run.yaml"
    before = os.stat(path)
    with path.open("r+") as handle:  # in place: the same inode
        text = handle.read()
        handle.seek(0)
        handle.write(text.replace("rank: 32", "rank: 64"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    assert list_runs(ws).runs[0].settings.rank == 64


@pytest.mark.parametrize(
    "damage", [b"{not json", b'{"schema": 1, "runs_dir": "x", "runs": {}}', b"\xff\xfe", b"[]"]
)
def test_a_damaged_cache_is_rebuilt_not_trusted(
    ws: Workspace, parses: dict[str, int], damage: bytes
) -> None:
    _runs(ws, 2)
    first = list_runs(ws)
    cache = SummaryCache.for_workspace(ws).path
    assert cache.is_file()
    cache.write_bytes(damage)
    parses["plain"] = 0
    assert list_runs(ws) == first
    assert parses["plain"] == 2


def test_an_entry_with_other_values_is_refused(ws: Workspace, parses: dict[str, int]) -> None:
    _runs(ws, 1)
    first = list_runs(ws)
    cache = SummaryCache.for_workspace(ws).path
    cache.write_text(cache.read_text().replace('"rank":32', '"rank":"32x"'))
    parses["plain"] = 0
    assert list_runs(ws) == first
    assert parses["plain"] == 1


def test_the_cache_lives_outside_the_workspace(ws: Workspace) -> None:
    _runs(ws, 1)
    list_runs(ws)
    path = SummaryCache.for_workspace(ws).path
    assert path.is_file()
    assert not path.resolve().is_relative_to(ws.root.resolve())


def test_a_cache_folder_that_refuses_writes_costs_time_not_the_answer(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _runs(ws, 2)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("KURA_CACHE_DIR", str(blocked))
    assert [run.settings.rank for run in list_runs(ws).runs] == [32, 32]


def test_a_deleted_run_leaves_the_cache(ws: Workspace) -> None:
    import shutil

    ids = _runs(ws, 2)
    list_runs(ws)
    shutil.rmtree(ws.run_dir(ids[0]))
    assert [run.id for run in list_runs(ws).runs] == [ids[1]]
    assert ids[0] not in SummaryCache.for_workspace(ws).path.read_text()
