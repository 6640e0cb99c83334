"""Many workers against a real PostgreSQL (a throwaway server on loopback, no mock): three
`kura sweep worker` processes share one study; one is killed mid-trial. Its trial is reaped
after its lease runs out, re-queued once and run by another worker; no trial number runs
twice, the approved count holds, and the caches were computed once on this machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kura.execution.state import read_state
from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.sweep.records import load_trials
from kura.sweep.report import sweep_report
from kura.workspace import Workspace
from tests.sweep.conftest import base_run, write_space

SPACE = """\
axes:
  training.learning_rate: {low: 1.0e-5, high: 1.0e-2, log: true}
objective: {metric: heldout_loss}
early_stop: {enabled: false}
"""
TRIALS = 5
LEASE = "3"


def _worker(ws: Workspace, sweep_id: str, seed: int, env: dict[str, str]) -> subprocess.Popen:
    argv = [
        sys.executable,
        "-m",
        "kura",
        "--json",
        "-w",
        str(ws.root),
        "sweep",
        "worker",
        sweep_id,
        "--gpu",
        "h100-pcie",
        "--seed",
        str(seed),
        "--lease-seconds",
        LEASE,
    ]
    log = open(ws.root / f"worker-{seed}.log", "wb")  # noqa: SIM115  (closed by the process end)
    return subprocess.Popen(
        argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _study(url: str, name: str):  # type: ignore[no-untyped-def]
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(url.replace("postgresql://", "postgresql+psycopg://"))
    return optuna.load_study(study_name=name, storage=storage)


def test_workers_share_a_postgres_study_and_a_dead_workers_trial_is_requeued_once(
    ws: Workspace, tmp_path: Path, pg_url: str, toy_env: dict[str, str]
) -> None:
    run = base_run(ws, "backend.config.step_sleep=1.0")
    sweep = new_sweep(
        ws, base_run=run, space=write_space(tmp_path, SPACE), trials=TRIALS, storage=pg_url
    )
    sweep_id = sweep["sweep"]
    assert (
        json.loads((ws.root / "sweeps" / sweep_id / "sweep.json").read_text())["storage"] == pg_url
    )
    plan_sweep(ws, sweep_id, gpu="h100-pcie")
    approve_sweep(ws, sweep_id)
    env = {**toy_env, "PYTHONPATH": toy_env["PYTHONPATH"]}

    doomed = _worker(ws, sweep_id, 11, env)
    # wait until the doomed worker is training a trial, then kill it (SIGKILL: no clean-up)
    deadline = time.monotonic() + 120
    victim = None
    while time.monotonic() < deadline and victim is None:
        for trial in _study(pg_url, sweep_id).get_trials(deepcopy=False):
            run_id = trial.user_attrs.get("kura.run_id")
            if (
                trial.state.name == "RUNNING"
                and run_id
                and trial.user_attrs.get("kura.worker", "").endswith(f":{doomed.pid}")
                and (ws.run_dir(run_id) / "logs" / "train.log").exists()
            ):
                victim = trial
        time.sleep(0.2)
    assert victim is not None, (ws.root / "worker-11.log").read_text()
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(timeout=30)
    others = [_worker(ws, sweep_id, seed, env) for seed in (12, 13)]
    for process in others:
        assert process.wait(timeout=300) == 0, ws.root / f"worker-{process.args[-5]}.log"

    trials = _study(pg_url, sweep_id).get_trials(deepcopy=False)
    lost = [t for t in trials if t.user_attrs.get("kura.lost")]
    assert [t.number for t in lost] == [victim.number]
    assert lost[0].state.name == "FAIL" and "re-queued once" in lost[0].user_attrs["kura.lost"]
    requeued = [t for t in trials if t.user_attrs.get("kura.requeued_from") == victim.number]
    assert len(requeued) == 1
    assert requeued[0].state.name == "COMPLETE" and requeued[0].params == victim.params
    assert requeued[0].user_attrs["kura.worker"] != victim.user_attrs["kura.worker"]
    assert sum(t.state.name == "COMPLETE" for t in trials) == TRIALS
    # the two survivors both worked, in parallel, with their own seeds
    workers = {t.user_attrs["kura.worker"] for t in trials if t.state.name == "COMPLETE"}
    assert len(workers) == 2
    assert {t.user_attrs["kura.seed"] for t in trials if t.state.name == "COMPLETE"} == {12, 13}
    # no trial ran twice: one run folder per trial number, one attempt each
    runs = [t.user_attrs["kura.run_id"] for t in trials if "kura.run_id" in t.user_attrs]
    assert len(runs) == len(set(runs))
    for run_id in runs:
        assert not (ws.run_dir(run_id) / "attempts").exists()
    # the dead worker's orphaned trainer was stopped by the reaper on the same machine
    assert read_state(ws.run_dir(victim.user_attrs["kura.run_id"])).status == "cancelled"
    records = {r.number: r for r in load_trials(ws, sweep_id)}
    assert records[victim.number].status == "lost"
    # caches once on this machine
    prepared = [
        read_state(ws.run_dir(r.run_id)).step("prepare").status
        for r in records.values()
        if r.status == "complete"
    ]
    assert prepared.count("succeeded") <= 1 and prepared.count("skipped") >= TRIALS - 1
    assert {r.gpu_class for r in records.values()} == {"h100-pcie"}
    report = sweep_report(ws, sweep_id)
    assert report["best"]["state"] == "COMPLETE"
    assert len(report["importance"]) == 1
