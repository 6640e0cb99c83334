"""A sweep trial's bookkeeping reads run.yaml files with the read-only loader: the worker
never writes them back, so it never pays for the round-trip parser (issue 27: 18 round-trip
reads a trial were half of the worker's profile)."""

from __future__ import annotations

from pathlib import Path

import pytest

import kura.yamlio as yamlio
from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.sweep.worker import run_worker
from kura.workspace import Workspace
from tests.sweep.conftest import base_run, write_space

SPACE = """\
axes:
  training.learning_rate: {low: 1.0e-5, high: 1.0e-2, log: true}
objective: {metric: train_loss}
early_stop: {enabled: false}
"""


def _approved_sweep(ws: Workspace, tmp_path: Path) -> str:
    """A sweep of two trials over the base run, planned and approved."""
    made = new_sweep(ws, base_run=base_run(ws), space=write_space(tmp_path, SPACE), trials=2)
    plan_sweep(ws, made["sweep"], gpu="h100-pcie")
    approve_sweep(ws, made["sweep"])
    return str(made["sweep"])


def test_a_worker_reads_no_run_yaml_round_trip(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = _approved_sweep(ws, tmp_path)
    round_trip: list[str] = []
    real = yamlio.parse_yaml

    def counted(text: str, *, source: str = "<text>") -> object:
        round_trip.append(source)
        return real(text, source=source)

    monkeypatch.setattr(yamlio, "parse_yaml", counted)
    result = run_worker(ws, sweep, gpu="h100-pcie", seed=1)
    assert len(result["trials"]) == 2
    assert [s for s in round_trip if s.endswith("run.yaml")] == [], round_trip


def test_a_worker_forks_every_trials_supervisor_from_one_warm_server(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kura.execution import supervisors

    sweep = _approved_sweep(ws, tmp_path)
    fresh: list[Path] = []
    forked: list[Path] = []
    real_fork = supervisors.ForkServer.start

    def fork(self: supervisors.ForkServer, run_dir: Path, lock_fd: int, *, backend: str) -> object:
        forked.append(run_dir)
        return real_fork(self, run_dir, lock_fd, backend=backend)

    monkeypatch.setattr(supervisors.FreshSupervisors, "start", lambda *a, **k: fresh.append(a[1]))
    monkeypatch.setattr(supervisors.ForkServer, "start", fork)
    result = run_worker(ws, sweep, gpu="h100-pcie", seed=1)
    assert [t["status"] for t in result["trials"]] == ["complete", "complete"]
    assert fresh == []
    assert [p.name for p in forked] == [t["run"] for t in result["trials"]]
