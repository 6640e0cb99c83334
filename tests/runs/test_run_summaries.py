"""`kura run list` reads each run.yaml once, with the read-only loader, and not again while
it is unchanged; each state.json while it is unchanged and the state stands (ended, or its
processes still run) (kura.runs.summaries): a warm listing's cost per run is a few stats,
and it builds no model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

import kura.execution.state as state_module
import kura.models.bundles as bundles
import kura.plainyaml as plainyaml
import kura.runs.summaries as summaries
import kura.yamlio as yamlio
from kura.execution.procutil import process_start_ticks
from kura.execution.state import new_state, read_state, write_state
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
    plain, round_trip = plainyaml.parse_plain_yaml, yamlio.parse_yaml

    def counted_plain(text: str, *, source: str) -> dict[str, object]:
        counts["plain"] += 1
        return plain(text, source=source)

    def counted_round_trip(text: str, *, source: str = "<text>") -> object:
        counts["round-trip"] += 1
        return round_trip(text, source=source)

    monkeypatch.setattr(plainyaml, "parse_plain_yaml", counted_plain)
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


def _finished(ws: Workspace, run_id: str) -> None:
    run_dir = ws.run_dir(run_id)
    state = new_state(run_id, run_dir, "host", ["train"], [])
    state.move_to("training")
    state.move_to("succeeded")
    write_state(run_dir, state)


def _training(ws: Workspace, run_id: str, supervisor: subprocess.Popen[bytes]) -> None:
    """A run "training" under ``supervisor`` (no step started: a supervisor that is gone
    settles it as failed, exit status unknown)."""
    run_dir = ws.run_dir(run_id)
    state = new_state(run_id, run_dir, "host", ["train"], [])
    state.move_to("training")
    state.supervisor_pid = supervisor.pid
    state.supervisor_start = process_start_ticks(supervisor.pid)
    write_state(run_dir, state)


@pytest.fixture
def supervisor() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "600"])
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def state_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every state.json validated (:func:`kura.execution.state.read_state_file`)."""
    reads: list[Path] = []
    real = state_module.read_state_file

    def counted(path: Path) -> object:
        reads.append(Path(path))
        return real(path)

    monkeypatch.setattr(state_module, "read_state_file", counted)
    return reads


def test_a_warm_listing_imports_no_model_parser_or_backend(
    ws: Workspace, supervisor: subprocess.Popen[bytes]
) -> None:
    """Finished, live and drafted runs: the second listing answers from the cache alone."""
    draft, done, live = _runs(ws, 3)
    _finished(ws, done)
    _training(ws, live, supervisor)
    code = (
        "import json, sys; from kura.cli.main import main; "
        f"main(['-w', {str(ws.root)!r}, '--json', 'run', 'list']); "
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    )

    def listing() -> tuple[dict[str, str], set[str]]:
        done_ = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done_.returncode == 0, done_.stderr
        document = json.loads(done_.stdout)
        statuses = {run["run"]: run["status"] for run in document["runs"]}
        return statuses, set(json.loads(done_.stderr.strip().splitlines()[-1]))

    first, _ = listing()
    again, loaded = listing()
    assert first == again == {draft: "draft", done: "succeeded", live: "training"}
    heavy = ("pydantic", "ruamel", "yaml", "kura.schema", "kura.models", "kura.backends")
    assert sorted(m for m in loaded if m.startswith(heavy)) == []
    assert "kura.execution.runs" not in loaded  # no state was refreshed


def test_an_unchanged_state_is_not_validated_again(
    ws: Workspace, supervisor: subprocess.Popen[bytes], state_reads: list[Path]
) -> None:
    done, live = _runs(ws, 2)
    _finished(ws, done)
    _training(ws, live, supervisor)
    first = list_runs(ws)
    assert len(state_reads) == 2
    state_reads.clear()
    assert list_runs(ws) == first
    assert state_reads == []


def test_a_rewritten_state_is_read_again(ws: Workspace, state_reads: list[Path]) -> None:
    (run_id,) = _runs(ws, 1)
    _finished(ws, run_id)
    assert [run.status for run in list_runs(ws).runs] == ["succeeded"]
    run_dir = ws.run_dir(run_id)
    state = new_state(run_id, run_dir, "host", ["train"], [], attempt=2)  # a relaunch
    state.move_to("training")
    state.move_to("failed")
    write_state(run_dir, state)
    state_reads.clear()
    assert [run.status for run in list_runs(ws).runs] == ["failed"]
    assert state_reads == [run_dir / "state.json"]


def test_a_live_run_whose_processes_are_gone_is_refreshed_not_shown_as_cached(
    ws: Workspace, supervisor: subprocess.Popen[bytes]
) -> None:
    """state.json unchanged, but its supervisor died: the cached "training" must not be
    shown; the refresh settles the state as failed, as `kura run status` would."""
    (run_id,) = _runs(ws, 1)
    _training(ws, run_id, supervisor)
    assert [run.status for run in list_runs(ws).runs] == ["training"]
    supervisor.kill()
    supervisor.wait()
    assert [run.status for run in list_runs(ws).runs] == ["failed"]
    assert read_state(ws.run_dir(run_id)).status == "failed"


def test_a_damaged_state_summary_in_the_cache_is_refused(
    ws: Workspace, state_reads: list[Path]
) -> None:
    (run_id,) = _runs(ws, 1)
    _finished(ws, run_id)
    first = list_runs(ws)
    cache = SummaryCache.for_workspace(ws).path
    cache.write_text(cache.read_text().replace('"supervisor_pid":null', '"supervisor_pid":"1"'))
    state_reads.clear()
    assert list_runs(ws) == first
    assert len(state_reads) == 1


def test_architectures_are_looked_up_again_when_the_bundle_table_changes(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _runs(ws, 2)
    table = tmp_path / "bundle_table.py"
    table.write_text(summaries.BUNDLE_TABLE.read_text())
    monkeypatch.setattr(summaries, "BUNDLE_TABLE", table)
    lookups: list[str] = []
    real = bundles.get_bundle

    def counted(bundle_id: str) -> bundles.Bundle:
        lookups.append(bundle_id)
        return real(bundle_id)

    monkeypatch.setattr(bundles, "get_bundle", counted)
    first = list_runs(ws)
    assert lookups == ["flux2-klein-base-4b"]  # one lookup a bundle, not a run
    assert list_runs(ws) == first
    assert lookups == ["flux2-klein-base-4b"]
    table.write_text(table.read_text() + "\n")  # another Kura's table
    assert list_runs(ws) == first
    assert lookups == ["flux2-klein-base-4b"] * 2
