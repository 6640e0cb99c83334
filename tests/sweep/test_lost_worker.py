"""A lost worker's trainer is stopped wherever it runs (issue 24): the run's own supervisor
watches the trial's lease in the study (its guard) and stops the trainer once the lease runs
out, and the trial's record ends `lost`; no reaper on the same host is needed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kura.execution.executors import cancel_run
from kura.execution.state import read_state
from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.sweep.records import load_trials
from kura.workspace import Workspace
from tests.sweep.conftest import REPO, base_run, write_space

SPACE = """\
axes:
  training.learning_rate: {low: 1.0e-5, high: 1.0e-2, log: true}
objective: {metric: heldout_loss, validation_fraction: 0.2}
early_stop: {enabled: false}
"""
LEASE_SECONDS = 1.5
STOPPED_WITHIN = 40.0  # a lease, a guard poll, the trainer's SIGTERM; far below the 60 s run,
# with room for a loaded CI machine (the bound is not a speed target)


def _wait(predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"condition not met within {timeout} s")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat[stat.rfind(")") + 2 :].startswith("Z")


def _worker(ws: Workspace, sweep_id: str) -> subprocess.Popen[bytes]:
    code = (
        "from pathlib import Path\n"
        "from kura.workspace import Workspace\n"
        "from kura.sweep.worker import run_worker\n"
        f"run_worker(Workspace(Path({str(ws.root)!r})), {sweep_id!r}, gpu='h100-pcie', seed=1,"
        f" lease_seconds={LEASE_SECONDS})\n"
    )
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=dict(os.environ))


def test_a_worker_killed_mid_trial_has_its_trainer_stopped_and_its_trial_ended(
    ws: Workspace, tmp_path: Path
) -> None:
    # 1200 steps of 0.05 s: the trial would train for 60 s without its worker
    run = base_run(ws, "training.max_steps=1200", "backend.config.step_sleep=0.05")
    sweep = new_sweep(ws, base_run=run, space=write_space(tmp_path, SPACE), trials=1)
    plan_sweep(ws, sweep["sweep"], gpu="h100-pcie")
    approve_sweep(ws, sweep["sweep"])
    worker = _worker(ws, sweep["sweep"])
    run_dir: Path | None = None
    try:
        _wait(lambda: bool(load_trials(ws, sweep["sweep"])), 60)
        run_dir = ws.run_dir(load_trials(ws, sweep["sweep"])[0].run_id)

        def training() -> bool:
            path = run_dir / "state.json"
            return path.exists() and read_state(run_dir).status == "training"

        _wait(training, 60)
        guard = json.loads((run_dir / "guard.json").read_text())
        assert guard["start_after_seconds"] == LEASE_SECONDS / 3
        trainer = read_state(run_dir).pid
        assert trainer is not None and _alive(trainer)

        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
        killed = time.monotonic()
        _wait(lambda: read_state(run_dir).is_terminal, STOPPED_WITHIN)
        assert time.monotonic() - killed < STOPPED_WITHIN

        state = read_state(run_dir)
        assert state.status == "cancelled"
        assert state.message is not None and state.message.startswith("stopped by its guard")
        assert "lease on trial" in state.message and "stopped renewing it" in state.message
        _wait(lambda: not _alive(trainer), 5)
        assert state.step("train").status == "cancelled"
        record = load_trials(ws, sweep["sweep"])[0]
        assert record.status == "lost"
        assert record.reason is not None and "lease on trial" in record.reason
        assert record.finished_at is not None
        assert not (run_dir / "guard.json").exists()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        left = run_dir is not None and (run_dir / "state.json").exists()
        if left and run_dir is not None and not read_state(run_dir).is_terminal:
            cancel_run(run_dir, grace=2)


def _target(ws: Workspace, storage: str = "journal", lease: float = 60.0) -> object:
    from kura.sweep.leaseguard import LeaseTarget

    return LeaseTarget(
        workspace=ws.root, sweep="s1", number=3, trial_id=7, storage=storage, lease_seconds=lease
    )


def test_a_reaped_trial_stops_its_run_even_with_time_left_on_the_lease(ws: Workspace) -> None:
    from types import SimpleNamespace

    from optuna.trial import TrialState

    from kura.sweep.lease import LEASE_KEY
    from kura.sweep.leaseguard import lease_verdict

    now = time.time()
    live = SimpleNamespace(state=TrialState.RUNNING, user_attrs={LEASE_KEY: now + 30})
    assert lease_verdict(_target(ws), live, now) is None  # type: ignore[arg-type]
    reaped = SimpleNamespace(
        state=TrialState.FAIL, user_attrs={LEASE_KEY: now + 30, "kura.lost": "re-queued once"}
    )
    verdict = lease_verdict(_target(ws), reaped, now)  # type: ignore[arg-type]
    assert (
        verdict == "trial 3 of sweep s1 is FAIL in the study, no longer this run's: re-queued once"
    )


def test_a_storage_unreadable_for_a_whole_lease_is_a_verdict(ws: Workspace) -> None:
    from kura.sweep.leaseguard import watch

    started = time.monotonic()
    verdict = watch(_target(ws, storage="postgresql://kura@127.0.0.1:1/x", lease=1.0))  # type: ignore[arg-type]
    assert time.monotonic() - started < 30
    assert verdict is not None
    assert verdict.startswith("the study storage postgresql://kura@127.0.0.1:1/x could not be read")
