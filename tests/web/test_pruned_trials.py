"""A sweep trial the pruner stopped is cancelled as a run; the run list and its page say
"pruned", as its trial does, and the run page names the trial and its sweep."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from kura.execution.state import RunState, read_state, update_state
from kura.sweep.records import load_trials, write_trial
from kura.workspace import Workspace
from tests.web.helpers import client
from tests.web.sweep_builder import SweepWorkspace

STOPPED = {
    "by": "successive halving (asynchronous)",
    "step": 2,
    "loss": 0.8,
    "why": "its loss at this rung was below the top 1/reduction_factor",
}


@pytest.fixture
def pruned(swept: SweepWorkspace, tmp_path: Path) -> tuple[Workspace, str, int]:
    """A copy of the sweep with one trial ended as the worker ends a pruned one
    (``sweep/follow.py``: ``cancel_run`` marks the run cancelled, then the trial is
    recorded ``pruned`` with who stopped it, at which step and loss)."""
    workspace = Workspace(tmp_path / "copy")
    shutil.copytree(swept.workspace.root, workspace.root, symlinks=True)
    trial = next(t for t in load_trials(workspace, swept.sweep) if t.status == "complete")

    def cancelled(state: RunState) -> None:
        state.message = "cancelled on request"
        state.status = "cancelled"

    update_state(workspace.run_dir(trial.run_id), cancelled)
    write_trial(workspace, trial.updated(status="pruned", stopped=STOPPED))
    return workspace, trial.run_id, trial.number


def test_the_run_list_shows_a_pruned_trial_as_pruned(pruned: tuple[Workspace, str, int]) -> None:
    workspace, run_id, _ = pruned
    html = client(workspace).get("/").text
    row = re.search(rf'<a href="/runs/{run_id}">.*?</tr>', html, re.S)
    assert row is not None
    assert ">pruned</span>" in row.group(0) and ">cancelled<" not in row.group(0)


def test_the_run_page_names_its_trial_and_says_pruned(
    pruned: tuple[Workspace, str, int], swept: SweepWorkspace
) -> None:
    workspace, run_id, number = pruned
    assert read_state(workspace.run_dir(run_id)).status == "cancelled"
    site = client(workspace)
    html = site.get(f"/runs/{run_id}").text
    assert f"Trial {number} of sweep" in html and f'href="/sweeps/{swept.sweep}"' in html
    assert 'data-field="status">pruned</span>' in html
    live = site.get(f"/api/runs/{run_id}/status").json()
    assert live["display"]["status"] == "pruned"
    assert live["state"]["status"] == "cancelled"  # the run's own state is unchanged


def test_a_run_that_is_no_trial_names_no_sweep(swept: SweepWorkspace) -> None:
    others = {t.run_id for t in load_trials(swept.workspace, swept.sweep)}
    html = client(swept.workspace).get(f"/runs/{swept.base_run}").text
    assert swept.base_run not in others
    assert 'data-field="trial"' not in html
