"""`kura run list` over a workspace with damaged runs: the others are listed, each damaged
one is marked with its file and error."""

from __future__ import annotations

import io
import json
from datetime import datetime

from kura.cli.main import main
from kura.runs.following import list_runs
from kura.runs.new import create_run
from kura.workspace import Workspace


def _three_runs(ws: Workspace) -> tuple[str, str, str]:
    ids = [
        create_run(
            ws, datasets=["myaku"], base="flux2-klein-base-4b", now=datetime(2026, 12, 1, 9, m)
        ).run_id
        for m in range(3)
    ]
    good, bad_yaml, bad_state = ids
    (ws.run_dir(bad_yaml) / "run.yaml").write_text("model: [unclosed\n")
    (ws.run_dir(bad_state) / "state.json").write_text('{"status": "running", "attempt": "x"')
    return good, bad_yaml, bad_state


def test_one_damaged_run_does_not_hide_the_others(ws: Workspace) -> None:
    good, bad_yaml, bad_state = _three_runs(ws)
    listing = list_runs(ws)
    assert [run.id for run in listing.runs] == [good]
    damaged = {run.id: run for run in listing.damaged}
    assert damaged[bad_yaml].file == f"runs/{bad_yaml}/run.yaml"
    assert damaged[bad_state].file == f"runs/{bad_state}/state.json"
    assert all(run.error and run.hint for run in listing.damaged)


def test_run_list_json_exits_0_and_names_the_damaged_files(ws: Workspace) -> None:
    good, bad_yaml, bad_state = _three_runs(ws)
    out = io.StringIO()
    assert main(["-w", str(ws.root), "--json", "run", "list"], stdout=out) == 0
    document = json.loads(out.getvalue())
    assert [run["run"] for run in document["runs"]] == [good]
    assert [(d["run"], d["file"]) for d in document["damaged"]] == [
        (bad_yaml, f"runs/{bad_yaml}/run.yaml"),
        (bad_state, f"runs/{bad_state}/state.json"),
    ]


def test_run_list_marks_the_damaged_runs_for_people(ws: Workspace) -> None:
    good, bad_yaml, bad_state = _three_runs(ws)
    out = io.StringIO()
    assert main(["-w", str(ws.root), "run", "list"], stdout=out) == 0
    text = out.getvalue()
    assert good in text
    assert f"damaged {bad_yaml}: runs/{bad_yaml}/run.yaml:" in text
    assert f"damaged {bad_state}: runs/{bad_state}/state.json:" in text
